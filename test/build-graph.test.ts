import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type IngestConfig } from '../src/config.ts';
import { chunkText, turnTextOffsets } from '../src/graph/chunk-text.ts';
import { MemoryGraph } from '../src/graph/memory-graph.ts';
import type { Chunk, GraphNode } from '../src/graph/types.ts';
import { buildChunkGraph, chunkWithMentions, embedExtraction, type BuildOutput } from '../src/ingest/build-graph.ts';
import type { Extraction } from '../src/ingest/extraction.ts';
import { dot, normalisedSum } from '../src/util/vectors.ts';
import { hashEmbedder } from './helpers/hash-embedder.ts';

/**
 * Design §2.4 on plain data: vectors are chosen by hand so every cosine is known, which pins
 * the merge thresholds exactly (a real embedder could not place a pair at 0.89 vs 0.91).
 */
const DIM = 4;

/** A unit vector at cosine `c` to the axis e0 (the rest on e1). */
function atCosine(c: number): Float32Array {
  return Float32Array.from([c, Math.sqrt(1 - c * c), 0, 0]);
}
const axis = (i: number) => Float32Array.from({ length: DIM }, (_, j) => (j === i ? 1 : 0));

function chunk(order: number, time: string): Chunk {
  return { id: `${String(order).padStart(2, '0')}${'c'.repeat(62)}`, sessionId: `s/${order}`, header: `[s ${order}]`, text: `chunk ${order}`, time, order, turns: [] };
}

function extraction(partial: Partial<Extraction>): Extraction {
  return { summary: 'summary', entities: [], facetPoints: [], facets: [], temporal: [], ...partial };
}

const fact = (content: string, entityName: string | null, time: string | null = null) => ({ content, entityName, timeText: time, time, dialogIds: [] });

/** Builds one chunk against `graph`, nearest-neighbour lookups done by brute force over the graph's vectors, then applies it. */
function build(graph: MemoryGraph, c: Chunk, ex: Extraction, vectors: { entities?: Float32Array[]; facetPoints?: Float32Array[]; facets?: Float32Array[] }, config: Partial<IngestConfig> = {}): BuildOutput {
  let key = graph.nodes.size + graph.edges.size + 1;
  const nearestOf = (layer: GraphNode['layer']) => (v: Float32Array) => {
    let best: { id: string; score: number } | null = null;
    for (const node of graph.nodes.values()) {
      const stored = graph.vectors.get(node.id);
      if (node.layer !== layer || !stored) continue;
      const score = dot(stored, v);
      if (!best || score > best.score) best = { id: node.id, score };
    }
    return best;
  };
  const out = buildChunkGraph({
    chunk: c,
    extraction: ex,
    vectors: { summary: axis(3), entities: vectors.entities ?? [], facetPoints: vectors.facetPoints ?? [], facets: vectors.facets ?? [] },
    graph,
    nearestEntity: nearestOf('entity'),
    nearestFacetPoint: nearestOf('facetPoint'),
    config: { ...DEFAULT_CONFIG.ingest, ...config },
    nextKey: () => key++,
  });
  graph.putChunk(chunkWithMentions(c, out));
  for (const node of out.nodes) graph.putNode(node);
  for (const edge of out.edges) graph.putEdge(edge);
  for (const [id, v] of out.nodeVectors) graph.vectors.set(id, v);
  return out;
}

const empty = () => new MemoryGraph({ nodes: [], edges: [], chunks: [], vectors: new Map() });
const entities = (graph: MemoryGraph) => [...graph.nodes.values()].filter((n) => n.layer === 'entity');

