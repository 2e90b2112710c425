import type OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { PrismError, throwIfAborted } from '../errors.ts';
import { responseCacheKey, type LlmResponseCache } from './cache.ts';
import { Semaphore, sleep } from './concurrency.ts';
import { callerFaultCode, LlmError } from './errors.ts';
import { extractJson } from './json.ts';
import { backoffDelay, DEFAULT_RETRY_POLICY, isRetryableStatus, retryAfterMs, type RetryPolicy } from './retry.ts';
import {
  LLM_ROLES,
  type ChatMessage,
  type JsonSchemaParser,
  type LlmCallOptions,
  type LlmClient,
  type LlmRole,
  type LlmUsage,
  type RoleUsage,
} from './types.ts';

/** The `fetch` signature the adapter needs; a proxying wrapper only has to match this. */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** A model for every role: `default`, overridden per role where given. */
export type LlmModels = { default: string } & Partial<Record<LlmRole, string>>;

/** Why an attempt is being repeated. */
export type LlmRetryReason = 'rate_limited' | 'http' | 'network' | 'timeout' | 'bad_json' | 'schema';

export interface LlmRetryEvent {
  role: LlmRole;
  reason: LlmRetryReason;
  /** 1 for the first repeat of this call, 2 for the second, … */
  retry: number;
  /** HTTP status behind the retry, when there was a response. */
  status?: number;
  /** How long the adapter waits before the repeat (0 for re-asks after invalid JSON). */
  delayMs: number;
}

export interface LlmConfig {
  /** OpenAI-compatible endpoint including `/v1`; defaults to OpenAI's. */
  baseURL?: string;
  /**
   * Sent as a bearer token. Optional: a browser app can point `baseURL` or `fetch` at its own
   * proxy that adds credentials, so the page never holds a key.
   */
  apiKey?: string;
  models: LlmModels;
  /** Added to every request (e.g. a proxy's own auth header); can override `Authorization`. */
  headers?: Record<string, string>;
  /** The fetch to call (e.g. one that adds credentials or goes through a proxy). Default: the global `fetch`. */
  fetch?: FetchLike;
  /**
   * Ask for `response_format: json_object` on JSON calls (default true). With it, OpenAI needs
   * the word "JSON" in the prompt and a top-level object; turn it off for servers that reject it.
   */
  jsonMode?: boolean;
  /** Limit on each attempt (default 60 s); an attempt that runs over is retried, then `LLM_TIMEOUT`. */
  timeoutMs?: number;
  /** Requests in flight at once across all roles (default 4). */
  concurrency?: number;
  /** Retries of rate-limited, failed and timed-out calls. Default: 4 retries, 0.5 s backoff doubling up to 30 s. */
  retry?: Partial<RetryPolicy>;
  /**
   * Re-asks after a reply that is not valid JSON or fails the schema (default 1). Servers are
   * not bit-exact even at temperature 0, so one repeat often succeeds; more rarely pays.
   */
  invalidJsonRetries?: number;
  /** Response cache; only replies that parsed and validated are stored. */
  cache?: LlmResponseCache;
  /** Observes every retry, e.g. to report progress or log rate limiting. */
  onRetry?: (event: LlmRetryEvent) => void;
}

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';
const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_CONCURRENCY = 4;
const DEFAULT_INVALID_JSON_RETRIES = 1;
/** The openai package's own timer is set past ours so that ours, which we can attribute, fires first. */
const PACKAGE_TIMEOUT_MARGIN_MS = 1_000;
/** Stands in for a key the client does not hold; the `Authorization` header is then removed. */
const NO_API_KEY = 'no-key-held-by-this-client';

type RequestBody = ChatCompletionCreateParamsNonStreaming;

/** What a finished call accepts as a reply; a rejection may be re-asked. */
type Acceptance<T> = { accepted: true; value: T } | { accepted: false; code: 'LLM_BAD_JSON' | 'LLM_SCHEMA'; message: string };

/** A failed attempt, classified for the retry loop; `reason` is set when it is worth retrying. */
interface AttemptFailure {
  code: 'LLM_TIMEOUT' | 'LLM_RATE_LIMITED' | 'LLM_HTTP' | 'LLM_AUTH' | 'LLM_CONFIG';
  message: string;
  status: number | undefined;
  cause: unknown;
  reason: Exclude<LlmRetryReason, 'bad_json' | 'schema'> | undefined;
  retryAfterMs: number | undefined;
}

