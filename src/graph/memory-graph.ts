import type { Chunk, EdgeType, EntityNode, GraphEdge, GraphNode, Layer, MemorySnapshot } from './types.ts';

/**
 * The in-memory working set of a memory: nodes, edges and chunks with adjacency, built
 * from a snapshot and kept in step with every committed batch. Retrieval reads it; it
 * does no I/O.
 */
export class MemoryGraph {
  readonly nodes = new Map<string, GraphNode>();
  readonly edges = new Map<string, GraphEdge>();
  readonly chunks = new Map<string, Chunk>();
  readonly vectors: Map<string, Float32Array>;
  private readonly byKey = new Map<number, string>();
  /** Node ids per layer, so a layer is listed without scanning every node. */
  private readonly byLayer = new Map<Layer, Set<string>>();
  /** Entities by lower-cased name (the §2.4 exact-name merge), kept as nodes come and go. */
  private readonly entitiesByName = new Map<string, string>();
  private readonly outgoing = new Map<string, Set<string>>();
  private readonly incoming = new Map<string, Set<string>>();

  constructor(snapshot: Pick<MemorySnapshot, 'nodes' | 'edges' | 'chunks' | 'vectors'>) {
    this.vectors = snapshot.vectors;
    for (const chunk of snapshot.chunks) this.chunks.set(chunk.id, chunk);
    for (const node of snapshot.nodes) this.putNode(node);
    for (const edge of snapshot.edges) this.putEdge(edge);
  }

  putNode(node: GraphNode): void {
    this.nodes.set(node.id, node);
    this.byKey.set(node.key, node.id);
    link(this.byLayer, node.layer, node.id);
    if (node.layer === 'entity') this.entitiesByName.set(node.name.toLowerCase(), node.id);
  }

  deleteNode(id: string): void {
    const node = this.nodes.get(id);
    if (!node) return;
    this.nodes.delete(id);
    this.byKey.delete(node.key);
    this.vectors.delete(id);
    this.byLayer.get(node.layer)?.delete(id);
    if (node.layer === 'entity' && this.entitiesByName.get(node.name.toLowerCase()) === id) this.entitiesByName.delete(node.name.toLowerCase());
  }

  /** The Entity named `name` (case-insensitive), if any. */
  entityNamed(name: string): EntityNode | undefined {
    const id = this.entitiesByName.get(name.toLowerCase());
    const node = id === undefined ? undefined : this.nodes.get(id);
    return node?.layer === 'entity' ? node : undefined;
  }

  putEdge(edge: GraphEdge): void {
    this.edges.set(edge.id, edge);
    this.byKey.set(edge.key, edge.id);
    link(this.outgoing, edge.from, edge.id);
    link(this.incoming, edge.to, edge.id);
  }

  deleteEdge(id: string): void {
    const edge = this.edges.get(id);
    if (!edge) return;
    this.edges.delete(id);
    this.byKey.delete(edge.key);
    this.vectors.delete(id);
    this.outgoing.get(edge.from)?.delete(id);
    this.incoming.get(edge.to)?.delete(id);
  }

  /** Node or edge id behind an index key. */
  idForKey(key: number): string | undefined {
    return this.byKey.get(key);
  }

  edgesFrom(id: string, type?: EdgeType): GraphEdge[] {
    return this.collect(this.outgoing.get(id), type);
  }

  edgesTo(id: string, type?: EdgeType): GraphEdge[] {
    return this.collect(this.incoming.get(id), type);
  }

  /** Edges touching `id` in either direction. */
  edgesOf(id: string, type?: EdgeType): GraphEdge[] {
    return [...this.edgesFrom(id, type), ...this.edgesTo(id, type)];
  }

  nodesOfLayer<L extends Layer>(layer: L): Array<Extract<GraphNode, { layer: L }>> {
    const out: Array<Extract<GraphNode, { layer: L }>> = [];
    for (const id of this.byLayer.get(layer) ?? []) {
      const node = this.nodes.get(id);
      if (node?.layer === layer) out.push(node as Extract<GraphNode, { layer: L }>);
    }
    return out;
  }

  private collect(ids: Set<string> | undefined, type: EdgeType | undefined): GraphEdge[] {
    const out: GraphEdge[] = [];
    if (!ids) return out;
    for (const id of ids) {
      const edge = this.edges.get(id);
      if (edge && (type === undefined || edge.type === type)) out.push(edge);
    }
    return out;
  }
}

function link<K>(map: Map<K, Set<string>>, from: K, id: string): void {
  let set = map.get(from);
  if (!set) map.set(from, (set = new Set()));
  set.add(id);
}
