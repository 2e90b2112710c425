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
   * onnxruntime's `ort-wasm-simd-threaded.wasm` already compiled, for runtimes that refuse to
   * compile WebAssembly from bytes: Cloudflare Workers (workerd) import a `.wasm` file as a
   * `WebAssembly.Module`, e.g. `import ortWasm from 'onnxruntime-web/ort-wasm-simd-threaded.wasm'`.
   * onnxruntime then runs single-threaded in the calling thread (no worker, no proxy); `numThreads`,
   * `wasmPaths`, `wasmBinary` and `device` are ignored.
   */
  wasmModule?: WebAssembly.Module;
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
  const { wasmModule } = options;
  if (wasmModule) return precompiledWasmEngine(wasmModule, options.load ?? (() => import('onnxruntime-web/wasm') as Promise<OrtWeb>));
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

/** A valid, empty WebAssembly module: the `.wasm` bytes onnxruntime is handed in place of the precompiled one. */
const STAND_IN_WASM = Uint8Array.of(0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00);

/** Session starts on precompiled modules, one after the other (see precompiledWasmEngine). */
let precompiledStarts: Promise<unknown> = Promise.resolve();

/**
 * onnxruntime-web on a precompiled module. Its Emscripten loader would take one through an
 * `instantiateWasm` hook, but onnxruntime builds the loader's settings itself and offers no way to
 * pass the hook; what it does pass on is `env.wasm.wasmBinary`, which the loader hands to
 * `WebAssembly.instantiate`. So onnxruntime gets stand-in bytes, and while a session starts (the
 * first one instantiates onnxruntime's WASM, once per realm) `WebAssembly.instantiate` answers a
 * call with exactly those bytes by instantiating the precompiled module with the loader's imports;
 * every other call goes through unchanged. Starts run one at a time, so the original function is
 * always the one put back.
 */
function precompiledWasmEngine(wasmModule: WebAssembly.Module, load: () => Promise<OrtWeb>): InferenceEngine {
  return {
    label: 'onnxruntime-web (wasm, precompiled module, 1 thread)',
    async createSession(modelBytes) {
      const ort = await load();
      // One thread: more would need Web Workers started from a script URL, which Workers lack.
      ort.env.wasm.numThreads = 1;
      ort.env.wasm.proxy = false;
      ort.env.wasm.wasmBinary = STAND_IN_WASM;
      const start = precompiledStarts.then(async () => {
        const instantiate = WebAssembly.instantiate;
        const substitute = (source: BufferSource | WebAssembly.Module, imports?: WebAssembly.Imports) => {
          if (source instanceof WebAssembly.Module) return instantiate(source, imports);
          if (!isStandIn(source)) return instantiate(source, imports);
          return instantiate(wasmModule, imports).then((instance) => ({ module: wasmModule, instance }));
        };
        WebAssembly.instantiate = substitute as typeof WebAssembly.instantiate;
        try {
          return await ortSession(ort, modelBytes, { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
        } finally {
          WebAssembly.instantiate = instantiate;
        }
      });
      precompiledStarts = start.catch(() => undefined);
      return start;
    },
  };
}

/** True for the stand-in bytes (the loader passes a copy of them). */
function isStandIn(source: BufferSource): boolean {
  const bytes = source instanceof ArrayBuffer ? new Uint8Array(source) : new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  return bytes.length === STAND_IN_WASM.length && bytes.every((byte, i) => byte === STAND_IN_WASM[i]);
}
