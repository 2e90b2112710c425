/**
 * PRISM, the universal entry (browsers, workers, workerd, Deno, Node): what an app needs to
 * keep and search a memory. `prism-memory/node` adds `openNodeMemory` (a store on disk, the
 * model read from disk); `prism-memory/advanced` has the building blocks (stores, embedders,
 * vector indexes, the LLM adapter, the graph and retrieval internals); `prism-memory/ai-sdk`
 * and `prism-memory/mcp` connect a memory to the Vercel AI SDK and to MCP clients.
 */
export {
  Memory,
  type MemoryOptions,
  type AddOptions,
  type MessagesInput,
  type Message,
  type SearchOptions,
  type SearchResult,
  type SearchUnit,
  type AnswerResult,
  type DeleteTarget,
  type MemoryStats,
} from './memory.ts';
export type { MemoryTurn, SessionInfo, FactInfo, MemoryRecord } from './memory/records.ts';
export type { InputMessage, SpeakerMessage, RoleMessage, ContentPart } from './ingest/input.ts';
export type { Scope, ResolvedScope } from './scope.ts';
export { PrismError, type PrismErrorCode } from './errors.ts';
export type { JsonValue } from './graph/types.ts';
export type { Conversation, ConversationSession, ConversationTurn } from './ingest/conversation.ts';
export type { IngestOptions, IngestProgress, IngestReport } from './ingest/pipeline.ts';
export type { ChunkingOptions } from './ingest/chunking.ts';
export type { Intent, IntentTier, RetrievalMode } from './retrieve/types.ts';
export type { PrismConfig, DeepPartial } from './config.ts';
export {
  openBrowserMemory,
  loadBrowserRuntime,
  type BrowserMemoryOptions,
  type BrowserRuntime,
  type BrowserRuntimeOptions,
} from './browser.ts';
export type { LlmSettings, MemorySettings } from './open-options.ts';
export type { TokenCounter } from './util/tokens.ts';
export type { DownloadProgress } from './embed/model-source.ts';
