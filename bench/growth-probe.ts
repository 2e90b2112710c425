/**
 * One measurement of the growth bench (bench/growth.bench.ts), in a fresh process so that its
 * memory figures are this memory's alone: `growth-probe.ts <sqlite path> <queries json> [first]`.
 * With the real MiniLM loaded first, it times a cold open to the first search result (and that
 * first search's share of it), search
 * p50/p95 (query embedding included), resident memory and JS heap after the searches, add() of
 * one message p50 (forty adds into one session), the delete of that session, and a search right
 * after each of ten more adds with the message added as its query (an agent's turn: the user's
 * message stored, then recalled against); it prints one JSON line. With `first` it only opens,
 * searches once and closes (the memory then keeps its lexical index saved, as any memory
 * searched before does) and prints `{ "firstOpenMs": … }`.
 *
 * The growth bench runs it as a user's process runs the library: compiled to plain JS against the
 * built package (`dist/`), in Node with no TypeScript loader (bench/growth.bench.ts, `builtProbe`).
 * Run alone through `tsx` it reads the sources, and its process holds ~40 MB more resident (the
 * loader's own).
 */
import { readFile } from 'node:fs/promises';
import { percentile } from '../src/eval/metrics.ts';
import { Memory } from '../src/memory.ts';
import { nodeEmbedder, nodeUsearch, openSqliteStore } from '../src/node.ts';

export interface ProbeResult {
  coldOpenMs: number;
  /** The first search's share of `coldOpenMs`: its one-time work (reading the saved lexical index) and the search itself. */
  firstSearchMs: number;
  searchP50: number;
  searchP95: number;
  addP50: number;
  searchAfterAddP50: number;
  deleteMs: number;
  rssMb: number;
  heapMb: number;
}

export interface FirstOpenResult {
  firstOpenMs: number;
}

const [path, queriesPath, mode] = process.argv.slice(2);
if (!path || !queriesPath) throw new Error('usage: growth-probe.ts <sqlite path> <queries json> [first]');
const queries = JSON.parse(await readFile(queriesPath, 'utf8')) as string[];
const [embedder, usearch] = await Promise.all([nodeEmbedder(), nodeUsearch()]);
await embedder.embed(['warm up the model']);

const t0 = performance.now();
const memory = await Memory.open({ store: await openSqliteStore(path), embedder, createIndex: (dim) => usearch.createIndex({ dim }) });
const opened = performance.now();
await memory.search(queries[0] ?? 'what did I say?', { budget: 2048 });
const answered = performance.now();
const coldOpenMs = answered - t0;
const firstSearchMs = answered - opened;
if (mode === 'first') {
  await memory.close();
  console.log(JSON.stringify({ firstOpenMs: coldOpenMs } satisfies FirstOpenResult));
  process.exit(0);
}

const searches: number[] = [];
for (const query of queries.slice(1)) {
  const t = performance.now();
  await memory.search(query, { budget: 2048 });
  searches.push(performance.now() - t);
}
(globalThis as { gc?: () => void }).gc?.();
const { rss, heapUsed } = process.memoryUsage();

const probeMessage = (i: number) => `Probe message ${i}: I moved my piano lessons to Thursday evenings after work.`;
// Forty: embedding one message alone moves by a millisecond or two from add to add, and the p50
// of ten moved as much between runs, more than a change of a millisecond to the rest of an add.
const ADDS_TIMED = 40;
const adds: number[] = [];
for (let i = 0; i < ADDS_TIMED; i++) {
  const t = performance.now();
  await memory.add([{ role: 'user', content: probeMessage(i) }], { sessionId: 'growth-probe', date: '2030-01-01' });
  adds.push(performance.now() - t);
}
const t1 = performance.now();
await memory.delete({ sessionId: 'growth-probe' });
const deleteMs = performance.now() - t1;
// Then an agent's turns, apart from the adds and the delete above so that those are timed as
// they always were: each message added, then searched with. Deleted untimed, as the memory grows on.
const searchesAfterAdds: number[] = [];
for (let i = 0; i < 10; i++) {
  const content = probeMessage(ADDS_TIMED + i);
  await memory.add([{ role: 'user', content }], { sessionId: 'growth-probe-turns', date: '2030-01-02' });
  const t = performance.now();
  await memory.search(content, { budget: 2048 });
  searchesAfterAdds.push(performance.now() - t);
}
await memory.delete({ sessionId: 'growth-probe-turns' });
await memory.close();

const result: ProbeResult = {
  coldOpenMs,
  firstSearchMs,
  searchP50: percentile(searches, 50) ?? Number.NaN,
  searchP95: percentile(searches, 95) ?? Number.NaN,
  addP50: percentile(adds, 50) ?? Number.NaN,
  searchAfterAddP50: percentile(searchesAfterAdds, 50) ?? Number.NaN,
  deleteMs,
  rssMb: rss / 2 ** 20,
  heapMb: heapUsed / 2 ** 20,
};
console.log(JSON.stringify(result));