export function createLlmClient(config: LlmConfig): LlmClient {
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...config.retry };
  const timeoutMs = config.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const invalidJsonRetries = config.invalidJsonRetries ?? DEFAULT_INVALID_JSON_RETRIES;
  const jsonMode = config.jsonMode ?? true;
  if (!(timeoutMs > 0)) throw new PrismError('INVALID_INPUT', `timeoutMs must be positive, got ${timeoutMs}`);
  if (!Number.isInteger(policy.maxRetries) || policy.maxRetries < 0 || !Number.isInteger(invalidJsonRetries) || invalidJsonRetries < 0) {
    throw new PrismError('INVALID_INPUT', 'retry counts must be non-negative integers');
  }
  const slots = new Semaphore(config.concurrency ?? DEFAULT_CONCURRENCY);
  const usage = emptyUsage();

  // The openai package is imported on the first request, so a page that never calls an LLM never loads it.
  let connection: Promise<OpenAiConnection> | null = null;
  const connect = (): Promise<OpenAiConnection> => {
    connection ??= openAiConnection(config, timeoutMs).catch((error: unknown) => {
      connection = null;
      throw error;
    });
    return connection;
  };

  function notifyRetry(event: LlmRetryEvent): void {
    usage[event.role].retries++;
    config.onRetry?.(event);
  }

  async function attempt(role: LlmRole, body: RequestBody, signal: AbortSignal | undefined): Promise<string | AttemptFailure> {
    const { client, errors } = await connect();
    const controller = new AbortController();
    const forwardAbort = (): void => controller.abort(signal?.reason);
    signal?.addEventListener('abort', forwardAbort, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    try {
      const completion = await client.chat.completions.create(body, { signal: controller.signal, maxRetries: 0 });
      usage[role].promptTokens += completion.usage?.prompt_tokens ?? 0;
      usage[role].completionTokens += completion.usage?.completion_tokens ?? 0;
      return completion.choices?.[0]?.message?.content ?? '';
    } catch (error) {
      throwIfAborted(signal);
      return classifyFailure(error, timedOut, errors);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', forwardAbort);
    }
  }

  /** Sends `body` until a reply arrives, retrying transport failures under the policy. */
  async function request(role: LlmRole, body: RequestBody, signal: AbortSignal | undefined, attempts: { count: number }): Promise<string> {
    for (let retry = 0; ; retry++) {
      const release = await slots.acquire(signal);
      let outcome: string | AttemptFailure;
      try {
        attempts.count++;
        outcome = await attempt(role, body, signal);
      } finally {
        release();
      }
      if (typeof outcome === 'string') return outcome;
      const { code, message, status, cause, reason } = outcome;
      if (reason === undefined || retry >= policy.maxRetries) {
        throw new LlmError(code, message, { status, cause, attempts: attempts.count });
      }
      const delayMs = Math.min(policy.maxDelayMs, outcome.retryAfterMs ?? backoffDelay(retry, policy));
      notifyRetry({ role, reason, retry: attempts.count, ...(status === undefined ? {} : { status }), delayMs });
      await sleep(delayMs, signal);
    }
  }

  async function call<T>(
    role: LlmRole,
    messages: ChatMessage[],
    json: boolean,
    accept: (raw: string) => Acceptance<T>,
    options: LlmCallOptions | undefined,
  ): Promise<T> {
    const signal = options?.signal;
    throwIfAborted(signal);
    const body = requestBody(config.models[role] ?? config.models.default, messages, json && jsonMode);
    const cache = config.cache;
    const cacheKey = cache ? await responseCacheKey(body) : undefined;
    if (cache && cacheKey) {
      const cached = await cache.getCached(cacheKey);
      // A cached reply that no longer validates (say, the schema changed) is asked for again.
      const hit = cached === undefined ? undefined : accept(cached);
      if (hit?.accepted) {
        usage[role].cacheHits++;
        return hit.value;
      }
    }
    usage[role].calls++;
    const attempts = { count: 0 };
    try {
      for (let reask = 0; ; reask++) {
        const raw = await request(role, body, signal, attempts);
        const outcome = accept(raw);
        if (outcome.accepted) {
          if (cache && cacheKey) await cache.putCached(cacheKey, raw, options?.cacheTags ?? []);
          return outcome.value;
        }
        if (reask >= invalidJsonRetries) {
          throw new LlmError(outcome.code, outcome.message, { raw, attempts: attempts.count });
        }
        notifyRetry({ role, reason: outcome.code === 'LLM_SCHEMA' ? 'schema' : 'bad_json', retry: attempts.count, delayMs: 0 });
      }
    } catch (error) {
      usage[role].failures++;
      throw error;
    }
  }

  return {
    chatJson<T>(role: LlmRole, messages: ChatMessage[], schema: JsonSchemaParser<T>, options?: LlmCallOptions): Promise<T> {
      return call(role, messages, true, (raw) => acceptJson(raw, schema), options);
    },
    chatText(role: LlmRole, messages: ChatMessage[], options?: LlmCallOptions): Promise<string> {
      return call(role, messages, false, (raw) => ({ accepted: true, value: raw }), options);
    },
    usage(): LlmUsage {
      return Object.fromEntries(LLM_ROLES.map((role) => [role, { ...usage[role] }])) as LlmUsage;
    },
  };
}

