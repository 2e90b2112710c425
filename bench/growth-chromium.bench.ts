/**
 * The growth bench in Chromium (issue #25): runs e2e/growth.bench.ts with its own Playwright
 * config (IndexedDB, the e2e site, Debian's Chromium) and turns the figures it writes into rows
 * named as the Node half's (bench/growth.bench.ts). Sizes: `PRISM_GROWTH_BROWSER_SIZES`, default
 * 1000,30000 messages.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { BrowserGrowthPoint } from '../e2e/growth.bench.ts';
import { percentile } from '../src/eval/metrics.ts';
import type { Row } from './table.ts';

const repoRoot = resolve(import.meta.dirname, '..');

/** Runs the Playwright bench, its output on stderr (stdout is the bench's tables), and reads its figures. */
async function runPlaywright(): Promise<BrowserGrowthPoint[]> {
  const dir = await mkdtemp(join(tmpdir(), 'prism-bench-growth-chromium-'));
  const out = join(dir, 'growth-chromium.json');
  try {
    const cli = join(repoRoot, 'node_modules', '@playwright', 'test', 'cli.js');
    const child = spawn(process.execPath, [cli, 'test', '-c', 'e2e/growth.config.ts'], {
      cwd: repoRoot,
      env: { ...process.env, PRISM_GROWTH_BROWSER_OUT: out },
      stdio: ['ignore', process.stderr, process.stderr],
    });
    const code = await new Promise<number | null>((done, fail) => child.on('error', fail).on('close', done));
    if (code !== 0) throw new Error(`playwright test -c e2e/growth.config.ts exited with ${code}`);
    return JSON.parse(await readFile(out, 'utf8')) as BrowserGrowthPoint[];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function benchGrowthChromium(): Promise<Row[]> {
  const points = await runPlaywright();
  const addAtFirst = percentile(points[0]?.addMs ?? [], 50) ?? Number.NaN;
  return points.flatMap((p) => {
    const at = `${p.messages} messages`;
    const addP50 = percentile(p.addMs, 50) ?? Number.NaN;
    return [
      { name: `${at}: graph nodes per message`, metric: 'nodes', value: p.nodes / p.messages },
      { name: `${at}: graph edges per message`, metric: 'edges', value: p.edges / p.messages },
      { name: `${at}: IndexedDB + OPFS bytes per message beyond the text`, metric: 'KB', value: (p.indexedDbBytes + p.keyRingBytes - p.textBytes) / p.messages / 1024 },
      { name: `${at}: of which OPFS key rings`, metric: 'KB', value: p.keyRingBytes / p.messages / 1024 },
      { name: `${at}: growing to this size (stand-in vectors)`, metric: 's', value: p.growMs / 1000 },
      { name: `${at}: first open after growth to first search result (lexical index built, then saved)`, metric: 'ms', value: p.firstOpenMs },
      { name: `${at}: cold open to first search result (fresh browser; lexical index saved by an earlier search)`, metric: 'ms', value: p.coldOpenMs },
      { name: `${at}: of which the first search (the saved lexical index read)`, metric: 'ms', value: p.firstSearchMs },
      { name: `${at}: search p50 (query embedding incl.)`, metric: 'ms', value: percentile(p.searchMs, 50) ?? Number.NaN },
      { name: `${at}: search p95 (query embedding incl.)`, metric: 'ms', value: percentile(p.searchMs, 95) ?? Number.NaN },
      { name: `${at}: add() of one message`, metric: 'p50 ms', value: addP50, baseline: 'add() at the first size', ratio: addP50 / addAtFirst },
      { name: `${at}: search right after an add, the message added as the query`, metric: 'p50 ms', value: percentile(p.searchAfterAddMs, 50) ?? Number.NaN },
      { name: `${at}: delete of one session`, metric: 'ms', value: p.deleteMs },
      { name: `${at}: JS heap after searches (after GC)`, metric: 'MB', value: p.heapMb },
      { name: `${at}: tab's resident memory after searches`, metric: 'MB', value: p.rendererRssMb },
    ];
  });
}
