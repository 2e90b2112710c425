/**
 * A year of real assistant chat in one memory (issue #25): grows one SQLite scope with the
 * LongMemEval S haystack sessions in order (one session per `add()`; after the last one they
 * come again under new ids, a year later each round) and measures at each size, in a fresh
 * process (bench/growth-probe.ts, run as a user's process runs the library: plain Node on the
 * package as built, see `builtProbe`): nodes and edges per message, store bytes per message beyond
 * the text, the first open after growth to the first search result (the lexical index is built
 * then, and saved) and a cold open after it, search p50/p95 (query embedding included),
 * `add()` p50 of one message, the delete of one session, resident memory and JS heap.
 *
 * Growth uses stand-in vectors (sizes, counts and costs do not depend on them); the probe's
 * queries and adds use the real MiniLM. Sizes: `PRISM_GROWTH_SIZES` (messages, comma-separated),
 * default 1000,10000,30000,100000. Also the zero-LLM ingest of real chat with the real
 * embedder against embedding each of its turns once, in the same run, and the resident memory a
 * fresh process keeps after one `add()` of a long session (those sessions' messages as one), with
 * the embedder's default batches against batches of 32 texts and no token cap (as before they
 * had one), each in its own process, taking turns.
 *
 * Standalone: `npx tsx bench/growth.bench.ts`.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { build, type Plugin } from 'esbuild';
import { Memory } from '../src/memory.ts';
import { createNodeMiniLmEmbedder, nodeEmbedder, nodeUsearch, openSqliteStore } from '../src/node.ts';
import { MemoryStore } from '../src/store/memory.ts';
import type { FirstOpenResult, ProbeResult } from './growth-probe.ts';
import type { IngestResidentResult } from './ingest-resident-probe.ts';
import { fastestOfAlternating } from './fastest.ts';
import { longMemEvalChat, type ChatSession } from './longmemeval-chat.ts';
import { standInEmbedder } from './stand-in.ts';
import type { Row } from './table.ts';

const SIZES = (process.env['PRISM_GROWTH_SIZES'] ?? '1000,10000,30000,100000').split(',').map(Number);
export const PROBE_QUERIES = 41;
/** Sessions ingested for real (MiniLM) to compare ingest with embedding each turn once. */
const REAL_INGEST_SESSIONS = 12;
/** Runs of each side of that comparison, taking turns; each keeps its fastest. */
const REAL_INGEST_REPEATS = 2;
/** The batches before `MiniLmOptions.batchTokens`: 32 texts (the default `batchSize`) of up to 256 word pieces. */
const UNCAPPED_BATCH_TOKENS = 32 * 256;

/** Session `i` of an endless stream: the file's sessions, then again under new ids a year later per round. */
export function sessionAt(sessions: readonly ChatSession[], i: number): ChatSession {
  const base = sessions[i % sessions.length] as ChatSession;
  const round = Math.floor(i / sessions.length);
  if (round === 0) return base;
  const year = Number(base.date.slice(0, 4)) + round;
  return { ...base, id: `${base.id}~${round}`, date: `${year}${base.date.slice(4)}` };
}

async function storeBytes(dir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(dir)) if (name.startsWith('memory.sqlite')) total += (await stat(join(dir, name))).size;
  return total;
}

/** Runs Node with `args` (`--expose-gc` first) in a fresh process and returns the JSON of its last line of output. */
async function freshNode<Result>(args: readonly string[]): Promise<Result> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', ...args], { maxBuffer: 1 << 20 });
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as Result;
}

/** Runs `script` (TypeScript, of this folder) through `tsx` in a fresh process and returns the JSON of its last line of output. */
async function freshProcess<Result>(script: string, args: readonly string[]): Promise<Result> {
  return freshNode<Result>(['--import', 'tsx', join(import.meta.dirname, script), ...args]);
}

const REPO_ROOT = resolve(import.meta.dirname, '..');

/**
 * bench/growth-probe.ts as a user's process runs the library: the package built afresh (`npm
 * run build`, so `dist/` is this checkout's), the probe compiled to one plain ES module in `dir`
 * whose imports of `src/` name the same modules of `dist/`, run by Node with no TypeScript
 * loader. Through `tsx` the probe's process held ~40 MB more resident (the loader's own), a
 * cost no user pays. Returns the module's path.
 */
