import { PrismError } from '../errors.ts';

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
 * Runs `search` in `llm` mode and, when the endpoint fails, again in `zero-llm` mode with a
 * warning first in `warnings`. A refused key, model or URL falls back too, but the warning says
 * it will not pass by itself.
 */
export async function withZeroLlmFallback<R extends { warnings: string[] }>(search: (mode: 'llm' | 'zero-llm') => Promise<R>): Promise<R> {
  try {
    return await search('llm');
  } catch (err) {
    if (!isEndpointFailure(err)) throw err;
    const result = await search('zero-llm');
    const lasting = err.code === 'LLM_AUTH' || err.code === 'LLM_CONFIG' ? ' (check the API key, model and base URL: this will not pass by itself)' : '';
    return { ...result, warnings: [`LLM unavailable, ranked without it: ${err.code}${lasting}: ${err.message}`, ...result.warnings] };
  }
}
