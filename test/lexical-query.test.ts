import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../src/eval/stats.ts';
import { scoreCandidates, type LayerHits, type LayerQuery, type ScoredDocument } from '../src/retrieve/lexical-query.ts';

/** Every document scored as a full OR query scores it, one by one: the reference `scoreCandidates` must agree with. */
function bruteForce(query: LayerQuery, k: number, unitOf: (ordinal: number) => string | null): ScoredDocument[] {
  const ordinals = [...new Set(query.hits.flatMap((list) => [...list.ordinals]))].sort((a, b) => a - b);
  const all = ordinals.flatMap((ordinal): ScoredDocument[] => {
    const scoreIn = query.hits.map((list) => {
      const at = list.ordinals.indexOf(ordinal);
      return at < 0 ? null : (list.scores[at] as number);
    });
    let sum = 0;
    let reachedAt = -1;
    query.positions.forEach((term, position) => {
      const score = scoreIn[term];
      if (score === null || score === undefined) return;
      if (reachedAt < 0) reachedAt = position;
      sum += score;
    });
    return unitOf(ordinal) === null ? [] : [{ ordinal, score: sum * scoreIn.filter((score) => score !== null).length, reachedAt }];
  });
  const bestOfUnit = new Map<string, number>();
  for (const document of all) bestOfUnit.set(unitOf(document.ordinal) as string, Math.max(document.score, bestOfUnit.get(unitOf(document.ordinal) as string) ?? -Infinity));
  const unitScores = [...bestOfUnit.values()].sort((a, b) => b - a);
  const threshold = unitScores.length < k ? -Infinity : (unitScores[k - 1] as number);
  return all.filter((document) => document.score >= threshold);
}

describe('BM25 candidates of one layer (scoreCandidates)', () => {
  it('finds every document whose unit ranks among the best k, scored as a full query scores it, whatever the units and the documents left out', () => {
    const random = mulberry32(5);
    for (let round = 0; round < 300; round++) {
      const documents = 20 + Math.floor(random() * 400);
      const terms = 1 + Math.floor(random() * 5);
      // Scores on a coarse grid, so that many documents and units tie.
      const hits: LayerHits[] = Array.from({ length: terms }, () => {
        const ordinals = Array.from({ length: documents }, (_, ordinal) => ordinal).filter(() => random() < 0.05 + random() * 0.5);
        return { ordinals: Int32Array.from(ordinals), scores: Float64Array.from(ordinals, () => Math.ceil(random() * 6) / 4) };
      });
      const positions = Array.from({ length: terms + Math.floor(random() * 3) }, (_, i) => (i < terms ? i : Math.floor(random() * terms)));
      const query: LayerQuery = { hits, positions };
      // Units of one document each, of many documents (an Episode's turns), and with most documents left out (a scope).
      const perUnit = [1, 3, 40][round % 3] as number;
      const leftOut = round % 4 === 0 ? 0.8 : 0;
      const excluded = new Set(Array.from({ length: documents }, (_, ordinal) => ordinal).filter(() => random() < leftOut));
      const unitOf = (ordinal: number) => (excluded.has(ordinal) ? null : `u${Math.floor(ordinal / perUnit)}`);
      for (const k of [1, 2, 5, 30, Number.POSITIVE_INFINITY]) {
        expect(scoreCandidates(query, k, unitOf), `round ${round}, k ${k}`).toEqual(bruteForce(query, k, unitOf));
      }
    }
  });

  it('scores alike documents far apart in the index: lists spread over ~200,000 ordinals, across every power of two', () => {
    const random = mulberry32(11);
    const edges = Array.from({ length: 8 }, (_, i) => 2 ** (10 + i)).flatMap((edge) => [edge - 1, edge, edge + 1]);
    for (let round = 0; round < 40; round++) {
      const terms = 1 + Math.floor(random() * 4);
      const hits: LayerHits[] = Array.from({ length: terms }, () => {
        const spread = Array.from({ length: 20 + Math.floor(random() * 150) }, () => Math.floor(random() * 200_000));
        const ordinals = [...new Set([...spread, ...edges.filter(() => random() < 0.5)])].sort((a, b) => a - b);
        return { ordinals: Int32Array.from(ordinals), scores: Float64Array.from(ordinals, () => Math.ceil(random() * 6) / 4) };
      });
      const positions = Array.from({ length: terms + Math.floor(random() * 3) }, (_, i) => (i < terms ? i : Math.floor(random() * terms)));
      const unitOf = (ordinal: number) => (round % 3 === 0 && ordinal % 5 === 0 ? null : `u${Math.floor(ordinal / [1, 7, 5000][round % 3]!)}`);
      for (const k of [1, 5, 30, Number.POSITIVE_INFINITY]) {
        expect(scoreCandidates({ hits, positions }, k, unitOf), `round ${round}, k ${k}`).toEqual(bruteForce({ hits, positions }, k, unitOf));
      }
    }
  });
});
