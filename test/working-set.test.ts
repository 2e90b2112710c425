import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EntityNode, FacetPointNode, GraphEdge, GraphNode, MemorySnapshot } from '../src/graph/types.ts';
import { inKeyOrder, stateFrom, type PartitionHost } from '../src/memory/partition.ts';
import { nodeUsearch } from '../src/node.ts';
import { DEFAULT_PARTITION } from '../src/scope.ts';
import { snapshotAsBatch } from '../src/store/snapshot.ts';
import { openSqliteStore } from '../src/store/sqlite.node.ts';
import { noFoldedEdges, type FoldedEdgeLists, type GraphStore, type WorkingSnapshot, type WriteBatch } from '../src/store/types.ts';
import { checkMemoryStructure, type UncheckedMemory } from '../src/store/validate-snapshot.ts';
import { foldingBatches, ingestShapedSample, sampleVector } from '../e2e/support/sample-memory.ts';
import { graphView, relationRowsOf, relationsAsOpenedSteps } from '../e2e/support/graph-view.ts';
import { relationsAsOpened } from '../src/store/relation-rows.ts';
import { hashEmbedder } from './helpers/hash-embedder.ts';
import { Memory } from '../src/memory.ts';
import type { EdgeType } from '../src/graph/types.ts';
import { mulberry32 } from '../src/eval/stats.ts';

/**
 * Opening a memory reads the store's working set (`GraphStore.loadWorkingSet`), where the derived
 * edges its nodes fold in stay keys. The graph it builds must be the one the whole load builds:
 * the same edges, the same lists in the same order, the same keys and indexes.
 */

let dir = '';
const opened: GraphStore[] = [];
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'prism-working-set-'));
});
afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
  await rm(dir, { recursive: true, force: true });
});

function passes(memory: UncheckedMemory): boolean {
  try {
    checkMemoryStructure(memory, (message) => {
      throw new Error(message);
    });
    return true;
  } catch {
    return false;
  }
}

async function sqlite(): Promise<GraphStore> {
  const store = await openSqliteStore(join(dir, 'memory.sqlite'));
  opened.push(store);
  return store;
}

