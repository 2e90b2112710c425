import { IntsByKey } from '../util/ints-by-key.ts';
import { EDGE_TYPES, edgeId, isEdgeId, type EdgeType, type FacetNode, type FacetPointNode, type GraphEdge, type GraphNode } from './types.ts';

/**
 * Edges a node derives from its own fields: a Facet `belongs_to` its Episode (`episodeId`), a
 * FacetPoint `belongs_to` its Facet (`facetId`) and `involves_entity` its Entity (`entityId`).
 * Graph building writes one for each such field, with no description or confidence: three in
 * four edges of a chat memory. What they hold beyond their node is their key, so the stores
 * keep them as a key on their node (store/record-codec.ts), and so does the working graph
 * (graph/memory-graph.ts), which makes the edge object again when it is read.
 */
export const DERIVED_EDGE_TYPES = ['belongs_to', 'involves_entity'] as const satisfies readonly EdgeType[];
export type DerivedEdgeType = (typeof DERIVED_EDGE_TYPES)[number];

const COLON = 0x3a;

/**
 * Derived edges kept as keys, as the working graph keeps them: for each type, the key of the edge
 * each node derives, by the key of that node (the graph's own node object names it), in a table
 * by key (`IntsByKey`), not a map by node id: an open at 100K messages of chat files ~750K of
 * them, and setting them in maps by id was ~0.5 s of it and ~20 MB of heap.
 */
export class DerivedEdgeKeys {
  private readonly tables: Record<DerivedEdgeType, IntsByKey> = { belongs_to: new IntsByKey(), involves_entity: new IntsByKey() };

  /** The key of the `type` edge `node` derives, if it keeps one. */
  get(type: DerivedEdgeType, node: GraphNode): number | undefined {
    return this.tables[type].get(node.key);
  }

  has(type: DerivedEdgeType, node: GraphNode): boolean {
    return this.tables[type].get(node.key) !== undefined;
  }

  set(type: DerivedEdgeType, node: GraphNode, key: number): void {
    this.tables[type].set(node.key, key);
  }

  delete(type: DerivedEdgeType, node: GraphNode): void {
    this.tables[type].delete(node.key);
  }

  /** `get` of the node of key `nodeKey`: for a fact the graph holds as columns, which has no node object to name it. */
  getByNodeKey(type: DerivedEdgeType, nodeKey: number): number | undefined {
    return this.tables[type].get(nodeKey);
  }

  /** `set` of the node of key `nodeKey` (see `getByNodeKey`). */
  setByNodeKey(type: DerivedEdgeType, nodeKey: number, key: number): void {
    this.tables[type].set(nodeKey, key);
  }

  /** How many nodes keep an edge of `type`. */
  size(type: DerivedEdgeType): number {
    return this.tables[type].size;
  }
}

/** The keys of the derived edges one node has, by type. */
export type NodeEdgeKeys = Partial<Record<DerivedEdgeType, number>>;

/** A node that can derive edges: a Facet or a FacetPoint. */
export type DerivingNode = FacetNode | FacetPointNode;

/** An edge's keys in the order graph building writes them. */
export const EDGE_KEYS = ['id', 'key', 'type', 'from', 'to', 'chunkId', 'description', 'confidence'] as const;

export function isDerivedEdgeType(type: EdgeType): type is DerivedEdgeType {
  return type === 'belongs_to' || type === 'involves_entity';
}

/**
 * The relation edges' types: those no node derives (temporal, causal, evolution, semantic), so
 * every edge of them is a record of its own, named `type:from>to` (`edgeId`).
 */
export const RELATION_EDGE_TYPES = EDGE_TYPES.filter((type) => !isDerivedEdgeType(type));

/** The relation type (`RELATION_EDGE_TYPES`) whose edge `id` names, told by its prefix; undefined for any other id. */
export function relationTypeOf(id: string): EdgeType | undefined {
  return RELATION_EDGE_TYPES.find((type) => id.startsWith(type) && id.charCodeAt(type.length) === COLON);
}

/** Whether `id` names an edge of a relation type (`RELATION_EDGE_TYPES`), told by its prefix. */
export function isRelationEdgeId(id: string): boolean {
  return relationTypeOf(id) !== undefined;
}

/** The ids of a type's edges (`edgeId`) sort from `type:` to before `type;`, in SQLite's order (UTF-8 bytes), IndexedDB's and JavaScript's alike. */
export function idRangeOf(type: EdgeType): [string, string] {
  return [`${type}:`, `${type};`];
}

/** Bounds of id ranges (null: none that side). */
export type IdRange = readonly [from: string | null, to: string | null];

/** The id ranges of the relation edges. */
export const RELATION_ID_RANGES: readonly IdRange[] = [...RELATION_EDGE_TYPES].sort().map(idRangeOf);

