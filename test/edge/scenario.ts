import type { Embedder } from '../../src/embed/types.ts';
import type { VectorIndex } from '../../src/vector/types.ts';
import { Memory } from '../../src/memory.ts';
import { formatTrace } from '../../src/retrieve/bundle-search.ts';
import { MemoryStore } from '../../src/store/memory.ts';
import { conversation } from '../helpers/conversation.ts';

/**
 * One scenario, run unchanged in Node, Deno and workerd: ingest the hand-written conversation
 * into an in-memory store, ask questions, export the portable checkpoint. Plain JSON out, so
 * the test can compare runtimes.
 */
export const EDGE_QUERIES = [
  'When did Caroline go to the LGBTQ support group?',
  'What did Melanie paint?',
  'Where does Max like to run?',
] as const;

export interface ScenarioSearch {
  query: string;
  intent: string;
  tier: string;
  dialogIds: string[];
  units: { id: string; score: number; trace: string }[];
}

export interface ScenarioResult {
  runtime: string;
  stats: Awaited<ReturnType<Memory['stats']>>;
  searches: ScenarioSearch[];
  /** `Memory.export()` bytes, base64. */
  checkpoint: string;
}

export async function runEdgeScenario(runtime: string, embedder: Embedder, createIndex: (dim: number) => VectorIndex): Promise<ScenarioResult> {
  const memory = await Memory.open({ store: new MemoryStore(), embedder, createIndex, llm: null });
  await memory.add(conversation);
  const searches = await searchAll(memory);
  return { runtime, stats: await memory.stats(), searches, checkpoint: toBase64(await memory.export()) };
}

export async function searchAll(memory: Memory): Promise<ScenarioSearch[]> {
  const searches: ScenarioSearch[] = [];
  for (const query of EDGE_QUERIES) {
    const result = await memory.search(query, { budget: 256, config: { flags: { intentRouting: true } } });
    searches.push({
      query,
      intent: result.intent,
      tier: result.tier,
      dialogIds: result.dialogIds,
      units: result.units.map((u) => ({ id: u.id, score: u.score, trace: formatTrace(u.trace) })),
    });
  }
  return searches;
}

function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

export function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}