async function builtProbe(dir: string): Promise<string> {
  await promisify(execFile)('npm', ['run', 'build'], { cwd: REPO_ROOT, maxBuffer: 1 << 24 });
  const sourceRoot = join(REPO_ROOT, 'src');
  const srcToDist: Plugin = {
    name: 'src-to-dist',
    setup(plugin) {
      plugin.onResolve({ filter: /\.ts$/ }, (args) => {
        const inSource = relative(sourceRoot, resolve(args.resolveDir, args.path));
        if (inSource.startsWith('..')) return undefined;
        return { path: pathToFileURL(join(REPO_ROOT, 'dist', inSource.replace(/\.ts$/, '.js'))).href, external: true };
      });
    },
  };
  const outfile = join(dir, 'growth-probe.mjs');
  await build({ entryPoints: [join(import.meta.dirname, 'growth-probe.ts')], outfile, bundle: true, packages: 'external', platform: 'node', format: 'esm', plugins: [srcToDist], logLevel: 'error' });
  return outfile;
}

async function probe(probeFile: string, path: string, queriesPath: string): Promise<ProbeResult>;
async function probe(probeFile: string, path: string, queriesPath: string, mode: 'first'): Promise<FirstOpenResult>;
async function probe(probeFile: string, path: string, queriesPath: string, mode?: 'first'): Promise<ProbeResult | FirstOpenResult> {
  return freshNode([probeFile, path, queriesPath, ...(mode ? [mode] : [])]);
}

/** Zero-LLM ingest of real chat (long assistant turns, `sample`) against embedding each turn once, same embedder build. */
async function realChatIngest(sample: readonly ChatSession[]): Promise<Row[]> {
  const usearch = await nodeUsearch();
  const turns = sample.flatMap((s) => s.messages.map((m) => `${m.role}: ${m.content}`));
  // As the conv-26 ingest bench does: fresh embedders every run, one warm-up batch each.
  const { dense: denseMs, prism: prismMs } = await fastestOfAlternating(REAL_INGEST_REPEATS, {
    dense: async () => {
      const baseline = await createNodeMiniLmEmbedder({ cacheSize: 0 });
      await baseline.embed(['warm up']);
      const t0 = performance.now();
      await baseline.embed(turns);
      const ms = performance.now() - t0;
      await baseline.dispose();
      return ms;
    },
    prism: async () => {
      const embedder = await createNodeMiniLmEmbedder();
      await embedder.embed(['warm up, too']);
      const memory = await Memory.open({ store: new MemoryStore(), embedder, createIndex: (dim) => usearch.createIndex({ dim }) });
      const t1 = performance.now();
      for (const session of sample) await memory.add(session.messages, { sessionId: session.id, date: session.date });
      const ms = performance.now() - t1;
      await memory.close();
      await embedder.dispose();
      return ms;
    },
  });
  const dense = `embedding each turn once (${(denseMs / 1000).toFixed(1)} s)`;
  return [
    { name: `embed each turn once, ${sample.length} LongMemEval sessions (${turns.length} turns), best of ${REAL_INGEST_REPEATS}`, metric: 'ms', value: denseMs },
    { name: `PRISM zero-LLM ingest of the same sessions, best of ${REAL_INGEST_REPEATS}`, metric: 'ms', value: prismMs, baseline: dense, ratio: prismMs / denseMs },
  ];
}

/**
 * Resident memory of a fresh process after one `add()` of the ingest comparison's sessions
 * (`sample`) as one long session (bench/ingest-resident-probe.ts): the embedder's default batches
 * against `UNCAPPED_BATCH_TOKENS`, each side `REAL_INGEST_REPEATS` processes taking turns, each keeping its least.
 */
async function longSessionResident(sample: readonly ChatSession[], dir: string): Promise<Row[]> {
  const messages = sample.flatMap((s) => s.messages);
  const messagesPath = join(dir, 'long-session.json');
  await writeFile(messagesPath, JSON.stringify(messages));
  const run = (batchTokens: number) => freshProcess<IngestResidentResult>('ingest-resident-probe.ts', [messagesPath, String(batchTokens)]);
  const capped: IngestResidentResult[] = [];
  const uncapped: IngestResidentResult[] = [];
  for (let i = 0; i < REAL_INGEST_REPEATS; i++) {
    capped.push(await run(0));
    uncapped.push(await run(UNCAPPED_BATCH_TOKENS));
  }
  const least = (results: IngestResidentResult[], field: keyof IngestResidentResult) => Math.min(...results.map((r) => r[field]));
  const what = `one add() of ${messages.length} LongMemEval messages as one session, real MiniLM, least of ${REAL_INGEST_REPEATS} processes`;
  const before = 'batches of 32 texts, no token cap';
  return [
    { name: `${what}: resident memory, model loaded`, metric: 'MB', value: least(capped, 'modelRssMb') },
    { name: `${what}: resident memory after, ${before}`, metric: 'MB', value: least(uncapped, 'rssMb') },
    { name: `${what}: resident memory after, default batches`, metric: 'MB', value: least(capped, 'rssMb'), baseline: before, ratio: least(capped, 'rssMb') / least(uncapped, 'rssMb') },
    { name: `${what}: add() time, ${before}`, metric: 'ms', value: least(uncapped, 'addMs') },
    { name: `${what}: add() time, default batches`, metric: 'ms', value: least(capped, 'addMs'), baseline: before, ratio: least(capped, 'addMs') / least(uncapped, 'addMs') },
  ];
}