describe('buildChunkGraph (design §2.4)', () => {
  // §2.4 as the paper has it: every name an Entity at once.
  const everyName = { sharedEntities: false };

  it('merges an Entity by exact name (case-insensitive), then by name cosine just above 0.90 and not just below', () => {
    const graph = empty();
    build(graph, chunk(0, '2023-05-01'), extraction({ entities: [{ name: 'Melanie', type: 'person' }] }), { entities: [axis(0)] }, everyName);
    build(graph, chunk(1, '2023-05-02'), extraction({ entities: [{ name: 'MELANIE', type: 'person' }] }), { entities: [axis(2)] }, everyName);
    expect(entities(graph)).toHaveLength(1);
    build(graph, chunk(2, '2023-05-03'), extraction({ entities: [{ name: 'Mel', type: 'person' }] }), { entities: [atCosine(0.901)] }, everyName);
    expect(entities(graph)).toHaveLength(1);
    const [melanie] = entities(graph);
    expect(melanie?.layer === 'entity' && melanie.chunkIds).toHaveLength(3);
    build(graph, chunk(3, '2023-05-04'), extraction({ entities: [{ name: 'Melody', type: 'person' }] }), { entities: [atCosine(0.899)] }, everyName);
    expect(entities(graph).map((e) => (e.layer === 'entity' ? e.name : ''))).toEqual(['Melanie', 'Melody']);
  });

  it('makes an Entity of a name when a second chunk names it, under the id the facts of its first chunk name', () => {
    const graph = empty();
    const first = build(graph, chunk(0, '2023-05-01'), extraction({ entities: [{ name: 'Luna', type: 'other' }], facetPoints: [fact('Ana adopted Luna', 'Luna', '2023-04-02'), fact('Luna sleeps a lot', 'Luna', '2023-04-30')] }), {
      entities: [axis(0)],
      facetPoints: [axis(1), axis(2)],
    });
    // A mention of the chunk, not a node, with no vector; the facts' edges run to its id.
    expect(entities(graph)).toHaveLength(0);
    expect(first.mentions).toEqual([{ id: expect.stringMatching(/^en:/), name: 'Luna', type: 'other' }]);
    const mentionId = first.mentions[0]?.id ?? '';
    expect(graph.vectors.has(mentionId)).toBe(false);
    expect(graph.edgesTo(mentionId, 'involves_entity')).toHaveLength(2);
    expect(graph.mentionNamed('LUNA')).toMatchObject({ chunkId: chunk(0, '').id });

    const second = build(graph, chunk(1, '2023-05-02'), extraction({ entities: [{ name: 'LUNA', type: 'person' }], facetPoints: [fact('Luna chased a ball', 'LUNA')] }), {
      entities: [axis(3)],
      facetPoints: [axis(0)],
    });
    expect(second.mentions).toEqual([]);
    const [luna] = entities(graph);
    // The first chunk's spelling and type; the second chunk's name vector, and that chunk first
    // in its list (the chunk that made the node owns it).
    expect(luna).toMatchObject({ id: mentionId, name: 'Luna', entityType: 'other', chunkIds: [chunk(1, '').id, chunk(0, '').id] });
    expect(graph.vectors.get(mentionId)).toEqual(axis(3));
    expect(graph.edgesTo(mentionId, 'involves_entity').map((e) => e.from)).toHaveLength(3);
    expect(graph.mentionNamed('luna')).toBeUndefined();
    // The timeline runs on from the first chunk's latest fact.
    const [, sleeps] = first.nodes.filter((n) => n.layer === 'facetPoint');
    const chased = second.nodes.find((n) => n.layer === 'facetPoint');
    expect(second.edges.filter((e) => e.type === 'evolution').map((e) => [e.from, e.to])).toEqual([[sleeps?.id, chased?.id]]);

    // A third chunk joins the Entity; a chunk built again finds its own mention and keeps it one.
    build(graph, chunk(2, '2023-05-03'), extraction({ entities: [{ name: 'luna', type: 'other' }] }), { entities: [axis(0)] });
    expect(entities(graph)).toMatchObject([{ id: mentionId, chunkIds: [chunk(1, '').id, chunk(0, '').id, chunk(2, '').id] }]);
    const rex = build(graph, chunk(3, '2023-05-04'), extraction({ entities: [{ name: 'Rex', type: 'other' }] }), { entities: [axis(1)] });
    const again = build(graph, chunk(3, '2023-05-04'), extraction({ entities: [{ name: 'Rex', type: 'other' }] }), { entities: [axis(1)] });
    expect(again.mentions).toEqual(rex.mentions);
    expect(entities(graph)).toHaveLength(1);
    // A deleted chunk's mentions go with it.
    graph.deleteChunk(chunk(3, '').id);
    expect(graph.mentionNamed('rex')).toBeUndefined();
  });

  it('merges Facets of one Episode just above cosine 0.85 and keeps them apart just below', () => {
    const graph = empty();
    const ex = extraction({
      facetPoints: [fact('a', null), fact('b', null), fact('c', null)],
      facets: [
        { theme: 'painting', pointIndices: [0] },
        { theme: 'art', pointIndices: [1] },
        { theme: 'camping', pointIndices: [2] },
      ],
    });
    const out = build(graph, chunk(0, '2023-05-01'), ex, { facetPoints: [axis(0), axis(1), axis(2)], facets: [axis(0), atCosine(0.851), atCosine(0.849)] });
    const facets = out.nodes.filter((n) => n.layer === 'facet');
    expect(facets.map((f) => (f.layer === 'facet' ? f.theme : ''))).toEqual(['painting', 'camping']);
    const facetOf = (content: string) => out.nodes.find((n) => n.layer === 'facetPoint' && n.content === content);
    expect(facetOf('a')).toMatchObject({ facetId: facets[0]?.id });
    expect(facetOf('b')).toMatchObject({ facetId: facets[0]?.id });
    expect(facetOf('c')).toMatchObject({ facetId: facets[1]?.id });
  });

  it('links facts in definite time order with temporal edges and per-entity evolution across chunks', () => {
    const graph = empty();
    const first = build(
      graph,
      chunk(0, '2023-05-08'),
      extraction({ entities: [{ name: 'Caroline', type: 'person' }], facetPoints: [fact('Caroline went to a support group', 'Caroline', '2023-05-07'), fact('Caroline plans a trip', 'Caroline', '2023-06')] }),
      { entities: [axis(0)], facetPoints: [axis(1), axis(2)] },
    );
    const [groupFact, tripFact] = first.nodes.filter((n) => n.layer === 'facetPoint');
    const types = (out: BuildOutput, type: string) => out.edges.filter((e) => e.type === type).map((e) => [e.from, e.to]);
    expect(types(first, 'temporal')).toContainEqual([groupFact?.id, tripFact?.id]);
    expect(types(first, 'evolution')).toEqual([[groupFact?.id, tripFact?.id]]);

    const second = build(graph, chunk(1, '2023-07-01'), extraction({ entities: [{ name: 'Caroline', type: 'person' }], facetPoints: [fact('Caroline adopted a dog', 'Caroline', null)] }), {
      entities: [axis(0)],
      facetPoints: [axis(3)],
    });
    const dogFact = second.nodes.find((n) => n.layer === 'facetPoint');
    // The latest existing fact of the entity (June) → the earliest new one.
    expect(types(second, 'evolution')).toEqual([[tripFact?.id, dogFact?.id]]);
    // The Episode chain: chunk 0's Episode happened before chunk 1's.
    expect(types(second, 'temporal')).toEqual([[first.nodes[0]?.id, second.nodes[0]?.id]]);
  });

  it('adds a semantic edge to the nearest earlier fact only when switched on, at or above its threshold', () => {
    const graph = empty();
    build(graph, chunk(0, '2023-05-01'), extraction({ facetPoints: [fact('Melanie paints sunsets', null)] }), { facetPoints: [axis(0)] });
    const off = build(graph, chunk(1, '2023-05-02'), extraction({ facetPoints: [fact('Melanie painted a sunset', null)] }), { facetPoints: [atCosine(0.95)] });
    expect(off.edges.filter((e) => e.type === 'semantic')).toHaveLength(0);
    const on = build(graph, chunk(2, '2023-05-03'), extraction({ facetPoints: [fact('A sunset painting by Melanie', null)] }), { facetPoints: [atCosine(0.96)] }, { semanticEdges: true });
    expect(on.edges.filter((e) => e.type === 'semantic').map((e) => e.description)).toEqual(['A sunset painting by Melanie (similar to: Melanie painted a sunset)']);
    const far = build(graph, chunk(3, '2023-05-04'), extraction({ facetPoints: [fact('Caroline hikes', null)] }), { facetPoints: [axis(2)] }, { semanticEdges: true });
    expect(far.edges.filter((e) => e.type === 'semantic')).toHaveLength(0);
  });

  it('keeps its entity-name index in step with the graph: a deleted Entity is no longer matched by name', () => {
    const graph = empty();
    build(graph, chunk(0, '2023-05-01'), extraction({ entities: [{ name: 'Luna', type: 'other' }] }), { entities: [axis(0)] }, everyName);
    const [luna] = entities(graph);
    expect(graph.entityNamed('LUNA')?.id).toBe(luna?.id);
    graph.deleteNode(luna?.id ?? '');
    expect(graph.entityNamed('luna')).toBeUndefined();
    expect(graph.nodesOfLayer('entity')).toHaveLength(0);
    // No name match and an orthogonal vector: a new Entity, findable by name again.
    build(graph, chunk(1, '2023-05-02'), extraction({ entities: [{ name: 'Luna', type: 'other' }] }), { entities: [axis(1)] }, everyName);
    expect(entities(graph)).toHaveLength(1);
    expect(graph.entityNamed('luna')?.id).not.toBe(luna?.id);
    expect(graph.nodesOfLayer('episode')).toHaveLength(2);
  });
});

