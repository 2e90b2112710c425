import { describe, expect, it } from 'vitest';
import { derivedEdge, isDerivedEdgeType } from '../src/graph/derived-edges.ts';
import { MemoryGraph } from '../src/graph/memory-graph.ts';
import { VectorTable } from '../src/graph/vector-table.ts';
import { EDGE_TYPES, edgeId, isEdgeId, type EdgeType, type FacetNode, type FacetPointNode, type GraphEdge, type GraphNode } from '../src/graph/types.ts';

/**
 * The working graph keeps derived edges (a Facet's or FacetPoint's `belongs_to` and
 * `involves_entity`, see graph/derived-edges.ts) as keys on their nodes, not as objects. Every
 * reader must see the same edges, in the same order, as if each were held as the object put.
 */
const CHUNK = 'c'.repeat(64);

const episode: GraphNode = { id: 'ep:1', key: 1, layer: 'episode', chunkId: CHUNK, summary: 's', time: null, order: 0 };
const entity: GraphNode = { id: 'en:1', key: 2, layer: 'entity', name: 'Ann', entityType: 'person', chunkIds: [CHUNK] };
const facet = (n: number, key: number): FacetNode => ({ id: `fc:${n}`, key, layer: 'facet', chunkId: CHUNK, episodeId: 'ep:1', theme: `theme ${n}` });
const point = (n: number, key: number, facetId: string, entityId: string | null = 'en:1'): FacetPointNode => ({
  id: `fp:${n}`,
  key,
  layer: 'facetPoint',
  chunkId: CHUNK,
  episodeId: 'ep:1',
  facetId,
  content: `fact ${n}`,
  entityId,
  timeText: null,
  time: null,
  dialogIds: [],
});
const edge = (type: EdgeType, from: string, to: string, key: number, extra: Partial<GraphEdge> = {}): GraphEdge => ({
  id: edgeId(type, from, to),
  key,
  type,
  from,
  to,
  chunkId: CHUNK,
  description: null,
  confidence: null,
  ...extra,
});

/** A graph as graph building makes one: two Facets, three FacetPoints, every derived edge, one relation edge. */
function built(): { graph: MemoryGraph; edges: GraphEdge[] } {
  const graph = new MemoryGraph({ nodes: [], edges: [], chunks: [], vectors: new VectorTable() });
  const nodes = [episode, entity, facet(1, 10), facet(2, 11), point(1, 20, 'fc:1'), point(2, 21, 'fc:1', null), point(3, 22, 'fc:2')];
  for (const node of nodes) graph.putNode(structuredClone(node));
  const edges = [
    edge('belongs_to', 'fc:1', 'ep:1', 30),
    edge('belongs_to', 'fc:2', 'ep:1', 31),
    edge('belongs_to', 'fp:1', 'fc:1', 32),
    edge('involves_entity', 'fp:1', 'en:1', 33),
    edge('belongs_to', 'fp:2', 'fc:1', 34),
    edge('belongs_to', 'fp:3', 'fc:2', 35),
    edge('involves_entity', 'fp:3', 'en:1', 36),
    edge('evolution', 'fp:1', 'fp:3', 37, { description: 'then' }),
  ];
  for (const e of edges) graph.putEdge(structuredClone(e));
  return { graph, edges };
}

const ids = (edges: readonly GraphEdge[]) => edges.map((e) => e.id);

/** Edges by type, counted over every edge the graph lists. */
function countedByType(graph: MemoryGraph): Record<string, number> {
  const counts: Record<string, number> = Object.fromEntries(EDGE_TYPES.map((type) => [type, 0]));
  for (const e of graph.edges.values()) counts[e.type] = (counts[e.type] ?? 0) + 1;
  return counts;
}

/** `sourcesTo` of every node and type, against the sources of `edgesTo` (which makes the edges). */
function expectSourcesAgree(graph: MemoryGraph): void {
  for (const id of [...graph.nodes.keys(), 'fp:9']) {
    for (const type of EDGE_TYPES) expect(graph.sourcesTo(id, type)).toStrictEqual(graph.edgesTo(id, type).map((e) => e.from));
  }
}

