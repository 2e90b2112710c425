/**
 * `prism-memory/advanced`: the parts a memory is built from, for custom runtimes (a `Memory.open`
 * over your own store, embedder or vector index), inspection and tuning. Universal code like the
 * main entry; less stable than it between minor versions.
 */
export type { MemoryView } from './memory.ts';
export { DEFAULT_CONFIG, resolveConfig, type IngestConfig, type RetrievalConfig, type RetrievalFlags } from './config.ts';

// graph (what `memory.inspect()` shows)
export { LAYERS, EDGE_TYPES } from './graph/types.ts';
export type {
  Layer,
  RelationType,
  EdgeType,
  EntityType,
  EpisodeNode,
  FacetNode,
  FacetPointNode,
  EntityNode,
  GraphNode,
  GraphEdge,
  Chunk,
  ChunkTurn,
  MemoryMeta,
  MemorySnapshot,
} from './graph/types.ts';
export type { MemoryGraph } from './graph/memory-graph.ts';

// embedding
export type { Embedder, EmbedOptions } from './embed/types.ts';
export { createMiniLmEmbedder, MINILM_DIM, type MiniLmEmbedder, type MiniLmOptions, type MiniLmPrecision } from './embed/minilm.ts';
export { urlModelSource, huggingFaceModelSource, MINILM_HUB_ID, DEFAULT_MODEL_CACHE, type ModelSource, type UrlFetchOptions } from './embed/model-source.ts';
export type { InferenceEngine, EngineSession } from './embed/engine.ts';
export { onnxWebEngine, hasWebGpu, type WebEngineOptions, type WebDevice } from './embed/ort-web.ts';
export type { Int8Dequantize } from './embed/weight-only-int8.ts';
export { remoteEmbedder, type RemoteEmbedderOptions } from './embed/remote.ts';
export { durableObjectModelSource } from './embed/durable-object-model-source.ts';
export { loadTokenCounter } from './util/tokens.ts';

// vector indexes
export type { VectorIndex, SearchHit, IndexKind, IndexRows, RecordForm } from './vector/types.ts';
export type { IndexSpace } from './vector/index-set.ts';
export { DEFAULT_PREFILTER, loadUsearchWasm, type Prefilter, type UsearchWasm, type UsearchWasmSource, type IndexOptions } from './vector/usearch-wasm.ts';
export { bruteForceSearch } from './vector/brute-force.ts';
export { flatIndex } from './vector/flat-index.ts';

// stores
export type { GraphStore, WriteBatch } from './store/types.ts';
export { MemoryStore } from './store/memory.ts';
export { IndexedDbStore, type IndexedDbStoreOptions } from './store/idb.ts';
export { openDurableObjectStore, type DurableObjectStorageLike } from './store/durable-object.ts';
export { encodeCheckpoint, decodeCheckpoint } from './store/checkpoint.ts';

// LLM adapter
export type { LlmClient, LlmRole, LlmUsage, RoleUsage, ChatMessage } from './llm/types.ts';
export { createLlmClient, type LlmConfig, type LlmModels, type FetchLike } from './llm/client.ts';
export { llmConfigFromEnv } from './llm/env.ts';

// retrieval
export type { RetrieveOptions, RetrieveResult } from './retrieve/retrieve.ts';
export type { RetrievedUnit, UnitKind } from './retrieve/units.ts';
export type { BundleEntry, PathTemplate, PathTrace, RankedEpisode, TraceEdge, TraceNode } from './retrieve/types.ts';
export { formatTrace } from './retrieve/bundle-search.ts';
export { countTokens, packContext, type ContextUnit, type PackedContext } from './retrieve/pack.ts';
