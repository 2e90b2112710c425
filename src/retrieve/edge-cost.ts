import type { PrismConfig } from '../config.ts';
import { COMPOSABLE_EDGE_TYPES, type EdgeType, type GraphEdge } from '../graph/types.ts';
import { dot, normalisedSum } from '../util/vectors.ts';
import type { Intent } from './types.ts';

export interface EdgeCostContext {
  queryVector: Float32Array;
  /** Relation-edge (and node) vectors by id. */
  vectors: ReadonlyMap<string, Float32Array>;
  /** Every anchor recalled for the query, all layers. */
  anchorIds: ReadonlySet<string>;
  intent: Intent;
  config: PrismConfig;
}

/**
 * N2 (design §3): c_edge(e) = α(τ(e), h(q)) × base. The base is the edge's own distance to the
 * query when the edge touches a recalled anchor and is embedded; `belongs_to` is never embedded,
 * so it always takes its per-type fallback c0.
 */
export function edgeCost(edge: GraphEdge, ctx: EdgeCostContext): number {
  const inRecall = ctx.anchorIds.has(edge.from) || ctx.anchorIds.has(edge.to);
  const vector = inRecall ? (ctx.vectors.get(edge.id) ?? composedVector(edge, ctx)) : undefined;
  const base = vector !== undefined ? 1 - dot(vector, ctx.queryVector) : ctx.config.retrieval.fallbackCost[edge.type];
  return edgeDiscount(edge.type, ctx.intent, ctx.config) * base;
}

/**
 * With `edgeVectors: 'composed'`, involves_entity and evolution edges store no vector: theirs is
 * the normalised sum of the endpoints' vectors, computed here for the few edges N2 prices.
 */
function composedVector(edge: GraphEdge, ctx: EdgeCostContext): Float32Array | undefined {
  if (ctx.config.ingest.edgeVectors !== 'composed' || !COMPOSABLE_EDGE_TYPES.has(edge.type)) return undefined;
  const from = ctx.vectors.get(edge.from);
  const to = ctx.vectors.get(edge.to);
  return from && to ? normalisedSum(from, to) : undefined;
}

/** α(type, intent): 1.0 unless the pair has a discount and discounts are on. */
function edgeDiscount(type: EdgeType, intent: Intent, config: PrismConfig): number {
  if (!config.flags.edgeDiscounts) return 1;
  const d = config.retrieval.discounts;
  if (intent === 'TEMPORAL' && type === 'temporal') return d.temporalUnderTemporal;
  if (intent === 'TEMPORAL' && type === 'evolution') return d.evolutionUnderTemporal;
  if (intent === 'CAUSAL' && type === 'causal') return d.causalUnderCausal;
  return 1;
}
