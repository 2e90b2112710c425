import { sha256Hex } from '../util/hash.ts';

/**
 * Where LLM responses are kept between runs. `GraphStore` satisfies it, so an evaluation that
 * is re-run or resumed reads earlier answers instead of paying for them again.
 */
export interface LlmResponseCache {
  getCached(key: string): Promise<string | undefined>;
  /** `tags` are the chunk ids the reply was made from (see `LlmCallOptions.cacheTags`). */
  putCached(key: string, value: string, tags: readonly string[]): Promise<void>;
}

/** Namespaces the adapter's entries within a store's shared key-value area. */
const KEY_PREFIX = 'llm:';

/**
 * SHA-256 (WebCrypto, so it runs in browsers, Node and workers) of the exact request body:
 * model, messages and every sampling/format parameter. Any change to them is a different key.
 */
export async function responseCacheKey(requestBody: object): Promise<string> {
  return KEY_PREFIX + (await sha256Hex(JSON.stringify(requestBody)));
}
