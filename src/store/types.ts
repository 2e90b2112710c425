import type { Chunk, GraphEdge, GraphNode, MemoryMeta, MemorySnapshot } from '../graph/types.ts';

/**
 * One atomic write. A store applies all of it or none of it, so a crash between two
 * commits leaves the memory at the last committed batch.
 */
export interface WriteBatch {
  putNodes?: GraphNode[];
  deleteNodes?: string[];
  putEdges?: GraphEdge[];
  deleteEdges?: string[];
  putChunks?: Chunk[];
  deleteChunks?: string[];
  putVectors?: Array<[id: string, vector: Float32Array]>;
  deleteVectors?: string[];
  putHashes?: string[];
  deleteHashes?: string[];
  meta?: MemoryMeta;
}

/** The narrow persistence interface every backend (IndexedDB, file, memory) implements. */
export interface GraphStore {
  /** Loads the whole memory, or `null` when the store is empty. */
  load(): Promise<MemorySnapshot | null>;
  commit(batch: WriteBatch): Promise<void>;
  /** Removes everything. */
  clear(): Promise<void>;
  /** A small key-value area for caches (e.g. LLM responses); values are strings. */
  getCached(key: string): Promise<string | undefined>;
  putCached(key: string, value: string): Promise<void>;
  close(): Promise<void>;
}
