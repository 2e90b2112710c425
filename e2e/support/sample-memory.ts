import { chunkText } from '../../src/graph/chunk-text.ts';
import type { Chunk, FacetPointNode, GraphEdge, GraphNode, MemorySnapshot } from '../../src/graph/types.ts';
import type { WriteBatch } from '../../src/store/types.ts';
import { mulberry32 } from '../../src/eval/stats.ts';
import { snapshotAsBatch } from '../../src/store/snapshot.ts';
import { DEFAULT_VECTOR_PRECISION, roundVector } from '../../src/store/vector-codec.ts';

/**
 * A small, deterministic memory covering every layer, several edge types, chunk turns,
 * vectors and hashes — the shared fixture of the store unit tests and browser tests.
 */
export interface SampleMemoryOptions {
  episodes?: number;
  dim?: number;
  seed?: number;
}

/** A random unit vector, rounded as the stores keep vectors (their default precision): what every store keeps exactly. */
export function sampleVector(random: () => number, dim: number): Float32Array {
  const vector = Float32Array.from({ length: dim }, () => random() * 2 - 1);
  const norm = Math.hypot(...vector);
  return roundVector(vector.map((x) => x / norm), DEFAULT_VECTOR_PRECISION);
}

export function sampleMemory({ episodes = 4, dim = 384, seed = 7 }: SampleMemoryOptions = {}): MemorySnapshot {
  const random = mulberry32(seed);
  const nodes: GraphNode[] = [];
  const edges: GraphEdge[] = [];
  const chunks: Chunk[] = [];
  let key = 0;
  const entity: GraphNode = { layer: 'entity', id: 'entity:alice', key: key++, name: 'Alice', entityType: 'person', chunkIds: [] };
  nodes.push(entity);
  for (let i = 0; i < episodes; i++) {
    const chunkId = `chunk-${seed}-${i}`;
    const time = `2023-05-${String(i + 1).padStart(2, '0')}T13:56:00.000Z`;
    chunks.push({
      id: chunkId,
      sessionId: `session-${i + 1}`,
      header: `[Session ${i + 1} — 1:56 pm on ${i + 1} May, 2023]`,
      text: `Alice: I adopted a puppy named Rex ${i} days ago. Bob: Ünïcödé check ✓ ${i}`,
      time,
      order: i,
      turns: [
        { dialogId: `D${i + 1}:1`, speaker: 'Alice', text: `I adopted a puppy named Rex ${i} days ago.` },
        { dialogId: `D${i + 1}:2`, speaker: 'Bob', text: `Ünïcödé check ✓ ${i}` },
      ],
    });
    entity.chunkIds.push(chunkId);
    const episodeId = `ep:${i}`;
    const facetId = `facet:${i}`;
    const pointId = `point:${i}`;
    nodes.push(
      { layer: 'episode', id: episodeId, key: key++, chunkId, summary: `Alice talks about Rex (${i})`, time, order: i },
      { layer: 'facet', id: facetId, key: key++, chunkId, episodeId, theme: 'pets' },
      {
        layer: 'facetPoint',
        id: pointId,
        key: key++,
        chunkId,
        episodeId,
        facetId,
        content: `Alice adopted Rex ${i} days before session ${i + 1}`,
        entityId: entity.id,
        timeText: `${i} days ago`,
        time: null,
        dialogIds: [`D${i + 1}:1`],
      },
    );
    const edge = (type: GraphEdge['type'], from: string, to: string, description: string | null = null): GraphEdge => ({
      id: `${type}:${from}->${to}`,
      key: key++,
      type,
      from,
      to,
      chunkId,
      description,
      confidence: type === 'causal' ? 0.8 : null,
    });
    edges.push(edge('belongs_to', pointId, facetId), edge('belongs_to', facetId, episodeId), edge('involves_entity', pointId, entity.id));
    if (i > 0) edges.push(edge('temporal', `ep:${i - 1}`, episodeId, 'happened before'), edge('causal', `point:${i - 1}`, pointId, 'led to'));
  }
  const vectors = new Map<string, Float32Array>();
  for (const node of nodes) vectors.set(node.id, sampleVector(random, dim));
  for (const edge of edges) if (edge.description !== null) vectors.set(edge.id, sampleVector(random, dim));
  return {
    meta: { schemaVersion: 1, embedderId: 'sample/random', dim, nextKey: key, chunkCount: episodes, settings: { mode: 'zero-llm', seeded: true } },
    nodes,
    edges,
    chunks,
    vectors,
    hashes: new Set(chunks.map((chunk) => chunk.id)),
  };
}