function emptyUsage(): LlmUsage {
  const zero = (): RoleUsage => ({ calls: 0, promptTokens: 0, completionTokens: 0, cacheHits: 0, retries: 0, failures: 0 });
  return Object.fromEntries(LLM_ROLES.map((role) => [role, zero()])) as LlmUsage;
}

/** The request, built in a fixed key order so equal requests hash to equal cache keys. */
function requestBody(model: string, messages: ChatMessage[], json: boolean): RequestBody {
  return {
    model,
    messages: messages.map(({ role, content }) => ({ role, content })),
    temperature: 0,
    ...(json ? { response_format: { type: 'json_object' as const } } : {}),
  };
}

function acceptJson<T>(raw: string, schema: JsonSchemaParser<T>): Acceptance<T> {
  const extracted = extractJson(raw);
  if (!extracted.found) {
    return { accepted: false, code: 'LLM_BAD_JSON', message: 'LLM reply contains no parseable JSON' };
  }
  const parsed = schema.safeParse(extracted.value);
  if (!parsed.success) {
    return { accepted: false, code: 'LLM_SCHEMA', message: `LLM reply does not match the schema: ${parsed.error.message}` };
  }
  return { accepted: true, value: parsed.data };
}

/** The error classes of the openai package, read from the loaded module to classify failures. */
type OpenAiErrors = Pick<typeof import('openai'), 'APIError' | 'APIConnectionError' | 'APIConnectionTimeoutError'>;

interface OpenAiConnection {
  client: OpenAI;
  errors: OpenAiErrors;
}

async function openAiConnection(config: LlmConfig, timeoutMs: number): Promise<OpenAiConnection> {
  let module: typeof import('openai');
  try {
    module = await import('openai');
  } catch (cause) {
    throw new LlmError('LLM_CONFIG', 'the openai package could not be loaded; is it installed (and bundled)?', { cause });
  }
  const client = new module.default({
    baseURL: config.baseURL ?? DEFAULT_BASE_URL,
    apiKey: config.apiKey ?? NO_API_KEY,
    // Explicit nulls keep OPENAI_* environment variables from leaking into requests.
    organization: null,
    project: null,
    defaultHeaders: { ...(config.apiKey === undefined ? { Authorization: null } : {}), ...config.headers },
    ...(config.fetch ? { fetch: config.fetch } : {}),
    // Retries are this adapter's, so they are counted, observable and bounded in one place.
    maxRetries: 0,
    timeout: timeoutMs + PACKAGE_TIMEOUT_MARGIN_MS,
    // Safe here: without `apiKey` the browser holds no credential, and with one the caller chose to.
    dangerouslyAllowBrowser: true,
  });
  return { client, errors: module };
}

/** Maps an error from the openai package to a typed failure. */
function classifyFailure(error: unknown, timedOut: boolean, errors: OpenAiErrors): AttemptFailure {
  const failure = { status: undefined, cause: error, retryAfterMs: undefined };
  if (timedOut || error instanceof errors.APIConnectionTimeoutError) {
    return { ...failure, code: 'LLM_TIMEOUT', message: 'LLM request timed out', reason: 'timeout' };
  }
  if (error instanceof errors.APIError && typeof error.status === 'number') {
    const status = error.status;
    const message = `LLM endpoint answered HTTP ${status}: ${error.message}`;
    // The caller's own fault (key, model, URL): another attempt cannot succeed.
    const callerFault = callerFaultCode(status, error.code, error.message);
    if (callerFault) return { ...failure, code: callerFault, message, status, reason: undefined };
    const rateLimited = status === 429;
    const retryable = isRetryableStatus(status);
    return {
      ...failure,
      code: rateLimited ? 'LLM_RATE_LIMITED' : 'LLM_HTTP',
      message,
      status,
      reason: retryable ? (rateLimited ? 'rate_limited' : 'http') : undefined,
      retryAfterMs: retryable ? retryAfterMs(error.headers) : undefined,
    };
  }
  if (error instanceof errors.APIConnectionError) {
    return { ...failure, code: 'LLM_HTTP', message: `LLM endpoint unreachable: ${error.message}`, reason: 'network' };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { ...failure, code: 'LLM_HTTP', message: `LLM request failed: ${message}`, reason: undefined };
}
