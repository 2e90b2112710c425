import type { MemoryGraph } from '../graph/memory-graph.ts';
import type { FacetPointNode } from '../graph/types.ts';
import { dotEach } from '../util/vectors.ts';
import type { TurnAnchors } from './turn-anchors.ts';

/** Query-side signals about an Episode's content, shared by the local precision step and finer units. */
export interface QueryEvidence {
  queryVector: Float32Array;
  /** BM25 of matching turns by Episode id, then dialog id (empty without a lexical index). */
  lexicalTurns: ReadonlyMap<string, ReadonlyMap<string, number>>;
  /** The query's normalised terms (see `termsOf`). */
  queryTerms: ReadonlySet<string>;
  /** The memory's speakers the query names (see `speakerFocus`). */
  speakers: ReadonlySet<string>;
  /** Multiplies every BM25 term of a score: 1, or the query's `lexicalConfidence` under adaptive fusion. */
  lexicalWeight: number;
  /** Session-independent turn anchors (empty when off). */
  turnAnchors: TurnAnchors;
  /** Multiplies the turn-anchor term: 1, or 1 − `lexicalWeight` under adaptive fusion (the less the words match, the more meaning decides). */
  anchorWeight: number;
  /** `factCosines` by Episode id, filled on first use: N3 and the fine units both read them. */
  factCosines: Map<string, FactCosine[]>;
}

export interface FactCosine {
  point: FacetPointNode;
  cosine: number;
}

/** Cosine of each of the Episode's FacetPoints to the query, computed once per query and Episode. */
export function factCosines(graph: MemoryGraph, episodeId: string, evidence: QueryEvidence): FactCosine[] {
  const known = evidence.factCosines.get(episodeId);
  if (known) return known;
  const points: FacetPointNode[] = [];
  const vectors: Float32Array[] = [];
  for (const point of graph.facetPointsOf(episodeId)) {
    const vector = graph.vectors.get(point.id);
    if (vector) {
      points.push(point);
      vectors.push(vector);
    }
  }
  const cosines = dotEach(vectors, evidence.queryVector);
  const out = points.map((point, i) => ({ point, cosine: cosines[i] ?? 0 }));
  evidence.factCosines.set(episodeId, out);
  return out;
}

/** Best BM25 turn score of an Episode (0 when none of its turns match). */
export function bestLexicalTurn(evidence: QueryEvidence, episodeId: string): number {
  let best = 0;
  for (const score of evidence.lexicalTurns.get(episodeId)?.values() ?? []) best = Math.max(best, score);
  return best;
}