/**
 * A second batch for the default sample, composed as the writer composes one: session 4 deleted
 * whole (its nodes, the edges it made and their vectors, its chunk and hash; Alice no longer
 * names it) and a session 5 added — deletions of every kind plus new records.
 */
export function sampleFollowUp(): WriteBatch {
  const sample = sampleMemory();
  return {
    ...sessionDeletion(sample, 'chunk-7-3'),
    putChunks: [{ id: 'follow-up', sessionId: 'session-5', header: '[Session 5]', text: 'Later.', time: null, order: 4, turns: [] }],
    putHashes: ['follow-up'],
    meta: { ...sample.meta, chunkCount: sample.meta.chunkCount + 1 },
  };
}

/** The deletion of one session of `memory` (as it was written) as the writer composes it: its nodes, the edges it made and their vectors, its chunk and hash; Entities no longer name it. */
function sessionDeletion(memory: MemorySnapshot, gone: string): WriteBatch {
  const nodes = memory.nodes.flatMap((n) => (n.layer !== 'entity' && n.chunkId === gone ? [n.id] : []));
  const edges = memory.edges.flatMap((e) => (e.chunkId === gone ? [e.id] : []));
  const entities = memory.nodes.flatMap((n) => (n.layer === 'entity' ? [{ ...n, chunkIds: n.chunkIds.filter((id) => id !== gone) }] : []));
  return {
    deleteNodes: nodes,
    deleteEdges: edges,
    deleteVectors: [...nodes, ...edges].filter((id) => memory.vectors.has(id)),
    deleteChunks: [gone],
    deleteHashes: [gone],
    putNodes: entities,
  };
}

/**
 * Batches that move vectors between the groups a store may keep them in (see
 * store/vector-groups.ts), applied in order: the sample; a vector put again alone; the session
 * of Alice's first chunk deleted (her vector outlives the chunk, whose key sealed it); her vector
 * put again alone; her next first session deleted; Alice deleted.
 */
export function vectorGroupBatches(): WriteBatch[] {
  const sample = sampleMemory();
  const random = mulberry32(5);
  const alice = sample.nodes.find((n) => n.id === 'entity:alice')!;
  const afterFirst: MemorySnapshot = { ...sample, nodes: sample.nodes.filter((n) => !(n.layer !== 'entity' && n.chunkId === 'chunk-7-0')).map((n) => (n.id === alice.id && n.layer === 'entity' ? { ...n, chunkIds: n.chunkIds.slice(1) } : n)) };
  return [
    snapshotAsBatch(sample),
    { putVectors: [['ep:1', sampleVector(random, sample.meta.dim)]] },
    sessionDeletion(sample, 'chunk-7-0'),
    { putVectors: [[alice.id, sampleVector(random, sample.meta.dim)]] },
    sessionDeletion(afterFirst, 'chunk-7-1'),
    { deleteNodes: [alice.id], deleteEdges: sample.edges.flatMap((e) => (e.to === alice.id && e.chunkId !== 'chunk-7-0' && e.chunkId !== 'chunk-7-1' ? [e.id] : [])), deleteVectors: [alice.id] },
  ];
}

/**
 * The sample memory with the records a real ingest writes: node keys in its order, canonical edge
 * ids, chunk text as `chunkText` makes it, facts quoting their turn. So the stores' compact forms
 * apply (derived edges folded into their nodes, see record-codec).
 */