describe('embedExtraction', () => {
  const points = [fact('Ana: I adopted a cat.', null), fact('Ana: Her name is Luna.', null), fact('Ben: Nice!', null)];
  const facets = [{ theme: 'Ana: I adopted a cat. Her name is Luna.', pointIndices: [0, 1] }];

  it('composes a summary quoted from the facts and never embeds it', async () => {
    const base = hashEmbedder(16);
    const asked: string[] = [];
    const embedder = { ...base, embed: async (texts: readonly string[]) => (asked.push(...texts), base.embed(texts)) };
    const ex = extraction({ summary: '[s 1] Ana: I adopted a cat. Ana: Her name is Luna.', entities: [{ name: 'Ana', type: 'person' }], facetPoints: points, facets, summaryQuotes: [0, 1] });
    const vectors = await embedExtraction(ex, embedder);
    expect(asked).toEqual(['Ana', ...points.map((p) => p.content), facets[0]?.theme]);
    const [cat, luna] = vectors.facetPoints;
    expect(cat && luna).toBeTruthy();
    if (!cat || !luna) return;
    expect([...vectors.summary]).toEqual([...normalisedSum(cat, luna)]);
    expect([...(vectors.facets[0] ?? [])]).toEqual([...((await base.embed([facets[0]?.theme ?? '']))[0] ?? [])]);
  });

  it('embeds a written summary, and one that quotes no fact', async () => {
    const embedder = hashEmbedder(16);
    const [summary] = await embedder.embed(['Ana has a new cat']);
    const written = await embedExtraction(extraction({ summary: 'Ana has a new cat', facetPoints: points }), embedder);
    expect([...written.summary]).toEqual([...(summary ?? [])]);
    const headerOnly = await embedExtraction(extraction({ summary: 'Ana has a new cat', summaryQuotes: [] }), embedder);
    expect([...headerOnly.summary]).toEqual([...(summary ?? [])]);
  });
});

