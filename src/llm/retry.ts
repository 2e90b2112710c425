export interface RetryPolicy {
  /** Attempts after the first on 429, 5xx, network errors and timeouts. */
  maxRetries: number;
  /** Backoff before retry n (0-based) is about `baseDelayMs · 2ⁿ`, jittered. */
  baseDelayMs: number;
  /** Upper bound on any single wait, including one asked for by Retry-After. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxRetries: 4, baseDelayMs: 500, maxDelayMs: 30_000 };

/** Status codes worth another attempt: rate limiting and server-side failures. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/**
 * Exponential backoff with "equal jitter": half the window is fixed, half random, so clients
 * that failed together spread out without any of them retrying immediately.
 */
export function backoffDelay(retry: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const window = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  return Math.round(window / 2 + (window / 2) * random());
}

/**
 * The wait a server asked for, in ms: OpenAI's `retry-after-ms`, else `Retry-After` as seconds
 * or an HTTP date. `undefined` when absent or unreadable.
 */
export function retryAfterMs(headers: Headers | undefined, now: number = Date.now()): number | undefined {
  if (!headers) return undefined;
  const millis = headers.get('retry-after-ms');
  if (millis !== null && millis.trim() !== '' && Number.isFinite(Number(millis))) {
    return Math.max(0, Number(millis));
  }
  const value = headers.get('retry-after');
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
