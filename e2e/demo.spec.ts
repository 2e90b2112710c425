import { fileURLToPath } from 'node:url';
import type { Page, Request } from '@playwright/test';
import { reply, startOpenAiServer } from '../test/helpers/openai-server.ts';
import { demoE2eUrl } from './support/demo-site.ts';
import { expect, test } from './support/fixtures.ts';

/**
 * The demo page as a user drives it, in Debian's Chromium against the built demo
 * (`vite build demo` + `vite preview demo`, see playwright.config.ts). One test walks the
 * whole story, since ingesting the sample (MiniLM in a worker) is the slow part.
 */

const screenshots = fileURLToPath(new URL('out/demo/', import.meta.url));
const INGEST_TIMEOUT = 420_000;

/** Dialog ids of the evidence each sample question needs (demo/samples/maya-and-jonas.txt). */
const CAT_NAME = { question: "What is the name of Jonas's cat?", evidence: 'D2:3' }; // "Her name is Pixel."
const WHY_SWITCH = { question: 'Why did Jonas switch to the 10K race?', evidence: 'D4:6' }; // "Because of the injury I switched…"
const WHEN_RACE = { question: 'When did Jonas run the race in Lisbon?', evidence: 'D5:1' }; // "I ran the Lisbon 10K last Sunday"

const state = (page: Page) => page.locator('body');
const ready = (page: Page, timeout = 60_000) => expect(state(page)).toHaveAttribute('data-state', 'ready', { timeout });

/** Asks and waits for that question's result (the page counts answered questions on <body>). */
async function ask(page: Page, question: string): Promise<void> {
  const answered = Number((await state(page).getAttribute('data-answered')) ?? 0);
  await page.fill('#question', question);
  await page.click('#ask');
  await expect(state(page)).toHaveAttribute('data-answered', String(answered + 1), { timeout: 60_000 });
  await ready(page);
  await expect(page.getByTestId('units').getByTestId('unit').first()).toBeVisible();
}

/** Dialog ids of the best-ranked Episode's evidence card. */
const topDialogIds = async (page: Page): Promise<string[]> =>
  ((await page.getByTestId('unit').first().getAttribute('data-dialog-ids')) ?? '').split(' ');

const layerCount = (page: Page, layer: string) => page.locator(`#layer-counts [data-layer="${layer}"]`);

