import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { PrismError, throwIfAborted } from '../errors.ts';
import { responseCacheKey, type LlmResponseCache } from './cache.ts';
import { Semaphore } from './concurrency.ts';
import { LlmError } from './errors.ts';
import { extractJson } from './json.ts';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.ts';
import {
  attemptOnce,
  DEFAULT_CONCURRENCY,
  DEFAULT_TIMEOUT_MS,
  openAiConnector,
  withRetries,
  type AttemptOutcome,
} from './transport.ts';
import type { OpenAiEndpoint, TransportRetryReason } from './endpoint.ts';
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

export type { FetchLike } from './endpoint.ts';

/** A model for every role: `default`, overridden per role where given. */
export type LlmModels = { default: string } & Partial<Record<LlmRole, string>>;

/** Why an attempt is being repeated. */
export type LlmRetryReason = TransportRetryReason | 'bad_json' | 'schema';

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

export interface LlmConfig extends OpenAiEndpoint {
  /**
   * Sent as a bearer token. Optional: a browser app can point `baseURL` or `fetch` at its own
   * proxy that adds credentials, so the page never holds a key.
   */
  apiKey?: string;
  models: LlmModels;
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

const DEFAULT_INVALID_JSON_RETRIES = 1;

type RequestBody = ChatCompletionCreateParamsNonStreaming;

/** What a finished call accepts as a reply; a rejection may be re-asked. */
type Acceptance<T> = { accepted: true; value: T } | { accepted: false; code: 'LLM_BAD_JSON' | 'LLM_SCHEMA'; message: string };

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
  const connect = openAiConnector(config, timeoutMs);

  function notifyRetry(event: LlmRetryEvent): void {
    usage[event.role].retries++;
    config.onRetry?.(event);
  }

  async function attempt(role: LlmRole, body: RequestBody, signal: AbortSignal | undefined): Promise<AttemptOutcome<string>> {
    const outcome = await attemptOnce(await connect(), (client, attemptSignal) => client.chat.completions.create(body, { signal: attemptSignal, maxRetries: 0 }), {
      timeoutMs,
      signal,
      what: 'LLM',
    });
    if (!outcome.ok) return outcome;
    const completion = outcome.value;
    usage[role].promptTokens += completion.usage?.prompt_tokens ?? 0;
    usage[role].completionTokens += completion.usage?.completion_tokens ?? 0;
    return { ok: true, value: completion.choices?.[0]?.message?.content ?? '' };
  }

  /** Sends `body` until a reply arrives, retrying transport failures under the policy. */
  function request(role: LlmRole, body: RequestBody, signal: AbortSignal | undefined, attempts: { count: number }): Promise<string> {
    return withRetries(() => attempt(role, body, signal), {
      policy,
      slots,
      signal,
      attempts,
      onRetry: ({ reason, status }, delayMs) => notifyRetry({ role, reason, retry: attempts.count, ...(status === undefined ? {} : { status }), delayMs }),
    });
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
