/**
 * Faults in a real browser: two tabs of Chromium (driven with playwright-core) adding to one
 * IndexedDB memory at once (e2e/support/two-tab-memory.ts). The e2e site is built once with
 * Vite into a temporary folder and served by `vite preview` for the whole row.
 */
import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { build, preview, type PreviewServer } from 'vite';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../../e2e/support/chromium.ts';
import { addFromTwoTabs, tabSessions } from '../../e2e/support/two-tab-memory.ts';
import type { Fault } from './fault.ts';

const VITE_CONFIG = resolve(import.meta.dirname, '../../e2e/vite.config.ts');

interface Site {
  url: string;
  browser: Browser;
  close(): Promise<void>;
}

/** Builds and serves the e2e pages, and launches Chromium. */
async function openSite(): Promise<Site> {
  const outDir = await mkdtemp(join(tmpdir(), 'prism-fault-site-'));
  let server: PreviewServer | undefined;
  try {
    await build({ configFile: VITE_CONFIG, logLevel: 'error', build: { outDir, sourcemap: false } });
    server = await preview({ configFile: VITE_CONFIG, logLevel: 'error', build: { outDir }, preview: { host: '127.0.0.1', port: 0 } });
    const url = server.resolvedUrls?.local[0];
    if (!url) throw new Error('vite preview reported no URL');
    const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS] });
    const running = server;
    return {
      url,
      browser,
      close: async () => {
        await browser.close();
        await running.close();
        await rm(outDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await server?.close();
    await rm(outDir, { recursive: true, force: true });
    throw err;
  }
}

const chromiumPresent = await access(CHROMIUM_PATH).then(
  () => true,
  () => false,
);
if (!chromiumPresent) process.stderr.write(`browser.fault.ts: skipped, no Chromium at ${CHROMIUM_PATH} (set PRISM_CHROMIUM)\n`);

const TWO_TAB_RUNS = 3;
let site: Promise<Site> | undefined;

const twoTabs: Fault = {
  name: 'two tabs adding to one IndexedDB memory (Chromium)',
  runs: TWO_TAB_RUNS,
  run: async (i) => {
    site ??= openSite();
    try {
      const { url, browser } = await site;
      // A fresh profile per run: its own, empty IndexedDB.
      const context = await browser.newContext();
      try {
        const [a, b] = await Promise.all([context.newPage(), context.newPage()]);
        await Promise.all([a.goto(new URL('store-memory.html', url).href), b.goto(new URL('store-memory.html', url).href)]);
        const outcome = await addFromTwoTabs({ a, b }, `fault-two-tabs-${i}`);
        const acknowledged = [...outcome.acknowledged.a, ...outcome.acknowledged.b];
        const lost = acknowledged.filter((id) => !outcome.listed.a.includes(id) || !outcome.listed.b.includes(id)).length;
        const everySession = acknowledged.length === tabSessions('a').length + tabSessions('b').length;
        const foundOthers = [...outcome.foundOthers.a, ...outcome.foundOthers.b].every(Boolean);
        for (const failure of outcome.failures) process.stderr.write(`two tabs, run ${i}: ${failure}\n`);
        return { survived: outcome.failures.length === 0 && everySession && foundOthers, recordsLost: lost };
      } finally {
        await context.close();
      }
    } finally {
      if (i === TWO_TAB_RUNS - 1) await site.then((opened) => opened.close(), () => undefined);
    }
  },
};

export const faults: Fault[] = chromiumPresent ? [twoTabs] : [];