export function ingestShapedSample(): MemorySnapshot {
  const sample = sampleMemory();
  const chunks = sample.chunks.map((c) => ({ ...c, text: chunkText(c.header, c.turns) }));
  const turnText = new Map(chunks.flatMap((c) => c.turns.map((t) => [t.dialogId, `${t.speaker}: ${t.text}`] as const)));
  // Keys in graph building's order (id, key, layer first).
  const nodes = sample.nodes.map((n): GraphNode => {
    const ordered: GraphNode = Object.assign({ id: n.id, key: n.key, layer: n.layer }, n);
    return ordered.layer === 'facetPoint' ? { ...ordered, content: turnText.get(ordered.dialogIds[0]!) ?? ordered.content } : ordered;
  });
  const edges = sample.edges.map((e): GraphEdge => ({ ...e, id: `${e.type}:${e.from}>${e.to}` }));
  const rename = new Map(sample.edges.map((e, i) => [e.id, edges[i]!.id]));
  const vectors = new Map([...sample.vectors].map(([id, v]) => [rename.get(id) ?? id, v]));
  return { ...sample, nodes, edges, chunks, vectors };
}

/**
 * Batches that reach every case of folding, applied after the whole `sample`
 * (`ingestShapedSample()`): a node put again alone, one folded edge deleted alone, a node deleted
 * alone, a folded edge put again with another key, a node put again that no longer rebuilds its
 * edge, both folded edges of one node deleted alone, then session 4 deleted whole as the writer
 * composes it.
 */
export function foldingBatches(sample: MemorySnapshot): WriteBatch[] {
  const point = sample.nodes.find((n): n is FacetPointNode => n.id === 'point:1' && n.layer === 'facetPoint')!;
  const gone = sample.edges.filter((e) => e.chunkId === 'chunk-7-3').map((e) => e.id);
  const followUp: WriteBatch = { ...sampleFollowUp(), deleteEdges: gone, deleteVectors: [...(sampleFollowUp().deleteNodes ?? []), ...gone].filter((id) => sample.vectors.has(id)) };
  return [
    snapshotAsBatch(sample),
    { putNodes: [{ ...point, timeText: 'changed' }] },
    { deleteEdges: ['belongs_to:point:2>facet:2'] },
    { deleteNodes: ['point:0'] },
    { putEdges: [{ ...sample.edges.find((e) => e.id === 'involves_entity:point:2>entity:alice')!, key: 900 }], meta: { ...sample.meta, nextKey: 901 } },
    { putNodes: [{ ...point, facetId: 'facet:2' }] },
    { deleteEdges: ['belongs_to:point:3>facet:3', 'involves_entity:point:3>entity:alice'] },
    followUp,
  ];
}

/** The chunk ids of the paged Entity of `pagingBatches`, the first `count`. */
export const pagedChunkIds = (count: number): string[] => Array.from({ length: count }, (_, i) => `chunk-paged-${String(i).padStart(4, '0')}`);

/**
 * Batches that reach every case of a long Entity chunk list kept in pages (record-codec's
 * ENTITY_PAGE_IDS, 256), applied one after the other: the sample with an Entity naming 600
 * chunks (3 pages), a chunk joining it (only the last page changes), a full third page, a fourth
 * page begun, its first chunk gone (every page changes), a shorter list (pages past the second
 * go), one short enough for the record itself (every page goes), a long one again, then the
 * Entity deleted (its pages go). Stores keep chunk ids as given, so these name no real chunk.
 */
export function pagingBatches(): WriteBatch[] {
  const sample = ingestShapedSample();
  const entity: GraphNode = { id: 'entity:speaker', key: sample.meta.nextKey, layer: 'entity', name: 'Speaker', entityType: 'person', chunkIds: pagedChunkIds(600) };
  const withIds = (chunkIds: string[]): WriteBatch => ({ putNodes: [{ ...entity, chunkIds }] });
  return [
    { ...snapshotAsBatch(sample), putNodes: [...sample.nodes, entity], meta: { ...sample.meta, nextKey: sample.meta.nextKey + 1 } },
    withIds(pagedChunkIds(601)),
    withIds(pagedChunkIds(768)),
    withIds(pagedChunkIds(769)),
    withIds(pagedChunkIds(769).slice(1)),
    withIds(pagedChunkIds(300)),
    withIds(pagedChunkIds(100)),
    withIds(pagedChunkIds(700)),
    { deleteNodes: [entity.id] },
  ];
}
