/**
 * Retrieval latency in Node, zero-LLM, including the query embedding: PRISM `search()` against
 * a flat dense top-k over turns (same embedder, same usearch index) measured in the same run,
 * on one LoCoMo conversation and then on a memory holding all of them (the same store, grown).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Embedder } from '../src/embed/types.ts';
import { turnLine } from '../src/graph/chunk-text.ts';
import { percentile } from '../src/eval/metrics.ts';
import { parseLocomo, type LocomoSample } from '../src/ingest/locomo.ts';
import type { Memory } from '../src/memory.ts';
import { defaultLocomoPath, nodeEmbedder, nodeUsearch, openNodeMemory } from '../src/node.ts';
import { packRows } from '../src/util/vectors.ts';
import type { Row } from './table.ts';

const CONVERSATION = process.env['PRISM_BENCH_CONVERSATION'] ?? 'conv-26';
const BUDGET = 2048;

export async function benchRetrieval(): Promise<Row[]> {
  const samples = parseLocomo(JSON.parse(await readFile(defaultLocomoPath(), 'utf8')));
  const sample = samples.find((s) => s.conversation.id === CONVERSATION);
  if (!sample) throw new Error(`no ${CONVERSATION} in the LoCoMo file`);
  const embedder = await nodeEmbedder('int8');
  // A fresh store each run: a graph kept from an earlier build could have been made by other code.
  const dir = await mkdtemp(join(tmpdir(), `prism-bench-${CONVERSATION}-`));
  const memory = await openNodeMemory({ dir, name: CONVERSATION });
  try {
    await memory.add(sample.conversation);
    const rows = await measure(memory, embedder, [sample], CONVERSATION);
    // The same memory grown to every conversation of the file, in one scope (one user's history).
    const others = samples.filter((s) => s !== sample);
    for (const other of others) await memory.add(other.conversation);
    return [...rows, ...(await measure(memory, embedder, [sample, ...others], `${samples.length} conversations in one memory`))];
  } finally {
    await memory.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Every question of `held` (category 5 aside) through PRISM and through a flat dense top-50 over all of `held`'s turns. */
async function measure(memory: Memory, embedder: Embedder, held: readonly LocomoSample[], label: string): Promise<Row[]> {
  const questions = held.flatMap((s) => s.questions.filter((q) => q.category !== 5).map((q) => q.question));
  // Baseline: every turn embedded once, flat exact top-k in the same usearch WASM index.
  const turns = held.flatMap((s) => s.conversation.sessions.flatMap((session) => session.turns));
  const turnVectors = await embedder.embed(turns.map(turnLine));
  const index = (await nodeUsearch()).createIndex({ dim: embedder.dim });
  index.add(
    turns.map((_, i) => i),
    packRows(turnVectors, embedder.dim),
  );

  // Warm both paths (prototype bank, lexical index, JIT) before timing.
  await memory.search(questions[0] ?? 'warm up', { budget: BUDGET });
  const prism: number[] = [];
  const flat: number[] = [];
  for (const q of questions) {
    // Distinct texts per run so the embedder's LRU cache does not hide the query embedding.
    const t0 = performance.now();
    await memory.search(`${q} `, { budget: BUDGET });
    prism.push(performance.now() - t0);
    const t1 = performance.now();
    const [qv] = await embedder.embed([`${q}  `]);
    if (qv) index.search(qv, 50);
    flat.push(performance.now() - t1);
  }
  index.dispose();
  // The harness's percentile, so these p50/p95 compare with results.json's; NaN only if no question ran.
  const ms = (times: readonly number[], p: number) => percentile(times, p) ?? NaN;
  const base = `flat dense top-50 over turns (p50 ${ms(flat, 50).toFixed(1)} ms)`;
  return [
    { name: `flat dense top-50, ${label} (${turns.length} turns)`, metric: 'p50 ms', value: ms(flat, 50) },
    { name: `PRISM search zero-LLM, ${label}, budget ${BUDGET}`, metric: 'p50 ms', value: ms(prism, 50), baseline: base, ratio: ms(prism, 50) / ms(flat, 50) },
    { name: `PRISM search zero-LLM, ${label}, budget ${BUDGET}`, metric: 'p95 ms', value: ms(prism, 95) },
  ];
}
