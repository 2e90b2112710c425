import type { MemoryGraph } from '../src/graph/memory-graph.ts';
import type { GraphEdge, GraphNode } from '../src/graph/types.ts';
import type { RetrievedUnit } from '../src/retrieve/units.ts';
import { dot } from '../src/util/vectors.ts';
import type { GraphEdgeView, GraphNodeView, NeighbourhoodView } from './protocol.ts';

/** FacetPoints shown per retrieved Episode besides those on a winning path: the closest to the query. */
const POINTS_PER_EPISODE = 4;
/** Episodes linked to a retrieved one by a relation edge, shown as context. */
const RELATED_EPISODES = 6;
const LABEL_CHARS = 34;

/**
 * The part of the memory graph around what a query retrieved: its Episodes, every node on a
 * winning path, each Episode's FacetPoints closest to the query with their Facets and
 * Entities, and Episodes one relation edge away — small enough to read, with every edge
 * among those nodes.
 */
export function neighbourhood(graph: MemoryGraph, units: readonly RetrievedUnit[], queryVector: Float32Array): NeighbourhoodView {
  const rank = new Map<string, number>();
  for (const unit of units) if (!rank.has(unit.episodeId)) rank.set(unit.episodeId, rank.size + 1);
  const pathNodes = new Set(units.flatMap((u) => u.trace.nodes.map((n) => n.id)));
  const pathEdges = new Set(units.flatMap((u) => u.trace.edges.map((e) => e.id)));

  const included = new Set<string>([...rank.keys(), ...pathNodes]);
  const include = (id: string | null): void => {
    if (id !== null && graph.nodes.has(id)) included.add(id);
  };
  for (const episodeId of rank.keys()) {
    const points = graph
      .nodesOfLayer('facetPoint')
      .filter((p) => p.episodeId === episodeId)
      .map((p) => {
        const vector = graph.vectors.get(p.id);
        // Both vectors are L2-normalised, so the dot product is the cosine.
        return { point: p, cosine: vector ? dot(vector, queryVector) : -1 };
      })
      .sort((a, b) => b.cosine - a.cosine)
      .slice(0, POINTS_PER_EPISODE);
    for (const { point } of points) {
      include(point.id);
      include(point.facetId);
      include(point.entityId);
    }
  }
  for (const id of pathNodes) {
    const node = graph.nodes.get(id);
    if (node?.layer === 'facetPoint') include(node.facetId);
    if (node?.layer === 'facet' || node?.layer === 'facetPoint') include(node.episodeId);
  }
  const related = [...rank.keys()]
    .flatMap((id) => graph.edgesOf(id).filter((e) => e.type !== 'belongs_to' && e.type !== 'involves_entity'))
    .map((e) => (rank.has(e.from) ? e.to : e.from))
    .filter((id) => graph.nodes.get(id)?.layer === 'episode' && !included.has(id));
  for (const id of new Set(related.slice(0, RELATED_EPISODES))) include(id);

  const edges: GraphEdgeView[] = [];
  for (const id of included) {
    for (const edge of graph.edgesFrom(id)) if (included.has(edge.to)) edges.push(edgeView(edge, pathEdges.has(edge.id)));
  }
  const nodes = [...included].flatMap((id) => {
    const node = graph.nodes.get(id);
    return node ? [nodeView(graph, node, rank.get(id) ?? null, pathNodes.has(id))] : [];
  });
  placeEntities(nodes, edges);
  return { nodes, edges, omittedNodes: graph.nodes.size - nodes.length };
}

function nodeView(graph: MemoryGraph, node: GraphNode, rank: number | null, onPath: boolean): GraphNodeView {
  const base = { id: node.id, layer: node.layer, rank, onPath };
  switch (node.layer) {
    case 'episode': {
      const chunk = graph.chunks.get(node.chunkId);
      const date = node.time ? shortDate(node.time) : '';
      return { ...base, label: `Episode ${node.order}${date ? ` · ${date}` : ''}`, detail: `${chunk?.header ?? ''}\n${node.summary}`, order: node.order };
    }
    case 'facet':
      return { ...base, label: clip(node.theme), detail: `Facet: ${node.theme}`, order: episodeOrder(graph, node.episodeId) };
    case 'facetPoint': {
      const when = node.timeText ? ` (${node.timeText})` : '';
      const cites = node.dialogIds.length > 0 ? ` [${node.dialogIds.join(', ')}]` : '';
      return { ...base, label: clip(node.content), detail: `FacetPoint: ${node.content}${when}${cites}`, order: episodeOrder(graph, node.episodeId) };
    }
    case 'entity':
      return { ...base, label: clip(node.name), detail: `Entity (${node.entityType}): ${node.name}, in ${node.chunkIds.length} chunk(s)`, order: 0 };
  }
}

function edgeView(edge: GraphEdge, onPath: boolean): GraphEdgeView {
  return { id: edge.id, type: edge.type, source: edge.from, target: edge.to, onPath, description: edge.description };
}

/** Entities belong to no Episode; they sit under the mean position of the nodes they touch. */
function placeEntities(nodes: GraphNodeView[], edges: readonly GraphEdgeView[]): void {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  for (const node of nodes) {
    if (node.layer !== 'entity') continue;
    const orders = edges
      .filter((e) => e.source === node.id || e.target === node.id)
      .map((e) => byId.get(e.source === node.id ? e.target : e.source))
      .filter((n): n is GraphNodeView => n !== undefined && n.layer !== 'entity')
      .map((n) => n.order);
    node.order = orders.length > 0 ? orders.reduce((a, b) => a + b, 0) / orders.length : 0;
  }
}

function episodeOrder(graph: MemoryGraph, episodeId: string): number {
  const episode = graph.nodes.get(episodeId);
  return episode?.layer === 'episode' ? episode.order : 0;
}

function clip(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > LABEL_CHARS ? `${flat.slice(0, LABEL_CHARS - 1)}…` : flat;
}

function shortDate(iso: string): string {
  const [year, month, day] = iso.slice(0, 10).split('-').map(Number);
  if (!year || !month || !day) return iso;
  return `${day} ${['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'][month - 1]} ${year}`;
}