/** The id ranges between and around `RELATION_ID_RANGES`: every other edge's (each gap runs from one range's end to the next one's start). */
export const OTHER_ID_RANGES: readonly IdRange[] = [null, ...RELATION_ID_RANGES.map(([, to]) => to)].map((from, i) => [from, RELATION_ID_RANGES[i]?.[0] ?? null]);

/** Whether a node of this layer can derive edges (Facets and FacetPoints). */
export function canDeriveEdges(node: GraphNode): node is DerivingNode {
  return node.layer === 'facet' || node.layer === 'facetPoint';
}

/** The node id a derived edge of `type` runs to from `node`, or null when it has none. */
export function derivedTarget(node: GraphNode, type: DerivedEdgeType): string | null {
  if (type === 'involves_entity') return node.layer === 'facetPoint' ? node.entityId : null;
  if (node.layer === 'facetPoint') return node.facetId;
  return node.layer === 'facet' ? node.episodeId : null;
}

/** The edge of `type` that `node` derives, under `key`, as graph building writes it; null when the node has none. */
export function derivedEdge(node: GraphNode, type: DerivedEdgeType, key: number): GraphEdge | null {
  const to = derivedTarget(node, type);
  if (to === null || !canDeriveEdges(node)) return null;
  return { id: edgeId(type, node.id, to), key, type, from: node.id, to, chunkId: node.chunkId, description: null, confidence: null };
}

/** The edges `node` derives under `keys`, type by type; a key of a type it cannot derive makes none. */
export function derivedEdgesOf(node: GraphNode, keys: NodeEdgeKeys): GraphEdge[] {
  const edges: GraphEdge[] = [];
  for (const type of DERIVED_EDGE_TYPES) {
    const key = keys[type];
    const edge = key === undefined ? null : derivedEdge(node, type, key);
    if (edge) edges.push(edge);
  }
  return edges;
}

/** True when `edge` is exactly the edge `node` derives for its type under the edge's key: the same fields, in the same order. */
export function isDerivedFrom(edge: GraphEdge, node: GraphNode): edge is GraphEdge & { type: DerivedEdgeType } {
  if (!isDerivedEdgeType(edge.type) || !canDeriveEdges(node)) return false;
  const to = derivedTarget(node, edge.type);
  return (
    to !== null &&
    edge.from === node.id &&
    edge.to === to &&
    isEdgeId(edge.id, edge.type, node.id, to) &&
    edge.chunkId === node.chunkId &&
    edge.description === null &&
    edge.confidence === null &&
    hasKeysInOrder(edge, EDGE_KEYS)
  );
}

/** The type of a derived edge with this id and the node ids it may run from (an id is `<type>:<from>><to>`, and ids may hold `>`); null for another type. */
export function derivedEdgeSources(id: string): { type: DerivedEdgeType; candidates: string[] } | null {
  const type = DERIVED_EDGE_TYPES.find((t) => id.startsWith(t) && id.charCodeAt(t.length) === COLON);
  if (type === undefined) return null;
  const rest = id.slice(type.length + 1);
  const candidates: string[] = [];
  for (let i = rest.indexOf('>'); i > 0; i = rest.indexOf('>', i + 1)) candidates.push(rest.slice(0, i));
  return { type, candidates };
}

/**
 * The derived edge whose id is `id` among those `keeps` tells a node of `nodes` keeps as a key:
 * its type and the node it runs from; undefined when none has that id. How the graph reads an
 * edge by id, and a check finds two records of one id.
 */
export function keptDerivedEdge(
  id: string,
  keeps: (type: DerivedEdgeType, node: GraphNode) => boolean,
  nodes: ReadonlyMap<string, GraphNode>,
): { type: DerivedEdgeType; node: GraphNode } | undefined {
  const sources = derivedEdgeSources(id);
  if (!sources) return undefined;
  for (const from of sources.candidates) {
    const node = nodes.get(from);
    const to = node && keeps(sources.type, node) ? derivedTarget(node, sources.type) : null;
    if (node && to !== null && isEdgeId(id, sources.type, from, to)) return { type: sources.type, node };
  }
  return undefined;
}

/** True when `record` has exactly `keys`, in that order, none of them undefined (which an array would write as null). */
export function hasKeysInOrder(record: object, keys: readonly string[]): boolean {
  // A for-in over own keys: a memory's open checks every edge, and `Object.entries` made an array per key.
  let at = 0;
  for (const key in record) {
    if (!Object.hasOwn(record, key)) continue;
    if (key !== keys[at] || (record as Record<string, unknown>)[key] === undefined) return false;
    at++;
  }
  return at === keys.length;
}
