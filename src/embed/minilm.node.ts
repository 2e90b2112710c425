import { availableParallelism } from 'node:os';
import { createMiniLmEmbedder, type MiniLmEmbedder, type MiniLmOptions } from './minilm.ts';
import { defaultModelSource } from './model-source.node.ts';

/** The same cap onnxruntime-web applies to its own default. */
const MAX_NODE_THREADS = 4;

/**
 * MiniLM for Node: model files from `defaultModelSource()` (env PRISM_MODEL_DIR, the local model
 * directory, else the Hugging Face hub) unless `options.source` says otherwise, and one WASM thread per core up to 4 (onnxruntime-web's own default uses half the cores).
 */
export function createNodeMiniLmEmbedder(options: MiniLmOptions = {}): Promise<MiniLmEmbedder> {
  return createMiniLmEmbedder({
    ...options,
    source: options.source ?? defaultModelSource(),
    numThreads: options.numThreads ?? Math.min(MAX_NODE_THREADS, availableParallelism()),
  });
}
