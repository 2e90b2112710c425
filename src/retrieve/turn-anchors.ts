import type { MemoryGraph } from '../graph/memory-graph.ts';
import { termsOf, turnDocumentText, type TurnScores } from './lexical.ts';
import { vectorDot, vectorOnce } from '../graph/vector-table.ts';
import type { GraphNode } from '../graph/types.ts';
import { normOfSum } from '../util/vectors.ts';
import type { Anchor } from './types.ts';

/**
 * Session-independent turn anchors (beyond the paper): the turns closest to the query over the
 * whole memory, whichever Episodes N1 selects. A Facet holds one turn ("speaker: text"), so the
 * Facet layer's dense top-k is a dense search over turns. By Episode id, then dialog id, each
 * anchored turn's cosine (the best of the Facets holding it).
 */
export type TurnAnchors = ReadonlyMap<string, ReadonlyMap<string, number>>;

/** The turns of the `count` best Facet anchors (dense cosines, best first), found through their FacetPoints. */
export function turnAnchors(graph: MemoryGraph, facetAnchors: readonly Anchor[], count: number): TurnAnchors {
  const anchors = new Map<string, Map<string, number>>();
  for (const anchor of facetAnchors.slice(0, Math.max(0, count))) {
    const facet = graph.nodes.get(anchor.id);
    if (facet?.layer !== 'facet') continue;
    let turns = anchors.get(facet.episodeId);
    for (const from of graph.sourcesTo(facet.id, 'belongs_to')) {
      const point = graph.nodes.get(from);
      if (point?.layer !== 'facetPoint') continue;
      if (!turns) anchors.set(facet.episodeId, (turns = new Map()));
      for (const dialogId of point.dialogIds) turns.set(dialogId, Math.max(anchor.score, turns.get(dialogId) ?? -1));
    }
  }
  return anchors;
}

/**
 * Facets scored as turns by their sentences taken together (`flags.composedTurns`): each Facet
 * of `facetIds` (once, in the order given) with the cosine of the normalised sum of its
 * FacetPoints' vectors against the query, best first (ties keep the given order). A Facet with
 * no FacetPoint vector is left out.
 */
export function composedTurnCosines(graph: MemoryGraph, facetIds: Iterable<string>, queryVector: Float32Array): Anchor[] {
  const scored: Anchor[] = [];
  for (const id of new Set(facetIds)) {
    const facet = graph.nodes.get(id);
    if (facet?.layer !== 'facet') continue;
    const points: string[] = [];
    for (const from of graph.sourcesTo(id, 'belongs_to')) if (graph.nodes.get(from)?.layer === 'facetPoint' && graph.vectors.has(from)) points.push(from);
    if (points.length === 0) continue;
    // The cosine is Σ q·pᵢ / ‖Σ pᵢ‖: the dots read the stored records as they are, and the norm does not depend on the query.
    let norm = sumNorms.get(facet);
    if (norm === undefined) sumNorms.set(facet, (norm = normOfSum(points.map((point) => vectorOnce(graph.vectors, point) as Float32Array))));
    let dots = 0;
    for (const point of points) dots += vectorDot(graph.vectors, point, queryVector) ?? 0;
    scored.push({ id, score: norm > 0 ? dots / norm : 0 });
  }
  // A stable sort: ties keep the given order.
  return scored.sort((a, b) => b.score - a.score);
}

/**
 * ‖the sum of a Facet's FacetPoint vectors‖, by the Facet node: a Facet's FacetPoints are made
 * with it and go with it (a chunk built again puts new nodes), so the number holds while the
 * node does.
 */
const sumNorms = new WeakMap<GraphNode, number>();

/**
 * Adaptive fusion (beyond the paper): how far to trust BM25 for this query, in [0, 1]: the
 * share of the query's terms that its best-matching turn contains, over `fullShare` (the share
 * that earns full trust), at most 1. BM25 always ranks something first, and its normalised
 * scores look the same whether that turn shares the query's key words or one common word; a
 * query that paraphrases its evidence (a later remark about an earlier statement) shares few
 * terms with any turn, and then the lexical signal is mostly noise.
 */
export function lexicalConfidence(queryTerms: ReadonlySet<string>, bestTurnText: string | null, fullShare: number): number {
  if (queryTerms.size === 0 || bestTurnText === null) return 0;
  const turnTerms = termsOf(bestTurnText);
  let shared = 0;
  for (const term of queryTerms) if (turnTerms.has(term)) shared++;
  return Math.min(1, shared / queryTerms.size / fullShare);
}

/** The indexed text of the turn with the highest BM25 score (by Episode id, then dialog id); null when none matched. */
export function bestLexicalTurnText(graph: MemoryGraph, lexicalTurns: TurnScores): string | null {
  const { best } = lexicalTurns;
  if (best === null) return null;
  const episode = graph.nodes.get(best.episodeId);
  const chunk = episode?.layer === 'episode' ? graph.chunks.get(episode.chunkId) : undefined;
  const turn = chunk?.turns.find((t) => t.dialogId === best.dialogId);
  return turn ? turnDocumentText(turn) : null;
}
