import type OpenAI from 'openai';
import { throwIfAborted } from '../errors.ts';
import { sleep, type Semaphore } from './concurrency.ts';
import { callerFaultCode, LlmError } from './errors.ts';
import { backoffDelay, isRetryableStatus, retryAfterMs, type RetryPolicy } from './retry.ts';
import type { OpenAiEndpoint, TransportRetryReason } from './endpoint.ts';

/**
 * Calls to an OpenAI-compatible endpoint through the openai package, as the LLM adapter and the
 * remote embedder make them: one attempt under a timeout with its failure classified into the
 * adapter's typed errors, and attempts repeated under a retry policy.
 */

/** A failed attempt, classified for the retry loop; `reason` is set when it is worth retrying. */
export interface AttemptFailure {
  code: 'LLM_TIMEOUT' | 'LLM_RATE_LIMITED' | 'LLM_HTTP' | 'LLM_AUTH' | 'LLM_CONFIG';
  message: string;
  status: number | undefined;
  cause: unknown;
  reason: TransportRetryReason | undefined;
  retryAfterMs: number | undefined;
}

/** What one attempt gave: the reply, or its classified failure. */
export type AttemptOutcome<T> = { ok: true; value: T } | { ok: false; failure: AttemptFailure };

/** The error classes of the openai package, read from the loaded module to classify failures. */
type OpenAiErrors = Pick<typeof import('openai'), 'APIError' | 'APIConnectionError' | 'APIConnectionTimeoutError'>;

export interface OpenAiConnection {
  client: OpenAI;
  errors: OpenAiErrors;
}

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';
/** Limit on each attempt unless the caller sets one. */
export const DEFAULT_TIMEOUT_MS = 60_000;
/** Requests in flight at once unless the caller sets a number. */
export const DEFAULT_CONCURRENCY = 4;
/** The openai package's own timer is set past ours so that ours, which we can attribute, fires first. */
const PACKAGE_TIMEOUT_MARGIN_MS = 1_000;
/** Stands in for a key the client does not hold; the `Authorization` header is then removed. */
const NO_API_KEY = 'no-key-held-by-this-client';

/**
 * The connection to `endpoint`, made on first use: the openai package is imported then, so code
 * that never calls the endpoint never loads it. A failed import is tried again on the next use.
 */
export function openAiConnector(endpoint: OpenAiEndpoint, timeoutMs: number): () => Promise<OpenAiConnection> {
  let connection: Promise<OpenAiConnection> | null = null;
  return () => {
    connection ??= openAiConnection(endpoint, timeoutMs).catch((error: unknown) => {
      connection = null;
      throw error;
    });
    return connection;
  };
}

async function openAiConnection(endpoint: OpenAiEndpoint, timeoutMs: number): Promise<OpenAiConnection> {
  let module: typeof import('openai');
  try {
    module = await import('openai');
  } catch (cause) {
    throw new LlmError('LLM_CONFIG', 'the openai package could not be loaded; is it installed (and bundled)?', { cause });
  }
  const client = new module.default({
    baseURL: endpoint.baseURL ?? DEFAULT_BASE_URL,
    apiKey: endpoint.apiKey ?? NO_API_KEY,
    // Explicit nulls keep OPENAI_* environment variables from leaking into requests.
    organization: null,
    project: null,
    defaultHeaders: { ...(endpoint.apiKey === undefined ? { Authorization: null } : {}), ...endpoint.headers },
    ...(endpoint.fetch ? { fetch: endpoint.fetch } : {}),
    // Retries are this adapter's, so they are counted, observable and bounded in one place.
    maxRetries: 0,
    timeout: timeoutMs + PACKAGE_TIMEOUT_MARGIN_MS,
    // Safe here: without `apiKey` the browser holds no credential, and with one the caller chose to.
    dangerouslyAllowBrowser: true,
  });
  return { client, errors: module };
}

/**
 * One request: `send` with a signal that fires after `timeoutMs` or when the caller aborts. A
 * caller's abort rejects with `ABORTED`; every other failure comes back classified, its messages
 * naming the endpoint as `what` (e.g. `LLM`).
 */
export async function attemptOnce<T>(
  { client, errors }: OpenAiConnection,
  send: (client: OpenAI, signal: AbortSignal) => Promise<T>,
  options: { timeoutMs: number; signal: AbortSignal | undefined; what: string },
): Promise<AttemptOutcome<T>> {
  const { signal } = options;
  const controller = new AbortController();
  const forwardAbort = (): void => controller.abort(signal?.reason);
  signal?.addEventListener('abort', forwardAbort, { once: true });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, options.timeoutMs);
  try {
    return { ok: true, value: await send(client, controller.signal) };
  } catch (error) {
    throwIfAborted(signal);
    return { ok: false, failure: classifyFailure(error, timedOut, errors, options.what) };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', forwardAbort);
  }
}

/**
 * Runs `attempt` (holding one of `slots` while it runs) until it succeeds, repeating failures
 * worth a retry under `policy`: after the server's Retry-After when it sent one, else after an
 * exponential backoff. `onRetry` hears of each repeat before its wait. The last failure is thrown
 * as an `LlmError` carrying `attempts.count`, which counts every request sent.
 */
export async function withRetries<T>(
  attempt: () => Promise<AttemptOutcome<T>>,
  options: {
    policy: RetryPolicy;
    slots: Semaphore;
    signal: AbortSignal | undefined;
    attempts: { count: number };
    onRetry?: (failure: AttemptFailure & { reason: TransportRetryReason }, delayMs: number) => void;
  },
): Promise<T> {
  const { policy, slots, signal, attempts } = options;
  for (let retry = 0; ; retry++) {
    const release = await slots.acquire(signal);
    let outcome: AttemptOutcome<T>;
    try {
      attempts.count++;
      outcome = await attempt();
    } finally {
      release();
    }
    if (outcome.ok) return outcome.value;
    const { failure } = outcome;
    const { code, message, status, cause, reason } = failure;
    if (reason === undefined || retry >= policy.maxRetries) {
      throw new LlmError(code, message, { status, cause, attempts: attempts.count });
    }
    const delayMs = Math.min(policy.maxDelayMs, failure.retryAfterMs ?? backoffDelay(retry, policy));
    options.onRetry?.({ ...failure, reason }, delayMs);
    await sleep(delayMs, signal);
  }
}

/** Maps an error from the openai package to a typed failure. */
function classifyFailure(error: unknown, timedOut: boolean, errors: OpenAiErrors, what: string): AttemptFailure {
  const failure = { status: undefined, cause: error, retryAfterMs: undefined };
  if (timedOut || error instanceof errors.APIConnectionTimeoutError) {
    return { ...failure, code: 'LLM_TIMEOUT', message: `${what} request timed out`, reason: 'timeout' };
  }
  if (error instanceof errors.APIError && typeof error.status === 'number') {
    const status = error.status;
    const message = `${what} endpoint answered HTTP ${status}: ${error.message}`;
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
    return { ...failure, code: 'LLM_HTTP', message: `${what} endpoint unreachable: ${error.message}`, reason: 'network' };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { ...failure, code: 'LLM_HTTP', message: `${what} request failed: ${message}`, reason: undefined };
}
