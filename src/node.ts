/**
 * Node-only entry (`prism-memory/node`): file storage, model and WASM loading from disk,
 * and a one-call `openNodeMemory`. Nothing here may be imported by the universal entry.
 */
import { join, resolve } from 'node:path';
import { LazyEmbedder } from './embed/lazy.ts';
import { MINILM_DIM, miniLmEmbedderId, type MiniLmPrecision } from './embed/minilm.ts';
import { createNodeMiniLmEmbedder } from './embed/minilm.node.ts';
import { defaultModelSource, type NodeModelOptions } from './embed/model-source.node.ts';
import type { ModelSource } from './embed/model-source.ts';
import type { Embedder } from './embed/types.ts';
import { PrismError } from './errors.ts';
import { loadUsearchWasm, type UsearchWasm } from './vector/usearch-wasm.ts';
import { readUsearchWasm } from './vector/wasm-bytes.node.ts';
import { createLlmClient } from './llm/client.ts';
import { llmConfigFromEnv } from './llm/env.ts';
import { Memory } from './memory.ts';
import { llmConfigFromSettings, type MemorySettings } from './open-options.ts';
import { migrateFileStore } from './store/file.node.ts';
import { openSqliteStore } from './store/sqlite.node.ts';
import { packageRoot } from './util/package-root.node.ts';

export * from './index.ts';
export { migrateFileStore } from './store/file.node.ts';
export { openSqliteStore, type SqliteStoreOptions } from './store/sqlite.node.ts';
export {
  cachedModelSource,
  defaultModelDir,
  defaultModelSource,
  fileModelSource,
  modelCacheDir,
  MINILM_DOWNLOAD,
  type ModelDownload,
  type NodeModelOptions,
} from './embed/model-source.node.ts';
export { createNodeMiniLmEmbedder } from './embed/minilm.node.ts';
export { LazyEmbedder } from './embed/lazy.ts';
export { onnxNodeEngine, type NodeEngineOptions } from './embed/ort.node.ts';
export { readUsearchWasm } from './vector/wasm-bytes.node.ts';

/** `../shared/data/locomo/locomo10-dev.json` beside the package, or env `PRISM_LOCOMO`. */
export function defaultLocomoPath(): string {
  return resolve(process.env['PRISM_LOCOMO'] ?? resolve(packageRoot(), '..', 'shared', 'data', 'locomo', 'locomo10-dev.json'));
}

let wasm: Promise<UsearchWasm> | null = null;
/** The usearch WASM module, instantiated once per process from the committed build. */
export function nodeUsearch(): Promise<UsearchWasm> {
  wasm ??= readUsearchWasm().then(loadUsearchWasm);
  return wasm;
}

const embedders = new Map<string, Promise<Embedder>>();
/**
 * A loaded MiniLM embedder (by default from `defaultModelSource()`), shared per (location,
 * precision); a load that failed is not kept, so the next call tries again.
 */
export function nodeEmbedder(precision: MiniLmPrecision = 'int8', source: ModelSource = defaultModelSource()): Promise<Embedder> {
  const key = `${source.location}|${precision}`;
  let embedder = embedders.get(key);
  if (!embedder) {
    const loading = createNodeMiniLmEmbedder({ source, precision });
    loading.catch(() => {
      if (embedders.get(key) === loading) embedders.delete(key);
    });
    embedders.set(key, (embedder = loading));
  }
  return embedder;
}

/**
 * A MiniLM embedder that loads (through `nodeEmbedder`, so shared) on its first `embed`: a memory
 * opened with it lists, gets, counts, exports, imports and deletes without reading the model.
 */
export function lazyNodeEmbedder(precision: MiniLmPrecision = 'int8', model: NodeModelOptions = {}): LazyEmbedder {
  const source = defaultModelSource(model);
  return new LazyEmbedder(miniLmEmbedderId(precision), MINILM_DIM, () => nodeEmbedder(precision, source));
}

/** Options of `openNodeMemory`: where the store is, the model precision, and the settings every open function takes. */
export interface NodeMemoryOptions extends MemorySettings {
  /** Store directory; default `.prism/<name>` under the working directory. */
  dir?: string | undefined;
  /** Default `default`. */
  name?: string;
  /** MiniLM weights. Default `int8`. */
  precision?: MiniLmPrecision;
  /**
   * Where MiniLM is read from (see `defaultModelSource`): an explicit `source`, else env
   * `PRISM_MODEL_DIR`, else the per-user cache (`cacheDir`), downloaded into once with
   * `onProgress` reporting. The model is read on the first `add` or `search`, not at open.
   */
  model?: NodeModelOptions;
  /**
   * Node convenience: `llm` without `llm` settings reads them from PRISM_LLM_BASE_URL /
   * PRISM_LLM_MODEL / PRISM_LLM_API_KEY (`PRISM_LLM_MODEL_<ROLE>` per role). Default `zero-llm`.
   */
  mode?: 'zero-llm' | 'llm';
  /**
   * How long a write waits for another process's writer lock on the same directory before it
   * fails with `STORE_BUSY`. Default 30,000 ms.
   */
  lockTimeoutMs?: number;
}

/**
 * Opens (or creates) a memory in `<dir>/memory.sqlite` with MiniLM (loaded on the first `add`
 * or `search`) and the usearch WASM index.
 */
export async function openNodeMemory(options: NodeMemoryOptions = {}): Promise<Memory> {
  const embedder = lazyNodeEmbedder(options.precision, options.model);
  const usearch = await nodeUsearch();
  const dir = options.dir ?? resolve('.prism', options.name ?? 'default');
  const store = await openSqliteStore(join(dir, 'memory.sqlite'), options.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: options.lockTimeoutMs });
  // A v0.2 directory (memory.prism) moves into the SQLite store once, on first open.
  await migrateFileStore(dir, store);
  let llm = null;
  if (options.llm) llm = createLlmClient({ ...llmConfigFromSettings(options.llm), cache: store });
  else if (options.mode === 'llm') {
    const config = llmConfigFromEnv(process.env);
    if (!config) throw new PrismError('LLM_NOT_CONFIGURED', 'LLM mode needs PRISM_LLM_BASE_URL and PRISM_LLM_MODEL in the environment');
    llm = createLlmClient({ ...config, cache: store });
  }
  return Memory.open({
    store,
    embedder,
    createIndex: (dim) => usearch.createIndex({ dim }),
    llm,
    ...(options.extraction ? { extraction: options.extraction } : {}),
    ...(options.chunking ? { chunking: options.chunking } : {}),
    ...(options.config ? { config: options.config } : {}),
  });
}