describe('the working set a memory opens', () => {
  it('builds the graph the whole load builds, through every kind of folding and held edge', async () => {
    const usearch = await nodeUsearch();
    const host: PartitionHost = { store: await sqlite(), embedder: hashEmbedder(), createIndex: (dim) => usearch.createIndex({ dim }) };
    const sample = ingestShapedSample();
    const folded = (id: string): GraphEdge => sample.edges.find((edge) => edge.id === id) as GraphEdge;
    const [whole, ...rest] = foldingBatches(sample);
    const batches: WriteBatch[] = [
      whole as WriteBatch,
      // An edge row with a folded edge's id (a description makes it one graph building does not derive).
      { putEdges: [{ ...folded('belongs_to:point:1>facet:1'), description: 'held' }] },
      // A derived edge with a vector: the graph holds it and indexes it.
      { putVectors: [['involves_entity:point:2>entity:alice', sampleVector(mulberry32(3), sample.meta.dim)]] },
      ...rest,
    ];
    let checked = 0;
    for (const batch of batches) {
      await host.store.commit(DEFAULT_PARTITION, batch);
      const snapshot = (await host.store.load(DEFAULT_PARTITION)) as MemorySnapshot;
      const working = (await host.store.loadWorkingSet?.(DEFAULT_PARTITION)) as WorkingSnapshot;
      expect(working.folded.belongs_to.keys.length + working.edges.length).toBeLessThan(snapshot.edges.length + 1);
      // The test batches leave meta.nextKey below a key at one point: both forms must agree on that.
      expect(passes(working)).toBe(passes(snapshot));
      const revision = await host.store.revision(DEFAULT_PARTITION);
      const now = { name: DEFAULT_PARTITION, revision: () => revision, meta: () => working.meta };
      expect(graphView(stateFrom(working, host, now))).toEqual(graphView(stateFrom(snapshot, host, now)));
      checked++;
    }
    expect(checked).toBe(batches.length);
  });

  it('builds the same graph from relation edges left as the open read them (IndexedDB\'s), and keeps it so through writes, which the graph tells them', async () => {
    const usearch = await nodeUsearch();
    const store = await sqlite();
    const host: PartitionHost = { store, embedder: hashEmbedder(), createIndex: (dim) => usearch.createIndex({ dim }) };
    // The SQL store's working set, its relation edges replaced by the rows the whole load holds, as of now.
    const asOpened = async (): Promise<WorkingSnapshot> => {
      const working = (await store.loadWorkingSet?.(DEFAULT_PARTITION)) as WorkingSnapshot;
      const whole = (await store.load(DEFAULT_PARTITION)) as MemorySnapshot;
      return { ...working, relations: relationsAsOpened(relationRowsOf(whole), await store.revision(DEFAULT_PARTITION)) };
    };
    const steps = await relationsAsOpenedSteps(store, host, asOpened);
    expect(steps.atOpen.every(Boolean)).toBe(true);
    expect(steps.afterWrite.every(Boolean)).toBe(true);
    // Rows not told the graph's changes miss what the batches changing relation edges did (the last two at least).
    expect(steps.untold.filter((same) => !same).length).toBeGreaterThanOrEqual(2);
    expect(steps.afterWrite.length).toBe(steps.atOpen.length - 1);
  });

  it('takes the relation edges left as the open read them at their first reader, never at an open or a search, and once', async () => {
    const usearch = await nodeUsearch();
    const createIndex = (dim: number) => usearch.createIndex({ dim });
    const path = join(dir, 'memory.sqlite');
    const writer = await Memory.open({ store: await openSqliteStore(path), embedder: hashEmbedder(), createIndex, llm: null });
    const topics = ['my sister Maya moved to Lisbon and started a bakery', 'Maya\'s bakery now sells sourdough every morning', 'I visited Maya in Lisbon and we hiked to the castle'];
    for (const [i, topic] of topics.entries()) {
      await writer.add([{ role: 'user', content: `Guess what: ${topic}.` }, { role: 'assistant', content: `That sounds lovely: ${topic}!` }], { sessionId: `s${i}`, date: `2024-03-0${i + 1}` });
    }
    await writer.close();
    // IndexedDB's rows as the open reads them, counted each time they are taken.
    const inner = await openSqliteStore(path);
    opened.push(inner);
    const whole = (await inner.load(DEFAULT_PARTITION)) as MemorySnapshot;
    const rows = relationRowsOf(whole);
    expect(rows.length).toBeGreaterThan(0);
    let taken = 0;
    const counted = { *[Symbol.iterator]() { taken++; yield* rows; } };
    const asOpened = async (partition: string): Promise<WorkingSnapshot | null> => {
      const working = await inner.loadWorkingSet?.(partition);
      return working ? { ...working, relations: relationsAsOpened(counted, await inner.revision(partition)) } : null;
    };
    const store = new Proxy(inner, { get: (target, name) => (name === 'loadWorkingSet' ? asOpened : Reflect.get(target, name)) });
    const memory = await Memory.open({ store, embedder: hashEmbedder(), createIndex, llm: null });
    for (const query of ['Where does Maya live?', 'What does the bakery sell?', 'castle']) expect((await memory.search(query, { budget: 512 })).context).toContain('Maya');
    expect(taken).toBe(0);
    const { edges } = await memory.stats();
    expect(taken).toBe(1);
    const stored: Partial<Record<EdgeType, number>> = {};
    for (const edge of whole.edges) if (rows.some(([id]) => id === edge.id)) stored[edge.type] = (stored[edge.type] ?? 0) + 1;
    for (const [type, count] of Object.entries(stored)) expect(edges[type as EdgeType]).toBe(count);
    await memory.add([{ role: 'user', content: 'Maya opened a second bakery in Porto.' }], { sessionId: 's3', date: '2024-03-04' });
    await memory.stats();
    expect(taken).toBe(1);
    await memory.close();
  });

  it('keeps a derived edge as its key only when its ends hold no ">"', async () => {
    const store = await sqlite();
    const sample = ingestShapedSample();
    const renamed = (id: string) => (id === 'facet:1' ? 'facet:1>x' : id);
    const nodes = sample.nodes.map((node) => {
      if (node.id === 'facet:1') return { ...node, id: 'facet:1>x' };
      return node.layer === 'facetPoint' ? ({ ...node, facetId: renamed(node.facetId) } as FacetPointNode) : node;
    });
    const edges = sample.edges.map((edge) => {
      const [from, to] = [renamed(edge.from), renamed(edge.to)];
      return { ...edge, id: `${edge.type}:${from}>${to}`, from, to };
    });
    const vectors = new Map([...sample.vectors].map(([id, vector]) => [id === 'facet:1' ? 'facet:1>x' : id, vector]));
    await store.commit(DEFAULT_PARTITION, snapshotAsBatch({ ...sample, nodes, edges, vectors }));
    const working = (await store.loadWorkingSet?.(DEFAULT_PARTITION)) as WorkingSnapshot;
    const asEdges = working.edges.map((edge) => edge.id);
    expect(asEdges).toContain('belongs_to:facet:1>x>ep:1');
    expect(asEdges).toContain('belongs_to:point:1>facet:1>x');
    const keptFrom = working.folded.belongs_to.nodes.map((at) => working.nodes[at]?.id);
    expect(keptFrom).toContain('facet:2');
    expect(keptFrom).not.toContain('point:1');
    expect((await store.load(DEFAULT_PARTITION))?.edges.map((edge) => edge.id).sort()).toEqual(edges.map((edge) => edge.id).sort());
  });

  it('leaves the connection usable after a record it cannot read stops the load midway', async () => {
    const store = await sqlite();
    const sample = ingestShapedSample();
    await store.commit(DEFAULT_PARTITION, snapshotAsBatch(sample));
    const db = new Database(join(dir, 'memory.sqlite'));
    db.prepare("UPDATE nodes SET json = '[1, \"cut' WHERE id = (SELECT min(id) FROM nodes)").run();
    db.close();
    await expect(store.loadWorkingSet?.(DEFAULT_PARTITION)).rejects.toThrow();
    // The statement the load stopped in is ended: the same connection reads and writes on.
    expect(await store.partitions()).toEqual([DEFAULT_PARTITION]);
    await store.clear(DEFAULT_PARTITION);
    expect(await store.loadWorkingSet?.(DEFAULT_PARTITION)).toBeNull();
  });
});

