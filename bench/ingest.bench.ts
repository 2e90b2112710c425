/**
 * Write speed in Node, zero-LLM:
 * - ingest of a LoCoMo conversation against the dense-turns baseline's ingest (every turn
 *   embedded once with the same embedder, added to the same usearch index), same run, both in
 *   memory (MemoryStore), so the ratio is about compute;
 * - one `add()` per message into a SQLite memory already holding ~1K and ~20K nodes (p50 over
 *   single-message adds with the real embedder). The large memory is grown from the LoCoMo
 *   conversations with a stand-in embedder (deterministic vectors from a text hash, under the
 *   real embedder's id) because embedding 20K nodes for real would take most of the bench.
 *
 * Standalone: `npx tsx bench/ingest.bench.ts`.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Embedder } from '../src/embed/types.ts';
import { percentile } from '../src/eval/metrics.ts';
import { turnLine } from '../src/graph/chunk-text.ts';
import type { Conversation } from '../src/ingest/conversation.ts';
import { parseLocomo } from '../src/ingest/locomo.ts';
import { Memory } from '../src/memory.ts';
import { createNodeMiniLmEmbedder, defaultLocomoPath, nodeUsearch } from '../src/node.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { openSqliteStore } from '../src/store/sqlite.node.ts';
import type { GraphStore } from '../src/store/types.ts';
import { fastestOfAlternating } from './fastest.ts';
import { standInEmbedder } from './stand-in.ts';
import type { Row } from './table.ts';

const CONVERSATION = process.env['PRISM_BENCH_CONVERSATION'] ?? 'conv-26';
const SMALL_NODES = 1_000;
const LARGE_NODES = 20_000;
const TIMED_ADDS = 25;
const REPEATS = 2;

/** `conversation` under another id, so its chunks hash differently and ingest again. */
function copyOf(conversation: Conversation, copy: number): Conversation {
  return { ...conversation, id: `${conversation.id}-copy${copy}` };
}

async function openMemory(store: GraphStore, embedder: Embedder): Promise<Memory> {
  const usearch = await nodeUsearch();
  return Memory.open({ store, embedder, createIndex: (dim) => usearch.createIndex({ dim }) });
}

async function nodeCount(memory: Memory): Promise<number> {
  const { nodes } = await memory.stats();
  return Object.values(nodes).reduce((sum, n) => sum + n, 0);
}

/** Grows the memory with stand-in vectors until it holds at least `target` nodes. */
async function growTo(memory: Memory, conversations: readonly Conversation[], target: number): Promise<void> {
  for (let copy = 0; (await nodeCount(memory)) < target; copy++) {
    for (const conversation of conversations) {
      for (const session of copyOf(conversation, copy).sessions) {
        if ((await nodeCount(memory)) >= target) return;
        await memory.addConversation({ id: `${conversation.id}-copy${copy}`, sessions: [session] });
      }
    }
  }
}

/** p50 ms of single-message adds with the real embedder into the memory in `store`. */
async function addLatency(store: GraphStore, live: readonly { speaker: string; text: string }[], real: Embedder, session: string): Promise<{ p50: number; nodes: number }> {
  const memory = await openMemory(store, real);
  const nodes = await nodeCount(memory);
  const times: number[] = [];
  for (const [i, message] of live.entries()) {
    const t0 = performance.now();
    await memory.add({ sessionId: session, date: '9 June, 2024', messages: [{ speaker: message.speaker, text: `${message.text} (${session} ${i})` }] });
    times.push(performance.now() - t0);
  }
  await memory.close();
  return { p50: percentile(times, 50) ?? Number.NaN, nodes };
}

/**
 * Add latency at ~1K and ~20K nodes in one SQLite store (the Node default), grown with stand-in
 * vectors between the two measurements; each phase opens the file again, as a new process would.
 */
async function addLatencies(conversations: readonly Conversation[], live: readonly { speaker: string; text: string }[], real: Embedder) {
  const dir = await mkdtemp(join(tmpdir(), 'prism-bench-adds-'));
  const path = join(dir, 'memory.sqlite');
  const standIn = standInEmbedder(real.id, real.dim);
  const grow = async (target: number) => {
    const grower = await openMemory(await openSqliteStore(path), standIn);
    await growTo(grower, conversations, target);
    await grower.close();
  };
  try {
    await grow(SMALL_NODES);
    const small = await addLatency(await openSqliteStore(path), live, real, 'live-small');
    await grow(LARGE_NODES);
    const large = await addLatency(await openSqliteStore(path), live, real, 'live-large');
    return { small, large };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function benchIngest(): Promise<Row[]> {
  const samples = parseLocomo(JSON.parse(await readFile(defaultLocomoPath(), 'utf8')));
  const sample = samples.find((s) => s.conversation.id === CONVERSATION);
  if (!sample) throw new Error(`no ${CONVERSATION} in the LoCoMo file`);
  const usearch = await nodeUsearch();

  // Fresh embedders every run, so no run finds another's vectors in a cache; one warm-up batch each.
  const turns = sample.conversation.sessions.flatMap((s) => s.turns);
  const { dense: denseMs, prism: prismMs } = await fastestOfAlternating(REPEATS, {
    dense: async () => {
      const baselineEmbedder = await createNodeMiniLmEmbedder({ cacheSize: 0 });
      await baselineEmbedder.embed(['warm up the session']);
      const t0 = performance.now();
      const turnVectors = await baselineEmbedder.embed(turns.map(turnLine));
      const index = usearch.createIndex({ dim: baselineEmbedder.dim });
      turnVectors.forEach((v, i) => index.add([i], v));
      const ms = performance.now() - t0;
      index.dispose();
      await baselineEmbedder.dispose();
      return ms;
    },
    prism: async () => {
      const prismEmbedder = await createNodeMiniLmEmbedder();
      await prismEmbedder.embed(['warm up the session, too']);
      const memory = await openMemory(new MemoryStore(), prismEmbedder);
      const t1 = performance.now();
      await memory.addConversation(sample.conversation);
      const ms = performance.now() - t1;
      await memory.close();
      await prismEmbedder.dispose();
      return ms;
    },
  });

  const others = samples.filter((s) => s.conversation.id !== CONVERSATION).map((s) => s.conversation);
  const live = turns.slice(0, TIMED_ADDS);
  // A fresh embedder: none of the timed messages' sentences may sit in a cache from the ingest above.
  const liveEmbedder = await createNodeMiniLmEmbedder();
  const { small, large } = await addLatencies(others, live, liveEmbedder);
  await liveEmbedder.dispose();

  const dense = `dense-turns ingest (${(denseMs / 1000).toFixed(1)} s)`;
  const smallName = `add() p50 at ${small.nodes} nodes`;
  return [
    { name: `dense-turns ingest, ${CONVERSATION} (${turns.length} turns embedded once), best of ${REPEATS}`, metric: 'ms', value: denseMs },
    { name: `PRISM zero-LLM ingest, ${CONVERSATION}, best of ${REPEATS}`, metric: 'ms', value: prismMs, baseline: dense, ratio: prismMs / denseMs },
    { name: `PRISM add() of one message, memory of ${small.nodes} nodes`, metric: 'p50 ms', value: small.p50 },
    { name: `PRISM add() of one message, memory of ${large.nodes} nodes`, metric: 'p50 ms', value: large.p50, baseline: smallName, ratio: large.p50 / small.p50 },
  ];
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.table(await benchIngest());
}
