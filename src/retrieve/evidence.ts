import type { MemoryGraph } from '../graph/memory-graph.ts';
import type { EpisodeFact } from '../graph/types.ts';
import { vectorDot } from '../graph/vector-table.ts';
import type { TimeSpan } from './dates.ts';
import type { TurnScores } from './lexical.ts';
import type { TurnAnchors } from './turn-anchors.ts';

/** Query-side signals about an Episode's content, shared by the local precision step and finer units. */
export interface QueryEvidence {
  queryVector: Float32Array;
  /** BM25 of matching turns by Episode id, then dialog id (empty without a lexical index). */
  lexicalTurns: TurnScores;
  /** The query's normalised terms (see `termsOf`). */
  queryTerms: ReadonlySet<string>;
  /**
   * The speaker term a turn gains by its speaker: those the query names (`turnScore.speaker`,
   * see `speakerFocus`) and those its pronouns point at (`turnScore.pronounSpeaker`).
   */
  speakerTerms: ReadonlyMap<string, number>;
  /** The speakers the query's pronouns point at (`flags.pronounSpeakers`; empty when none or off). */
  pronounSpeakers: ReadonlySet<string>;
  /** The times the query points at (see `queryTimeSpans`; empty under `flags.dateFocus` off). */
  dates: readonly TimeSpan[];
  /** Multiplies every BM25 term of a score: 1, or the query's `lexicalConfidence` under adaptive fusion. */
  lexicalWeight: number;
  /** Session-independent turn anchors (empty when off). */
  turnAnchors: TurnAnchors;
  /** Multiplies the turn-anchor term: 1, or 1 − `lexicalWeight` under adaptive fusion (the less the words match, the more meaning decides). */
  anchorWeight: number;
  /** The query takes the meaning route (see `takesMeaningRoute`): fine units are ranked by the turn anchors' cosines alone. */
  byMeaning: boolean;
  /** `factCosines` by Episode id, filled on first use: N3 and the fine units both read them. */
  factCosines: Map<string, EpisodeFacts>;
}

/**
 * The cosine of each of an Episode's FacetPoints to the query, as two parallel arrays: a
 * query scores a thousand FacetPoints or so, and one object per cosine was most of the cost.
 */
export interface EpisodeFacts {
  /** The Episode's FacetPoints that have a vector. */
  points: readonly EpisodeFact[];
  /** `cosines[i]` is `points[i]`'s cosine to the query. */
  cosines: Float64Array;
}

/** Cosine of each of the Episode's FacetPoints to the query, computed once per query and Episode. */
export function factCosines(graph: MemoryGraph, episodeId: string, evidence: QueryEvidence): EpisodeFacts {
  const known = evidence.factCosines.get(episodeId);
  if (known) return known;
  // Usually every FacetPoint has a vector, and each is looked up once, by its dot; only when one
  // has none are the FacetPoints that have one (`factPoints`) scored instead.
  const facts = cosinesOf(graph, graph.facetPointsOf(episodeId), evidence.queryVector) ?? (cosinesOf(graph, factPoints(graph, episodeId), evidence.queryVector) as EpisodeFacts);
  evidence.factCosines.set(episodeId, facts);
  return facts;
}

/**
 * The cosine of each of `points` to `query`, straight from the kept vector (an i8 record is not
 * decoded): the same doubles as `dot`. Null when one of them has no vector.
 */
function cosinesOf(graph: MemoryGraph, points: readonly EpisodeFact[], query: Float32Array): EpisodeFacts | null {
  const cosines = new Float64Array(points.length);
  for (let i = 0; i < points.length; i++) {
    const cosine = vectorDot(graph.vectors, (points[i] as EpisodeFact).id, query);
    if (cosine === undefined) return null;
    cosines[i] = cosine;
  }
  return { points, cosines };
}

/** The Episode's FacetPoints that have a vector (`EpisodeFacts.points`), without their cosines. */
export function factPoints(graph: MemoryGraph, episodeId: string): readonly EpisodeFact[] {
  const all = graph.facetPointsOf(episodeId);
  // Usually every FacetPoint has a vector; only when one has none is a filtered list built.
  return all.every((point) => graph.vectors.has(point.id)) ? all : all.filter((point) => graph.vectors.has(point.id));
}

/** The best of an Episode's fact cosines, or `floor` when it has none above it. */
export function bestFactCosine(facts: EpisodeFacts, floor: number): number {
  let best = floor;
  for (const cosine of facts.cosines) best = Math.max(best, cosine);
  return best;
}

/** Best BM25 turn score of an Episode (0 when none of its turns match). */
export function bestLexicalTurn(evidence: QueryEvidence, episodeId: string): number {
  let best = 0;
  for (const score of evidence.lexicalTurns.get(episodeId)?.values() ?? []) best = Math.max(best, score);
  return best;
}
