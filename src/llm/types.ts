export type LlmRole = 'extract' | 'consolidate' | 'rerank' | 'intent' | 'answer' | 'judge';
export const LLM_ROLES: readonly LlmRole[] = ['extract', 'consolidate', 'rerank', 'intent', 'answer', 'judge'];

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface RoleUsage {
  /** Calls that went to the endpoint (cache hits excluded), however many attempts each took. */
  calls: number;
  promptTokens: number;
  completionTokens: number;
  /** Calls answered from the response cache without a request. */
  cacheHits: number;
  /** Extra attempts beyond each call's first: transport retries and re-asks after invalid JSON. */
  retries: number;
  /** Calls that ended in an error after their retries. */
  failures: number;
}

export type LlmUsage = Record<LlmRole, RoleUsage>;

/** Minimal structural stand-in for a zod schema, so public types don't depend on zod. */
export interface JsonSchemaParser<T> {
  safeParse(value: unknown): { success: true; data: T } | { success: false; error: { message: string } };
}

export interface LlmCallOptions {
  /** Cancels the call (waiting for a slot, a request, or a backoff); it then rejects with `ABORTED`. */
  signal?: AbortSignal;
  /**
   * Stored with a cached reply: the ids of the chunks it was made from, so deleting a chunk
   * (`GraphStore.deleteCached`) forgets what the model was told about it.
   */
  cacheTags?: readonly string[];
}

/** What the pipeline needs from an LLM: JSON calls validated by a schema, and plain text. */
export interface LlmClient {
  chatJson<T>(role: LlmRole, messages: ChatMessage[], schema: JsonSchemaParser<T>, options?: LlmCallOptions): Promise<T>;
  chatText(role: LlmRole, messages: ChatMessage[], options?: LlmCallOptions): Promise<string>;
  usage(): LlmUsage;
}