describe('checking a working set', () => {
  const sample = ingestShapedSample();
  /** The sample as a working set: every derived edge kept as its key. */
  const working = (): UncheckedMemory & { folded: FoldedEdgeLists } => {
    const folded = noFoldedEdges();
    const edges: GraphEdge[] = [];
    for (const edge of sample.edges) {
      if (edge.type === 'belongs_to' || edge.type === 'involves_entity') {
        folded[edge.type].nodes.push(sample.nodes.findIndex((node) => node.id === edge.from));
        folded[edge.type].keys.push(edge.key);
      } else edges.push(edge);
    }
    return { ...sample, edges, folded };
  };
  /** Sets the key of the `type` edge kept for node `id` (listing it when it keeps none), or its position in the nodes. */
  const keep = (memory: { folded: FoldedEdgeLists }, type: 'belongs_to' | 'involves_entity', id: string, key: number, at = sample.nodes.findIndex((node) => node.id === id)) => {
    const list = memory.folded[type];
    const i = list.nodes.indexOf(at);
    if (i >= 0) list.keys[i] = key;
    else {
      list.nodes.push(at);
      list.keys.push(key);
    }
  };
  const failure = (memory: UncheckedMemory): string => {
    try {
      checkMemoryStructure(memory, (message) => {
        throw new Error(message);
      });
    } catch (err) {
      return (err as Error).message;
    }
    return 'passed';
  };

  it('passes the sample', () => {
    expect(failure(working())).toBe('passed');
  });

  it('refuses a derived key that another record holds, or at or past meta.nextKey', () => {
    const shared = working();
    keep(shared, 'belongs_to', 'point:1', 0);
    expect(failure(shared)).toMatch(/node entity:alice and belongs_to edge of node point:1 share key 0/);
    const late = working();
    keep(late, 'involves_entity', 'point:2', sample.meta.nextKey);
    expect(failure(late)).toMatch(/involves_entity edge of node point:2 has key \d+, not below meta.nextKey/);
  });

  it('refuses a derived key of a node that is not there or derives no such edge', () => {
    const missing = working();
    keep(missing, 'belongs_to', 'point:99', 9_000, sample.nodes.length);
    expect(failure(missing)).toMatch(/runs from a node the memory does not hold/);
    const underived = working();
    keep(underived, 'involves_entity', 'facet:1', 9_000);
    expect(failure(underived)).toMatch(/facet:1 keeps the key of a involves_entity edge it does not derive/);
    const twice = working();
    const point = sample.nodes.findIndex((node) => node.id === 'point:1');
    twice.folded.belongs_to.nodes.push(point);
    twice.folded.belongs_to.keys.push(9_000);
    expect(failure(twice)).toMatch(/node point:1 keeps the keys of two belongs_to edges/);
    const uneven = working();
    uneven.folded.involves_entity.keys.pop();
    expect(failure(uneven)).toMatch(/involves_entity edges kept as keys list \d+ nodes and \d+ keys/);
  });

  it('refuses an edge or node whose id is a kept derived edge\'s', () => {
    const twice = working();
    const { nextKey } = sample.meta;
    twice.meta = { ...sample.meta, nextKey: nextKey + 1 };
    (twice.edges as GraphEdge[]).push({ ...(sample.edges.find((edge) => edge.id === 'belongs_to:point:1>facet:1') as GraphEdge), key: nextKey, description: 'again' });
    expect(failure(twice)).toMatch(/node or edge id belongs_to:point:1>facet:1 occurs twice/);
  });

  it('refuses a node id met twice, whether the ids come in order (a store\'s read) or not, and an edge under a node\'s id', () => {
    const inOrder = [...sample.nodes].sort((a, b) => (a.id < b.id ? -1 : 1));
    expect(failure({ ...sample, nodes: inOrder })).toBe('passed');
    expect(failure({ ...sample, nodes: [...sample.nodes].reverse() })).toBe('passed');
    const [first, second] = inOrder as [GraphNode, GraphNode];
    const last = inOrder[inOrder.length - 1] as GraphNode;
    // Next to itself while in order; after the order broke, one of the ordered ids, then one of the unordered ones.
    expect(failure({ ...sample, nodes: [first, { ...first }, ...inOrder.slice(1)] })).toBe(`node id ${first.id} occurs twice`);
    expect(failure({ ...sample, nodes: [...inOrder, { ...second }] })).toBe(`node id ${second.id} occurs twice`);
    expect(failure({ ...sample, nodes: [...inOrder.slice(1), first, { ...first }] })).toBe(`node id ${first.id} occurs twice`);
    expect(failure({ ...sample, nodes: [...inOrder.slice(0, -1), { ...last }, last] })).toBe(`node id ${last.id} occurs twice`);
    // After the order broke, ids beyond the ordered ones' last (IndexedDB's nodes after its Entities) are met in the set alone.
    expect(failure({ ...sample, nodes: [second, first, ...inOrder.slice(2), { ...last }] })).toBe(`node id ${last.id} occurs twice`);
    const edge = sample.edges[0] as GraphEdge;
    expect(failure({ ...sample, nodes: inOrder, edges: [...sample.edges, { ...edge, id: second.id }] })).toBe(`node or edge id ${second.id} occurs twice`);
  });

  it('names the bad item of an Entity\'s chunk list or a fact\'s dialog ids, or the list that is none', () => {
    const entity = sample.nodes.find((node) => node.layer === 'entity') as EntityNode;
    const fact = sample.nodes.find((node) => node.layer === 'facetPoint') as FacetPointNode;
    const withNode = (changed: GraphNode) => ({ ...sample, nodes: sample.nodes.map((node) => (node.id === changed.id ? changed : node)) });
    expect(failure(withNode({ ...entity, chunkIds: [...entity.chunkIds, ''] }))).toBe(`node ${entity.id} chunkIds[${entity.chunkIds.length}] must be a non-empty string`);
    expect(failure(withNode({ ...entity, chunkIds: 'c' as unknown as string[] }))).toBe(`node ${entity.id} chunkIds must be an array`);
    expect(failure(withNode({ ...fact, dialogIds: [...fact.dialogIds, 7 as unknown as string] }))).toBe(`node ${fact.id} dialogIds[${fact.dialogIds.length}] must be a string`);
    expect(failure(withNode({ ...fact, dialogIds: null as unknown as string[] }))).toBe(`node ${fact.id} dialogIds must be an array`);
  });

  it('refuses a kept derived edge whose ends hold ">"', () => {
    const odd = working();
    const nodes = odd.nodes.map((node) => ((node as { id: string }).id === 'ep:1' ? { ...(node as object), id: 'ep:1>y' } : node));
    const facets = nodes.map((node) => ((node as { id: string }).id === 'facet:1' ? { ...(node as object), episodeId: 'ep:1>y' } : node));
    expect(failure({ ...odd, nodes: facets })).toMatch(/belongs_to edge of node facet:1 is kept as a key, but its ends hold ">"/);
  });
});

