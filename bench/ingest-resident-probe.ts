/**
 * A fresh process's resident memory after one long session of real chat is added with the real
 * MiniLM, zero-LLM (bench/growth.bench.ts runs it once per setting): argv `messagesFile
 * batchTokens` (0: the embedder's default). The messages are a JSON list of `{ role, content }`,
 * added as one session in one `add()`, as an import of a long chat would. Prints one JSON line,
 * `IngestResidentResult`.
 */
import { readFile } from 'node:fs/promises';
import { Memory } from '../src/memory.ts';
import { createNodeMiniLmEmbedder, nodeUsearch } from '../src/node.ts';
import { MemoryStore } from '../src/store/memory.ts';

export interface IngestResidentResult {
  /** Resident memory with the model loaded, after one short embed. */
  modelRssMb: number;
  /** Resident memory after the add, the memory closed and garbage collected. */
  rssMb: number;
  addMs: number;
}

const [messagesFile = '', batchTokens = '0'] = process.argv.slice(2);
const messages = JSON.parse(await readFile(messagesFile, 'utf8')) as Array<{ role: 'user' | 'assistant'; content: string }>;
const residentMb = (): number => {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().rss / 2 ** 20;
};
const embedder = await createNodeMiniLmEmbedder(Number(batchTokens) > 0 ? { batchTokens: Number(batchTokens) } : {});
await embedder.embed(['warm up']);
const modelRssMb = residentMb();
const usearch = await nodeUsearch();
const memory = await Memory.open({ store: new MemoryStore(), embedder, createIndex: (dim) => usearch.createIndex({ dim }) });
const t0 = performance.now();
await memory.add(messages, { sessionId: 'long-session', date: '2024-05-01T10:00:00' });
const addMs = performance.now() - t0;
await memory.close();
const result: IngestResidentResult = { modelRssMb, rssMb: residentMb(), addMs };
console.log(JSON.stringify(result));
