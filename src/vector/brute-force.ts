import { PrismError } from '../errors.ts';
import type { SearchHit } from './types.ts';
import { checkK, checkKeys, checkRows, compareHits } from './validate.ts';

/**
 * Exact top-k by inner product with a plain JS loop: the reference the WASM index is tested
 * against and the bench's baseline. `vectors` and `queries` are packed row-major with `dim`
 * columns; `keys[i]` names row i. Hits are best first, ties broken by the smaller key.
 */
export function bruteForceSearch(
  vectors: Float32Array,
  dim: number,
  keys: readonly number[],
  queries: Float32Array,
  k: number,
): SearchHit[][] {
  if (!Number.isSafeInteger(dim) || dim <= 0) throw new PrismError('INVALID_INPUT', `dim must be positive, got ${dim}`);
  checkK(k);
  checkKeys(keys);
  const rows = checkRows(vectors, dim, keys.length);
  const queryCount = checkRows(queries, dim);
  const wanted = Math.min(k, rows);
  const results: SearchHit[][] = [];
  for (let q = 0; q < queryCount; q++) {
    const offset = q * dim;
    // `top` stays sorted best first; a candidate enters only if it beats the current k-th.
    const top: SearchHit[] = [];
    for (let r = 0; r < rows; r++) {
      const base = r * dim;
      let score = 0;
      for (let d = 0; d < dim; d++) score += vectors[base + d]! * queries[offset + d]!;
      // Cheap rejection first: most rows score below the current k-th and need no hit object.
      if (top.length === wanted && score < top[wanted - 1]!.score) continue;
      const hit = { key: keys[r]!, score };
      if (top.length === wanted && compareHits(hit, top[wanted - 1]!) >= 0) continue;
      let at = top.length === wanted ? wanted - 1 : top.length;
      while (at > 0 && compareHits(hit, top[at - 1]!) < 0) {
        top[at] = top[at - 1]!;
        at--;
      }
      top[at] = hit;
    }
    results.push(top);
  }
  return results;
}
