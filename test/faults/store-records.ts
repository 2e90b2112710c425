import type { GraphNode, MemoryMeta, MemorySnapshot } from '../../src/graph/types.ts';
import type { WriteBatch } from '../../src/store/types.ts';
import { DEFAULT_VECTOR_PRECISION, roundVector } from '../../src/store/vector-codec.ts';

/** The fault scenarios' vector size: small, so thousands of batches stay quick. */
export const WRITER_DIM = 8;

const META: MemoryMeta = { schemaVersion: 1, embedderId: 'faults/synthetic', dim: WRITER_DIM, nextKey: 0, chunkCount: 0, settings: {} };

/**
 * Batch `i` of `writer`: one chunk, its episode node, the node's vector and the chunk hash.
 * Four records that must land together; the first batch of an empty store carries meta.
 */
export function writerBatch(writer: string, i: number, withMeta: boolean): WriteBatch {
  const chunkId = `${writer}:${i}`;
  const node: GraphNode = { layer: 'episode', id: `ep:${chunkId}`, key: i, chunkId, summary: `batch ${i} of ${writer}`, time: null, order: i };
  const vector = writerVector(i);
  return {
    putChunks: [{ id: chunkId, sessionId: writer, header: '', text: `batch ${i} of ${writer} `.repeat(20), time: null, order: i, turns: [] }],
    putNodes: [node],
    putVectors: [[node.id, vector]],
    putHashes: [chunkId],
    ...(withMeta ? { meta: META } : {}),
  };
}

/** Batch `i`'s vector: its number first, so a census tells batches' vectors apart. */
function writerVector(i: number): Float32Array {
  const vector = new Float32Array(WRITER_DIM).fill(0.25);
  vector[0] = i;
  return vector;
}

export interface BatchCensus {
  /** Batch numbers of `writer` present whole (chunk, node, vector with the right content, hash). */
  whole: Set<number>;
  /** Batches of which only some records are present: a torn commit. */
  torn: number;
}

/** Which of `writer`'s batches a loaded memory holds, and whether any is torn. */
export function censusOf(snapshot: MemorySnapshot | null, writer: string): BatchCensus {
  const whole = new Set<number>();
  let torn = 0;
  if (!snapshot) return { whole, torn };
  const chunks = new Set(snapshot.chunks.map((c) => c.id));
  const nodes = new Set(snapshot.nodes.map((n) => n.id));
  const seen = new Set<string>([...chunks, ...snapshot.hashes].filter((id) => id.startsWith(`${writer}:`)));
  for (const chunkId of seen) {
    const i = Number(chunkId.slice(writer.length + 1));
    const vector = snapshot.vectors.get(`ep:${chunkId}`);
    // As the store rounds it (i4 may clip the largest value to its top level).
    const stored = roundVector(writerVector(i), DEFAULT_VECTOR_PRECISION);
    const present = [chunks.has(chunkId), nodes.has(`ep:${chunkId}`), vector?.[0] === stored[0], snapshot.hashes.has(chunkId)];
    if (present.every(Boolean)) whole.add(i);
    else torn++;
  }
  return { whole, torn };
}
