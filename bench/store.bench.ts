/**
 * Store cost on a memory the size of seven LoCoMo conversations (≈19K nodes, ≈25K edges,
 * 384-d vectors on every node and relation edge), synthesized so the figures do not depend on
 * the extractor. Before: the v0.2 file store, which decoded the whole checkpoint on open and
 * rewrote (and fsynced) the whole checkpoint on every commit. After: the SQLite store.
 *
 * Standalone: `npx tsx bench/store.bench.ts`.
 */
import { mkdtemp, open, readFile, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { mulberry32 } from '../src/eval/stats.ts';
import { percentile } from '../src/eval/metrics.ts';
import type { Chunk, GraphEdge, GraphNode, MemorySnapshot } from '../src/graph/types.ts';
import { DEFAULT_PARTITION } from '../src/scope.ts';
import { decodeCheckpoint, encodeCheckpoint } from '../src/store/checkpoint.ts';
import { SnapshotTable, snapshotAsBatch } from '../src/store/snapshot.ts';
import { openSqliteStore } from '../src/store/sqlite.node.ts';
import type { WriteBatch } from '../src/store/types.ts';
import type { Row } from './table.ts';

const DIM = 384;
const EPISODES = 1_900;
/** Per episode: 1 episode + 3 facets + 6 facet points = 10 nodes; plus shared entities. */
const FACETS = 3;
const POINTS_PER_FACET = 2;
const ENTITIES = 900;
const OPEN_RUNS = 3;
const COMMIT_RUNS = 10;

function unitVector(random: () => number): Float32Array {
  const vector = Float32Array.from({ length: DIM }, () => random() * 2 - 1);
  let norm = 0;
  for (const x of vector) norm += x * x;
  const scale = 1 / Math.sqrt(norm);
  return vector.map((x) => x * scale);
}

/** ≈19.9K nodes and ≈25K edges, relation edges embedded like PRISM's. */
export function syntheticMemory(seed = 1): MemorySnapshot {
  const random = mulberry32(seed);
  const nodes: GraphNode[] = [];
  const edges: GraphEdge[] = [];
  const chunks: Chunk[] = [];
  let key = 0;
  const edge = (type: GraphEdge['type'], from: string, to: string, chunkId: string, description: string | null): void => {
    edges.push({ id: `${type}:${from}->${to}`, key: key++, type, from, to, chunkId, description, confidence: type === 'causal' ? 0.7 : null });
  };
  for (let e = 0; e < ENTITIES; e++) nodes.push({ layer: 'entity', id: `entity:${e}`, key: key++, name: `Entity ${e}`, entityType: 'person', chunkIds: [] });
  for (let i = 0; i < EPISODES; i++) {
    const chunkId = `chunk:${i}`;
    const text = `Speaker A: turn ${i} about the garden, the trip and the new job. `.repeat(12);
    chunks.push({ id: chunkId, sessionId: `s${i >> 4}`, header: `[Session ${i >> 4}]`, text, time: null, order: i, turns: [{ dialogId: `D${i}:1`, speaker: 'A', text }] });
    const episodeId = `ep:${i}`;
    nodes.push({ layer: 'episode', id: episodeId, key: key++, chunkId, summary: `Episode ${i}: a summary of one chunk of conversation`, time: null, order: i });
    if (i > 0) edge('temporal', `ep:${i - 1}`, episodeId, chunkId, 'happened before');
    for (let f = 0; f < FACETS; f++) {
      const facetId = `facet:${i}:${f}`;
      nodes.push({ layer: 'facet', id: facetId, key: key++, chunkId, episodeId, theme: `theme ${f}` });
      edge('belongs_to', facetId, episodeId, chunkId, null);
      for (let p = 0; p < POINTS_PER_FACET; p++) {
        const pointId = `point:${i}:${f}:${p}`;
        const entityId = `entity:${Math.floor(random() * ENTITIES)}`;
        nodes.push({ layer: 'facetPoint', id: pointId, key: key++, chunkId, episodeId, facetId, content: `A fact ${p} about theme ${f} of episode ${i}`, entityId, timeText: null, time: null, dialogIds: [`D${i}:1`] });
        edge('belongs_to', pointId, facetId, chunkId, null);
        if (p === 0) edge('involves_entity', pointId, entityId, chunkId, null);
      }
    }
  }
  const vectors = new Map<string, Float32Array>();
  for (const node of nodes) vectors.set(node.id, unitVector(random));
  for (const e of edges) if (e.description !== null) vectors.set(e.id, unitVector(random));
  return {
    meta: { schemaVersion: 1, embedderId: 'bench/random', dim: DIM, nextKey: key, chunkCount: EPISODES, settings: {} },
    nodes,
    edges,
    chunks,
    vectors,
    hashes: new Set(chunks.map((c) => c.id)),
  };
}

/** One ingested chunk's worth of records: what a single `add()` commits. */
function smallBatch(i: number): WriteBatch {
  const random = mulberry32(1000 + i);
  const chunkId = `new-chunk:${i}`;
  const episodeId = `new-ep:${i}`;
  return {
    putChunks: [{ id: chunkId, sessionId: 'new', header: '[new]', text: 'A: one more message.', time: null, order: 10_000 + i, turns: [] }],
    putNodes: [{ layer: 'episode', id: episodeId, key: 1_000_000 + i, chunkId, summary: 'one more', time: null, order: 10_000 + i }],
    putVectors: [[episodeId, unitVector(random)]],
    putHashes: [chunkId],
  };
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}

async function medianOf(runs: number, run: (i: number) => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) times.push(await timed(() => run(i)));
  return percentile(times, 50) ?? Number.NaN;
}