describe('MemoryGraph derived edges', () => {
  it('reads every edge as it was put: by id, by end, by type, counted and listed', () => {
    const { graph, edges } = built();
    expect(graph.edges.size).toBe(edges.length);
    for (const e of edges) {
      expect(graph.edges.get(e.id)).toStrictEqual(e);
      expect(graph.edges.has(e.id)).toBe(true);
      // Key order too: a checkpoint is the edges' JSON.
      expect(JSON.stringify(graph.edges.get(e.id))).toBe(JSON.stringify(e));
    }
    expect([...graph.edges.values()].map((e) => e.id).sort()).toStrictEqual(ids(edges).sort());
    expect([...graph.edges.keys()].sort()).toStrictEqual(ids(edges).sort());
    expect(ids(graph.edgesTo('ep:1', 'belongs_to'))).toStrictEqual(['belongs_to:fc:1>ep:1', 'belongs_to:fc:2>ep:1']);
    expect(ids(graph.edgesTo('fc:1', 'belongs_to'))).toStrictEqual(['belongs_to:fp:1>fc:1', 'belongs_to:fp:2>fc:1']);
    expect(ids(graph.edgesTo('en:1', 'involves_entity'))).toStrictEqual(['involves_entity:fp:1>en:1', 'involves_entity:fp:3>en:1']);
    expect(ids(graph.edgesFrom('fp:1'))).toStrictEqual(['belongs_to:fp:1>fc:1', 'evolution:fp:1>fp:3', 'involves_entity:fp:1>en:1']);
    expect(ids(graph.edgesFrom('fp:2', 'involves_entity'))).toStrictEqual([]);
    expect(graph.facetPointsOf('ep:1').map((n) => n.id)).toStrictEqual(['fp:1', 'fp:2', 'fp:3']);
    expect(graph.edges.has('belongs_to:fp:2>fc:2')).toBe(false);
    expect(graph.edges.get('belongs_to:fp:9>fc:1')).toBeUndefined();
    expect(graph.idForKey(37)).toBe('evolution:fp:1>fp:3');
    expect(graph.sourcesTo('fc:1', 'belongs_to')).toStrictEqual(['fp:1', 'fp:2']);
    expectSourcesAgree(graph);
  });

  it('keeps an edge as it was when its node is put again pointing elsewhere, or deleted', () => {
    const { graph } = built();
    graph.putNode(point(1, 20, 'fc:2'));
    // The old edge outlives the change; the node's new Facet gets no edge until one is put.
    expect(graph.edges.get('belongs_to:fp:1>fc:1')).toMatchObject({ from: 'fp:1', to: 'fc:1', key: 32 });
    expect(graph.edges.has('belongs_to:fp:1>fc:2')).toBe(false);
    expect(ids(graph.edgesTo('fc:1', 'belongs_to'))).toStrictEqual(['belongs_to:fp:1>fc:1', 'belongs_to:fp:2>fc:1']);
    expect(ids(graph.edgesTo('fc:2', 'belongs_to'))).toStrictEqual(['belongs_to:fp:3>fc:2']);
    // Its entity edge still matches the node: unchanged.
    expect(graph.edges.get('involves_entity:fp:1>en:1')?.key).toBe(33);

    expect(graph.edgeCountsByType()).toStrictEqual(countedByType(graph));

    graph.deleteNode('fp:3');
    expect(graph.edges.get('involves_entity:fp:3>en:1')).toMatchObject({ from: 'fp:3', key: 36 });
    expect(graph.edges.size).toBe(8);
    expect(graph.edgeCountsByType()).toStrictEqual(countedByType(graph));
    graph.deleteEdge('involves_entity:fp:3>en:1');
    graph.deleteEdge('belongs_to:fp:1>fc:1');
    expect(graph.edges.size).toBe(6);
    expect(graph.edgeCountsByType()).toStrictEqual({ belongs_to: 4, temporal: 0, causal: 0, evolution: 1, involves_entity: 1, semantic: 0 });
    expect(graph.edgeCountsByType()).toStrictEqual(countedByType(graph));
    expect(ids(graph.edgesTo('en:1', 'involves_entity'))).toStrictEqual(['involves_entity:fp:1>en:1']);
    expect(ids(graph.edgesTo('fc:1', 'belongs_to'))).toStrictEqual(['belongs_to:fp:2>fc:1']);
    expectSourcesAgree(graph);
  });

  it('keeps the derived edges of a node put again under another key, and takes them along when it goes', () => {
    const { graph } = built();
    // The same fact under a new key (the graph keeps derived edges by their node's key).
    graph.putNode(point(1, 40, 'fc:1'));
    expect(graph.edges.get('belongs_to:fp:1>fc:1')).toMatchObject({ from: 'fp:1', to: 'fc:1', key: 32 });
    expect(graph.edges.get('involves_entity:fp:1>en:1')?.key).toBe(33);
    expect(ids(graph.edgesFrom('fp:1'))).toStrictEqual(['belongs_to:fp:1>fc:1', 'evolution:fp:1>fp:3', 'involves_entity:fp:1>en:1']);
    expect(graph.sourcesTo('fc:1', 'belongs_to')).toStrictEqual(['fp:1', 'fp:2']);
    expect(graph.idForKey(40)).toBe('fp:1');
    expect(graph.edges.size).toBe(8);
    expect(graph.edgeCountsByType()).toStrictEqual(countedByType(graph));
    expectSourcesAgree(graph);
    // A node that now holds the old key finds no edge of the fact's.
    graph.putNode(point(4, 20, 'fc:2', null));
    expect(ids(graph.edgesFrom('fp:4'))).toStrictEqual([]);
    expect(graph.edges.size).toBe(8);
    // Deleted, the node hands its edges over as they were: they outlive it until deleted themselves.
    graph.deleteNode('fp:1');
    expect(graph.edges.get('belongs_to:fp:1>fc:1')).toMatchObject({ from: 'fp:1', to: 'fc:1', key: 32 });
    expect(graph.sourcesTo('fc:1', 'belongs_to')).toStrictEqual(['fp:1', 'fp:2']);
    expect(graph.edges.size).toBe(8);
    expect(graph.edgeCountsByType()).toStrictEqual(countedByType(graph));
    graph.deleteEdge('belongs_to:fp:1>fc:1');
    expect(graph.sourcesTo('fc:1', 'belongs_to')).toStrictEqual(['fp:2']);
    expectSourcesAgree(graph);
  });

  it('keeps the derived edges of nodes with keys far apart as of nodes with keys in order', () => {
    const { graph } = built();
    // Keys a memory never gives out in order (the graph keeps derived edges by their node's key).
    const far = [2 ** 40, 2 ** 20, 5_000_000, 2 ** 40 + 1];
    far.forEach((key, i) => graph.putNode(point(10 + i, key, 'fc:2')));
    far.forEach((key, i) => graph.putEdge(edge('belongs_to', `fp:${10 + i}`, 'fc:2', key + 100)));
    far.forEach((key, i) => expect(graph.edges.get(`belongs_to:fp:${10 + i}>fc:2`)?.key).toBe(key + 100));
    // And an edge key far from its node's: put, then replaced by one near it, then by a far one again.
    graph.putNode(point(14, 300, 'fc:2'));
    for (const key of [2 ** 33, 301, 2 ** 34]) {
      graph.putEdge(edge('belongs_to', 'fp:14', 'fc:2', key));
      expect(graph.edges.get('belongs_to:fp:14>fc:2')?.key).toBe(key);
    }
    expect(graph.sourcesTo('fc:2', 'belongs_to')).toStrictEqual(['fp:3', 'fp:10', 'fp:11', 'fp:12', 'fp:13', 'fp:14']);
    expect(graph.edges.size).toBe(13);
    graph.deleteEdge(`belongs_to:fp:11>fc:2`);
    graph.deleteNode('fp:10');
    expect(graph.edges.get('belongs_to:fp:10>fc:2')?.key).toBe(2 ** 40 + 100);
    expect(graph.edges.has('belongs_to:fp:11>fc:2')).toBe(false);
    expect(graph.edgeCountsByType()).toStrictEqual(countedByType(graph));
    expectSourcesAgree(graph);
  });

  it('replaces a derived edge in place, and holds one that differs from what its node derives', () => {
    const { graph } = built();
    graph.putEdge(edge('belongs_to', 'fp:1', 'fc:1', 90));
    expect(graph.edges.get('belongs_to:fp:1>fc:1')?.key).toBe(90);
    expect(ids(graph.edgesTo('fc:1', 'belongs_to'))).toStrictEqual(['belongs_to:fp:1>fc:1', 'belongs_to:fp:2>fc:1']);
    // With a description it is not the derived edge: held as put, and still listed once.
    const described = edge('belongs_to', 'fp:2', 'fc:1', 34, { description: 'part of' });
    graph.putEdge(structuredClone(described));
    expect(graph.edges.get(described.id)).toStrictEqual(described);
    expect(graph.edges.size).toBe(8);
    // Held and derived edges of one type are listed together in key order.
    expect(ids(graph.edgesTo('fc:1', 'belongs_to'))).toStrictEqual(['belongs_to:fp:2>fc:1', 'belongs_to:fp:1>fc:1']);
    expectSourcesAgree(graph);
    // A derived edge deleted on its own goes, its node stays.
    graph.deleteEdge('belongs_to:fp:3>fc:2');
    expect(graph.edges.has('belongs_to:fp:3>fc:2')).toBe(false);
    expect(graph.edgesTo('fc:2', 'belongs_to')).toStrictEqual([]);
    expect(graph.edges.size).toBe(7);
    expect(graph.nodes.has('fp:3')).toBe(true);
    expectSourcesAgree(graph);
  });

  it('lists the edges a delete takes along, as a filter over every edge would', () => {
    const { graph } = built();
    graph.putNode(point(1, 20, 'fc:2'));
    const cases: Array<[string[], string[]]> = [[[], ['fp:1']], [[], ['en:1']], [[], ['fc:1', 'ep:1']], [[CHUNK], []], [['other'], ['fp:2']]];
    for (const [chunks, nodes] of cases) {
      const chunkIds = new Set(chunks);
      // As a deletion asks: the nodes named, and every node the chunks own.
      const owned = [...graph.nodes.values()].filter((node) => 'chunkId' in node && chunkIds.has(node.chunkId)).map((node) => node.id);
      const nodeIds = new Set([...nodes, ...owned]);
      const expected = [...graph.edges.values()].filter((e) => chunkIds.has(e.chunkId) || nodeIds.has(e.from) || nodeIds.has(e.to));
      expect(ids(graph.edgesOwnedBy(chunkIds, nodeIds)).sort()).toStrictEqual(ids(expected).sort());
    }
    expect(ids(graph.edgesOwnedBy(new Set(), new Set(['fp:1']))).sort()).toStrictEqual(['belongs_to:fp:1>fc:1', 'evolution:fp:1>fp:3', 'involves_entity:fp:1>en:1']);
  });

  it('holds an edge with a vector, which an index may name by its key', () => {
    const graph = new MemoryGraph({ nodes: [], edges: [], chunks: [], vectors: new VectorTable() });
    graph.putNode(structuredClone(point(1, 20, 'fc:1')));
    const e = edge('involves_entity', 'fp:1', 'en:1', 30);
    graph.vectors.set(e.id, Float32Array.from([1, 0]));
    graph.putEdge(structuredClone(e));
    expect(graph.idForKey(30)).toBe(e.id);
    expect(graph.edges.get(e.id)).toStrictEqual(e);
  });

  it('lists the sources of a node again once its list emptied, and the facts of consecutive Facets apart', () => {
    const graph = new MemoryGraph({ nodes: [], edges: [], chunks: [], vectors: new VectorTable() });
    for (const node of [episode, entity, facet(1, 10), facet(2, 11), point(1, 20, 'fc:1'), point(2, 21, 'fc:1'), point(3, 22, 'fc:2')]) graph.putNode(structuredClone(node));
    graph.putEdge(edge('belongs_to', 'fp:1', 'fc:1', 30));
    graph.deleteEdge(edgeId('belongs_to', 'fp:1', 'fc:1'));
    expect(graph.sourcesTo('fc:1', 'belongs_to')).toStrictEqual([]);
    graph.putEdge(edge('belongs_to', 'fp:2', 'fc:1', 31));
    graph.putEdge(edge('belongs_to', 'fp:3', 'fc:2', 32));
    graph.putEdge(edge('belongs_to', 'fp:1', 'fc:1', 33));
    expect([graph.sourcesTo('fc:1', 'belongs_to'), graph.sourcesTo('fc:2', 'belongs_to')]).toStrictEqual([['fp:2', 'fp:1'], ['fp:3']]);
  });

  it('tells an edge id from its parts as comparing with the built id does', () => {
    const parts: Array<[EdgeType, string, string]> = [['belongs_to', 'fp:1', 'fc:1'], ['involves_entity', 'a>b', 'c'], ['evolution', '', 'x']];
    const ids = parts.map((p) => edgeId(...p));
    for (const id of [...ids, 'belongs_to:fp:1>fc:2', 'belongs_to:fp:1>fc:1 ', 'belongs_tofp:1>fc:1', 'belongs_to:fp:1-fc:1']) {
      for (const p of [...parts, ['involves_entity', 'a', 'b>c'] as [EdgeType, string, string]]) expect(isEdgeId(id, ...p)).toBe(id === edgeId(...p));
    }
  });

  it('files derived edges from their nodes and keys as putting each edge does, into a fresh graph or one keeping some already', () => {
    const { graph: reference, edges } = built();
    const derivedOf = (type: 'belongs_to' | 'involves_entity') => edges.filter((e) => e.type === type);
    const read = (graph: MemoryGraph) => ({
      edges: [...graph.edges.keys()].sort().map((id) => JSON.stringify(graph.edges.get(id))),
      to: ['ep:1', 'fc:1', 'fc:2', 'en:1'].map((id) => ids(graph.edgesTo(id))),
      from: ['fc:1', 'fc:2', 'fp:1', 'fp:2', 'fp:3'].map((id) => ids(graph.edgesFrom(id))),
      points: graph.facetPointsOf('ep:1').map((n) => n.id),
    });
    for (const keepsOneAlready of [false, true]) {
      const graph = new MemoryGraph({ nodes: [], edges: [], chunks: [], vectors: new VectorTable() });
      for (const node of [episode, entity, facet(1, 10), facet(2, 11), point(1, 20, 'fc:1'), point(2, 21, 'fc:1', null), point(3, 22, 'fc:2')]) graph.putNode(structuredClone(node));
      const first = derivedOf('belongs_to')[0] as GraphEdge;
      if (keepsOneAlready) graph.putEdge(structuredClone(first));
      for (const type of ['belongs_to', 'involves_entity'] as const) {
        const put = derivedOf(type).filter((e) => !(keepsOneAlready && e.id === first.id));
        graph.putDerivedEdges(type, put.map((e) => graph.nodes.get(e.from) as GraphNode), put.map((e) => e.key));
      }
      graph.putEdge(structuredClone(edges.at(-1) as GraphEdge));
      expect(read(graph)).toStrictEqual(read(reference));
    }
    const graph = new MemoryGraph({ nodes: [], edges: [], chunks: [], vectors: new VectorTable() });
    graph.putNode(structuredClone(episode));
    expect(() => graph.putDerivedEdges('belongs_to', [graph.nodes.get('ep:1') as GraphNode], [40])).toThrow('derives no belongs_to edge');
  });

  it('lists relation edges first read after many puts, replacements and deletes as lists kept from the start do', () => {
    const relations = ['temporal', 'evolution', 'causal', 'semantic'] as const;
    const points = [1, 2, 3, 4, 5].map((n) => `fp:${n}`);
    // Every relation edge between the points, each put, then some replaced (same id), deleted and put again.
    const all = relations.flatMap((type, t) => points.flatMap((from, i) => points.filter((to) => to !== from).map((to, j) => edge(type, from, to, 100 + t * 40 + i * 8 + j))));
    const replay = (graph: MemoryGraph): void => {
      for (const e of all) graph.putEdge(structuredClone(e));
      all.forEach((e, i) => {
        if (i % 3 === 0) graph.putEdge(structuredClone({ ...e, description: `again ${i}` }));
        if (i % 5 === 1) graph.deleteEdge(e.id);
        if (i % 10 === 1) graph.putEdge(structuredClone({ ...e, key: e.key + 1000 }));
      });
      graph.deleteNode('fp:5');
    };
    const fresh = (): MemoryGraph => {
      const graph = new MemoryGraph({ nodes: [], edges: [], chunks: [], vectors: new VectorTable() });
      for (const node of [episode, entity, facet(1, 10), ...[1, 2, 3, 4, 5].map((n) => point(n, 20 + n, 'fc:1'))]) graph.putNode(structuredClone(node));
      return graph;
    };
    const read = (graph: MemoryGraph) =>
      [...points, 'fp:9'].map((id) => ({
        from: ids(graph.edgesFrom(id)),
        to: ids(graph.edgesTo(id)),
        typed: relations.map((type) => [ids(graph.edgesFrom(id, type)), ids(graph.edgesTo(id, type)), graph.sourcesTo(id, type)]),
      }));
    const listedEarly = fresh();
    // A read before any put: the lists are kept from then on, as every put and delete comes.
    expect(listedEarly.edgesFrom('fp:1', 'evolution')).toStrictEqual([]);
    replay(listedEarly);
    const listedLate = fresh();
    replay(listedLate);
    const early = read(listedEarly);
    expect(read(listedLate)).toStrictEqual(early);
    expect(early.some(({ typed }) => typed.some(([from]) => (from as string[]).length > 1))).toBe(true);
    // And after the first read, the lists keep up with what comes.
    for (const graph of [listedEarly, listedLate]) {
      graph.deleteEdge(edgeId('evolution', 'fp:1', 'fp:2'));
      graph.putEdge(edge('evolution', 'fp:1', 'fp:2', 999));
    }
    expect(read(listedLate)).toStrictEqual(read(listedEarly));
  });

  it('leaves relation edges in its store until a reader lists them, and reads, counts and lists them as a graph opened on that store does', () => {
    const relations = ['temporal', 'evolution', 'causal', 'semantic'] as const;
    const points = [1, 2, 3, 4, 5].map((n) => `fp:${n}`);
    const nodes = [episode, entity, facet(1, 10), ...[1, 2, 3, 4, 5].map((n) => point(n, 20 + n, 'fc:1'))];
    const all = relations.flatMap((type, t) => points.flatMap((from, i) => points.filter((to) => to !== from).map((to, j) => edge(type, from, to, 100 + t * 40 + i * 8 + j))));
    const indexed = all[7] as GraphEdge;
    // The store: every edge committed, as a commit reaches it before the graph.
    const store = new Map<string, GraphEdge>();
    const reads = { all: 0, get: 0, owned: 0 };
    const relationEdges = () => [...store.values()].filter((e) => !isDerivedEdgeType(e.type));
    const inKeyOrder = () => relationEdges().sort((a, b) => a.key - b.key).map((e) => structuredClone(e));
    const stored = {
      all: () => {
        reads.all++;
        return inKeyOrder();
      },
      get: (id: string) => {
        reads.get++;
        const found = store.get(id);
        return found && !isDerivedEdgeType(found.type) ? structuredClone(found) : undefined;
      },
      owned: (chunkIds: ReadonlySet<string>, nodeIds: ReadonlySet<string>) => {
        reads.owned++;
        return inKeyOrder().filter((e) => chunkIds.has(e.chunkId) || nodeIds.has(e.from) || nodeIds.has(e.to));
      },
      counts: () => Object.fromEntries(relations.map((type) => [type, relationEdges().filter((e) => e.type === type).length])),
    };
    const graphOf = (edges: readonly GraphEdge[]): MemoryGraph => {
      const vectors = new VectorTable();
      vectors.set(indexed.id, new Float32Array([1, 0, 0, 0]));
      const graph = new MemoryGraph({ nodes: [], edges: [], chunks: [], vectors });
      for (const node of nodes) graph.putNode(structuredClone(node));
      for (const e of edges) graph.putEdge(structuredClone(e));
      return graph;
    };
    const commit = (graph: MemoryGraph, change: { put?: GraphEdge; delete?: string }): void => {
      if (change.put) store.set(change.put.id, change.put);
      if (change.delete) store.delete(change.delete);
      if (change.put) graph.putEdge(structuredClone(change.put));
      if (change.delete) graph.deleteEdge(change.delete);
    };
    const initial = all.filter((_, i) => i % 2 === 0 || all[i] === indexed);
    for (const e of initial) store.set(e.id, e);
    // As a SQL store's open: the relation edges with a vector are held, the rest left in the store.
    const left = graphOf(initial.filter((e) => e === indexed));
    left.leaveRelations(stored);
    all.forEach((e, i) => {
      if (i % 2 === 1) commit(left, { put: e });
      if (i % 3 === 0) commit(left, { put: { ...e, description: `again ${i}` } });
      if (i % 5 === 1) commit(left, { delete: e.id });
    });
    const opened = () => graphOf([...store.values()].sort((a, b) => a.key - b.key));
    const read = (graph: MemoryGraph) =>
      [...points, 'fp:9'].map((id) => ({
        from: ids(graph.edgesFrom(id)),
        to: ids(graph.edgesTo(id)),
        typed: relations.map((type) => [ids(graph.edgesFrom(id, type)), ids(graph.edgesTo(id, type)), graph.sourcesTo(id, type)]),
      }));
    // Asked one at a time, and counted, without reading them all.
    const some = [...all.slice(0, 12).map((e) => e.id), 'evolution:fp:1>fp:9'];
    expect(some.map((id) => [left.edges.has(id), left.edges.get(id) ?? null])).toStrictEqual(some.map((id) => [opened().edges.has(id), opened().edges.get(id) ?? null]));
    expect([left.edgeCountsByType(), left.edges.size]).toStrictEqual([opened().edgeCountsByType(), opened().edges.size]);
    // What a delete takes along, found in the store.
    for (const nodeIds of [new Set(['fp:2']), new Set(['fp:4', 'fp:9'])]) expect(ids(left.edgesOwnedBy(new Set(), nodeIds))).toStrictEqual(ids(opened().edgesOwnedBy(new Set(), nodeIds)));
    expect(left.edgesOwnedBy(new Set(), new Set(['fp:2'])).length).toBeGreaterThan(1);
    expect(reads.owned).toBe(3);
    expect(reads.all).toBe(0);
    expect(reads.get).toBeGreaterThan(0);
    // Listed: every edge read once, as an open puts them.
    expect(read(left)).toStrictEqual(read(opened()));
    expect(reads.all).toBe(1);
    expect(read(left).some(({ typed }) => typed.some(([from]) => (from as string[]).length > 1))).toBe(true);
    // From then on the graph holds them, and keeps up with what comes.
    commit(left, { delete: edgeId('evolution', 'fp:1', 'fp:3') });
    commit(left, { put: edge('evolution', 'fp:1', 'fp:3', 999) });
    expect(read(left)).toStrictEqual(read(opened()));
    expect([left.edgeCountsByType(), [...left.edges.values()].map((e) => e.id)]).toStrictEqual([opened().edgeCountsByType(), [...opened().edges.values()].map((e) => e.id)]);
    expect(reads.all).toBe(1);
  });

  it('lists and counts a layer first listed after puts, replacements and deletes as a listing kept from the start does', () => {
    const nodes = [episode, entity, facet(1, 10), facet(2, 11), ...[1, 2, 3, 4, 5, 6].map((n) => point(n, 20 + n, n % 2 ? 'fc:1' : 'fc:2'))];
    const replay = (graph: MemoryGraph): void => {
      for (const node of nodes) graph.putNode(structuredClone(node));
      graph.putNode(structuredClone(point(2, 22, 'fc:1')));
      graph.deleteNode('fp:3');
      graph.deleteNode('fc:2');
      graph.putNode(structuredClone(point(3, 40, 'fc:1')));
      graph.putNode(structuredClone(facet(3, 41)));
    };
    const read = (graph: MemoryGraph) =>
      (['episode', 'entity', 'facet', 'facetPoint'] as const).map((layer) => ({ listed: graph.nodesOfLayer(layer).map((n) => n.id), counted: graph.countOfLayer(layer) }));
    const listedEarly = new MemoryGraph({ nodes: [], edges: [], chunks: [], vectors: new VectorTable() });
    expect(read(listedEarly).every(({ listed, counted }) => listed.length === 0 && counted === 0)).toBe(true);
    replay(listedEarly);
    const listedLate = new MemoryGraph({ nodes: [], edges: [], chunks: [], vectors: new VectorTable() });
    replay(listedLate);
    const late = read(listedLate);
    expect(late).toStrictEqual(read(listedEarly));
    expect(late[3]).toStrictEqual({ listed: ['fp:1', 'fp:2', 'fp:4', 'fp:5', 'fp:6', 'fp:3'], counted: 6 });
    expect(late[2]).toStrictEqual({ listed: ['fc:1', 'fc:3'], counted: 2 });
    for (const graph of [listedEarly, listedLate]) {
      graph.deleteNode('fp:1');
      graph.putNode(structuredClone(point(7, 42, 'fc:1')));
    }
    expect(read(listedLate)).toStrictEqual(read(listedEarly));
  });

  it('derives the edge graph building writes, in its key order', () => {
    const made = derivedEdge(point(1, 20, 'fc:1'), 'involves_entity', 33);
    expect(JSON.stringify(made)).toBe(JSON.stringify(edge('involves_entity', 'fp:1', 'en:1', 33)));
    expect(derivedEdge(point(2, 21, 'fc:1', null), 'involves_entity', 34)).toBeNull();
    expect(derivedEdge(episode, 'belongs_to', 35)).toBeNull();
  });
});
