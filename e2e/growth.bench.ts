import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { test } from '@playwright/test';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { PROBE_QUERIES, sessionAt } from '../bench/growth.bench.ts';
import { longMemEvalChat, type ChatSession } from '../bench/longmemeval-chat.ts';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './support/chromium.ts';

/**
 * The Chromium half of the growth bench (issue #25; bench/growth.bench.ts is the Node half, on
 * SQLite): grows one IndexedDB scope with the LongMemEval S sessions in order, one `add()` per
 * session, stand-in vectors, and measures at each size in a freshly launched browser on the same
 * profile, with the real MiniLM: nodes and edges per message, the profile's IndexedDB and OPFS
 * bytes per message beyond the text, cold open to the first search result, search and `add()`
 * times, the delete of one session, JS heap and the tab's resident memory.
 *
 * Not a CI test (CI runs `*.spec.ts`): `npx playwright test -c e2e/growth.config.ts`, or
 * `PRISM_BENCH_ONLY=chromium npm run bench` (bench/growth-chromium.bench.ts). Sizes:
 * `PRISM_GROWTH_BROWSER_SIZES` (messages, comma-separated), default 1000,30000. The figures go
 * to `PRISM_GROWTH_BROWSER_OUT` as JSON, default e2e/out/growth-chromium.json. With
 * `PRISM_GROWTH_BROWSER_PROFILE` set to a folder, each size also gets one more cold open, in a
 * browser of its own after the measured ones (so no figure pays for the profiler), recorded as a
 * CPU profile of the page: `<folder>/cold-open-<messages>.cpuprofile`, which Chromium's DevTools
 * open and resolve through the site's source maps. With `PRISM_GROWTH_BROWSER_KEEP` set to a
 * folder, the browser profile lives there and is kept: a later run with the same folder grows
 * only past what the folder holds (`growth-state.json`) and measures the sizes it already holds
 * without growing or first opening them again (their growth figures are the growing run's), so
 * two trees can be measured on one grown memory, one after the other, on the same port.
 */

const SIZES = (process.env.PRISM_GROWTH_BROWSER_SIZES ?? '1000,30000').split(',').map(Number);
const GROWTH_BROWSER_OUT = resolve(process.env.PRISM_GROWTH_BROWSER_OUT ?? join(import.meta.dirname, 'out', 'growth-chromium.json'));
const PROFILE_DIR = process.env.PRISM_GROWTH_BROWSER_PROFILE;
const KEEP_DIR = process.env.PRISM_GROWTH_BROWSER_KEEP;
/** Sampling interval of a cold open's CPU profile, in microseconds: fine enough for a many-second open, a few MB of profile. */
const PROFILE_SAMPLING_US = 500;
const DB_NAME = 'prism-growth';
/** Sessions handed to the page per call: a few hundred KB of text, small enough to keep progress visible. */
const BATCH_SESSIONS = 50;

/** One size's figures as measured (times raw: the bench takes the percentiles). */
export interface BrowserGrowthPoint {
  messages: number;
  /** UTF-8 bytes of the messages' text. */
  textBytes: number;
  nodes: number;
  edges: number;
  /** Files of the profile's IndexedDB folder (LevelDB and blobs), the browser closed. */
  indexedDbBytes: number;
  /** Files of the profile's File System folder: OPFS, where the store keeps its key rings. */
  keyRingBytes: number;
  /** Wall time of growing from the previous size to this one (stand-in vectors). */
  growMs: number;
  /** The first open after growth to its first search result: the lexical index is built then (and saved when the memory closes). */
  firstOpenMs: number;
  /** A later cold open to the first search result, reading the saved lexical index. */
  coldOpenMs: number;
  /** The first search's share of `coldOpenMs`: its one-time work (reading the saved lexical index) and the search itself. */
  firstSearchMs: number;
  searchMs: number[];
  addMs: number[];
  /** A search right after each add, the message added as its query. */
  searchAfterAddMs: number[];
  deleteMs: number;
  /** V8 heap of the page after the searches and a full GC. */
  heapMb: number;
  /** Resident memory of the tab's renderer process after the searches (Linux /proc). */
  rendererRssMb: number;
}

/** A browser on the bench's own profile directory; page errors and external requests fail the run. */
class Browser {
  private constructor(
    private readonly context: BrowserContext,
    private readonly problems: string[],
  ) {}

