import { createMiniLmEmbedder, type MiniLmEmbedder, type MiniLmOptions } from './minilm.ts';
import { defaultModelSource } from './model-source.node.ts';
import { onnxNodeEngine } from './ort.node.ts';

/**
 * MiniLM for Node: model files from `defaultModelSource()` (env PRISM_MODEL_DIR, the local model
 * directory, else the Hugging Face hub) unless `options.source` says otherwise, inference on
 * onnxruntime-node (native kernels, one intra-op thread per core unless `numThreads` says
 * otherwise) unless `options.engine` says otherwise.
 */
export function createNodeMiniLmEmbedder(options: MiniLmOptions = {}): Promise<MiniLmEmbedder> {
  const threads = options.numThreads === undefined ? {} : { numThreads: options.numThreads };
  return createMiniLmEmbedder({
    ...options,
    source: options.source ?? defaultModelSource(),
    engine: options.engine ?? onnxNodeEngine(threads),
  });
}
