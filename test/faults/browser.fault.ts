/**
 * Faults in a real browser: two tabs of Chromium (driven with playwright-core) adding to one
 * IndexedDB memory at once (e2e/support/two-tab-memory.ts), and deletes searched for on disk in
 * the Chromium profile (e2e/support/delete-on-disk.ts). The e2e site is built with Vite into a
 * temporary folder and served by `vite preview` for each row.
 */
import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { build, preview, type PreviewServer } from 'vite';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../../e2e/support/chromium.ts';
import { bytesFound, deleteOnDisk } from '../../e2e/support/delete-on-disk.ts';
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

let site: Promise<Site> | undefined;

/** Runs `fn` on the shared site, built and served on first use; `last` closes it afterwards (a later row opens it again). */
async function onSite<T>(last: boolean, fn: (site: Site) => Promise<T>): Promise<T> {
  site ??= openSite();
  try {
    return await fn(await site);
  } finally {
    if (last) {
      const closing = site;
      site = undefined;
      await closing.then((opened) => opened.close(), () => undefined);
    }
  }
}

const TWO_TAB_RUNS = 3;

const twoTabs: Fault = {
  name: 'two tabs adding to one IndexedDB memory (Chromium)',
  runs: TWO_TAB_RUNS,
  run: (i) =>
    onSite(i === TWO_TAB_RUNS - 1, async ({ url, browser }) => {
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
    }),
};

const DELETE_ON_DISK_RUNS = 3;

/**
 * Issue 24: a session, a cached reply and a whole user deleted, then everything; each time
 * every file of the Chromium profile is searched for the deleted words and for the keys the
 * deletes retired, with the page open and after the browser closed (e2e/support/delete-on-disk.ts).
 */
const deleteOnDiskRow: Fault = {
  name: 'delete on disk (IndexedDB, Chromium)',
  runs: DELETE_ON_DISK_RUNS,
  run: (i) =>
    onSite(i === DELETE_ON_DISK_RUNS - 1, async ({ url }) => {
      const outcome = await deleteOnDisk(url);
      for (const problem of outcome.problems) process.stderr.write(`delete on disk, run ${i}: ${problem}\n`);
      const checks = [outcome.afterDeletesOpen, outcome.afterDeletesClosed, outcome.afterDeleteAllOpen, outcome.afterDeleteAllClosed];
      const keptSession = outcome.reopened.sessions.includes('session-kept') && outcome.reopened.foundKept;
      const keptReply = outcome.cacheReads[1] !== undefined;
      return {
        survived:
          outcome.problems.length === 0 &&
          outcome.reopened.sessions.length === 1 &&
          outcome.reopened.otherUserSessions.length === 0 &&
          outcome.cacheReads[0] === undefined &&
          outcome.liveKeysFound === outcome.liveKeys,
        recordsLost: (keptSession ? 0 : 1) + (keptReply ? 0 : 1),
        deletedBytesFound: checks.reduce((sum, check) => sum + bytesFound(check), 0),
      };
    }),
};

export const faults: Fault[] = chromiumPresent ? [twoTabs, deleteOnDiskRow] : [];
