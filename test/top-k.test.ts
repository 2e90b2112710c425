import { describe, expect, it } from 'vitest';
import { topK } from '../src/util/top-k.ts';

/** Deterministic PRNG (mulberry32), so a failure reproduces. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('topK', () => {
  it('equals a full stable sort then slice, ties at the boundary included', () => {
    const next = random(13);
    // Few distinct scores, so most lists tie across the k-th place; `tag` tells equal items apart.
    const byScore = (a: { score: number }, b: { score: number }) => b.score - a.score;
    const byScoreThenId = (a: { score: number; id: string }, b: { score: number; id: string }) => b.score - a.score || a.id.localeCompare(b.id);
    for (let trial = 0; trial < 500; trial++) {
      const n = Math.floor(next() * 60);
      const items = Array.from({ length: n }, (_, tag) => ({ score: Math.floor(next() * 5), id: `n${Math.floor(next() * 8)}`, tag }));
      const k = Math.floor(next() * (n + 3));
      expect(topK(items, k, byScore)).toEqual([...items].sort(byScore).slice(0, k));
      expect(topK(items, k, byScoreThenId)).toEqual([...items].sort(byScoreThenId).slice(0, k));
    }
  });

  it('returns nothing for k ≤ 0 and everything, sorted, for k beyond the list', () => {
    expect(topK([3, 1, 2], 0, (a, b) => a - b)).toEqual([]);
    expect(topK([3, 1, 2], Infinity, (a, b) => a - b)).toEqual([1, 2, 3]);
  });
});