describe('MemoryGraph turn indexes', () => {
  const chunk = (id: string, sessionId: string, dialogIds: string[]): Chunk => ({
    id,
    sessionId,
    header: `[${sessionId}]`,
    text: '',
    time: null,
    order: 0,
    turns: dialogIds.map((dialogId) => ({ dialogId, speaker: 'user', text: dialogId, time: null })),
  });
  /** What the indexes must equal: gathered from every chunk, as `add` planned ids before. */
  const gathered = (graph: MemoryGraph) => ({
    ids: new Set([...graph.chunks.values()].flatMap((c) => c.turns.map((t) => t.dialogId))),
    s1: [...graph.chunks.values()].filter((c) => c.sessionId === 's1').reduce((n, c) => n + c.turns.length, 0),
  });

  it('keep the held dialog ids and the turns per session as chunks come, are replaced and go', () => {
    const graph = new MemoryGraph({ nodes: [], edges: [], chunks: [chunk('a', 's1', ['s1:1', 's1:2'])], vectors: new Map() });
    const everyId = ['s1:1', 's1:2', 's1:3', 'shared', 's2:1'];
    const check = () => {
      const want = gathered(graph);
      expect(everyId.filter((id) => graph.dialogIds().has(id))).toEqual(everyId.filter((id) => want.ids.has(id)));
      expect(graph.turnsInSession('s1')).toBe(want.s1);
    };
    check();
    graph.putChunk(chunk('b', 's1', ['s1:3', 'shared']));
    graph.putChunk(chunk('c', 's2', ['shared', 's2:1']));
    check();
    graph.putChunk(chunk('b', 's1', ['s1:3']));
    check();
    expect(graph.dialogIds().has('shared')).toBe(true);
    graph.deleteChunk('c');
    check();
    expect(graph.dialogIds().has('shared')).toBe(false);
    graph.deleteChunk('a');
    graph.deleteChunk('missing');
    check();
    expect(graph.turnsInSession('s2')).toBe(0);
  });
});

