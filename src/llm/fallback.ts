import { PrismError } from '../errors.ts';
import type { LlmClient } from './types.ts';

/**
 * Failures of the endpoint itself, after the adapter's retries: unreachable, timing out, rate
 * limited, 5xx, or refusing the caller's key, model or URL. A bad answer (`LLM_BAD_JSON`,
 * `LLM_SCHEMA`) is not one: the query-time roles already handle it on their own.
 */
export function isEndpointFailure(err: unknown): err is PrismError {
  if (!(err instanceof PrismError)) return false;
  return err.code === 'LLM_HTTP' || err.code === 'LLM_TIMEOUT' || err.code === 'LLM_RATE_LIMITED' || err.code === 'LLM_AUTH' || err.code === 'LLM_CONFIG';
}

/**
 * How long searches skip an endpoint that just failed. Each failure costs a search the client's
 * whole retry budget (seconds with backoff, minutes with timeouts), so during an outage only one
 * search in this window pays it; the others rank without the LLM at once.
 */
export const ENDPOINT_COOLDOWN_MS = 30_000;

/** The last endpoint failure seen by a search, per client. */
const lastFailure = new WeakMap<LlmClient, { error: PrismError; at: number }>();

/**
 * Runs `search` in `llm` mode and, when the endpoint fails, again in `zero-llm` mode with a
 * warning first in `warnings`; for `ENDPOINT_COOLDOWN_MS` after a failure, later searches with
 * the same client go to `zero-llm` directly. A refused key, model or URL falls back too, but the
 * warning says it will not pass by itself.
 */
export async function withZeroLlmFallback<R extends { warnings: string[] }>(
  llm: LlmClient,
  search: (mode: 'llm' | 'zero-llm') => Promise<R>,
  now: () => number = Date.now,
): Promise<R> {
  const recent = lastFailure.get(llm);
  if (recent && now() - recent.at < ENDPOINT_COOLDOWN_MS) {
    const seconds = Math.round((now() - recent.at) / 1000);
    return withWarning(await search('zero-llm'), recent.error, ` (not asked: it failed ${seconds} s ago)`);
  }
  try {
    const result = await search('llm');
    lastFailure.delete(llm);
    return result;
  } catch (err) {
    if (!isEndpointFailure(err)) throw err;
    lastFailure.set(llm, { error: err, at: now() });
    return withWarning(await search('zero-llm'), err, '');
  }
}

function withWarning<R extends { warnings: string[] }>(result: R, err: PrismError, note: string): R {
  const lasting = err.code === 'LLM_AUTH' || err.code === 'LLM_CONFIG' ? ' (check the API key, model and base URL: this will not pass by itself)' : '';
  return { ...result, warnings: [`LLM unavailable, ranked without it${note}: ${err.code}${lasting}: ${err.message}`, ...result.warnings] };
}
