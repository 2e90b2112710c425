import type { Chunk, EdgeType, GraphEdge, GraphNode, Layer, MemorySnapshot } from './types.ts';

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
  }

  deleteNode(id: string): void {
    const node = this.nodes.get(id);
    if (!node) return;
    this.nodes.delete(id);
    this.byKey.delete(node.key);
    this.vectors.delete(id);
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
    for (const node of this.nodes.values()) {
      if (node.layer === layer) out.push(node as Extract<GraphNode, { layer: L }>);
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

function link(map: Map<string, Set<string>>, from: string, edgeId: string): void {
  let set = map.get(from);
  if (!set) map.set(from, (set = new Set()));
  set.add(edgeId);
}
