import { LAYERS, type Layer } from '../graph/types.ts';
import type { LexicalHit } from './lexical.ts';
import { vectorDot } from '../graph/vector-table.ts';
import type { Anchor, LayerAnchors } from './types.ts';

export interface FusionContext {
  queryVector: Float32Array;
  /** Node vectors by id, to cost lexical hits the dense search did not return. */
  vectors: ReadonlyMap<string, Float32Array>;
  /** Reciprocal-rank-fusion constant. */
  rrfK: number;
  /** Lexical hits taken per layer. */
  lexicalPerLayer: number;
  /** Multiplies the lexical list's reciprocal ranks (1: equal say; 0: the dense list alone). */
  lexicalWeight: number;
}

/** Fuses each layer's dense anchors with its lexical hits (see `fuseAnchors`). */
export function fuseLayerAnchors(
  dense: LayerAnchors,
  lexical: Record<Layer, readonly LexicalHit[]>,
  ctx: FusionContext,
): LayerAnchors {
  const fused = {} as LayerAnchors;
  for (const layer of LAYERS) fused[layer] = fuseAnchors(dense[layer], lexical[layer].slice(0, ctx.lexicalPerLayer), ctx);
  return fused;
}

/**
 * One layer's anchors from a dense list (cosines) and a lexical list (BM25 scores).
 *
 * Order by reciprocal-rank fusion: BM25 scores are unbounded and corpus-dependent, so they
 * cannot be mixed with cosines by value, while ranks are comparable and RRF is robust without
 * tuning. Cost by rank-preserving transfer: the union's own cosines to the query, sorted, are
 * handed out in fused order, so the anchor fused first gets the best cosine of the union, and
 * so on. The layer's anchor costs d(a) = 1 − score thus stay on the cosine scale that N1's edge
 * costs and c_hop are calibrated for (and that other layers compete on), while a strong lexical
 * hit that the embedding ranked low moves up to a competitive cost.
 */
export function fuseAnchors(dense: readonly Anchor[], lexical: readonly LexicalHit[], ctx: FusionContext): Anchor[] {
  if (lexical.length === 0 || ctx.lexicalWeight <= 0) return [...dense];
  const members = new Map<string, { rrf: number; cosine: number }>();
  dense.forEach((a, rank) => {
    // The index's score is authoritative for what it returned (it may be quantised or approximate).
    members.set(a.id, { rrf: (members.get(a.id)?.rrf ?? 0) + 1 / (ctx.rrfK + rank + 1), cosine: a.score });
  });
  lexical.forEach((hit, rank) => {
    let m = members.get(hit.id);
    if (!m) {
      // A lexical hit the dense search did not return: its own cosine.
      members.set(hit.id, (m = { rrf: 0, cosine: vectorDot(ctx.vectors, hit.id, ctx.queryVector) ?? 0 }));
    }
    m.rrf += ctx.lexicalWeight / (ctx.rrfK + rank + 1);
  });
  const ordered = [...members.entries()].sort(
    ([idA, a], [idB, b]) => b.rrf - a.rrf || b.cosine - a.cosine || idA.localeCompare(idB),
  );
  const cosines = ordered.map(([, m]) => m.cosine).sort((a, b) => b - a);
  return ordered.map(([id], i) => ({ id, score: cosines[i] ?? 0 }));
}
