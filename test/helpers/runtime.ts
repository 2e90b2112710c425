import type { Embedder } from '../../src/embed/types.ts';
import type { VectorIndex } from '../../src/vector/types.ts';
import { nodeEmbedder, nodeUsearch } from '../../src/node.ts';

/** The real parts tests run on: MiniLM (int8) from the local model folder and the usearch WASM index. */
export interface TestRuntime {
  embedder: Embedder;
  createIndex: (dim: number) => VectorIndex;
}

export async function testRuntime(): Promise<TestRuntime> {
  const [embedder, usearch] = await Promise.all([nodeEmbedder('int8'), nodeUsearch()]);
  return { embedder, createIndex: (dim) => usearch.createIndex({ dim }) };
}
