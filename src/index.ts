/**
 * PRISM public API (universal entry: browsers, workers, workerd, Deno, Node). Node-only
 * helpers (file store, reading the model and WASM from disk) are in `prism-memory/node`.
 */
export { Memory, type MemoryOptions, type Message, type MessagesInput, type DeleteTarget, type MemoryStats, type AnswerResult } from './memory.ts';
export { DEFAULT_CONFIG, resolveConfig, type PrismConfig, type IngestConfig, type RetrievalConfig, type RetrievalFlags, type DeepPartial } from './config.ts';
export { PrismError, type PrismErrorCode } from './errors.ts';
export type * from './graph/types.ts';
export { MemoryGraph } from './graph/memory-graph.ts';

// browser convenience (pages and Web Workers)
export { openBrowserMemory, loadBrowserRuntime, type BrowserMemoryOptions, type BrowserRuntime, type BrowserRuntimeOptions, type BrowserLlmSettings } from './browser.ts';

// embed
export type { Embedder, EmbedOptions } from './embed/types.ts';
export { createMiniLmEmbedder, MINILM_DIM, type MiniLmEmbedder, type MiniLmOptions, type MiniLmPrecision } from './embed/minilm.ts';
export { urlModelSource, huggingFaceModelSource, MINILM_HUB_ID, type ModelSource } from './embed/model-source.ts';

// index
export type { VectorIndex, SearchHit, IndexKind } from './vector/types.ts';
export { loadUsearchWasm, type UsearchWasm, type UsearchWasmSource, type IndexOptions } from './vector/usearch-wasm.ts';
export { bruteForceSearch } from './vector/brute-force.ts';

// store
export type { GraphStore, WriteBatch } from './store/types.ts';
export { MemoryStore } from './store/memory.ts';
export { IndexedDbStore, type IndexedDbStoreOptions } from './store/idb.ts';
export { openDurableObjectStore, type DurableObjectStorageLike } from './store/durable-object.ts';
export { encodeCheckpoint, decodeCheckpoint, exportCheckpoint, importCheckpoint } from './store/checkpoint.ts';

// llm
export type { LlmClient, LlmRole, LlmUsage, RoleUsage, ChatMessage } from './llm/types.ts';
export { createLlmClient, type LlmConfig, type LlmModels, type FetchLike } from './llm/client.ts';
export { llmConfigFromEnv } from './llm/env.ts';

// ingest
export type { Conversation, ConversationSession, ConversationTurn } from './ingest/conversation.ts';
export type { ChunkingOptions } from './ingest/chunking.ts';
export type { IngestOptions, IngestProgress, IngestReport } from './ingest/pipeline.ts';
export { parseLocomo, CATEGORY_NAMES, type LocomoSample, type LocomoQuestion, type LocomoCategory } from './ingest/locomo.ts';

// retrieve
export type { RetrieveOptions, RetrieveResult } from './retrieve/retrieve.ts';
export type { RetrievedUnit } from './retrieve/units.ts';
export type { BundleEntry, Intent, IntentTier, PathTrace, RankedEpisode, RetrievalMode, TraceEdge, TraceNode } from './retrieve/types.ts';
export { formatTrace } from './retrieve/bundle-search.ts';
export { countTokens, packContext, type ContextUnit, type PackedContext } from './retrieve/pack.ts';