/** The v0.2 FileStore commit, kept here as the baseline: apply, re-encode everything, write, fsync, rename, fsync the directory. */
async function legacyCommit(dir: string, table: SnapshotTable, batch: WriteBatch): Promise<void> {
  table.apply(batch);
  const temp = join(dir, 'memory.prism.tmp');
  const handle = await open(temp, 'w');
  try {
    await handle.writeFile(encodeCheckpoint(table.view()!));
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, join(dir, 'memory.prism'));
  const dirHandle = await open(dir, 'r');
  try {
    await dirHandle.sync();
  } finally {
    await dirHandle.close();
  }
}

export async function benchStore(): Promise<Row[]> {
  const dir = await mkdtemp(join(tmpdir(), 'prism-bench-store-'));
  try {
    const memory = syntheticMemory();
    const size = `${(memory.nodes.length / 1000).toFixed(1)}K nodes, ${(memory.edges.length / 1000).toFixed(1)}K edges`;
    const checkpointPath = join(dir, 'memory.prism');
    const sqlitePath = join(dir, 'memory.sqlite');

    const table = SnapshotTable.from(memory);
    await legacyCommit(dir, table, {});
    const seeded = await openSqliteStore(sqlitePath);
    await seeded.commit(DEFAULT_PARTITION, snapshotAsBatch(memory));
    await seeded.close();

    const fileOpen = await medianOf(OPEN_RUNS, async () => decodeCheckpoint(await readFile(checkpointPath)));
    const sqliteOpen = await medianOf(OPEN_RUNS, async () => {
      const store = await openSqliteStore(sqlitePath);
      const loaded = await store.load(DEFAULT_PARTITION);
      await store.close();
      if (loaded?.nodes.length !== memory.nodes.length) throw new Error('the SQLite store lost nodes');
    });

    const fileCommit = await medianOf(COMMIT_RUNS, (i) => legacyCommit(dir, table, smallBatch(i)));
    const store = await openSqliteStore(sqlitePath);
    const sqliteCommit = await medianOf(COMMIT_RUNS, (i) => store.commit(DEFAULT_PARTITION, smallBatch(i)));
    await store.close();

    const fileBaseline = 'v0.2 file checkpoint';
    return [
      { name: `cold open + load, file checkpoint (${size})`, metric: 'ms (median)', value: fileOpen },
      { name: `cold open + load, SQLite (${size})`, metric: 'ms (median)', value: sqliteOpen, baseline: fileBaseline, ratio: sqliteOpen / fileOpen },
      { name: 'commit one chunk, full checkpoint rewrite + fsync', metric: 'ms (median)', value: fileCommit },
      { name: 'commit one chunk, SQLite WAL transaction + fsync', metric: 'ms (median)', value: sqliteCommit, baseline: fileBaseline, ratio: sqliteCommit / fileCommit },
    ];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { formatTable } = await import('./table.ts');
  console.log(formatTable('Store: cold open and one-chunk commit', await benchStore()));
}