test('the demo ingests the sample, shows why units were retrieved, persists, forgets and works offline', async ({ page, context }) => {
  test.setTimeout(900_000);
  await page.setViewportSize({ width: 1440, height: 1000 });
  await page.goto(demoE2eUrl());
  await ready(page, 180_000);
  await expect(page.getByTestId('status')).toContainText('all-MiniLM-L6-v2');
  await expect(page.getByTestId('llm-status')).toHaveText('LLM off');

  await test.step('an empty memory: no suggestion chips, asking says so, the status pill fits on one line at 420 px', async () => {
    await expect(page.locator('#suggestions button')).toHaveCount(0);
    await page.fill('#question', 'What is the name of the cat?');
    await page.click('#ask');
    await expect(page.locator('#ask-message')).toHaveText('The memory is empty: ingest a conversation first.');
    await page.setViewportSize({ width: 420, height: 900 });
    const pill = await page.getByTestId('status').boundingBox();
    const lineHeight = await page.getByTestId('status').evaluate((el) => parseFloat(getComputedStyle(el).lineHeight) || 18);
    expect(pill?.height ?? 0).toBeLessThan(lineHeight * 2);
    await page.screenshot({ path: `${screenshots}narrow-420.png` });
    await page.setViewportSize({ width: 1440, height: 1000 });
  });

  await test.step('ingest the sample in the worker, with progress, while the page stays responsive', async () => {
    await page.getByTestId('ingest').click();
    await expect(page.getByTestId('progress-text')).toContainText(/chunk \d of 5/);
    await expect(state(page)).toHaveAttribute('data-state', 'busy');
    // The main thread is free: typing works mid-ingest and the progress keeps moving.
    await page.fill('#question', 'typing while the worker ingests', { timeout: 5_000 });
    await expect(page.getByTestId('progress-text')).toContainText(/chunk [2-5] of 5 · (about .* left|almost done)/, { timeout: INGEST_TIMEOUT });
    // The memory panel counts what is committed so far, chunk by chunk, before the ingest ends.
    await page.waitForFunction(
      () => {
        const episodes = Number(document.querySelector('#layer-counts [data-layer="episode"]')?.getAttribute('data-count'));
        return document.body.dataset.state === 'busy' && episodes >= 1 && episodes <= 4;
      },
      undefined,
      { timeout: INGEST_TIMEOUT, polling: 'raf' },
    );
    await page.screenshot({ path: `${screenshots}ingest-progress.png` });
    await ready(page, INGEST_TIMEOUT);
    await expect(page.locator('#load-message')).toContainText('5 chunks added');
    await expect(layerCount(page, 'episode')).toHaveAttribute('data-count', '5');
    await expect(page.getByTestId('sessions').locator('li')).toHaveCount(5);
    // The message counts the nodes the tiles show (the memory was empty before).
    const tiles = await page.locator('#layer-counts [data-layer]').evaluateAll((els) => els.reduce((n, el) => n + Number(el.getAttribute('data-count')), 0));
    await expect(page.locator('#load-message')).toContainText(`(${tiles} nodes)`);
    await expect(page.locator('#ask-message')).toHaveText('');
    await expect(page.locator('#suggestions button')).toHaveText(["What is the name of Jonas's cat?", 'Why did Jonas switch to the 10K race?', 'When did Jonas run the race in Lisbon?', "Where does Maya's sister live?", 'What did Maya sell at the craft fair?']);
  });

  await test.step('a factual question: the right Episode comes first, with its evidence turn and path', async () => {
    await ask(page, CAT_NAME.question);
    expect(await topDialogIds(page)).toContain(CAT_NAME.evidence);
    await expect(page.getByTestId('context')).toContainText(`(${CAT_NAME.evidence}) Jonas: Her name is Pixel`);
    await expect(page.getByTestId('tier')).not.toBeEmpty();
    await expect(page.getByTestId('unit').first().locator('.trace')).toContainText('Episode');
    await expect(page.getByTestId('llm-usage')).toContainText('0 calls · 0 tokens');
  });

  await test.step('a causal question: routed by the keyword tier, evidence across sessions', async () => {
    await ask(page, WHY_SWITCH.question);
    await expect(page.getByTestId('intent')).toHaveText('CAUSAL');
    await expect(page.getByTestId('tier')).toHaveText('keyword tier');
    expect(await topDialogIds(page)).toContain(WHY_SWITCH.evidence);
    // The graph view draws the neighbourhood, with counts per layer and edge type in its legend.
    await expect(page.locator('#graph canvas').first()).toBeVisible();
    await expect(page.locator('#graph-legend [data-layer="episode"] .num')).not.toHaveText('0');
    await expect(page.locator('#graph-legend [data-edge-type="belongs_to"]')).toBeVisible();
    await page.screenshot({ path: `${screenshots}answer.png`, fullPage: true });
    await page.getByTestId('graph').screenshot({ path: `${screenshots}graph.png` });
    await page.getByTestId('unit').first().click();
    await expect(page.getByTestId('unit').first()).toHaveClass(/pinned/);
    await page.getByTestId('graph').screenshot({ path: `${screenshots}graph-path-of-unit-1.png` });
  });

  await test.step('the budget slider repacks the context within the new budget', async () => {
    await page.getByTestId('budget').fill('128');
    await expect(page.getByTestId('context-tokens')).toContainText('128-token budget', { timeout: 60_000 });
    await ready(page);
    const tokens = Number(/^(\d+) tokens/.exec((await page.getByTestId('context-tokens').textContent()) ?? '')?.[1]);
    expect(tokens).toBeGreaterThan(0);
    expect(tokens).toBeLessThanOrEqual(128);
    await page.getByTestId('budget').fill('512');
    await expect(page.getByTestId('context-tokens')).toContainText('512-token budget', { timeout: 60_000 });
    await ready(page);
  });

  await test.step('after a reload the memory is still there (IndexedDB)', async () => {
    await page.reload();
    await ready(page, 180_000);
    await expect(layerCount(page, 'episode')).toHaveAttribute('data-count', '5');
    await expect(page.getByTestId('sessions').locator('li')).toHaveCount(5);
    await ask(page, CAT_NAME.question);
    expect(await topDialogIds(page)).toContain(CAT_NAME.evidence);
  });

  await test.step('with the network gone, asking and ingesting still work', async () => {
    const requests: string[] = [];
    const record = (request: Request) => void requests.push(request.url());
    context.on('request', record);
    await context.setOffline(true);
    try {
      await ask(page, WHEN_RACE.question);
      await expect(page.getByTestId('intent')).toHaveText('TEMPORAL');
      const shown = (await page.getByTestId('unit').evaluateAll((cards) => cards.map((c) => c.getAttribute('data-dialog-ids') ?? ''))).join(' ');
      expect(shown.split(' ')).toContain(WHEN_RACE.evidence);

      await page.click('#use-paste');
      await page.fill('#conversation-text', '# 10:00 am on 2 June, 2024\nAlex: I moved to Utrecht last week and started a job at the botanical garden.\nSam: Congratulations! Is the commute long?\nAlex: No, I cycle there in ten minutes.');
      await page.fill('#conversation-name', 'offline-note');
      await page.getByTestId('ingest').click();
      await expect(page.locator('#load-message')).toContainText('1 chunk added', { timeout: INGEST_TIMEOUT });
      await ready(page);
      await expect(page.getByTestId('sessions').locator('li')).toHaveCount(6);
      await ask(page, 'Where does Alex work?');
      await expect(page.getByTestId('unit').first()).toContainText('botanical garden');
      await page.screenshot({ path: `${screenshots}offline.png` });
    } finally {
      await context.setOffline(false);
      context.off('request', record);
    }
    expect(requests, 'nothing is fetched after the page has loaded').toEqual([]);
  });

  await test.step('with an OpenAI-compatible endpoint in settings, the answer and its LLM use are shown', async () => {
    const llm = await startOpenAiServer({ handler: () => reply.content('Her name is Pixel.') });
    const key = 'sk-demo-only-in-memory';
    try {
      await page.click('#open-settings');
      await page.fill('#llm-base-url', llm.baseURL);
      await page.fill('#llm-model', 'scripted-model');
      await page.fill('#llm-key', key);
      await page.click('#settings-save');
      await expect(page.getByTestId('llm-status')).toHaveText('LLM: scripted-model');
      await ready(page);
      await ask(page, CAT_NAME.question);
      await expect(page.getByTestId('answer')).toContainText('Her name is Pixel.');
      await expect(page.getByTestId('llm-usage')).toContainText(/^LLM1 call · \d+ tokens$/);
      expect(llm.requests).toHaveLength(1);
      expect(llm.requests[0]?.headers.authorization).toBe(`Bearer ${key}`);
      expect(llm.requests[0]?.body?.messages.at(-1)?.content).toContain(`(${CAT_NAME.evidence}) Jonas: Her name is Pixel`);
      await page.screenshot({ path: `${screenshots}llm-answer.png` });
      expect(await page.evaluate(() => JSON.stringify(localStorage)), 'the key is never saved').not.toContain(key);

      await page.click('#open-settings');
      await page.click('#llm-clear');
      await page.click('#settings-save');
      await expect(page.getByTestId('llm-status')).toHaveText('LLM off');
      await ready(page);
    } finally {
      await llm.close();
    }
  });

  await test.step('forgetting a session asks first, then removes it from memory and from answers', async () => {
    const dismissed = page.waitForEvent('dialog').then((dialog) => dialog.dismiss());
    await page.locator('[data-session="maya-and-jonas/session_2"] button').click();
    await dismissed;
    await expect(page.getByTestId('sessions').locator('li')).toHaveCount(6);
    page.once('dialog', (dialog) => void dialog.accept());
    await page.locator('[data-session="maya-and-jonas/session_2"] button').click();
    await expect(page.locator('#load-message')).toContainText('1 chunk deleted');
    await ready(page);
    await expect(page.locator('#result')).toBeHidden();
    await expect(page.getByTestId('sessions').locator('li')).toHaveCount(5);
    await expect(page.locator('[data-session="maya-and-jonas/session_2"]')).toHaveCount(0);
    await ask(page, CAT_NAME.question);
    const shown = await page.getByTestId('unit').evaluateAll((cards) => cards.map((c) => c.getAttribute('data-dialog-ids') ?? ''));
    expect(shown.join(' ')).not.toMatch(/\bD2:\d+/);
    await expect(page.getByTestId('context')).not.toContainText('Pixel. She');
  });

  await test.step('forgetting everything empties the memory, also after a reload', async () => {
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByTestId('forget-all').click();
    await expect(page.locator('#load-message')).toContainText('Forgot everything: 5 chunks deleted');
    await ready(page);
    for (const layer of ['episode', 'facet', 'facetPoint', 'entity']) await expect(layerCount(page, layer)).toHaveAttribute('data-count', '0');
    await page.reload();
    await ready(page, 180_000);
    await expect(layerCount(page, 'episode')).toHaveAttribute('data-count', '0');
    await expect(page.getByTestId('sessions')).toContainText('Nothing stored yet');
    await expect(page.locator('#suggestions button')).toHaveCount(0);
    await page.screenshot({ path: `${screenshots}forgotten.png` });
  });
});
