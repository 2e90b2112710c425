/**
 * Browser convenience (pages and Web Workers): a Memory persisted in IndexedDB, embedding with
 * MiniLM on onnxruntime-web from model files the site serves, and the usearch WASM from a URL.
 * Universal code like the rest of `src/`: nothing here needs Node.
 */
import { createMiniLmEmbedder, type MiniLmEmbedder, type MiniLmOptions } from './embed/minilm.ts';
import { fetchBytes, urlModelSource, type DownloadProgress, type UrlFetchOptions } from './embed/model-source.ts';
import { PrismError } from './errors.ts';
import { loadUsearchWasm, type UsearchWasm, type UsearchWasmSource } from './vector/usearch-wasm.ts';
import type { LlmClient } from './llm/types.ts';
import { Memory } from './memory.ts';
import { llmConfigFromSettings, type LlmSettings, type MemorySettings } from './open-options.ts';
import { IndexedDbStore } from './store/idb.ts';

/** Where a page gets the model and the vector index from (both served by the site itself). */
export interface BrowserRuntimeOptions {
  /**
   * Folder URL of all-MiniLM-L6-v2 in the Hugging Face layout (`tokenizer.json`, `onnx/…`), served
   * by the site itself; relative URLs resolve against the page (or worker) location.
   */
  modelBaseUrl: string | URL;
  /** The usearch WASM: a URL (e.g. a bundler's `?url` import of `prism-memory/wasm/usearch.wasm`) or its bytes. */
  usearchWasm: UsearchWasmSource;
  /** Embedder settings other than the source, e.g. `precision`, `numThreads` or `device: 'webgpu'`. */
  miniLm?: Omit<MiniLmOptions, 'source'>;
  /**
   * URL of onnxruntime-web's `ort-wasm-simd-threaded.wasm` as the site serves it (e.g. a bundler's
   * `?url` import of `onnxruntime-web/ort-wasm-simd-threaded.wasm`). Given, it is fetched through
   * the Cache API like the model files; otherwise onnxruntime fetches it itself on every visit.
   */
  ortWasmUrl?: string | URL;
  /** Cache API cache for the model files and the ORT wasm; default `prism-models`, `false` turns it off. */
  modelCache?: string | false;
  /** Download progress of each file (`initiate`, `progress` with bytes loaded and total, `done`). */
  onProgress?: (progress: DownloadProgress) => void;
}

/** The parts of a memory that are loaded once per page and can back several memories. */
export interface BrowserRuntime {
  embedder: MiniLmEmbedder;
  usearch: UsearchWasm;
}

/** Options of `openBrowserMemory`: the runtime (or where to load it from), the database, and the LLM if any. */
export type BrowserMemoryOptions = ({ runtime: BrowserRuntime } | BrowserRuntimeOptions) &
  MemorySettings & {
    /** IndexedDB database name; one per memory. Default `prism-memory`. */
    dbName?: string;
  };

/** Loads the embedder and the usearch module; both may take a few seconds (model download, compilation). */
export async function loadBrowserRuntime(options: BrowserRuntimeOptions): Promise<BrowserRuntime> {
  const fetchOptions: UrlFetchOptions = {
    ...(options.modelCache === undefined ? {} : { cache: options.modelCache }),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  };
  const loadEmbedder = async () => {
    const wasmBinary = options.ortWasmUrl === undefined ? undefined : await fetchBytes(resolveAgainstPage(options.ortWasmUrl), fetchOptions);
    return createMiniLmEmbedder({
      ...options.miniLm,
      ...(wasmBinary ? { wasmBinary } : {}),
      source: urlModelSource(resolveAgainstPage(options.modelBaseUrl), fetchOptions),
    });
  };
  const [embedder, usearch] = await Promise.all([
    loadEmbedder(),
    loadUsearchWasm(typeof options.usearchWasm === 'string' ? resolveAgainstPage(options.usearchWasm) : options.usearchWasm),
  ]);
  return { embedder, usearch };
}

/**
 * Opens (or creates) the memory stored in IndexedDB under `dbName`. Pass `runtime` to reuse an
 * already loaded embedder and usearch module, e.g. when reopening with other LLM settings.
 */
export async function openBrowserMemory(options: BrowserMemoryOptions): Promise<Memory> {
  const runtime = 'runtime' in options ? options.runtime : await loadBrowserRuntime(options);
  const store = await IndexedDbStore.open(options.dbName ? { name: options.dbName } : {});
  const llm = options.llm ? await browserLlmClient(options.llm, store) : null;
  try {
    return await Memory.open({
      store,
      embedder: runtime.embedder,
      createIndex: (dim) => runtime.usearch.createIndex({ dim }),
      llm,
      ...(options.extraction ? { extraction: options.extraction } : {}),
      ...(options.chunking ? { chunking: options.chunking } : {}),
      ...(options.config ? { config: options.config } : {}),
      ...(options.countTokens ? { countTokens: options.countTokens } : {}),
    });
  } catch (err) {
    await store.close();
    throw err;
  }
}

/**
 * Replies are cached in the memory's own database (by request hash), so a repeated question costs
 * nothing. The client module is imported only here, so a zero-LLM page never downloads it.
 */
async function browserLlmClient(settings: LlmSettings, cache: IndexedDbStore): Promise<LlmClient> {
  const config = llmConfigFromSettings(settings, resolveAgainstPage);
  const { createLlmClient } = await import('./llm/client.ts');
  return createLlmClient({ ...config, cache });
}

/** `new URL(url)` fails on relative URLs; a page or worker has a location to resolve them against. */
function resolveAgainstPage(url: string | URL): URL {
  const base = typeof location === 'undefined' ? undefined : location.href;
  try {
    return new URL(url, base);
  } catch (cause) {
    throw new PrismError('INVALID_INPUT', `not a URL: ${String(url)}`, { cause });
  }
}
