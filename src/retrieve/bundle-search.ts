import type { PrismConfig } from '../config.ts';
import type { MemoryGraph } from '../graph/memory-graph.ts';
import type { GraphEdge, GraphNode, Layer, RelationType } from '../graph/types.ts';
import { topK } from '../util/top-k.ts';
import { edgeCost, edgeCostFloor, type EdgeCostContext } from './edge-cost.ts';
import type { BundleEntry, Intent, LayerAnchors, PathTemplate, PathTrace, TraceEdge, TraceNode } from './types.ts';

/** Relation edges a bridge template may cross (design §3; `semantic` is not a template). */
const BRIDGE_TYPES = ['temporal', 'causal', 'evolution'] as const satisfies readonly RelationType[];

/** The layer a `belongs_to` edge leads up to; climbing stops at the Episode. */
const PARENT_LAYER: Partial<Record<Layer, Layer>> = { facetPoint: 'facet', facet: 'episode' };

const BACKBONE_TEMPLATE: Partial<Record<Layer, PathTemplate>> = {
  episode: 'Ep',
  facet: 'Fc→Ep',
  facetPoint: 'FP→Fc→Ep',
};

const LABEL_CHARS = 60;

/**
 * N1 (design §3): every path of the eight templates from every anchor to an Episode, costed
 * with N2. Entity paths have two forms: `En→FP→Fc→Ep` through each FacetPoint involving the
 * Entity, and `En→Fc→Ep` straight to that FacetPoint's Facet at the cost of the same
 * `involves_entity` edge. Relation bridges are crossed in either direction, because the
 * anchor may sit at either end (the earlier or the later fact, the cause or the effect).
 */
export function enumeratePaths(
  graph: MemoryGraph,
  anchors: LayerAnchors,
  queryVector: Float32Array,
  intent: Intent,
  config: PrismConfig,
): PathTrace[] {
  const paths: PathTrace[] = [];
  forEachPath(graph, anchors, queryVector, intent, config, (path) => paths.push(traceOf(path, config.retrieval.hopCost)));
  return paths;
}

/**
 * The `size` cheapest Episodes, each with its minimum path cost and that path; ties by ingestion
 * order. Given `within`, only those Episodes (paths from Entity anchors may lead anywhere).
 */
export function bundleSearch(
  graph: MemoryGraph,
  anchors: LayerAnchors,
  queryVector: Float32Array,
  intent: Intent,
  config: PrismConfig,
  size: number = config.retrieval.bundleSize,
  within: ReadonlySet<string> | null = null,
): BundleEntry[] {
  const cheapest = new Map<string, PathStep>();
  // The cost of the size-th cheapest Episode so far, known once `size` Episodes are reached:
  // a path costing more cannot enter the bundle or change an Episode in it.
  let limit = Infinity;
  let changed = false;
  const visit = (path: PathStep): void => {
    if (within && !within.has(path.node.id)) return;
    const known = cheapest.get(path.node.id);
    if (!known || path.total < known.total) {
      cheapest.set(path.node.id, path);
      changed = true;
    }
  };
  forEachPath(graph, anchors, queryVector, intent, config, visit, () => {
    if (changed && size > 0 && cheapest.size >= size) {
      // Selected, not sorted: this runs per anchor, over every Episode reached so far.
      const totals: number[] = [];
      for (const path of cheapest.values()) totals.push(path.total);
      limit = topK(totals, size, byValue)[size - 1] ?? Infinity;
    }
    changed = false;
    return limit;
  });
  const order = (id: string): number => {
    const node = graph.nodes.get(id);
    return node?.layer === 'episode' ? node.order : Number.MAX_SAFE_INTEGER;
  };
  // Traces are built for the kept Episodes only: a large memory reaches many more.
  return [...cheapest.entries()]
    .sort(([a, pa], [b, pb]) => pa.total - pb.total || order(a) - order(b) || a.localeCompare(b))
    .slice(0, Math.max(0, size))
    .map(([episodeId, path]) => ({ episodeId, cost: path.total, trace: traceOf(path, config.retrieval.hopCost) }));
}

/** `Entity "Melanie" —involves→ FacetPoint "…" —belongs_to→ Facet "…" —belongs_to→ Episode 12` */
export function formatTrace(trace: PathTrace): string {
  const parts: string[] = [];
  trace.nodes.forEach((node, i) => {
    const edge = trace.edges[i - 1];
    if (edge) parts.push(formatEdge(edge));
    parts.push(node.layer === 'episode' ? `Episode ${node.label}` : `${LAYER_NAMES[node.layer]} "${node.label}"`);
  });
  return parts.join(' ');
}

const LAYER_NAMES: Record<Layer, string> = { entity: 'Entity', facetPoint: 'FacetPoint', facet: 'Facet', episode: 'Episode' };

function formatEdge(edge: TraceEdge): string {
  const name = edge.type === 'involves_entity' ? 'involves' : edge.type;
  // Only relation bridges carry meaning in their direction (earlier→later, cause→effect).
  const directed = (BRIDGE_TYPES as readonly string[]).includes(edge.type);
  return directed && !edge.forward ? `←${name}—` : `—${name}→`;
}

/**
 * A path under construction as a chain back to its anchor: extending it is O(1), and only the
 * paths a caller keeps are turned into traces (`traceOf`).
 */