describe('records in key order', () => {
  const byComparator = <T extends { key: number }>(records: readonly T[]) => [...records].sort((a, b) => a.key - b.key);
  const shuffled = (keys: readonly number[], seed: number) => {
    const random = mulberry32(seed);
    const records = keys.map((key, i) => ({ key, i }));
    for (let i = records.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [records[i], records[j]] = [records[j]!, records[i]!];
    }
    return records;
  };

  it('orders records as a stable sort by key does, for dense, sparse, repeated and odd keys', () => {
    const dense = Array.from({ length: 5_000 }, (_, i) => 3 * i + 1);
    const sparse = Array.from({ length: 50 }, (_, i) => i * 1_000_003);
    const repeated = [...dense.slice(0, 100), 7, 7, 10, 10];
    // Each 16-bit digit's edges, and the largest key a radix pass takes.
    const digits = [0, 65_535, 65_536, 65_537, 2 ** 32 - 1, 2 ** 16 * 7 + 3, 2 ** 16 * 7 + 2, 131_071];
    const odd = [...dense.slice(0, 100), 2.5, -1, Number.NaN, 2 ** 60, 2 ** 32];
    // Past `RADIX_FROM` records a key order is made by radix passes: the digits' edges among them too.
    for (const keys of [dense, sparse, repeated, digits, [...dense, ...digits], odd, [], [0]]) {
      for (const seed of [1, 2]) {
        const records = shuffled(keys, seed);
        expect(inKeyOrder(records)).toStrictEqual(byComparator(records));
      }
    }
  });
});