describe('MemoryGraph text sharing', () => {
  const turns = [
    { dialogId: 'd:1', speaker: 'Caroline', text: 'I went to a pride parade last week. It was so much fun!', time: null },
    { dialogId: 'd:2', speaker: 'Melanie', text: 'That sounds amazing. I painted a sunrise over the lake yesterday.', time: null },
    { dialogId: 'd:1', speaker: 'Caroline', text: 'A later turn that reuses the first dialog id.', time: null },
  ];
  const header = '[conv 1 · 8 May 2023]';
  const copyOf = (value: unknown) => JSON.parse(JSON.stringify(value)) as never;
  const canonical = (): Chunk => ({ id: 'c'.repeat(64), sessionId: 's', header, text: chunkText(header, turns), time: null, order: 0, turns: copyOf(turns) });
  const point = (i: number, content: string, dialogIds: string[]): GraphNode => ({
    id: `fp:c:${i}`,
    key: 10 + i,
    layer: 'facetPoint',
    chunkId: 'c'.repeat(64),
    episodeId: 'ep:c',
    facetId: 'fc:c:0',
    content,
    entityId: null,
    timeText: null,
    time: null,
    dialogIds,
  });
  const points = [
    point(0, 'Caroline: I went to a pride parade last week.', ['d:1']),
    point(1, 'Caroline: It was so much fun!', ['d:1']),
    point(2, 'Melanie: That sounds amazing. I painted a sunrise over the lake yesterday.', ['d:2']),
    point(3, 'Melanie: a paraphrase the turn does not hold', ['d:2']),
    point(4, 'Caroline: I went to a pride parade', ['d:1', 'd:2']),
    point(5, 'Melanie: I went to a pride parade last week.', ['d:1']),
  ];

  it('finds where each turn starts in the joined text, and nothing in a text that is not the join', () => {
    const c = canonical();
    const offsets = turnTextOffsets(c);
    expect(offsets?.map((at, i) => c.text.slice(at, at + (turns[i]?.text.length ?? 0)))).toEqual(turns.map((t) => t.text));
    expect(turnTextOffsets({ ...c, text: `${c.text}\n` })).toBeNull();
    expect(turnTextOffsets({ ...c, text: c.text.replace('pride', 'Pride') })).toBeNull();
    expect(turnTextOffsets({ ...c, header: '[another header]' })).toBeNull();
    expect(turnTextOffsets({ ...c, text: 'chunk 1' })).toBeNull();
  });

  it('leaves every turn, fact and id equal to what was put, for joined and hand-made chunk texts', () => {
    for (const c of [canonical(), { ...canonical(), text: 'a chunk text made by hand' }]) {
      const nodes: GraphNode[] = [
        { id: 'ep:c', key: 1, layer: 'episode', chunkId: 'c'.repeat(64), summary: 's', time: null, order: 0 },
        { id: 'fc:c:0', key: 2, layer: 'facet', chunkId: 'c'.repeat(64), episodeId: 'ep:c', theme: 'Caroline: I went' },
        ...points,
      ];
      const graph = new MemoryGraph({ nodes: copyOf(nodes), edges: [], chunks: [copyOf(c)], vectors: new Map() });
      expect([...graph.chunks.values()]).toEqual([c]);
      expect([...graph.nodes.values()]).toEqual(nodes);
    }
  });
});

describe('MemoryGraph Episode chain', () => {
  const episode = (n: number, time: string | null, order: number): GraphNode => ({ id: `ep:${n}`, key: n + 1, layer: 'episode', chunkId: `c${n}`, summary: '', time, order });
  /** The rule the chain replaces: a scan of every Episode for the latest before and the earliest at or after. */
  const scanned = (graph: MemoryGraph, ep: Extract<GraphNode, { layer: 'episode' }>) => {
    const compare = (a: typeof ep, b: typeof ep) => (a.time ?? '').localeCompare(b.time ?? '') || a.order - b.order;
    let before: typeof ep | null = null;
    let after: typeof ep | null = null;
    for (const node of graph.nodesOfLayer('episode')) {
      if (node.id === ep.id) continue;
      if (compare(node, ep) < 0) {
        if (!before || compare(node, before) > 0) before = node;
      } else if (!after || compare(node, after) < 0) after = node;
    }
    return { before, after };
  };

  it('finds the same neighbours as a scan of every Episode, and lists them in time order, as Episodes come, are re-put and go', () => {
    let seed = 7;
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
    const graph = new MemoryGraph({ nodes: [], edges: [], chunks: [], vectors: new Map() });
    const times = [null, '2023-05-01', '2023-05-01T10:00:00', '2023-06-15', '2024-01-02'];
    for (let step = 0; step < 400; step++) {
      const n = random(60);
      const roll = random(10);
      if (roll < 6) graph.putNode(episode(n, times[random(times.length)] ?? null, n));
      else if (roll < 8) graph.deleteNode(`ep:${n}`);
      const probe = episode(random(70), times[random(times.length)] ?? null, random(70)) as Extract<GraphNode, { layer: 'episode' }>;
      expect(graph.episodeNeighbours(probe)).toEqual(scanned(graph, probe));
      const listed = graph.episodesInTime();
      expect(listed.map((e) => e.id).sort()).toEqual(graph.nodesOfLayer('episode').map((e) => e.id).sort());
      for (let i = 1; i < listed.length; i++) {
        const [a, b] = [listed[i - 1], listed[i]];
        expect((a?.time ?? '').localeCompare(b?.time ?? '') || (a?.order ?? 0) - (b?.order ?? 0)).toBeLessThanOrEqual(0);
      }
    }
  });
});