interface PathStep {
  node: GraphNode;
  /** Cost so far: d(a) + Σ (c_edge + c_hop). */
  total: number;
  template: PathTemplate;
  /** The hop into `node`; null at the anchor. */
  via: { edge: GraphEdge; cost: number; from: PathStep } | null;
}

/**
 * A caller that keeps only the cheapest paths gives `limit`: a cost that no path it still needs
 * exceeds (it may only fall as paths are visited). The search then skips paths that cannot
 * cost less than that, and the `En→FP→Fc→Ep` form, which always costs more than the
 * `En→Fc→Ep` path to the same Episode over the same edges plus one more hop. Both skips need
 * every hop to cost more than nothing (`hopCost` above the lowest edge cost's magnitude).
 */
function forEachPath(
  graph: MemoryGraph,
  anchors: LayerAnchors,
  queryVector: Float32Array,
  intent: Intent,
  config: PrismConfig,
  visit: (path: PathStep) => void,
  limit?: () => number,
): void {
  const bestScore = new Map<string, number>();
  for (const list of Object.values(anchors)) {
    for (const a of list) bestScore.set(a.id, Math.max(a.score, bestScore.get(a.id) ?? -Infinity));
  }
  const ctx: EdgeCostContext = { queryVector, vectors: graph.vectors, anchorIds: new Set(bestScore.keys()), intent, config };
  const hopCost = config.retrieval.hopCost;
  // The least one more hop can add to a path's cost.
  const leastHop = hopCost + edgeCostFloor(config);
  const pruning = limit !== undefined && leastHop > PRUNE_MARGIN;
  // An entity's cheapest paths take two hops (one through a relation bridge).
  const entityHops = config.flags.relationPaths ? 1 : 2;

  const start = (node: GraphNode, score: number, template: PathTemplate): PathStep => ({ node, total: 1 - score, template, via: null });
  const step = (path: PathStep, edge: GraphEdge, next: GraphNode, cost = edgeCost(edge, ctx)): PathStep => ({
    node: next,
    total: path.total + cost + hopCost,
    template: path.template,
    via: { edge, cost, from: path },
  });
  const climb = (path: PathStep): void => {
    const last = path.node;
    if (last.layer === 'episode') return visit(path);
    const parent = PARENT_LAYER[last.layer];
    for (const edge of graph.edgesFrom(last.id, 'belongs_to')) {
      const next = graph.nodes.get(edge.to);
      if (next && next.layer === parent) climb(step(path, edge, next));
    }
  };

  for (const [id, score] of bestScore) {
    const node = graph.nodes.get(id);
    if (!node) continue;
    // Read once per anchor: an older limit is larger, so still safe to prune by.
    const bound = pruning ? limit() : Infinity;
    if (node.layer === 'entity') {
      if (1 - score + entityHops * leastHop > bound) continue;
      for (const involves of graph.edgesTo(id, 'involves_entity')) {
        const cost = edgeCost(involves, ctx);
        // The path's total, as `step` adds it, is checked before any path object is made, or the
        // fact read (an Entity may name thousands, most of them past the bound).
        const past = 1 - score + cost + hopCost + leastHop > bound;
        if (past && pruning) continue;
        const point = graph.nodes.get(involves.from);
        if (point?.layer !== 'facetPoint') continue;
        if (!pruning) climb(step(start(node, score, 'En→FP→Fc→Ep'), involves, point, cost));
        if (past) continue;
        for (const up of graph.edgesFrom(point.id, 'belongs_to')) {
          const facet = graph.nodes.get(up.to);
          if (facet?.layer === 'facet') climb(step(start(node, score, 'En→Fc→Ep'), involves, facet, cost));
        }
      }
    } else {
      const template = BACKBONE_TEMPLATE[node.layer];
      if (template) climb(start(node, score, template));
    }
    if (!config.flags.relationPaths) continue;
    for (const type of BRIDGE_TYPES) {
      for (const edge of graph.edgesOf(id, type)) {
        const other = graph.nodes.get(edge.from === id ? edge.to : edge.from);
        if (other) climb(step(start(node, score, `${type} bridge`), edge, other));
      }
    }
  }
}

/** Ascending, for path totals. */
const byValue = (a: number, b: number): number => a - b;

/** Below this, a hop's least cost is too close to nothing to prune by (float rounding). */
const PRUNE_MARGIN = 1e-9;

/** The trace of a finished path, anchor first. */
function traceOf(path: PathStep, hopCost: number): PathTrace {
  const nodes: TraceNode[] = [];
  const edges: TraceEdge[] = [];
  let at: PathStep = path;
  for (let via = at.via; via !== null; at = via.from, via = at.via) {
    nodes.push(traceNode(at.node));
    edges.push({ id: via.edge.id, type: via.edge.type, cost: via.cost, forward: via.edge.from === via.from.node.id });
  }
  nodes.push(traceNode(at.node));
  return { template: path.template, anchorCost: at.total, hopCost, total: path.total, nodes: nodes.reverse(), edges: edges.reverse() };
}

function traceNode(node: GraphNode): TraceNode {
  return { id: node.id, layer: node.layer, label: nodeLabel(node) };
}

function nodeLabel(node: GraphNode): string {
  switch (node.layer) {
    case 'episode':
      return String(node.order);
    case 'facet':
      return truncate(node.theme);
    case 'facetPoint':
      return truncate(node.content);
    case 'entity':
      return truncate(node.name);
  }
}

function truncate(text: string): string {
  return text.length <= LABEL_CHARS ? text : `${text.slice(0, LABEL_CHARS - 1)}…`;
}