  static async launch(profileDir: string): Promise<Browser> {
    const context = await chromium.launchPersistentContext(profileDir, { executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS] });
    const problems: string[] = [];
    await context.route(
      (url) => url.hostname !== '127.0.0.1' && url.hostname !== 'localhost',
      (route) => {
        problems.push(`external request: ${route.request().url()}`);
        return route.abort('blockedbyclient');
      },
    );
    return new Browser(context, problems);
  }

  async open(url: string): Promise<Page> {
    const page = await this.context.newPage();
    page.on('pageerror', (err) => this.problems.push(`page error: ${err.stack ?? err.message}`));
    await page.goto(url);
    return page;
  }

  /** The page's V8 heap after a full collection, from the DevTools protocol. */
  async heapMb(page: Page): Promise<number> {
    const cdp = await this.context.newCDPSession(page);
    await cdp.send('HeapProfiler.collectGarbage');
    const { usedSize } = await cdp.send('Runtime.getHeapUsage');
    await cdp.detach();
    return usedSize / 2 ** 20;
  }

  /** Runs `run` in `page` under the DevTools CPU profiler and writes the profile to `out`. */
  async profile(page: Page, run: () => Promise<unknown>, out: string): Promise<void> {
    const cdp = await this.context.newCDPSession(page);
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: PROFILE_SAMPLING_US });
    await cdp.send('Profiler.start');
    await run();
    const { profile } = await cdp.send('Profiler.stop');
    await cdp.detach();
    await mkdir(dirname(out), { recursive: true });
    await writeFile(out, JSON.stringify(profile));
  }

  /**
   * Resident memory of the largest renderer process: the tab's (the only page open), which holds
   * the memory's working set, the model and the WASM heaps.
   */
  async rendererRssMb(): Promise<number> {
    const browser = this.context.browser();
    if (!browser) throw new Error('no browser behind the persistent context');
    const cdp = await browser.newBrowserCDPSession();
    const { processInfo } = await cdp.send('SystemInfo.getProcessInfo');
    await cdp.detach();
    let largest = 0;
    for (const { type, id } of processInfo) {
      if (type !== 'renderer') continue;
      const status = await readFile(`/proc/${id}/status`, 'utf8');
      largest = Math.max(largest, Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0));
    }
    return largest / 1024;
  }

  /** Closes the browser (Chromium flushes and closes its files) and throws what went wrong in it. */
  async close(): Promise<void> {
    await this.context.close();
    if (this.problems.length > 0) throw new Error(this.problems.join('\n'));
  }
}

async function bytesUnder(dir: string): Promise<number> {
  // A folder Chromium has not made yet (no key ring written, say) holds nothing.
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  let total = 0;
  for (const entry of entries) if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
  return total;
}

/** What a kept profile folder holds (`PRISM_GROWTH_BROWSER_KEEP`): how far it is grown, and each size's growth figures. */
interface KeptGrowth {
  messages: number;
  textBytes: number;
  /** The next session to add. */
  next: number;
  sizes: Record<number, GrownSize>;
}

/** A size's figures that its growth gave (a kept folder measures the size again without them). */
type GrownSize = Pick<BrowserGrowthPoint, 'messages' | 'textBytes' | 'nodes' | 'edges' | 'growMs' | 'firstOpenMs'>;

const KEPT_STATE = 'growth-state.json';

/** The kept folder's growth so far; none for a new folder (or no kept folder). */
async function keptGrowth(profileDir: string): Promise<KeptGrowth> {
  const none: KeptGrowth = { messages: 0, textBytes: 0, next: 0, sizes: {} };
  if (KEEP_DIR === undefined) return none;
  return readFile(join(profileDir, KEPT_STATE), 'utf8').then((json) => JSON.parse(json) as KeptGrowth, () => none);
}

/**
 * Grows the memory of `profileDir` from `grown` (changed in place) to `size` messages, then opens
 * it once: the first open after growth builds the lexical index, and closing waits for its save,
 * which every later open reads back (as in any memory searched before).
 */
