import type { PrismConfig } from '../config.ts';
import { COMPOSABLE_EDGE_TYPES, type EdgeType, type GraphEdge } from '../graph/types.ts';
import { dot, normalisedSumDot, pairMemo, sumNorm } from '../util/vectors.ts';
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
  // Most edges a search crosses; never embedded nor composed, so no lookup could find a vector.
  if (edge.type === 'belongs_to') return edgeDiscount(edge.type, ctx.intent, ctx.config) * ctx.config.retrieval.fallbackCost.belongs_to;
  const inRecall = ctx.anchorIds.has(edge.from) || ctx.anchorIds.has(edge.to);
  const vector = inRecall ? ctx.vectors.get(edge.id) : undefined;
  const cosine = vector !== undefined ? dot(vector, ctx.queryVector) : inRecall ? composedCosine(edge, ctx) : undefined;
  const base = cosine !== undefined ? 1 - cosine : ctx.config.retrieval.fallbackCost[edge.type];
  return edgeDiscount(edge.type, ctx.intent, ctx.config) * base;
}

/**
 * With `edgeVectors: 'composed'`, involves_entity, evolution and temporal edges store no vector: theirs is
 * the normalised sum of the endpoints' vectors; its cosine is computed here for the few edges N2 prices.
 */
function composedCosine(edge: GraphEdge, ctx: EdgeCostContext): number | undefined {
  if (ctx.config.ingest.edgeVectors !== 'composed' || !COMPOSABLE_EDGE_TYPES.has(edge.type)) return undefined;
  const from = ctx.vectors.get(edge.from);
  const to = ctx.vectors.get(edge.to);
  // Kept by the edge's target first (an involves edge's Entity: few of them, each with many
  // FacetPoints); the norm of a sum does not depend on the order of its terms, bit for bit.
  return from && to ? normalisedSumDot(from, to, ctx.queryVector, composedNorm(to, from)) : undefined;
}

/** An Entity's involves edges are priced again in every query that anchors it; their norms do not change. */
const composedNorm = pairMemo(sumNorm);

/**
 * The least any edge can cost under `config`, for pruning searches by a lower bound: a cosine
 * base is at least 0 (less a rounding slack), a fallback base is as configured, and α scales
 * either; −Infinity when a negative α makes no bound hold.
 */
export function edgeCostFloor(config: PrismConfig): number {
  const alphas = [1, ...(config.flags.edgeDiscounts ? Object.values(config.retrieval.discounts) : [])];
  if (alphas.some((a) => a < 0)) return -Infinity;
  const base = Math.min(-COSINE_SLACK, ...Object.values(config.retrieval.fallbackCost));
  return base * Math.max(...alphas);
}

/** How far above 1 the dot of two stored unit vectors may come out in float32 (`1 − cos` can dip below 0 by this much). */
const COSINE_SLACK = 1e-5;

/** α(type, intent): 1.0 unless the pair has a discount and discounts are on. */
function edgeDiscount(type: EdgeType, intent: Intent, config: PrismConfig): number {
  if (!config.flags.edgeDiscounts) return 1;
  const d = config.retrieval.discounts;
  if (intent === 'TEMPORAL' && type === 'temporal') return d.temporalUnderTemporal;
  if (intent === 'TEMPORAL' && type === 'evolution') return d.evolutionUnderTemporal;
  if (intent === 'CAUSAL' && type === 'causal') return d.causalUnderCausal;
  return 1;
}
