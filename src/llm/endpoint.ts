/**
 * Where an OpenAI-compatible endpoint is, as the public options of the LLM adapter and the
 * remote embedder name it: kept apart from the transport so the package's types never need the
 * `openai` package (an optional peer).
 */

/** The `fetch` signature the adapter needs; a proxying wrapper only has to match this. */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** Where an OpenAI-compatible endpoint is and how requests reach it. */
export interface OpenAiEndpoint {
  /** The endpoint including `/v1`; defaults to OpenAI's. */
  baseURL?: string;
  /** Sent as a bearer token; without it no `Authorization` header is sent. */
  apiKey?: string;
  /** Added to every request; can override `Authorization`. */
  headers?: Record<string, string>;
  /** The fetch to call. Default: the global `fetch`. */
  fetch?: FetchLike;
}

/** Why a transport attempt is repeated. */
export type TransportRetryReason = 'rate_limited' | 'http' | 'network' | 'timeout';
