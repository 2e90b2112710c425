import { sha256Hex } from '../util/hash.ts';

/**
 * First 12 hex digits of the SHA-256 of `value` as JSON: short enough for file names and cache
 * keys, long enough (48 bits) that two settings of one run never collide in practice.
 */
export async function shortHash(value: unknown): Promise<string> {
  return (await sha256Hex(JSON.stringify(value))).slice(0, 12);
}
