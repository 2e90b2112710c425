import { availableParallelism } from 'node:os';
import { ortSession, type InferenceEngine, type OrtModule } from './engine.ts';

/** The options of onnxruntime-node 1.14's `InferenceSession.create` that the engine sets. */
interface NodeSessionOptions {
  executionProviders: string[];
  graphOptimizationLevel: 'all';
  intraOpNumThreads: number;
  interOpNumThreads: number;
}

export interface NodeEngineOptions {
  /** Threads inside one operator (onnxruntime's intra-op pool). Default: one per core. */
  numThreads?: number;
}

/**
 * onnxruntime-node (native CPU kernels; ~4× onnxruntime-web's WASM on MiniLM in Node), the 1.14
 * build @xenova/transformers also installs. Same model files and graph as the browser engine.
 */
export function onnxNodeEngine(options: NodeEngineOptions = {}): InferenceEngine {
  const threads = options.numThreads ?? availableParallelism();
  return {
    label: `onnxruntime-node 1.14 (cpu, ${threads} threads)`,
    async createSession(modelBytes) {
      // A CommonJS package: Node's ESM loader exposes its API as the default export, loaders that
      // transpile to CommonJS (tsx, vitest) as the namespace itself.
      const loaded: { default?: unknown } = await import('onnxruntime-node');
      const ort = ('InferenceSession' in loaded ? loaded : loaded.default) as OrtModule<NodeSessionOptions>;
      return ortSession(ort, modelBytes, {
        executionProviders: ['cpu'],
        graphOptimizationLevel: 'all',
        intraOpNumThreads: threads,
        interOpNumThreads: 1,
      });
    },
  };
}