export async function benchGrowth(): Promise<Row[]> {
  const { sessions, questions } = await longMemEvalChat();
  const sample = sessions.slice(0, REAL_INGEST_SESSIONS);
  const rows = await realChatIngest(sample);
  const dir = await mkdtemp(join(tmpdir(), 'prism-bench-growth-'));
  const path = join(dir, 'memory.sqlite');
  const queriesPath = join(dir, 'queries.json');
  await writeFile(queriesPath, JSON.stringify(questions.slice(0, PROBE_QUERIES)));
  const probeFile = await builtProbe(dir);
  const usearch = await nodeUsearch();
  // The probe opens the memory with the shared int8 MiniLM: the stand-in takes its id.
  const real = await nodeEmbedder();
  let messages = 0;
  let textBytes = 0;
  let next = 0;
  let addAt1k: number | null = null;
  try {
    rows.push(...(await longSessionResident(sample, dir)));
    for (const size of [...SIZES].sort((a, b) => a - b)) {
      const memory = await Memory.open({ store: await openSqliteStore(path), embedder: standInEmbedder(real.id, real.dim), createIndex: (dim) => usearch.createIndex({ dim }) });
      while (messages < size) {
        const session = sessionAt(sessions, next++);
        await memory.add(session.messages, { sessionId: session.id, date: session.date });
        messages += session.messages.length;
        textBytes += session.messages.reduce((sum, m) => sum + Buffer.byteLength(m.content), 0);
      }
      const stats = await memory.stats();
      await memory.close();
      const nodes = Object.values(stats.nodes).reduce((a, b) => a + b, 0);
      const edges = Object.values(stats.edges).reduce((a, b) => a + b, 0);
      // The first search after growth builds the lexical index and saves it beside the records;
      // every later open (the probe's) reads it back. The bytes count it.
      const first = await probe(probeFile, path, queriesPath, 'first');
      const bytes = await storeBytes(dir);
      const result = await probe(probeFile, path, queriesPath);
      addAt1k ??= result.addP50;
      const at = `${messages} messages`;
      rows.push(
        { name: `${at}: graph nodes per message`, metric: 'nodes', value: nodes / messages },
        { name: `${at}: graph edges per message`, metric: 'edges', value: edges / messages },
        { name: `${at}: store bytes per message beyond the text`, metric: 'KB', value: (bytes - textBytes) / messages / 1024 },
        { name: `${at}: first open after growth to first search result (lexical index built, then saved)`, metric: 'ms', value: first.firstOpenMs },
        { name: `${at}: cold open to first search result (lexical index saved by an earlier search)`, metric: 'ms', value: result.coldOpenMs },
        { name: `${at}: of which the first search (the saved lexical index read)`, metric: 'ms', value: result.firstSearchMs },
        { name: `${at}: search p50 (query embedding incl.)`, metric: 'ms', value: result.searchP50 },
        { name: `${at}: search p95 (query embedding incl.)`, metric: 'ms', value: result.searchP95 },
        { name: `${at}: add() of one message`, metric: 'p50 ms', value: result.addP50, baseline: 'add() at the first size', ratio: result.addP50 / addAt1k },
        { name: `${at}: search right after an add, the message added as the query`, metric: 'p50 ms', value: result.searchAfterAddP50 },
        { name: `${at}: delete of one session`, metric: 'ms', value: result.deleteMs },
        { name: `${at}: resident memory after searches`, metric: 'MB', value: result.rssMb },
        { name: `${at}: JS heap after searches`, metric: 'MB', value: result.heapMb },
      );
      console.error(`growth: ${at} measured`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return rows;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { formatTable } = await import('./table.ts');
  console.log(formatTable('Growth: one scope of real assistant chat (LongMemEval S sessions), SQLite', await benchGrowth()));
}
