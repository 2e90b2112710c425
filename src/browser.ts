/**
 * Browser convenience (pages and Web Workers): a Memory persisted in IndexedDB, embedding with
 * MiniLM on onnxruntime-web from model files the site serves, and the usearch WASM from a URL.
 * Universal code like the rest of `src/`: nothing here needs Node.
 */
import { createMiniLmEmbedder, type MiniLmEmbedder, type MiniLmOptions } from './embed/minilm.ts';
import { urlModelSource } from './embed/model-source.ts';
import { PrismError } from './errors.ts';
import { loadUsearchWasm, type UsearchWasm, type UsearchWasmSource } from './vector/usearch-wasm.ts';
import { createLlmClient } from './llm/client.ts';
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
  /** Embedder settings other than the source, e.g. `wasmPaths` (where onnxruntime-web's `.wasm` is served) or `precision`. */
  miniLm?: Omit<MiniLmOptions, 'source'>;
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
  const [embedder, usearch] = await Promise.all([
    createMiniLmEmbedder({ ...options.miniLm, source: urlModelSource(resolveAgainstPage(options.modelBaseUrl)) }),
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
  const llm = options.llm ? browserLlmClient(options.llm, store) : null;
  try {
    return await Memory.open({
      store,
      embedder: runtime.embedder,
      createIndex: (dim) => runtime.usearch.createIndex({ dim }),
      llm,
      ...(options.extraction ? { extraction: options.extraction } : {}),
      ...(options.chunking ? { chunking: options.chunking } : {}),
      ...(options.config ? { config: options.config } : {}),
    });
  } catch (err) {
    await store.close();
    throw err;
  }
}

/** Replies are cached in the memory's own database (by request hash), so a repeated question costs nothing. */
function browserLlmClient(settings: LlmSettings, cache: IndexedDbStore): LlmClient {
  return createLlmClient({ ...llmConfigFromSettings(settings, resolveAgainstPage), cache });
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
