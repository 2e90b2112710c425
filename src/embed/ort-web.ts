import type { Env, InferenceSession } from 'onnxruntime-web';
import { ortSession, type InferenceEngine, type OrtModule } from './engine.ts';

export type WebDevice = 'wasm' | 'webgpu';

export interface WebEngineOptions {
  /**
   * WASM threads. onnxruntime-web configures its WASM runtime once per JS realm, so this,
   * `wasmPaths` and `wasmBinary` only take effect for the first session created. Default:
   * onnxruntime's own choice — 1 in a page that is not cross-origin isolated, where
   * SharedArrayBuffer (and so threads) is unavailable; serve the page with
   * `Cross-Origin-Opener-Policy: same-origin` and `Cross-Origin-Embedder-Policy: require-corp`
   * to get threads.
   */
  numThreads?: number;
  /** Where onnxruntime-web loads its `.wasm`/`.mjs` files from (`ort.env.wasm.wasmPaths`), e.g. a CDN or static folder. */
  wasmPaths?: Env.WasmPrefixOrFilePaths;
  /** The `.wasm` bytes themselves (e.g. read from the Cache API), so onnxruntime fetches nothing. */
  wasmBinary?: Uint8Array;
  /**
   * `webgpu` (opt-in) runs on the GPU where `navigator.gpu` exists, loading onnxruntime's
   * WebGPU build only then; elsewhere it falls back to `wasm`. Default `wasm`.
   */
  device?: WebDevice;
  /** How the onnxruntime-web module is imported; Node (which cannot run the WASM-only browser bundle) passes `() => import('onnxruntime-web')`. */
  load?: () => Promise<OrtWeb>;
}

/** onnxruntime-web's module as both of its builds expose it. */
export type OrtWeb = OrtModule<InferenceSession.SessionOptions> & { env: Env };

/** True where the WebGPU API exists (it may still refuse an adapter). */
export function hasWebGpu(): boolean {
  return typeof navigator !== 'undefined' && 'gpu' in navigator && navigator.gpu !== undefined;
}

/**
 * onnxruntime-web: its WASM-only build (`onnxruntime-web/wasm`, 14 MB of WASM instead of the
 * default build's 28 MB WebGPU-capable one), or, with `device: 'webgpu'` where the browser has
 * WebGPU, the WebGPU build.
 */
export function onnxWebEngine(options: WebEngineOptions = {}): InferenceEngine {
  const device: WebDevice = options.device === 'webgpu' && hasWebGpu() ? 'webgpu' : 'wasm';
  const load =
    options.load ??
    (device === 'webgpu' ? () => import('onnxruntime-web/webgpu') as Promise<OrtWeb> : () => import('onnxruntime-web/wasm') as Promise<OrtWeb>);
  return {
    label: `onnxruntime-web (${device}${options.numThreads === undefined ? '' : `, ${options.numThreads} threads`})`,
    async createSession(modelBytes) {
      const ort = await load();
      if (options.numThreads !== undefined) ort.env.wasm.numThreads = options.numThreads;
      if (options.wasmPaths !== undefined) ort.env.wasm.wasmPaths = options.wasmPaths;
      if (options.wasmBinary !== undefined) ort.env.wasm.wasmBinary = options.wasmBinary;
      return ortSession(ort, modelBytes, {
        executionProviders: device === 'webgpu' ? ['webgpu', 'wasm'] : ['wasm'],
        graphOptimizationLevel: 'all',
      });
    },
  };
}