async function growTo(profileDir: string, pageUrl: string, grown: KeptGrowth, size: number, sessions: readonly ChatSession[], firstQuery: string[]): Promise<GrownSize> {
  const grower = await Browser.launch(profileDir);
  const growing = await grower.open(pageUrl);
  await growing.evaluate((name) => window.growthHarness.openForGrowth(name), DB_NAME);
  const t0 = performance.now();
  while (grown.messages < size) {
    const batch: ChatSession[] = [];
    while (batch.length < BATCH_SESSIONS && grown.messages < size) {
      const session = sessionAt(sessions, grown.next++);
      batch.push(session);
      grown.messages += session.messages.length;
      grown.textBytes += session.messages.reduce((sum, m) => sum + Buffer.byteLength(m.content), 0);
    }
    await growing.evaluate((chat) => window.growthHarness.addSessions(chat), batch);
    console.error(`growth-chromium: ${grown.messages} messages, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  }
  const growMs = performance.now() - t0;
  const { nodes, edges } = await growing.evaluate(() => window.growthHarness.graphSize());
  await growing.evaluate(() => window.growthHarness.close());
  await grower.close();

  const opener = await Browser.launch(profileDir);
  const opening = await opener.open(pageUrl);
  await opening.evaluate(() => window.growthHarness.loadModel());
  const { coldOpenMs: firstOpenMs } = await opening.evaluate(({ name, asked }) => window.growthHarness.openCold(name, asked), { name: DB_NAME, asked: firstQuery });
  await opening.evaluate(() => window.growthHarness.close());
  await opener.close();
  return { messages: grown.messages, textBytes: grown.textBytes, nodes, edges, growMs, firstOpenMs };
}

test('growth of one IndexedDB scope of real assistant chat in Chromium', async ({ baseURL }) => {
  test.setTimeout(0);
  const pageUrl = new URL('/growth.html', baseURL).href;
  const { sessions, questions } = await longMemEvalChat();
  const queries = questions.slice(0, PROBE_QUERIES);
  const profileDir = KEEP_DIR === undefined ? await mkdtemp(join(tmpdir(), 'prism-growth-chromium-')) : resolve(KEEP_DIR);
  const kept = await keptGrowth(profileDir);
  const points: BrowserGrowthPoint[] = [];
  try {
    for (const size of [...SIZES].sort((a, b) => a - b)) {
      let grown = kept.sizes[size];
      if (grown === undefined) {
        if (kept.messages >= size) throw new Error(`${profileDir} is grown to ${kept.messages} messages already, past ${size}: grow a new folder`);
        grown = await growTo(profileDir, pageUrl, kept, size, sessions, queries.slice(0, 1));
        kept.sizes[size] = grown;
        if (KEEP_DIR !== undefined) await writeFile(join(profileDir, KEPT_STATE), JSON.stringify(kept));
      } else if (grown.messages !== kept.messages) {
        throw new Error(`${KEPT_STATE} in ${profileDir} holds ${kept.messages} messages, not the ${grown.messages} measured at size ${size}: grow a new folder`);
      }
      // What the memory keeps on disk, the saved index included; not the model files (the Cache API's folder).
      const indexedDbBytes = await bytesUnder(join(profileDir, 'Default', 'IndexedDB'));
      const keyRingBytes = await bytesUnder(join(profileDir, 'Default', 'File System'));

      // A fresh browser on the same profile: nothing of the memory is in any process yet.
      const prober = await Browser.launch(profileDir);
      const probing = await prober.open(pageUrl);
      await probing.evaluate(() => window.growthHarness.loadModel());
      const searches = await probing.evaluate(({ name, asked }) => window.growthHarness.openCold(name, asked), { name: DB_NAME, asked: queries });
      const heapMb = await prober.heapMb(probing);
      const rendererRssMb = await prober.rendererRssMb();
      const probe = await probing.evaluate(() => window.growthHarness.addsAndDelete());
      await probing.evaluate(() => window.growthHarness.close());
      await prober.close();
      if (PROFILE_DIR !== undefined) {
        const profiler = await Browser.launch(profileDir);
        const profiled = await profiler.open(pageUrl);
        await profiled.evaluate(() => window.growthHarness.loadModel());
        const openCold = () => profiled.evaluate(({ name, asked }) => window.growthHarness.openCold(name, asked), { name: DB_NAME, asked: queries.slice(0, 1) });
        await profiler.profile(profiled, openCold, resolve(PROFILE_DIR, `cold-open-${grown.messages}.cpuprofile`));
        await profiled.evaluate(() => window.growthHarness.close());
        await profiler.close();
      }
      points.push({ ...grown, indexedDbBytes, keyRingBytes, ...searches, heapMb, rendererRssMb, ...probe });
      console.error(`growth-chromium: ${grown.messages} messages measured`);
    }
  } finally {
    if (KEEP_DIR === undefined) await rm(profileDir, { recursive: true, force: true });
  }
  await mkdir(dirname(GROWTH_BROWSER_OUT), { recursive: true });
  await writeFile(GROWTH_BROWSER_OUT, JSON.stringify(points, null, 2));
});
