import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
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
 * onnxruntime-node (native CPU kernels; ~4× onnxruntime-web's WASM on MiniLM in Node), pinned at
 * 1.14, whose npm package carries the binaries of every platform and runs no install script, so
 * installing it needs nothing but the npm registry. Same model files and graph as the browser engine.
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
      const options: NodeSessionOptions = { executionProviders: ['cpu'], graphOptimizationLevel: 'all', intraOpNumThreads: threads, interOpNumThreads: 1 };
      // onnxruntime-node 1.14 runs a session made from a file faster than one made from the same
      // bytes in memory, with bit-identical outputs (one short query, MiniLM fp32: ~5.5 vs ~7.5 ms,
      // measured in one process), so the bytes (after the int8 rewrite) go through a temporary file,
      // read whole at creation. Where no temporary file can be written (read-only or full disk), the bytes are used.
      const dir = await mkdtemp(join(tmpdir(), 'prism-onnx-')).catch(() => null);
      if (dir === null) return ortSession(ort, modelBytes, options);
      try {
        const file = join(dir, 'model.onnx');
        const written = await writeFile(file, modelBytes).then(() => true, () => false);
        return await ortSession(ort, written ? file : modelBytes, options);
      } finally {
        // A leftover temporary directory is harmless; failing to remove one must not fail the load.
        await rm(dir, { recursive: true, force: true }).catch(() => undefined);
      }
    },
  };
}
