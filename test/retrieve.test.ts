import { dot, dotEach, normalisedSum, normalisedSumDot } from '../src/util/vectors.ts';
import MiniSearch from 'minisearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig, type PrismConfig } from '../src/config.ts';
import { MemoryGraph } from '../src/graph/memory-graph.ts';
import { LAYERS, type Chunk, type ChunkTurn, type EdgeType, type GraphEdge, type GraphNode, type Layer } from '../src/graph/types.ts';
import { createLlmClient } from '../src/llm/client.ts';
import { fuseAnchors } from '../src/retrieve/anchor-fusion.ts';
import { bundleSearch, enumeratePaths, formatTrace } from '../src/retrieve/bundle-search.ts';
import { localPrecision, rerankWithLlm } from '../src/retrieve/compress.ts';
import { factCosines } from '../src/retrieve/evidence.ts';
import { edgeCost, type EdgeCostContext } from '../src/retrieve/edge-cost.ts';
import {
  CAUSAL_TRIGGERS,
  intentFromScores,
  keywordIntent,
  PROTOTYPES,
  PrototypeBank,
  routeIntent,
  TEMPORAL_TRIGGERS,
} from '../src/retrieve/intent.ts';
import { LexicalIndex, lexicalDocuments, NO_TURN_SCORES, normaliseTerm, sharedTermCount, termsOf, type LexicalDoc, type LexicalMatches, type TurnScores } from '../src/retrieve/lexical.ts';
import { bestLexicalTurnText, composedTurnCosines, lexicalConfidence, turnAnchors } from '../src/retrieve/turn-anchors.ts';
import { SentenceWeighing, type Excerpt } from '../src/retrieve/excerpt.ts';
import { countTokens, packContext, type ContextUnit } from '../src/retrieve/pack.ts';
import { countLines } from '../src/util/tokens.ts';
import { countTokens as o200kCount } from 'gpt-tokenizer/encoding/o200k_base';
import { retrieve, takesMeaningRoute, type RetrieveResult } from '../src/retrieve/retrieve.ts';
import { endsAsking } from '../src/retrieve/units.ts';
import { maskSpeakerNames, oneEditApart, speakerFocus } from '../src/retrieve/speakers.ts';
import { episodesOn, fallsOn, queryTimeSpans } from '../src/retrieve/dates.ts';
import { absoluteDates } from '../src/ingest/time.ts';
import { turnLine } from '../src/graph/chunk-text.ts';
import type { Anchor, BundleEntry, LayerAnchors, RetrieveDeps } from '../src/retrieve/types.ts';
import { reply, startOpenAiServer, type OpenAiTestServer } from './helpers/openai-server.ts';

const DIM = 384;
/** One weighing per excerpt, as a unit asking for one excerpt makes. */
const excerptTurn = (turn: ChunkTurn, score: (sentence: string) => number, cap: number): Excerpt => new SentenceWeighing(turn, () => score).excerpt(cap);
const excerptWithin = (turn: ChunkTurn, score: (sentence: string) => number, cap: number): Excerpt | null => new SentenceWeighing(turn, () => score).within(cap);

/** A unit vector with the given components (by dimension), zero elsewhere. */
function vec(parts: Record<number, number>): Float32Array {
  const v = new Float32Array(DIM);
  for (const [i, x] of Object.entries(parts)) v[Number(i)] = x;
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

/** A vector with cosine `c` to axis 0 (the test queries' direction), the rest on its own axis. */
function atCos(c: number, ownAxis: number): Float32Array {
  return vec({ 0: c, [ownAxis]: Math.sqrt(1 - c * c) });
}

const Q = vec({ 0: 1 });
let nextAxis = 10;
/** A vector orthogonal to Q and to every other `unrelated()` vector. */
function unrelated(): Float32Array {
  return vec({ [nextAxis++]: 1 });
}

/** Builds small graphs by hand, following the ingestion conventions retrieval relies on. */
class GraphBuilder {
  private nodes: GraphNode[] = [];
  private edges: GraphEdge[] = [];
  private chunks: Chunk[] = [];
  private vectors = new Map<string, Float32Array>();
  private key = 0;

  episode(id: string, order: number, v: Float32Array, turns: Array<[string, string, string]> = [], summary = ''): this {
    const chunkId = `chunk-${id}`;
    const header = `[conv-test session_${order} · ${order} May, 2023]`;
    const time = `2023-05-${String(order).padStart(2, '0')}T12:00:00`;
    this.chunks.push({
      id: chunkId,
      sessionId: `conv-test/session_${order}`,
      header,
      text: [header, ...turns.map(([dialogId, speaker, text]) => turnLine({ dialogId, speaker, text }))].join('\n'),
      time,
      order,
      turns: turns.map(([dialogId, speaker, text]) => ({ dialogId, speaker, text })),
    });
    this.nodes.push({ layer: 'episode', id, key: this.key++, chunkId, summary, time, order });
    this.vectors.set(id, v);
    return this;
  }

  facet(id: string, episodeId: string, theme: string, v: Float32Array): this {
    this.nodes.push({ layer: 'facet', id, key: this.key++, chunkId: `chunk-${episodeId}`, episodeId, theme });
    this.vectors.set(id, v);
    return this.edge('belongs_to', id, episodeId);
  }

  point(id: string, facetId: string, content: string, v: Float32Array, extra: { entityId?: string; dialogIds?: string[]; time?: string } = {}): this {
    const facet = this.nodes.find((n) => n.id === facetId);
    if (facet?.layer !== 'facet') throw new Error(`no facet ${facetId}`);
    this.nodes.push({
      layer: 'facetPoint',
      id,
      key: this.key++,
      chunkId: facet.chunkId,
      episodeId: facet.episodeId,
      facetId,
      content,
      entityId: extra.entityId ?? null,
      timeText: extra.time ?? null,
      time: extra.time ?? null,
      dialogIds: extra.dialogIds ?? [],
    });
    this.vectors.set(id, v);
    return this.edge('belongs_to', id, facetId);
  }

  entity(id: string, name: string, v: Float32Array): this {
    this.nodes.push({ layer: 'entity', id, key: this.key++, name, entityType: 'person', chunkIds: [] });
    this.vectors.set(id, v);
    return this;
  }

  edge(type: EdgeType, from: string, to: string, v?: Float32Array): this {
    const id = `${type}:${from}->${to}`;
    this.edges.push({ id, key: this.key++, type, from, to, chunkId: 'c', description: v ? `${from} ${type} ${to}` : null, confidence: null });
    if (v) this.vectors.set(id, v);
    return this;
  }

  build(): MemoryGraph {
    return new MemoryGraph({ nodes: this.nodes, edges: this.edges, chunks: this.chunks, vectors: this.vectors });
  }
}

function anchorsOf(parts: Partial<LayerAnchors>): LayerAnchors {
  return { episode: [], facet: [], facetPoint: [], entity: [], ...parts };
}

/** Exact top-k by inner product over the graph's node vectors: a flat index. */
function flatSearch(graph: MemoryGraph) {
  return async (layer: Layer, q: Float32Array, k: number): Promise<Anchor[]> =>
    graph
      .nodesOfLayer(layer)
      .map((n) => ({ id: n.id, score: dotOf(graph.vectors.get(n.id), q) }))
      .sort((a, b) => b.score - a.score)
      .slice(0, k);
}

function dotOf(a: Float32Array | undefined, b: Float32Array): number {
  return a ? a.reduce((s, x, i) => s + x * (b[i] ?? 0), 0) : 0;
}

function depsFor(graph: MemoryGraph, overrides: Partial<RetrieveDeps> = {}): RetrieveDeps {
  return {
    graph,
    embedQuery: async () => Q,
    searchLayer: flatSearch(graph),
    prototypes: new PrototypeBank(async (texts) => texts.map(() => unrelated())),
    config: resolveConfig(PAPER_GRAPH),
    ...overrides,
  };
}

type TurnScore = PrismConfig['retrieval']['turnScore'];

/** Turn-score weights with every term but the given ones off, so a test reads one term at a time (a new term starts off too). */
function onlyTerms(w: Partial<TurnScore>): TurnScore {
  const off = Object.fromEntries(Object.keys(resolveConfig().retrieval.turnScore).map((term) => [term, 0])) as TurnScore;
  return { ...off, ...w };
}

/** The paper's graph routing (bridges and N2 discounts), which these tests exercise; off by default. */
const PAPER_GRAPH = { flags: { relationPaths: true, edgeDiscounts: true } };
const config = resolveConfig(PAPER_GRAPH);

/**
 * The paper's Melanie example. FacetPoint a ("Melanie painted a sunrise", cos .8) in Episode 1
 * has a temporal edge to a later FacetPoint in Episode 2; Episode 1 (cos .7) has a causal edge
 * to Episode 3. Both relation edges sit at cos .2 to the query, so:
 *   temporal bridge to Ep2 = .2 + α_t·.8 + .05 + 2·(.02 + .05) = .39 + .8·α_t
 *   causal bridge to Ep3   = .3 + α_c·.8 + .05               = .35 + .8·α_c
 */
function melanieGraph(): MemoryGraph {
  return new GraphBuilder()
    .entity('en-melanie', 'Melanie', atCos(0.5, 1))
    .episode('ep1', 1, atCos(0.7, 2), [
      ['D1:1', 'Melanie', 'I painted a sunrise over the lake last week.'],
      ['D1:2', 'Caroline', 'That sounds lovely!'],
    ])
    .facet('fc1', 'ep1', 'Melanie and painting', unrelated())
    .point('fp-a', 'fc1', 'Melanie painted a sunrise', atCos(0.8, 3), { entityId: 'en-melanie', dialogIds: ['D1:1'] })
    .edge('involves_entity', 'fp-a', 'en-melanie', atCos(0.3, 4))
    .episode('ep2', 2, unrelated(), [['D2:1', 'Melanie', 'My exhibition opens next month.']])
    .facet('fc2', 'ep2', 'Exhibition plans', unrelated())
    .point('fp-v', 'fc2', 'Melanie will exhibit her paintings', unrelated(), { dialogIds: ['D2:1'] })
    .edge('temporal', 'fp-a', 'fp-v', atCos(0.2, 5))
    .episode('ep3', 3, unrelated(), [['D3:1', 'Melanie', 'Painting calmed me down so much that I took up pottery too.']])
    .edge('causal', 'ep1', 'ep3', atCos(0.2, 6))
    .build();
}

const MELANIE_ANCHORS = anchorsOf({ facetPoint: [{ id: 'fp-a', score: 0.8 }], episode: [{ id: 'ep1', score: 0.7 }] });

describe('N2 edge cost', () => {
  const graph = melanieGraph();
  const ctx = (over: Partial<EdgeCostContext> = {}): EdgeCostContext => ({
    queryVector: Q,
    vectors: graph.vectors,
    anchorIds: new Set(['fp-a']),
    intent: 'GENERAL',
    config,
    ...over,
  });
  const edge = (id: string): GraphEdge => {
    const e = graph.edges.get(id);
    if (!e) throw new Error(id);
    return e;
  };

  it('uses 1 − cos(edge, q) for an embedded edge touching an anchor, else the per-type fallback', () => {
    expect(edgeCost(edge('temporal:fp-a->fp-v'), ctx())).toBeCloseTo(0.8, 6);
    expect(edgeCost(edge('temporal:fp-a->fp-v'), ctx({ anchorIds: new Set(['ep1']) }))).toBeCloseTo(0.9, 6);
    // belongs_to is never embedded: fallback even when it touches an anchor.
    expect(edgeCost(edge('belongs_to:fp-a->fc1'), ctx())).toBeCloseTo(0.02, 6);
    expect(edgeCost(edge('involves_entity:fp-a->en-melanie'), ctx())).toBeCloseTo(0.7, 6);
  });

  it('applies α by (edge type, intent) only while discounts are on', () => {
    const temporal = edge('temporal:fp-a->fp-v');
    const causal = edge('causal:ep1->ep3');
    const onCausal = ctx({ anchorIds: new Set(['ep1']) });
    expect(edgeCost(temporal, ctx({ intent: 'TEMPORAL' }))).toBeCloseTo(0.4, 6);
    expect(edgeCost(temporal, ctx({ intent: 'CAUSAL' }))).toBeCloseTo(0.8, 6);
    expect(edgeCost(causal, { ...onCausal, intent: 'CAUSAL' })).toBeCloseTo(0.4, 6);
    expect(edgeCost(causal, { ...onCausal, intent: 'TEMPORAL' })).toBeCloseTo(0.8, 6);
    // An evolution edge without a stored vector: c0 when vectors are embedded (none was), and the
    // normalised sum of its endpoints' vectors when they are composed (the default).
    const evolution = { ...temporal, id: 'evo', type: 'evolution' as const };
    const embedded = resolveConfig({ ingest: { edgeVectors: 'embedded' } }, config);
    expect(edgeCost(evolution, ctx({ intent: 'TEMPORAL', config: embedded }))).toBeCloseTo(0.9 * 0.7, 6);
    const composed = normalisedSum(graph.vectors.get('fp-a')!, graph.vectors.get('fp-v')!);
    expect(edgeCost(evolution, ctx({ intent: 'TEMPORAL' }))).toBeCloseTo(0.7 * (1 - dot(composed, Q)), 6);
    const off = resolveConfig({ flags: { edgeDiscounts: false } }, config);
    expect(edgeCost(temporal, ctx({ intent: 'TEMPORAL', config: off }))).toBeCloseTo(0.8, 6);
  });

  it('prices a composed edge exactly as the dot with the built sum vector', () => {
    let seed = 11;
    const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) - 0.5;
    for (let round = 0; round < 50; round++) {
      const [a, b, q] = [0, 1, 2].map(() => vec(Object.fromEntries(Array.from({ length: DIM }, (_, i) => [i, random()]))));
      expect(normalisedSumDot(a!, b!, q!)).toBe(dot(normalisedSum(a!, b!), q!));
    }
    const zero = new Float32Array(DIM);
    expect(normalisedSumDot(zero, zero, Q)).toBe(dot(normalisedSum(zero, zero), Q));
  });

  it('scores many rows exactly as dot does, whatever the row count', () => {
    let seed = 7;
    const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) - 0.5;
    const row = (): Float32Array => Float32Array.from({ length: 384 }, random);
    const q = row();
    // Counts around the four-row passes: none, a remainder alone, whole passes, passes plus a remainder.
    for (const count of [0, 1, 3, 4, 5, 8, 11]) {
      const rows = Array.from({ length: count }, row);
      expect([...dotEach(rows, q)]).toEqual(rows.map((r) => dot(r, q)));
    }
    expect(() => dotEach([row(), new Float32Array(3)], q)).toThrow(/dimensions/);
  });
});

describe('graph adjacency', () => {
  it('lists edges by type in insertion order; a replaced edge keeps its place, a deleted one goes', () => {
    const graph = new GraphBuilder()
      .entity('en', 'E', unrelated())
      .episode('ep', 1, unrelated())
      .facet('fc', 'ep', 'theme', unrelated())
      .point('p1', 'fc', 'one', unrelated())
      .point('p2', 'fc', 'two', unrelated())
      .point('p3', 'fc', 'three', unrelated())
      .edge('involves_entity', 'p1', 'en')
      .edge('temporal', 'p1', 'p2')
      .edge('involves_entity', 'p2', 'en')
      .edge('involves_entity', 'p3', 'en')
      .build();
    const ids = (edges: readonly GraphEdge[]) => edges.map((e) => e.id);
    expect(ids(graph.edgesTo('en', 'involves_entity'))).toEqual(['involves_entity:p1->en', 'involves_entity:p2->en', 'involves_entity:p3->en']);
    // Every type: type by type in EDGE_TYPES order.
    expect(ids(graph.edgesFrom('p1'))).toEqual(['belongs_to:p1->fc', 'temporal:p1->p2', 'involves_entity:p1->en']);
    expect(ids(graph.edgesFrom('p1', 'temporal'))).toEqual(['temporal:p1->p2']);
    const first = graph.edges.get('involves_entity:p1->en')!;
    graph.putEdge({ ...first, confidence: 0.5 });
    expect(graph.edgesTo('en', 'involves_entity').map((e) => [e.id, e.confidence])[0]).toEqual(['involves_entity:p1->en', 0.5]);
    graph.deleteEdge('involves_entity:p2->en');
    expect(ids(graph.edgesTo('en', 'involves_entity'))).toEqual(['involves_entity:p1->en', 'involves_entity:p3->en']);
    // Moved to other endpoints: gone from the old lists, last in the new.
    graph.putEdge({ ...first, from: 'p3', to: 'en', type: 'temporal' });
    expect(ids(graph.edgesTo('en', 'involves_entity'))).toEqual(['involves_entity:p3->en']);
    expect(ids(graph.edgesFrom('p3', 'temporal'))).toEqual(['involves_entity:p1->en']);
    expect(graph.edgesFrom('p1', 'involves_entity')).toEqual([]);
  });

  it("lists an Episode's FacetPoints through its Facets, and follows node and edge changes", () => {
    const graph = melanieGraph();
    const ids = (episodeId: string) => graph.facetPointsOf(episodeId).map((p) => p.id);
    expect(ids('ep1')).toEqual(['fp-a']);
    expect(ids('ep3')).toEqual([]);
    const point = graph.nodes.get('fp-a');
    if (point?.layer !== 'facetPoint') throw new Error('no fp-a');
    graph.putNode({ ...point, id: 'fp-b', key: 900, content: 'Melanie loves lakes' });
    // Not under a Facet until its edge comes.
    expect(ids('ep1')).toEqual(['fp-a']);
    graph.putEdge({ ...graph.edges.get('belongs_to:fp-a->fc1')!, id: 'belongs_to:fp-b->fc1', key: 901, from: 'fp-b' });
    expect(ids('ep1')).toEqual(['fp-a', 'fp-b']);
    graph.putNode({ ...point, content: 'Melanie painted a sunset' });
    expect(graph.facetPointsOf('ep1')[0]).toMatchObject({ id: 'fp-a', content: 'Melanie painted a sunset' });
    graph.deleteEdge('belongs_to:fp-a->fc1');
    expect(ids('ep1')).toEqual(['fp-b']);
    graph.deleteNode('fp-b');
    expect(ids('ep1')).toEqual([]);
  });
});

describe('N1 bundle search', () => {
  /** One Episode per template, each reachable only through its own anchor. */
  function templateGraph(): { graph: MemoryGraph; anchors: LayerAnchors } {
    const graph = new GraphBuilder()
      .episode('e-ep', 1, unrelated())
      .episode('e-fc', 2, unrelated())
      .facet('f-fc', 'e-fc', 'facet anchor', unrelated())
      .episode('e-fp', 3, unrelated())
      .facet('f-fp', 'e-fp', 'facet of fp', unrelated())
      .point('p-fp', 'f-fp', 'point anchor', unrelated())
      .episode('e-en', 4, unrelated())
      .facet('f-en', 'e-en', 'facet of entity point', unrelated())
      .point('p-en', 'f-en', 'point of entity', unrelated(), { entityId: 'en' })
      .entity('en', 'Entity', unrelated())
      .edge('involves_entity', 'p-en', 'en', unrelated())
      .episode('e-temporal', 5, unrelated())
      .facet('f-t', 'e-temporal', 'later', unrelated())
      .point('p-t', 'f-t', 'later fact', unrelated())
      .edge('temporal', 'p-fp', 'p-t', unrelated())
      .episode('e-evolution', 6, unrelated())
      .facet('f-v', 'e-evolution', 'evolved', unrelated())
      .point('p-v', 'f-v', 'evolved fact', unrelated())
      .edge('evolution', 'p-v', 'p-fp', unrelated())
      .episode('e-causal', 7, unrelated())
      .edge('causal', 'e-ep', 'e-causal', unrelated())
      .build();
    const anchors = anchorsOf({
      episode: [{ id: 'e-ep', score: 0.9 }],
      facet: [{ id: 'f-fc', score: 0.9 }],
      facetPoint: [{ id: 'p-fp', score: 0.9 }],
      entity: [{ id: 'en', score: 0.9 }],
    });
    return { graph, anchors };
  }

  it('enumerates all eight templates, and only the five backbone ones without relation paths', () => {
    const { graph, anchors } = templateGraph();
    const templates = (c: PrismConfig) => new Set(enumeratePaths(graph, anchors, Q, 'GENERAL', c).map((p) => p.template));
    expect([...templates(config)].sort()).toEqual(
      ['Ep', 'Fc→Ep', 'FP→Fc→Ep', 'En→FP→Fc→Ep', 'En→Fc→Ep', 'temporal bridge', 'causal bridge', 'evolution bridge'].sort(),
    );
    expect([...templates(resolveConfig())].sort()).toEqual(
      ['Ep', 'Fc→Ep', 'FP→Fc→Ep', 'En→FP→Fc→Ep', 'En→Fc→Ep'].sort(),
    );
  });

  it('costs each path as d(a) + Σ(c_edge + c_hop) and keeps the minimum per Episode', () => {
    const { graph, anchors } = templateGraph();
    const bundle = bundleSearch(graph, anchors, Q, 'GENERAL', config, 20);
    const cost = Object.fromEntries(bundle.map((e) => [e.episodeId, e.cost]));
    const template = Object.fromEntries(bundle.map((e) => [e.episodeId, e.trace.template]));
    const d = 0.1;
    const up = 0.02 + 0.05; // belongs_to fallback + c_hop
    // Anchors touch every relation edge here, and all are orthogonal to q: base 1 − 0 = 1.
    const relation = 1 + 0.05;
    expect(cost['e-ep']).toBeCloseTo(d, 6);
    expect(cost['e-fc']).toBeCloseTo(d + up, 6);
    expect(cost['e-fp']).toBeCloseTo(d + 2 * up, 6);
    // En→Fc→Ep always beats En→FP→Fc→Ep (same first edge, one hop fewer).
    expect(cost['e-en']).toBeCloseTo(d + relation + up, 6);
    expect(template['e-en']).toBe('En→Fc→Ep');
    expect(cost['e-temporal']).toBeCloseTo(d + relation + 2 * up, 6);
    expect(cost['e-evolution']).toBeCloseTo(d + relation + 2 * up, 6);
    expect(template['e-evolution']).toBe('evolution bridge');
    expect(cost['e-causal']).toBeCloseTo(d + relation, 6);
    // Sorted by cost, truncated to K.
    expect(bundle.map((e) => e.cost)).toEqual([...bundle.map((e) => e.cost)].sort((a, b) => a - b));
    expect(bundleSearch(graph, anchors, Q, 'GENERAL', config, 3).map((e) => e.episodeId)).toEqual(['e-ep', 'e-fc', 'e-fp']);
  });

  it('keeps the cheaper of two routes to one Episode as its trace', () => {
    const graph = new GraphBuilder()
      .episode('ep', 1, atCos(0.5, 1))
      .facet('fc', 'ep', 'theme', unrelated())
      .point('fp', 'fc', 'fact', atCos(0.9, 2))
      .build();
    const both = anchorsOf({ episode: [{ id: 'ep', score: 0.5 }], facetPoint: [{ id: 'fp', score: 0.9 }] });
    const [entry] = bundleSearch(graph, both, Q, 'GENERAL', config);
    expect(entry?.cost).toBeCloseTo(0.1 + 2 * 0.07, 6); // 0.24 < 0.5 via the Episode anchor
    expect(entry?.trace.template).toBe('FP→Fc→Ep');
    expect(entry?.trace.edges.map((e) => e.type)).toEqual(['belongs_to', 'belongs_to']);
  });

  it('Melanie: a temporal query prefers the temporal bridge, a causal one the causal bridge', () => {
    const graph = melanieGraph();
    const order = (intent: 'TEMPORAL' | 'CAUSAL' | 'GENERAL', c = config) =>
      bundleSearch(graph, MELANIE_ANCHORS, Q, intent, c).map((e) => e.episodeId);
    const costOf = (intent: 'TEMPORAL' | 'CAUSAL' | 'GENERAL', id: string) =>
      bundleSearch(graph, MELANIE_ANCHORS, Q, intent, config).find((e) => e.episodeId === id)?.cost;
    expect(costOf('TEMPORAL', 'ep2')).toBeCloseTo(0.39 + 0.4, 6);
    expect(costOf('TEMPORAL', 'ep3')).toBeCloseTo(0.35 + 0.8, 6);
    expect(costOf('CAUSAL', 'ep2')).toBeCloseTo(0.39 + 0.8, 6);
    expect(costOf('CAUSAL', 'ep3')).toBeCloseTo(0.35 + 0.4, 6);
    expect(order('TEMPORAL')).toEqual(['ep1', 'ep2', 'ep3']);
    expect(order('CAUSAL')).toEqual(['ep1', 'ep3', 'ep2']);
    // Without intent (or without discounts) the causal bridge is marginally cheaper.
    expect(order('GENERAL')).toEqual(['ep1', 'ep3', 'ep2']);
    expect(order('TEMPORAL', resolveConfig({ flags: { edgeDiscounts: false } }, config))).toEqual(['ep1', 'ep3', 'ep2']);
    // Without N1 bridges (the default), only Episode 1 is reachable.
    expect(order('TEMPORAL', resolveConfig())).toEqual(['ep1']);
  });

  it('returns what the minimum over every enumerated path gives, however much it prunes', () => {
    // Seeded random graphs: hub entities over many Episodes, weak and strong anchors, relation
    // edges, in the default and the paper's routing, so pruning by cost and the dominated
    // En→FP→Fc→Ep form are both exercised against the exhaustive answer.
    let seed = 7;
    const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    // Anywhere from orthogonal to close to the query (axis 0), so entity paths compete.
    const randomVector = (): Float32Array => {
      const v = Float32Array.from({ length: DIM }, (_, i) => (i === 0 ? 3 * random() : (random() - 0.5) / 20));
      const norm = Math.hypot(...v);
      return v.map((x) => x / norm);
    };
    for (let round = 0; round < 8; round++) {
      const b = new GraphBuilder();
      const entities = ['en0', 'en1', 'en2', 'en3', 'en4', 'en5'];
      for (const [i, id] of entities.entries()) b.entity(id, `Entity ${i}`, randomVector());
      const points: string[] = [];
      for (let e = 0; e < 30; e++) {
        b.episode(`ep${e}`, e + 1, randomVector());
        for (let f = 0; f < 2; f++) {
          b.facet(`fc${e}.${f}`, `ep${e}`, 'theme', randomVector());
          for (let p = 0; p < 3; p++) {
            const id = `fp${e}.${f}.${p}`;
            const entity = entities[Math.floor(random() * entities.length)] ?? 'en0';
            b.point(id, `fc${e}.${f}`, 'fact', randomVector(), { entityId: entity }).edge('involves_entity', id, entity);
            if (points.length > 0 && random() < 0.2) b.edge(random() < 0.5 ? 'temporal' : 'evolution', points[Math.floor(random() * points.length)] ?? id, id);
            points.push(id);
          }
        }
      }
      const graph = b.build();
      const pick = (layer: Layer, n: number): Anchor[] =>
        graph
          .nodesOfLayer(layer)
          .filter(() => random() < 0.5)
          .slice(0, n)
          // Fused anchors need not come best first.
          .map((node) => ({ id: node.id, score: random() * 0.9 }));
      const anchors = anchorsOf({ episode: pick('episode', 3), facet: pick('facet', 5), facetPoint: pick('facetPoint', 8), entity: pick('entity', 6) });
      for (const c of [resolveConfig(), config]) {
        for (const size of [3, 10]) {
          const best = new Map<string, ReturnType<typeof enumeratePaths>[number]>();
          for (const path of enumeratePaths(graph, anchors, Q, 'GENERAL', c)) {
            const episodeId = path.nodes.at(-1)?.id ?? '';
            const known = best.get(episodeId);
            if (!known || path.total < known.total) best.set(episodeId, path);
          }
          const order = (id: string): number => Number(id.slice(2));
          const expected = [...best.entries()]
            .map(([episodeId, trace]) => ({ episodeId, cost: trace.total, trace }))
            .sort((x, y) => x.cost - y.cost || order(x.episodeId) - order(y.episodeId))
            .slice(0, size);
          expect(bundleSearch(graph, anchors, Q, 'GENERAL', c, size)).toEqual(expected);
        }
      }
    }
  });

  it('formats a trace as a readable path', () => {
    const graph = melanieGraph();
    const anchors = anchorsOf({ entity: [{ id: 'en-melanie', score: 0.5 }] });
    const [viaEntity] = enumeratePaths(graph, anchors, Q, 'GENERAL', config).filter((p) => p.template === 'En→FP→Fc→Ep');
    expect(viaEntity && formatTrace(viaEntity)).toBe(
      'Entity "Melanie" —involves→ FacetPoint "Melanie painted a sunrise" —belongs_to→ Facet "Melanie and painting" —belongs_to→ Episode 1',
    );
    const temporal = bundleSearch(graph, MELANIE_ANCHORS, Q, 'TEMPORAL', config).find((e) => e.episodeId === 'ep2');
    expect(temporal && formatTrace(temporal.trace)).toBe(
      'FacetPoint "Melanie painted a sunrise" —temporal→ FacetPoint "Melanie will exhibit her paintings" —belongs_to→ Facet "Exhibition plans" —belongs_to→ Episode 2',
    );
    // A bridge crossed against its direction shows it.
    const fromLater = anchorsOf({ facetPoint: [{ id: 'fp-v', score: 0.9 }] });
    const back = bundleSearch(graph, fromLater, Q, 'GENERAL', config).find((e) => e.episodeId === 'ep1');
    expect(back && formatTrace(back.trace)).toContain('FacetPoint "Melanie will exhibit her paintings" ←temporal— FacetPoint');
  });
});

describe('N4 intent routing', () => {
  it('has 18 temporal and 14 causal triggers and a 46-query prototype bank split as specified', () => {
    expect(TEMPORAL_TRIGGERS).toHaveLength(18);
    expect(CAUSAL_TRIGGERS).toHaveLength(14);
    expect(PROTOTYPES).toHaveLength(46);
    const count = (f: (p: (typeof PROTOTYPES)[number]) => boolean) => PROTOTYPES.filter(f).length;
    expect(count((p) => p.style === 'generic')).toBe(24);
    expect(count((p) => p.style === 'locomo')).toBe(22);
    expect(count((p) => p.label === 'TEMPORAL')).toBe(10);
    expect(count((p) => p.label === 'CAUSAL')).toBe(10);
    expect(count((p) => p.label === 'MULTI_HOP')).toBe(14);
    expect(count((p) => p.label === 'ENTITY_CENTRIC')).toBe(12);
  });

  it('fires the keyword tier on when/why questions; the first trigger in the question wins', () => {
    expect(keywordIntent('When did Caroline go to the LGBTQ support group?')).toBe('TEMPORAL');
    expect(keywordIntent('How long has Melanie been painting?')).toBe('TEMPORAL');
    expect(keywordIntent('Why did Melanie start painting?')).toBe('CAUSAL');
    expect(keywordIntent('What inspired Caroline to become a counselor?')).toBe('CAUSAL');
    expect(keywordIntent('Why did she move after the divorce?')).toBe('CAUSAL');
    expect(keywordIntent('When did she move because of her job?')).toBe('TEMPORAL');
    expect(keywordIntent("What is Melanie's daughter's name?")).toBeNull();
    expect(keywordIntent('What kind of car does the neighbour drive?')).toBeNull();
  });

  /** Prototype i of label L embeds to L's axis; query vectors are mixed over those axes. */
  const AXIS: Record<string, number> = { TEMPORAL: 1, CAUSAL: 2, MULTI_HOP: 3, ENTITY_CENTRIC: 4 };
  function labelAxisBank(): { bank: PrototypeBank; calls: () => number } {
    let calls = 0;
    const bank = new PrototypeBank(async (texts) => {
      calls++;
      return texts.map((t) => vec({ [AXIS[PROTOTYPES.find((p) => p.text === t)?.label ?? ''] ?? 0]: 1 }));
    });
    return { bank, calls: () => calls };
  }
  const mixed = (top: number, second: number) => vec({ 3: top, 4: second, 9: Math.sqrt(Math.max(0, 1 - top * top - second * second)) });

  it('commits on the prototype tier only above θ and with enough margin; embeds the bank once', async () => {
    const { bank, calls } = labelAxisBank();
    const route = (queryVector: Float32Array) =>
      routeIntent('Tell me about the pottery class', { queryVector, prototypes: bank, config, mode: 'zero-llm' });
    await expect(route(mixed(0.8, 0.3))).resolves.toMatchObject({ intent: 'MULTI_HOP', tier: 'prototype', llmCalls: 0 });
    await expect(route(mixed(0.3, 0.8))).resolves.toMatchObject({ intent: 'ENTITY_CENTRIC', tier: 'prototype' });
    // Below θ = 0.55.
    await expect(route(mixed(0.5, 0.1))).resolves.toMatchObject({ intent: 'GENERAL', tier: 'none' });
    // Above θ but margin 0.05 < 0.10.
    await expect(route(mixed(0.65, 0.6))).resolves.toMatchObject({ intent: 'GENERAL', tier: 'none' });
    // Thresholds come from the config.
    const lenient = resolveConfig({ retrieval: { prototypeThreshold: 0.4, prototypeMargin: 0.01 } });
    await expect(
      routeIntent('Tell me about the pottery class', { queryVector: mixed(0.65, 0.6), prototypes: bank, config: lenient, mode: 'zero-llm' }),
    ).resolves.toMatchObject({ intent: 'MULTI_HOP', tier: 'prototype' });
    expect(calls()).toBe(1);
  });

  it('thresholds LLM scores; MULTI_HOP suppresses ENTITY_CENTRIC; nothing confident is GENERAL', () => {
    const s = (temporal: number, causal: number, multi_hop: number, entity_centric: number) => ({ temporal, causal, multi_hop, entity_centric });
    expect(intentFromScores(s(0.1, 0.2, 0.6, 0.9), 0.5)).toBe('MULTI_HOP');
    expect(intentFromScores(s(0.1, 0.2, 0.4, 0.9), 0.5)).toBe('ENTITY_CENTRIC');
    expect(intentFromScores(s(0.7, 0.9, 0, 0), 0.5)).toBe('CAUSAL');
    expect(intentFromScores(s(0.4, 0.3, 0.2, 0.1), 0.5)).toBe('GENERAL');
    expect(intentFromScores(s(0.4, 0.3, 0.2, 0.1), 0.35)).toBe('TEMPORAL');
  });
});

describe('LLM paths against the local OpenAI-compatible server', () => {
  let server: OpenAiTestServer;
  beforeAll(async () => {
    server = await startOpenAiServer();
  });
  afterAll(async () => {
    await server.close();
  });
  const llm = () => createLlmClient({ baseURL: server.baseURL, models: { default: 'test-model' }, invalidJsonRetries: 0, retry: { maxRetries: 0 } });

  it('routes through the LLM tier when keywords and prototypes are not confident', async () => {
    const { length: before } = server.requests;
    server.enqueue(reply.json({ temporal: 0.1, causal: 0.2, multi_hop: 0.7, entity_centric: 0.8 }), reply.content('no json here'));
    const deps = { queryVector: vec({ 9: 1 }), prototypes: new PrototypeBank(async (t) => t.map(() => unrelated())), llm: llm(), config, mode: 'llm' as const };
    await expect(routeIntent('Tell me about the pottery class', deps)).resolves.toEqual({ intent: 'MULTI_HOP', tier: 'llm', llmCalls: 1, warnings: [] });
    const bad = await routeIntent('Tell me about the pottery class', deps);
    expect(bad).toMatchObject({ intent: 'GENERAL', tier: 'none', llmCalls: 1 });
    expect(bad.warnings).toHaveLength(1);
    expect(server.requests.length - before).toBe(2);
    // Keyword hits never reach the server.
    await expect(routeIntent('When did it start?', deps)).resolves.toMatchObject({ tier: 'keyword', llmCalls: 0 });
    expect(server.requests.length - before).toBe(2);
  });

  function bundleOf(n: number): { graph: MemoryGraph; bundle: BundleEntry[] } {
    const b = new GraphBuilder();
    for (let i = 0; i < n; i++) b.episode(`ep${i}`, i + 1, unrelated(), [[`D${i}:1`, 'A', `turn ${i}`]], `Summary ${i} ${'x'.repeat(600)}`);
    const graph = b.build();
    const anchors = anchorsOf({ episode: Array.from({ length: n }, (_, i) => ({ id: `ep${i}`, score: 0.9 - i * 0.01 })) });
    return { graph, bundle: bundleSearch(graph, anchors, Q, 'GENERAL', config, n) };
  }

  it('reranks with one call, deterministic top-M with ties in bundle order, snippets cut, no costs shown', async () => {
    const { graph, bundle } = bundleOf(7);
    const { length: before } = server.requests;
    // Passage 6 is unscored; 1, 3 and 5 tie at 7.
    server.enqueue(reply.json({ scores: [0, 1, 2, 3, 4, 5].map((index) => ({ index, score: index % 2 ? 7 : 2 })).concat({ index: 99, score: 10 }) }));
    const result = await rerankWithLlm('What did A say?', bundle, graph, llm(), config);
    expect(result.ranked.map((e) => e.episodeId)).toEqual(['ep1', 'ep3', 'ep5', 'ep0', 'ep2', 'ep4', 'ep6']);
    expect(result.ranked.slice(0, config.retrieval.keep)).toHaveLength(5);
    expect(result.llmCalls).toBe(1);
    expect(result.warnings).toEqual(['rerank: 1 of 7 passages unscored']);
    const sent = server.requests.slice(before);
    expect(sent).toHaveLength(1);
    const prompt = sent[0]?.body?.messages.map((m) => m.content).join('\n') ?? '';
    for (let i = 0; i < 7; i++) expect(prompt).toContain(`[${i}] Summary ${i}`);
    const passage = /\[0\] (.*)/.exec(prompt)?.[1] ?? '';
    expect(passage).toHaveLength(config.retrieval.rerankSnippetChars);
    expect(prompt).not.toMatch(/cost|0\.\d{3}/i);
  });

  it('skips the call when |bundle| ≤ M and keeps bundle order on an unusable reply', async () => {
    const small = bundleOf(5);
    const { length: before } = server.requests;
    const skipped = await rerankWithLlm('q', small.bundle, small.graph, llm(), config);
    expect(skipped.llmCalls).toBe(0);
    expect(server.requests.length).toBe(before);
    expect(skipped.ranked.map((e) => e.episodeId)).toEqual(small.bundle.map((e) => e.episodeId));

    const big = bundleOf(6);
    server.enqueue(reply.content('I would rather not.'));
    const invalid = await rerankWithLlm('q', big.bundle, big.graph, llm(), config);
    expect(invalid.ranked.map((e) => e.episodeId)).toEqual(big.bundle.map((e) => e.episodeId));
    expect(invalid.llmCalls).toBe(1);
    expect(invalid.warnings).toHaveLength(1);
  });

  it('retrieve in llm mode: keyword intent, one rerank call, usage counted', async () => {
    const { graph } = bundleOf(8);
    server.enqueue(reply.json({ scores: Array.from({ length: 8 }, (_, index) => ({ index, score: index })) }, {}));
    const result = await retrieve('When did A speak?', depsFor(graph, { llm: llm() }), { config: { flags: { intentRouting: true } } });
    expect(result).toMatchObject({ mode: 'llm', intent: 'TEMPORAL', tier: 'keyword', llmCalls: 1 });
    expect(result.llmTokens).toBeGreaterThan(0);
    expect(result.units.map((u) => u.episodeId)).toEqual(['ep7', 'ep6', 'ep5', 'ep4', 'ep3']);
  });
});

describe('hybrid anchors: lexical index and fusion', () => {
  it('finds nodes and turns by words, survives a JSON round trip, and follows graph updates', () => {
    const graph = melanieGraph();
    const lexical = LexicalIndex.fromGraph(graph);
    const hits = lexical.search('sunrise painting');
    expect(hits.layers.facetPoint[0]?.id).toBe('fp-a');
    expect(hits.layers.episode[0]?.id).toBe('ep1');
    expect([...(hits.turns.get('ep1')?.keys() ?? [])]).toEqual(['D1:1']);
    expect(hits.layers.episode.length).toBeGreaterThan(1);
    // A cap per layer keeps each layer's head and every turn score.
    const capped = lexical.search('sunrise painting', 1);
    expect(capped.layers).toEqual(Object.fromEntries(Object.entries(hits.layers).map(([layer, list]) => [layer, list.slice(0, 1)])));
    expect(turnEntries(graph, capped.turns)).toEqual(turnEntries(graph, hits.turns));

    graph.putNode({ layer: 'entity', id: 'en-pottery', key: 999, name: 'Pottery', entityType: 'concept', chunkIds: [] });
    lexical.update(graph);
    expect(lexical.search('pottery').layers.entity.map((h) => h.id)).toEqual(['en-pottery']);
    graph.deleteNode('en-pottery');
    lexical.update(graph);
    expect(lexical.search('pottery').layers.entity).toEqual([]);
    const again = lexical.search('sunrise painting');
    expect(again.layers).toEqual(hits.layers);
    expect(turnEntries(graph, again.turns)).toEqual(turnEntries(graph, hits.turns));
  });

  it('scores as minisearch scores the whole query, repeated terms included, before and after documents come and go', () => {
    const graph = melanieGraph();
    const lexical = LexicalIndex.fromGraph(graph);
    const queries = ['sunrise painting', 'Painting the sunrise, painting it again?', 'Melanie sunrise', 'nothing indexed'];
    const check = (): void => {
      // Twice: the second search reads the terms' kept hits.
      for (const query of [...queries, ...queries]) {
        const expected = minisearchMatches(graph, query);
        const found = lexical.search(query);
        expect(found.layers).toEqual(expected.layers);
        expect(turnEntries(graph, found.turns)).toEqual(turnEntries(graph, expected.turns));
      }
    };
    check();
    expect(lexical.search('sunrise').layers.facetPoint.length).toBeGreaterThan(0);
    // A new document changes every term's IDF.
    graph.putNode({ layer: 'entity', id: 'en-sunrise', key: 998, name: 'Sunrise', entityType: 'concept', chunkIds: [] });
    const before = lexical.search('sunrise painting');
    lexical.update(graph);
    expect(lexical.search('sunrise painting').layers.episode[0]?.score).not.toBe(before.layers.episode[0]?.score);
    check();
    // A document gone takes its postings and its share of the averages with it.
    graph.deleteNode('fp-a');
    lexical.update(graph);
    check();
  });

  it('scores only the documents that can rank, and ranks, reads turns and picks the best turn as a full query does', () => {
    // Words from common to rare (long and short posting lists, low and high IDF), few of them:
    // documents holding several query terms, many equal scores.
    const words = ['amber', 'birch', 'cedar', 'dune', 'ember', 'fjord', 'grove', 'heath', 'inlet', 'juniper', 'kelp', 'larch'];
    let seed = 11;
    const pick = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const word = (): string => words[Math.floor((pick(1000) / 1000) ** 2.5 * words.length)] as string;
    const phrase = (length: number): string => Array.from({ length }, word).join(' ');
    // Lexical search reads no vector: every node gets the same one (`unrelated()` would use up axes the other tests own).
    const v = atCos(0.1, 1);
    const builder = new GraphBuilder();
    for (let e = 0; e < 120; e++) {
      const turns = Array.from({ length: 1 + pick(6) }, (_, t): [string, string, string] => [`D${e}:${t}`, pick(2) === 0 ? 'Ann' : 'Bo', phrase(1 + pick(12))]);
      builder.episode(`ep${e}`, e, v, turns);
      turns.forEach(([dialogId, speaker, text], t) => {
        builder.facet(`fc${e}-${t}`, `ep${e}`, `${speaker}: ${text}`, v).point(`fp${e}-${t}`, `fc${e}-${t}`, `${speaker}: ${text}`, v, { dialogIds: [dialogId] });
      });
    }
    words.forEach((name, i) => builder.entity(`en${i}`, name, v));
    const graph = builder.build();
    const lexical = LexicalIndex.fromGraph(graph);
    const episodeIds = graph.nodesOfLayer('episode').map((e) => e.id);
    for (let q = 0; q < 200; q++) {
      // Repeated words count each time; an unknown word matches nothing.
      const query = `${phrase(1 + pick(5))}${pick(4) === 0 ? ' zebra' : ''}`;
      const expected = minisearchMatches(graph, query);
      const scope = new Set(episodeIds.filter(() => pick(3) === 0));
      const inScope = new Map([...expected.turns].filter(([id]) => scope.has(id)));
      for (const k of [1, 2, 3, 5, 10]) {
        const found = lexical.search(query, k);
        for (const layer of LAYERS) expect(found.layers[layer], `${query} (${layer}, ${k})`).toEqual(expected.layers[layer].slice(0, k));
        expect(turnEntries(graph, found.turns)).toEqual(turnEntries(graph, expected.turns));
        expect(turnEntries(graph, found.turns.within(scope))).toEqual(turnEntries(graph, inScope));
      }
    }
    // Two documents alike: the one added second wins the tie by its id, though the first already holds the best score there is.
    const twins = new GraphBuilder().episode('ep', 1, v, [['D1', 'Ann', 'kelp']]).facet('fc-b', 'ep', 'Ann: kelp', v).facet('fc-a', 'ep', 'Ann: kelp', v).build();
    expect(LexicalIndex.fromGraph(twins).search('kelp', 1).layers.facet.map((hit) => hit.id)).toEqual(['fc-a']);
  });

  it('reads a search\'s turn scores as they were when it ran, though the index changed since', () => {
    const query = 'painting sunrise pottery exhibition';
    const graph = melanieGraph();
    const expected = LexicalIndex.fromGraph(melanieGraph()).search(query).turns;
    const lexical = LexicalIndex.fromGraph(graph);
    // Searched, not read yet: then its best Episode goes, and a new turn matches every word.
    const found = lexical.search(query).turns;
    graph.deleteNode('ep3');
    graph.putNode({ id: 'ep4', key: 990, layer: 'episode', chunkId: 'c-ep4', summary: '', time: null, order: 4 });
    graph.putChunk({ id: 'c-ep4', sessionId: 's4', header: '[Session 4]', text: '', time: null, order: 4, turns: [{ dialogId: 'D4:1', speaker: 'Melanie', text: 'Painting a sunrise, pottery, an exhibition.' }] });
    lexical.update(graph);
    expect(found.best).toEqual(expected.best);
    expect(found.best?.episodeId).toBe('ep3');
    for (const id of ['ep1', 'ep2']) expect([...(found.get(id) ?? [])]).toEqual([...(expected.get(id) ?? [])]);
    // The new turn was not there when the search ran; the scope's best is found among the turns it had.
    expect(found.get('ep4')).toBeUndefined();
    expect(found.within(new Set(['ep1', 'ep3', 'ep4'])).best).toEqual(expected.within(new Set(['ep1', 'ep3'])).best);
    // A new search sees the change.
    expect(lexical.search(query).turns.best?.episodeId).toBe('ep4');
  });

  it('reads back what it wrote as bytes, then catches up with the nodes added and removed since; damaged bytes read as null', () => {
    const graph = melanieGraph();
    const queries = ['sunrise painting', 'Painting the sunrise, painting it again?', 'Melanie pottery', 'exhibition', 'nothing indexed'];
    const same = (a: LexicalIndex, b: LexicalIndex): void => {
      for (const query of queries) {
        const [x, y] = [a.search(query), b.search(query)];
        expect(x.layers).toEqual(y.layers);
        expect(turnEntries(graph, x.turns)).toEqual(turnEntries(graph, y.turns));
      }
    };
    const written = LexicalIndex.fromGraph(graph);
    const bytes = written.toBytes();
    const read = LexicalIndex.fromBytes(bytes, graph);
    expect(read?.changed).toBe(0);
    same(read!.index, written);

    // Nodes added since (their keys above every saved one) are indexed as a build from the whole graph indexes them: the same scores, to the last bit.
    graph.putNode({ layer: 'entity', id: 'en-sunrise', key: 998, name: 'Sunrise', entityType: 'concept', chunkIds: [] });
    graph.putNode({ layer: 'entity', id: 'en-lake', key: 999, name: 'Lake Tahoe', entityType: 'place', chunkIds: [] });
    const caughtUp = LexicalIndex.fromBytes(bytes, graph);
    expect(caughtUp?.changed).toBe(2);
    same(caughtUp!.index, LexicalIndex.fromGraph(graph));
    expect(caughtUp!.index.search('tahoe').layers.entity.map((hit) => hit.id)).toEqual(['en-lake']);

    // A node gone since leaves as it leaves the index that wrote the bytes.
    graph.deleteNode('fp-a');
    written.update(graph);
    const dropped = LexicalIndex.fromBytes(bytes, graph);
    expect(dropped?.changed).toBe(3);
    same(dropped!.index, written);
    // Written again after the removal, its holes closed up, it reads back the same.
    same(LexicalIndex.fromBytes(written.toBytes(), graph)!.index, written);

    // A document saved under another layer than its node's (bytes not written for this graph):
    // never read as they are; the index is built again from the graph and counts as changed.
    const layerAt = 1 + 1 + 8; // format, document count (one byte here), average length
    expect(written.size).toBeLessThan(128);
    let relabelled = 0;
    for (let code = 0; code < 4; code++) {
      if (code === bytes[layerAt]) continue;
      const other = bytes.slice();
      other[layerAt] = code;
      const read = LexicalIndex.fromBytes(other, graph);
      if (!read) continue;
      expect(read.changed).toBeGreaterThan(0);
      same(read.index, written);
      relabelled++;
    }
    expect(relabelled).toBeGreaterThan(0);

    // Another format, cut short, or not UTF-8 where text is: null, never a half-read index.
    const otherFormat = bytes.slice();
    otherFormat[0] = 99;
    expect(LexicalIndex.fromBytes(otherFormat, graph)).toBeNull();
    expect(LexicalIndex.fromBytes(bytes.subarray(0, bytes.length - 1), graph)).toBeNull();
    expect(LexicalIndex.fromBytes(new Uint8Array(0), graph)).toBeNull();
    const badText = bytes.slice();
    badText[bytes.length - 5] = 0xff;
    expect(LexicalIndex.fromBytes(badText, graph)).toBeNull();
    // Any one byte changed or any cut: null or an index, never a throw or a runaway allocation.
    // A term's postings are read when first used: damage found then (a posting past the
    // documents, a count that does not add up) builds the index again from the graph, which the
    // next update counts as changed (so the copy is saved again).
    let rebuilt = 0;
    for (let i = 0; i < bytes.length; i++) {
      const flipped = bytes.slice();
      flipped[i] = (flipped[i] as number) ^ 0xa5;
      expect(() => LexicalIndex.fromBytes(flipped, graph)).not.toThrow();
      expect(LexicalIndex.fromBytes(bytes.subarray(0, i), graph)).toBeNull();
      const damaged = LexicalIndex.fromBytes(flipped, graph)?.index;
      if (!damaged) continue;
      for (const query of queries) expect(() => damaged.search(query)).not.toThrow();
      expect(() => damaged.toBytes()).not.toThrow();
      if (damaged.update(graph) === 0) continue;
      rebuilt++;
      same(damaged, LexicalIndex.fromGraph(graph));
    }
    expect(rebuilt).toBeGreaterThan(0);
  });

  it('decodes a term read from bytes only when it is used, and writes an unused one back as it was read', () => {
    const graph = melanieGraph();
    const bytes = LexicalIndex.fromGraph(graph).toBytes();
    expect(LexicalIndex.fromBytes(bytes, graph)!.index.toBytes()).toEqual(bytes);
    // Terms decoded by a search are encoded again the same way.
    const searched = LexicalIndex.fromBytes(bytes, graph)!.index;
    searched.search('Melanie painting sunrise pottery');
    expect(searched.toBytes()).toEqual(bytes);
    // Documents removed before a term is decoded are left out of it, and of its count.
    const removed = LexicalIndex.fromBytes(bytes, graph)!.index;
    graph.deleteNode('ep3');
    graph.deleteNode('fp-a');
    expect(removed.update(graph)).toBeGreaterThan(0);
    const rebuilt = LexicalIndex.fromGraph(graph);
    for (const query of ['sunrise painting', 'Melanie pottery', 'exhibition', 'lake']) {
      const [x, y] = [removed.search(query), rebuilt.search(query)];
      expect(x.layers).toEqual(y.layers);
      expect(turnEntries(graph, x.turns)).toEqual(turnEntries(graph, y.turns));
    }
    expect(LexicalIndex.fromBytes(removed.toBytes(), graph)!.index.toBytes()).toEqual(rebuilt.toBytes());
  });

  it('normalises terms symmetrically', () => {
    expect(['painting', 'painted', 'paints', 'paint'].map(normaliseTerm)).toEqual(['paint', 'paint', 'paint', 'paint']);
    expect(normaliseTerm('parties')).toBe(normaliseTerm('party'));
    expect(normaliseTerm('the')).toBeNull();
  });

  it('counts the query terms a text holds as termsOf does (sharedTermCount), skipping texts that cannot hold one', () => {
    // Words whose stems end in an added "i" (party, parties), drop a doubled letter (running) or
    // an "e" (baked), capitals, digits, and non-ASCII text, which is always normalised word by word.
    const words = ['party', 'parties', 'Partying', 'running', 'Runs', 'baked', 'bake', 'skiing', 'Skis', 'taxi', 'taxis', 'city', 'cities', 'café', 'İstanbul', 'naïve', 'MP3', '2023', 'the', 'a', 'dogs', 'DOG', 'fizz', 'fizzy', 'gin', 'lavender'];
    let seed = 5;
    const random = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    let matched = 0;
    for (let round = 0; round < 2000; round++) {
      const text = Array.from({ length: 1 + random(8) }, () => words[random(words.length)] ?? '').join(random(2) ? ' ' : ', ');
      const query = termsOf(Array.from({ length: 1 + random(3) }, () => words[random(words.length)] ?? '').join(' '));
      const expected = [...termsOf(text)].filter((term) => query.has(term)).length;
      expect(sharedTermCount(text, query), `${text} | ${[...query].join(' ')}`).toBe(expected);
      if (expected > 0) matched++;
    }
    expect(matched).toBeGreaterThan(300);
  });

  it('orders by reciprocal rank and hands out the union’s own cosines in that order', () => {
    const vectors = new Map([['lex-only', atCos(0.3, 1)]]);
    const dense = [
      { id: 'a', score: 0.7 },
      { id: 'b', score: 0.6 },
      { id: 'c', score: 0.5 },
    ];
    const fused = fuseAnchors(dense, [{ id: 'c', score: 12 }, { id: 'lex-only', score: 9 }], { queryVector: Q, vectors, rrfK: 60, lexicalPerLayer: 30, lexicalWeight: 1 });
    expect(fused.map((a) => a.id)).toEqual(['c', 'a', 'b', 'lex-only']);
    expect(fused.map((a) => a.score)).toEqual([0.7, 0.6, 0.5, expect.closeTo(0.3, 6)]);
  });
});

/** What `LexicalIndex.search` should find: minisearch's own OR query over the graph's documents, per layer and turn. */
/**
 * A search's turn scores as plain data: each Episode's (in the graph's order) and the best turn.
 * A reference's map gives its best as the first of the highest in its order, as BM25 lists them.
 */
function turnEntries(graph: MemoryGraph, turns: TurnScores | ReadonlyMap<string, ReadonlyMap<string, number>>): { best: TurnScores['best']; episodes: unknown[] } {
  const episodes = graph.nodesOfLayer('episode').flatMap((episode) => {
    const scores = turns.get(episode.id);
    return scores ? [[episode.id, [...scores]]] : [];
  });
  if (!(turns instanceof Map)) return { best: (turns as TurnScores).best, episodes };
  let best: TurnScores['best'] = null;
  for (const [episodeId, scores] of turns) for (const [dialogId, score] of scores) if (best === null || score > best.score) best = { episodeId, dialogId, score };
  return { best, episodes };
}

function minisearchMatches(graph: MemoryGraph, query: string): Omit<LexicalMatches, 'turns'> & { turns: Map<string, Map<string, number>> } {
  const reference = new MiniSearch<LexicalDoc>({ idField: 'id', fields: ['text'], storeFields: ['layer', 'nodeId', 'dialogId'], processTerm: normaliseTerm });
  reference.addAll(lexicalDocuments(graph));
  const best = new Map<string, { layer: Layer; id: string; score: number }>();
  const turns = new Map<string, Map<string, number>>();
  for (const result of reference.search(query)) {
    const [layer, id] = [result['layer'] as Layer, String(result['nodeId'])];
    const known = best.get(`${layer}:${id}`);
    if (!known || result.score > known.score) best.set(`${layer}:${id}`, { layer, id, score: result.score });
    if (layer !== 'episode') continue;
    if (!turns.has(id)) turns.set(id, new Map());
    turns.get(id)?.set(String(result['dialogId']), result.score);
  }
  const ranked = [...best.values()].sort((a, b) => b.score - a.score || a.id.localeCompare(b.id));
  const layers = Object.fromEntries(LAYERS.map((layer) => [layer, ranked.filter((h) => h.layer === layer).map(({ id, score }) => ({ id, score }))]));
  return { layers: layers as LexicalMatches['layers'], turns };
}

describe('zero-LLM precision, units and packing', () => {
  it('local precision lifts an Episode holding a fact close to the question', () => {
    const graph = new GraphBuilder()
      .episode('near', 1, atCos(0.6, 1), [['D1:1', 'A', 'unrelated chatter']])
      .episode('fact', 2, atCos(0.55, 2), [['D2:1', 'A', 'the answer']])
      .facet('fc', 'fact', 'theme', unrelated())
      .point('fp', 'fc', 'the answer', atCos(0.95, 3), { dialogIds: ['D2:1'] })
      .build();
    const anchors = anchorsOf({ episode: [{ id: 'near', score: 0.6 }, { id: 'fact', score: 0.55 }] });
    const bundle = bundleSearch(graph, anchors, Q, 'GENERAL', config);
    expect(bundle.map((e) => e.episodeId)).toEqual(['near', 'fact']);
    const evidence = { queryVector: Q, lexicalTurns: NO_TURN_SCORES, queryTerms: new Set<string>(), speakerTerms: new Map<string, number>(), pronounSpeakers: new Set<string>(), dates: [], lexicalWeight: 1, turnAnchors: new Map(), anchorWeight: 1, byMeaning: false, factCosines: new Map() };
    expect(localPrecision(bundle, graph, evidence, config).ranked.map((e) => e.episodeId)).toEqual(['fact', 'near']);
    const pathOnly = resolveConfig({ retrieval: { localPrecision: { fact: 0, lexical: 0 } } });
    expect(localPrecision(bundle, graph, evidence, pathOnly).ranked.map((e) => e.episodeId)).toEqual(['near', 'fact']);
  });

  it("an Episode's fact cosines are those of its FacetPoints that have a vector, in their order", () => {
    const graph = new GraphBuilder()
      .episode('ep', 1, atCos(0.5, 1), [['D1:1', 'A', 'three facts']])
      .facet('fc', 'ep', 'theme', unrelated())
      .point('fp1', 'fc', 'first', atCos(0.9, 2))
      .point('fp2', 'fc', 'second', atCos(0.7, 3))
      .point('fp3', 'fc', 'third', atCos(0.3, 4))
      .build();
    const evidenceOf = () => ({ queryVector: Q, lexicalTurns: NO_TURN_SCORES, queryTerms: new Set<string>(), speakerTerms: new Map<string, number>(), pronounSpeakers: new Set<string>(), dates: [], lexicalWeight: 1, turnAnchors: new Map(), anchorWeight: 1, byMeaning: false, factCosines: new Map() });
    const all = factCosines(graph, 'ep', evidenceOf());
    expect(all.points.map((p) => p.id)).toEqual(['fp1', 'fp2', 'fp3']);
    expect([...all.cosines]).toEqual(['fp1', 'fp2', 'fp3'].map((id) => dot(graph.vectors.get(id) as Float32Array, Q)));
    graph.vectors.delete('fp2');
    const someless = factCosines(graph, 'ep', evidenceOf());
    expect(someless.points.map((p) => p.id)).toEqual(['fp1', 'fp3']);
    expect([...someless.cosines]).toEqual([all.cosines[0], all.cosines[2]]);
    graph.vectors.delete('fp1');
    graph.vectors.delete('fp3');
    expect(factCosines(graph, 'ep', evidenceOf())).toEqual({ points: [], cosines: new Float64Array(0) });
  });

  /** Ten Episodes of twelve turns; the first turn of each holds its fact. */
  function longGraph(): MemoryGraph {
    const b = new GraphBuilder();
    for (let i = 0; i < 10; i++) {
      const turns: Array<[string, string, string]> = Array.from({ length: 12 }, (_, t) => [
        `D${i + 1}:${t + 1}`,
        t % 2 ? 'Caroline' : 'Melanie',
        t === 0 ? `On day ${i} Melanie painted landscape number ${i} at the lake.` : `Small talk line ${t} about the weather and the kids, nothing more to say.`,
      ]);
      b.episode(`ep${i}`, i + 1, atCos(0.5 - i * 0.02, 100 + i), turns)
        .facet(`fc${i}`, `ep${i}`, 'painting', unrelated())
        .point(`fp${i}`, `fc${i}`, `Melanie painted landscape ${i}`, atCos(0.8 - i * 0.02, 200 + i), { dialogIds: [`D${i + 1}:1`] });
    }
    return b.build();
  }

  it('never exceeds the token budget, and finer units fit more evidence into a tight one', async () => {
    const graph = longGraph();
    const deps = depsFor(graph, { lexical: LexicalIndex.fromGraph(graph) });
    const fine = { flags: { fineUnits: true } };
    const coarse = { flags: { fineUnits: false } };
    for (const budget of [30, 80, 200, 500, 2000]) {
      for (const overrides of [coarse, fine]) {
        const r = await retrieve('Which landscapes did Melanie paint?', deps, { budget, mode: 'zero-llm', config: overrides });
        expect(r.tokens).toBeLessThanOrEqual(budget);
        expect(countTokens(r.context)).toBe(r.tokens);
        expect(r.llmCalls).toBe(0);
      }
    }
    const facts = (ids: string[]) => ids.filter((d) => d.endsWith(':1')).length;
    const whole = await retrieve('Which landscapes did Melanie paint?', deps, { budget: 400, mode: 'zero-llm', config: coarse });
    const finer = await retrieve('Which landscapes did Melanie paint?', deps, { budget: 400, mode: 'zero-llm', config: fine });
    expect(facts(finer.dialogIds)).toBeGreaterThan(facts(whole.dialogIds));
    // The best turn unit is the turn behind its Episode's winning FacetPoint.
    const [best] = finer.units;
    expect(best?.kind).toBe('turn');
    expect(best?.trace.template).toBe('FP→Fc→Ep');
    expect(best?.dialogIds).toEqual([`D${Number(best?.episodeId.slice(2)) + 1}:1`]);
  });

  it('ranks turns by their speaker being named, by adjacent evidence, and draws on unitEpisodes Episodes', async () => {
    const graph = new GraphBuilder()
      .episode('ep1', 1, atCos(0.6, 1), [
        ['D1:1', 'Caroline', 'I painted the lake at dawn.'],
        ['D1:2', 'Melanie', 'Lovely.'],
      ])
      .facet('fc1', 'ep1', 'painting', unrelated())
      .point('fp1', 'fc1', 'Caroline painted the lake', atCos(0.7, 2), { dialogIds: ['D1:1'] })
      .episode('ep2', 2, atCos(0.6, 3), [
        ['D2:1', 'Melanie', 'I painted the lake at dusk.'],
        ['D2:2', 'Caroline', 'Wow.'],
      ])
      .facet('fc2', 'ep2', 'painting', unrelated())
      .point('fp2', 'fc2', 'Melanie painted the lake', atCos(0.7, 4), { dialogIds: ['D2:1'] })
      .episode('ep3', 3, atCos(0.1, 5), [['D3:1', 'Melanie', 'Nothing much.']])
      .build();
    const deps = depsFor(graph);
    const order = async (query: string, w: Partial<PrismConfig['retrieval']['turnScore']>) =>
      (await retrieve(query, deps, { budget: 2000, mode: 'zero-llm', config: { flags: { meaningRoute: false }, retrieval: { turnScore: onlyTerms(w) } } })).units.map((u) => u.dialogIds[0]);
    // Equal facts: the speaker the query names comes first, whichever speaker that is.
    expect((await order('What did Melanie paint?', { fact: 1, speaker: 0.2 })).slice(0, 2)).toEqual(['D2:1', 'D1:1']);
    expect((await order('What did Caroline paint?', { fact: 1, speaker: 0.2 })).slice(0, 2)).toEqual(['D1:1', 'D2:1']);
    // A reply with no fact of its own rises above unrelated turns through its neighbour's fact.
    const replies = await order('What did they paint?', { fact: 1, neighbourFact: 0.5 });
    expect(replies.indexOf('D1:2')).toBeLessThan(replies.indexOf('D3:1'));
    // Turns come from unitEpisodes Episodes (at least K), not only the K of the bundle.
    const from = async (unitEpisodes: number) =>
      new Set((await retrieve('q', deps, { budget: 2000, k: 1, mode: 'zero-llm', config: { flags: { meaningRoute: false }, retrieval: { unitEpisodes, unitBudgets: 0, turnAnchors: 0 } } })).units.map((u) => u.episodeId));
    expect((await from(1)).size).toBe(1);
    expect((await from(3)).size).toBe(3);
  });

  it('draws fine units from more Episodes while those joined hold less text than unitBudgets budgets', async () => {
    // Six short sessions, the earlier ones closer to the query: N1 takes them in order.
    const builder = new GraphBuilder();
    for (let i = 1; i <= 6; i++) {
      builder.episode(`ep${i}`, i, atCos(0.9 - i / 20, i), [
        [`D${i}:1`, 'Melanie', `We went to the lake on day ${i} and painted the water.`],
        [`D${i}:2`, 'Caroline', `That sounds like a calm day ${i}, I love the lake.`],
      ]);
    }
    const graph = builder.build();
    const deps = depsFor(graph);
    const episodesFor = async (unitBudgets: number, budget: number) =>
      // N3 ranks every Episode searched for fine units.
      new Set((await retrieve('q', deps, { budget, k: 1, mode: 'zero-llm', config: { retrieval: { unitEpisodes: 2, unitBudgets, turnAnchors: 0 } } })).ranked.map((e) => e.episodeId));
    const chunkTokens = (i: number) => countTokens(graph.chunks.get(`chunk-ep${i}`)!.text);
    // The fewest Episodes, in N1 order and at least unitEpisodes, that hold `tokens`.
    const holding = (tokens: number) => {
      let held = 0;
      for (let n = 1; n <= 6; n++) if ((held += chunkTokens(n)) >= tokens && n >= 2) return n;
      return 6;
    };
    // Off: unitEpisodes alone, whatever the budget.
    expect((await episodesFor(0, 2000)).size).toBe(2);
    // A budget the first two sessions' text covers many times over needs no more of them…
    expect((await episodesFor(1, 20)).size).toBe(2);
    // …a larger one draws on as many as hold unitBudgets × budget tokens, in N1 order…
    const budget = 40;
    const wanted = holding(3 * budget);
    expect(wanted).toBeGreaterThan(2);
    expect(wanted).toBeLessThan(6);
    expect([...(await episodesFor(3, budget))].sort()).toEqual(Array.from({ length: wanted }, (_, i) => `ep${i + 1}`));
    // …and all of them when even all hold less.
    expect((await episodesFor(5, 2000)).size).toBe(6);
  });

  it('scores a turn by the exchange it makes with an adjacent turn: (q·a + q·b) / |a + b|', async () => {
    // One Facet per turn, at the given cosine to the query (as local extraction builds them).
    type Turn = [dialogId: string, speaker: string, text: string, cosine: number];
    let axis = 1;
    const withTurns = (builder: GraphBuilder, episodeId: string, order: number, turns: Turn[]) => {
      builder.episode(episodeId, order, atCos(0.5, axis++), turns.map(([id, speaker, text]) => [id, speaker, text]));
      for (const [id, speaker, text, cosine] of turns) {
        builder.facet(`fc-${id}`, episodeId, `${speaker}: ${text}`, atCos(cosine, axis++));
        builder.point(`fp-${id}`, `fc-${id}`, `${speaker}: ${text}`, unrelated(), { dialogIds: [id] });
      }
      return builder;
    };
    const graph = withTurns(
      withTurns(new GraphBuilder(), 'ep1', 1, [
        ['D1:1', 'Melanie', 'What did you paint at the lake?', 0.6],
        ['D1:2', 'Caroline', 'The sunrise, all orange.', 0.3],
      ]),
      'ep2',
      2,
      [
        ['D2:1', 'Melanie', 'Busy week.', 0.1],
        ['D2:2', 'Caroline', 'I walked by the lake.', 0.35],
      ],
    ).build();
    const deps = depsFor(graph);
    const units = async (turnScore: Partial<PrismConfig['retrieval']['turnScore']>) =>
      (
        await retrieve('q', deps, {
          budget: 2000,
          mode: 'zero-llm',
          config: {
            retrieval: {
              turnAnchors: 0,
              turnScore: onlyTerms(turnScore),
            },
          },
        })
      ).units;
    const rank = (list: Awaited<ReturnType<typeof units>>) => list.map((u) => u.dialogIds[0]);
    // Alone, the reply in ep1 is further from the query than the one in ep2; with its question it is closer.
    const alone = rank(await units({ facet: 1 }));
    expect(alone.indexOf('D2:2')).toBeLessThan(alone.indexOf('D1:2'));
    const paired = await units({ exchange: 1 });
    expect(rank(paired).indexOf('D1:2')).toBeLessThan(rank(paired).indexOf('D2:2'));
    const score = (id: string) => paired.find((u) => u.dialogIds[0] === id)?.score;
    expect(score('D1:2')).toBeCloseTo((0.6 + 0.3) / Math.sqrt(2 + 2 * 0.6 * 0.3), 5);
    expect(score('D2:2')).toBeCloseTo((0.1 + 0.35) / Math.sqrt(2 + 2 * 0.1 * 0.35), 5);
  });

  it('ranks a turn that ends by asking below an equally matching statement, by the question weight', async () => {
    const graph = new GraphBuilder()
      .episode('ep1', 1, atCos(0.6, 1), [
        ['D1:1', 'Melanie', 'Which books do you read?'],
        ['D1:2', 'Caroline', 'I read "Becoming Nicole" last month.'],
      ])
      .facet('fc1', 'ep1', 'books', unrelated())
      .point('fp1', 'fc1', 'Which books do you read', atCos(0.7, 2), { dialogIds: ['D1:1'] })
      .point('fp2', 'fc1', 'Caroline read Becoming Nicole', atCos(0.7, 3), { dialogIds: ['D1:2'] })
      .build();
    const deps = depsFor(graph);
    const order = async (question: number) =>
      (
        await retrieve('What books has Caroline read?', deps, {
          budget: 2000,
          mode: 'zero-llm',
          config: { retrieval: { turnScore: onlyTerms({ fact: 1, question }) } },
        })
      ).units.map((u) => u.dialogIds[0]);
    // Equal facts, equal scores: conversation order puts the question first; the weight turns it round.
    expect(await order(0)).toEqual(['D1:1', 'D1:2']);
    expect(await order(0.2)).toEqual(['D1:2', 'D1:1']);
    expect([endsAsking('Why?'), endsAsking('You did? "Really?" '), endsAsking('(was it yours?)'), endsAsking('Sure. Why not.'), endsAsking('?!'), endsAsking('')]).toEqual([
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
  });

  it('scores turns from the graph as it is at each query, though it keeps per-Episode turn data between queries', async () => {
    const graph = new GraphBuilder()
      .episode('ep1', 1, atCos(0.6, 1), [
        ['D1:1', 'Melanie', 'We went camping.'],
        ['D1:2', 'Caroline', 'I started pottery.'],
      ])
      .facet('fc1', 'ep1', 'camping', atCos(0.5, 2))
      .point('fp1', 'fc1', 'Melanie went camping', atCos(0.7, 3), { dialogIds: ['D1:1'] })
      .facet('fc2', 'ep1', 'pottery', atCos(0.2, 4))
      .point('fp2', 'fc2', 'Caroline started pottery', atCos(0.3, 5), { dialogIds: ['D1:2'] })
      .build();
    const deps = depsFor(graph);
    const scores = async (w: Partial<PrismConfig['retrieval']['turnScore']>) =>
      Object.fromEntries(
        (
          await retrieve('What did they start?', deps, {
            budget: 2000,
            mode: 'zero-llm',
            config: { flags: { meaningRoute: false }, retrieval: { turnScore: onlyTerms(w) } },
          })
        ).units.map((u) => [u.dialogIds[0], u.score]),
      );
    expect((await scores({ fact: 1 }))['D1:2']).toBeCloseTo(0.3);
    // A FacetPoint added under the turn counts at the next query.
    graph.putNode({ layer: 'facetPoint', id: 'fp3', key: 900, chunkId: 'chunk-ep1', episodeId: 'ep1', facetId: 'fc2', content: 'Caroline loves clay', entityId: null, timeText: null, time: null, dialogIds: ['D1:2'] });
    graph.vectors.set('fp3', atCos(0.9, 6));
    graph.putEdge({ id: 'belongs_to:fp3->fc2', key: 901, type: 'belongs_to', from: 'fp3', to: 'fc2', chunkId: 'chunk-ep1', description: null, confidence: null });
    expect((await scores({ fact: 1 }))['D1:2']).toBeCloseTo(0.9);
    // So does a Facet vector replaced in place, for the facet term and for the exchange of adjacent turns.
    const exchange = (a: number, b: number, ab: number) => (a + b) / Math.sqrt(2 + 2 * ab);
    expect((await scores({ facet: 1 }))['D1:2']).toBeCloseTo(0.2);
    expect((await scores({ exchange: 1 }))['D1:1']).toBeCloseTo(exchange(0.5, 0.2, 0.5 * 0.2));
    graph.vectors.set('fc2', atCos(0.8, 4));
    expect((await scores({ facet: 1 }))['D1:2']).toBeCloseTo(0.8);
    expect((await scores({ exchange: 1 }))['D1:1']).toBeCloseTo(exchange(0.5, 0.8, 0.5 * 0.8));
  });

  it('counts lines as the joined text, whatever joins them', () => {
    // Joints where o200k's pre-tokenizer could run across a line break: punctuation before the
    // break, whitespace or "/" after it, blank lines, carriage returns, non-Latin text.
    const parts = ['(D1:2) Mel: Hi!', 'ok.', '  indented', '/path', '[header · 1 May]', 'é', '"quote"', 'x\r', '', '12345', '…', 'end ', '\t'];
    const breaks = ['\n', '\n\n', '\r\n', ''];
    let seed = 3;
    const random = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let round = 0; round < 3000; round++) {
      const pieces = Array.from({ length: 1 + random(6) }, () => `${parts[random(parts.length)] ?? ''}${breaks[random(breaks.length)] ?? ''}`);
      expect(countLines(pieces)).toBe(o200kCount(pieces.join('')));
    }
  });

  it('excerpts a long turn: best sentences first, written in their order, gaps marked, within the cap', () => {
    const turn = { dialogId: 'D1:1', speaker: 'Ana', text: 'Alpha one. Beta two. Gamma three. Delta four. Epsilon five.' };
    const scores: Record<string, number> = { 'Gamma three.': 1, 'Alpha one.': 0.9, 'Beta two.': 0.8, 'Delta four.': 0.1 };
    expect(excerptTurn(turn, (s) => scores[s] ?? 0, 100).text).toBe('(D1:1) Ana: Alpha one. Beta two. Gamma three. …');
    // Sentences under half the best score stay out even with room to spare; a tight cap keeps the best.
    expect(excerptTurn(turn, (s) => (s === 'Delta four.' ? 1 : s === 'Alpha one.' ? 0.6 : 0), 100).text).toBe('(D1:1) Ana: Alpha one. … Delta four. …');
    expect(excerptTurn(turn, (s) => scores[s] ?? 0, 12).text).toBe('(D1:1) Ana: … Gamma three. …');
    // One sentence longer than the cap is cut to it.
    const cut = excerptTurn({ ...turn, text: 'word '.repeat(2000) }, () => 0, 50);
    expect(cut.tokens).toBeLessThanOrEqual(50);
    expect(cut.text).toMatch(/^\(D1:1\) Ana: word word .* …$/);
  });

  it('gives each excerpt with its tokens, as counting its whole line gives them', () => {
    // Sentences of many shapes (numbers, quotes, non-Latin text, markdown, runs of punctuation),
    // picked at caps from one sentence to all: the tokens packing uses are the excerpt's own.
    const sentences = ['Alpha one.', 'We paid $1,234.50 for it!', '"Quoted," she said.', 'Émile était là.', '**Bold** and `code`.', 'Why?!', '東京に行きました。', 'Ok... fine.', 'Line one; line two.'];
    let seed = 7;
    const random = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let round = 0; round < 200; round++) {
      const text = Array.from({ length: 2 + random(8) }, () => sentences[random(sentences.length)] ?? '').join(' ');
      const turn = { dialogId: 'D1:1', speaker: 'Ana', text };
      const score = (s: string) => (s.length * 7919 + round) % 13;
      for (const cap of [8, 20, 60, 400]) {
        const excerpt = excerptTurn(turn, score, cap);
        expect(excerpt.tokens).toBe(o200kCount(excerpt.text));
        const within = excerptWithin(turn, score, cap);
        if (within) expect(within.tokens).toBe(o200kCount(within.text));
      }
    }
  });

  it('bounds an excerpt from below before making it (leastTokens): never over its tokens, 0 where the best sentence alone is cut', () => {
    const sentences = ['Alpha one.', 'We paid $1,234.50 for it!', '"Quoted," she said.', 'Émile était là.', '**Bold** and `code`.', 'Why?!', 'A much longer sentence that goes on about many different things at once.'];
    let seed = 11;
    const random = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    let bounded = 0;
    for (let round = 0; round < 200; round++) {
      const text = Array.from({ length: 1 + random(8) }, () => sentences[random(sentences.length)] ?? '').join(' ');
      const turn = { dialogId: 'D1:1', speaker: 'Ana', text };
      const score = (s: string) => ((s.length + s.charCodeAt(0)) * 7919 + round * 31) % 101;
      for (const cap of [8, 14, 30, 400]) {
        // One weighing, as a unit keeps: the bound first, then the excerpt, then a smaller one.
        const weighing = new SentenceWeighing(turn, () => score);
        const least = weighing.leastTokens(cap);
        const excerpt = weighing.excerpt(cap);
        expect(least).toBeLessThanOrEqual(excerpt.tokens);
        if (least > 0) bounded++;
        else expect(excerptWithin(turn, score, cap)).toBeNull();
        expect(weighing.within(cap)).toEqual(excerptWithin(turn, score, cap));
      }
    }
    // The bound is a real one most of the time, not 0.
    expect(bounded).toBeGreaterThan(400);
    // Exactly the head and the best sentence: the others score under half the best, so the
    // excerpt is those two and the gaps' marks.
    const turn = { dialogId: 'D1:1', speaker: 'Ana', text: 'Alpha one is here. Gamma three. Delta four is long enough.' };
    const weighing = new SentenceWeighing(turn, () => (s) => (s === 'Gamma three.' ? 1 : 0.1));
    expect(weighing.leastTokens(400)).toBe(o200kCount('(D1:1) Ana:') + o200kCount(' Gamma three.'));
    expect(weighing.excerpt(400).text).toBe('(D1:1) Ana: … Gamma three. …');
  });

  it('bounds an excerpt by its head alone where that is over the room left (leastTokens with a room), its sentences not weighed', () => {
    const sentences = ['Alpha one.', 'We paid $1,234.50 for it!', '"Quoted," she said.', 'Émile était là.', 'Why?!', 'A much longer sentence that goes on about many different things at once.'];
    let seed = 5;
    const random = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    let headOnly = 0;
    for (let round = 0; round < 100; round++) {
      const text = Array.from({ length: 1 + random(6) }, () => sentences[random(sentences.length)] ?? '').join(' ');
      const turn = { dialogId: `D${round}:1`, speaker: 'Ana', text };
      const head = o200kCount(`(D${round}:1) Ana:`);
      for (const cap of [8, 30, 400]) {
        for (const room of [0, head - 1, head, head + 1, head + 40]) {
          let scored = 0;
          const weighing = new SentenceWeighing(turn, () => (scored++, (s) => s.length % 7));
          const least = weighing.leastTokens(cap, room);
          const exact = new SentenceWeighing(turn, () => (s) => s.length % 7).leastTokens(cap);
          // The bound with a room decides as the exact one does: both within the room or both over it.
          expect(least <= room).toBe(exact <= room);
          if (least !== exact) {
            expect(least).toBe(head + 1);
            expect(scored).toBe(0);
            headOnly++;
            // And nothing of the turn fits that room.
            expect(weighing.within(room)).toBeNull();
            expect(weighing.excerpt(cap).tokens).toBeGreaterThan(room);
          }
        }
      }
    }
    expect(headOnly).toBeGreaterThan(100);
    // A sentence with more bytes than the cap leaves beside the head may be the cut line's: weighed as before.
    const turn = { dialogId: 'D1:1', speaker: 'Ana', text: `Short. ${'Long words here '.repeat(20)}end.` };
    let scored = 0;
    expect(new SentenceWeighing(turn, () => (scored++, (s) => s.length)).leastTokens(30, 0)).toBe(0);
    expect(scored).toBe(1);
  });

  it('asks no unit its least tokens where its new header alone leaves no room', () => {
    const unit = (id: string, header: string, text: string, score: number): ContextUnit => ({ id, header, text: `(${id}) Ana: ${text}`, dialogIds: [id], score, time: null });
    const first = unit('D1:1', '[s1 · 1 May, 2023]', 'I painted a lake at sunrise last week, and it took all morning.', 3);
    const other = unit('D2:1', '[s2 · 9 June, 2023, a long header of its own]', 'Nice!', 2);
    const same = unit('D1:2', '[s1 · 1 May, 2023]', 'Yes.', 1);
    const budget = countTokens(first.header) + 1 + countTokens(first.text) + 1 + countTokens(same.text) + 1 + 2;
    const asked: string[] = [];
    const packed = packContext([first, other, same], budget, { of: (u) => countTokens(u.text), least: (u) => (asked.push(u.id), countTokens(u.text)) });
    expect(packed.units.map((u) => u.id)).toEqual(['D1:1', 'D1:2']);
    expect(packContext([first, other, same], budget).units.map((u) => u.id)).toEqual(['D1:1', 'D1:2']);
    expect(asked).toEqual(['D1:1', 'D1:2']);
  });

  it('excerpts within a cap only with whole sentences (excerptWithin): none when the best one does not fit', () => {
    const turn = { dialogId: 'D1:1', speaker: 'Ana', text: 'Alpha one. Beta two. Gamma three. Delta four. Epsilon five.' };
    const score = (s: string) => ({ 'Gamma three.': 1, 'Alpha one.': 0.9, 'Beta two.': 0.8 })[s] ?? 0;
    for (const cap of [100, 12]) expect(excerptWithin(turn, score, cap)).toEqual(excerptTurn(turn, score, cap));
    expect(excerptWithin(turn, score, 12)?.text).toBe('(D1:1) Ana: … Gamma three. …');
    // Where excerptTurn cuts the best sentence to the cap, excerptWithin offers nothing.
    expect(countTokens('(D1:1) Ana: … Gamma three. …')).toBeGreaterThan(6);
    expect(excerptWithin(turn, score, 6)).toBeNull();
    expect(excerptTurn(turn, score, 6)).not.toBeNull();
  });

  it('packs what fit makes of a unit that does not fit whole, in its place, within the budget', () => {
    const header = '[s1 · 1 May, 2023]';
    const unit = (id: string, text: string, score: number): ContextUnit => ({ id, header, text: `(${id}) Ana: ${text}`, dialogIds: [id], score, time: null });
    const first = unit('D1:1', 'I painted a lake at sunrise last week.', 3);
    const long = unit('D1:2', 'word '.repeat(300).trim(), 2);
    const small = unit('D1:3', 'Nice!', 1);
    const ranked = [first, long, small];
    const budget = countTokens(header) + 1 + countTokens(first.text) + 1 + 40;
    // Without fit the long unit is skipped and the lower-ranked one fills the rest.
    expect(packContext(ranked, budget).units.map((u) => u.id)).toEqual(['D1:1', 'D1:3']);
    const rooms: number[] = [];
    const shrunk = { ...long, text: '(D1:2) Ana: word word …' };
    const fitted = packContext(ranked, budget, undefined, (u, room) => (rooms.push(room), u === long ? shrunk : null));
    // fit is asked with the tokens left after the unit's line break; what it made takes the unit's place.
    expect(rooms[0]).toBe(budget - countTokens(header) - 1 - countTokens(first.text) - 1 - 1);
    expect(fitted.units).toEqual([first, shrunk, small]);
    expect(fitted.tokens).toBeLessThanOrEqual(budget);
    expect(fitted.dialogIds).toEqual(['D1:1', 'D1:2', 'D1:3']);
    // A fit that makes nothing, or something still too long, leaves the unit out.
    expect(packContext(ranked, budget, undefined, () => null).units.map((u) => u.id)).toEqual(['D1:1', 'D1:3']);
    expect(packContext(ranked, budget, undefined, (u) => u).units.map((u) => u.id)).toEqual(['D1:1', 'D1:3']);
  });

  it('packs the same with a lower bound on tokens, counting only units whose bound fits', () => {
    const header = '[s1 · 1 May 2023]';
    const unit = (id: string, text: string, score: number): ContextUnit => ({ id, header, text, dialogIds: [id], score, time: '2023-05-01' });
    const ranked = Array.from({ length: 40 }, (_, i) => unit(`D1:${i + 1}`, `(D1:${i + 1}) Ana: ${'word '.repeat(1 + ((i * 37) % 60)).trim()}.`, 40 - i));
    for (const budget of [30, 120, 400, 2000]) {
      const plain = packContext(ranked, budget);
      const counted: string[] = [];
      const of = (u: ContextUnit) => (counted.push(u.id), countTokens(u.text));
      // Half the bound: what a unit whose text is not made yet can promise.
      const least = (u: ContextUnit) => Math.floor(countTokens(u.text) / 2);
      const bounded = packContext(ranked, budget, { of, least });
      expect(bounded).toEqual(plain);
      const skipped = ranked.filter((u) => !counted.includes(u.id));
      // Units are left uncounted only where even their bound could not fit; some are, at a tight budget.
      if (budget <= 400) expect(skipped.length).toBeGreaterThan(0);
      for (const u of skipped) expect(plain.units).not.toContain(u);
    }
  });

  it('fits the remainder of a budget with the best sentences of a turn, from retrieval.fitRemainder tokens left', async () => {
    const b = new GraphBuilder();
    for (let i = 0; i < 6; i++) {
      const turns: Array<[string, string, string]> = [
        [`D${i + 1}:1`, 'Melanie', `On day ${i} Melanie painted landscape number ${i} at the lake. She worked in oils on a canvas as wide as the door. It took her three long afternoons and most of the light she had.`],
        [`D${i + 1}:2`, 'Caroline', 'Lovely!'],
      ];
      b.episode(`ep${i}`, i + 1, atCos(0.5 - i * 0.02, 100 + i), turns)
        .facet(`fc${i}`, `ep${i}`, 'painting', unrelated())
        .point(`fp${i}`, `fc${i}`, `Melanie painted landscape ${i}`, atCos(0.8 - i * 0.02, 200 + i), { dialogIds: [`D${i + 1}:1`] });
    }
    const deps = depsFor(b.build());
    const search = (fitRemainder: number, budget: number) => retrieve('Which landscapes did Melanie paint?', deps, { budget, mode: 'zero-llm', config: { retrieval: { fitRemainder } } });
    let fitted = 0;
    // From 120 tokens a turn (under 60) is never cut to half the budget (see maxTurnTokens).
    for (let budget = 120; budget <= 320; budget += 10) {
      const [off, on] = [await search(0, budget), await search(6, budget)];
      expect(on.tokens).toBeLessThanOrEqual(budget);
      expect(countTokens(on.context)).toBe(on.tokens);
      // Every turn here fits a budget whole, so an excerpt is a fitted remainder: the turn's best
      // sentence (the one about the painting), written whole, "…" where the rest was.
      expect(off.units.filter((u) => u.kind === 'excerpt')).toEqual([]);
      for (const unit of on.units.filter((u) => u.kind === 'excerpt')) {
        expect(unit.text).toMatch(/^\(D\d:1\) Melanie: On day \d Melanie painted landscape number \d at the lake\. …$/);
        expect(off.dialogIds).not.toContain(unit.dialogIds[0]);
        fitted++;
      }
      // A better-ranked turn's part comes before the lower-ranked short replies that filled the rest.
      expect(on.dialogIds.filter((id) => id.endsWith(':1')).length).toBeGreaterThanOrEqual(off.dialogIds.filter((id) => id.endsWith(':1')).length);
      // From more tokens left than the budget holds, nothing is fitted.
      expect((await search(budget + 1, budget)).units.map((u) => u.id)).toEqual(off.units.map((u) => u.id));
    }
    expect(fitted).toBeGreaterThan(0);
    // A query for the latest value, recency weighed, is fitted the same way: its units are rescored, not copied.
    let fittedLatest = 0;
    for (let budget = 120; budget <= 320; budget += 10) {
      const latest = await retrieve('Which landscapes did Melanie paint most recently?', deps, { budget, mode: 'zero-llm', config: { retrieval: { fitRemainder: 6, turnScore: { recency: 0.1 } } } });
      fittedLatest += latest.units.filter((u) => u.kind === 'excerpt').length;
    }
    expect(fittedLatest).toBeGreaterThan(0);
  });

  it('keeps M Episodes without a budget, the whole bundle under −N3, and validates options', async () => {
    const graph = longGraph();
    const deps = depsFor(graph);
    const paper = await retrieve('Which landscapes did Melanie paint?', deps, { mode: 'zero-llm' });
    expect(paper.units.map((u) => u.episodeId)).toHaveLength(config.retrieval.keep);
    expect(paper.bundle).toHaveLength(config.retrieval.bundleSize);
    const noN3 = await retrieve('q', deps, { mode: 'zero-llm', k: 8, config: { flags: { compression: false } } });
    expect(noN3.units.map((u) => u.episodeId)).toEqual(noN3.bundle.map((e) => e.episodeId));
    expect(noN3.units).toHaveLength(8);
    await expect(retrieve('q', deps, { budget: 0 })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(retrieve('  ', deps)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(retrieve('q', deps, { mode: 'llm' })).rejects.toMatchObject({ code: 'LLM_NOT_CONFIGURED' });
  });

  it('Melanie end to end: the routed intent picks the bridge', async () => {
    const graph = melanieGraph();
    const deps = depsFor(graph);
    const run = (query: string) => retrieve(query, deps, { mode: 'zero-llm', config: { flags: { intentRouting: true } } });
    const temporal = await run('When did Melanie paint the sunrise?');
    expect(temporal).toMatchObject({ intent: 'TEMPORAL', tier: 'keyword' });
    const causal = await run('Why did Melanie paint the sunrise?');
    expect(causal).toMatchObject({ intent: 'CAUSAL', tier: 'keyword' });
    const rank = (r: typeof temporal, id: string) => r.ranked.findIndex((e) => e.episodeId === id);
    expect(rank(temporal, 'ep2')).toBeLessThan(rank(temporal, 'ep3'));
    expect(rank(causal, 'ep3')).toBeLessThan(rank(causal, 'ep2'));
    expect(temporal.ranked.find((e) => e.episodeId === 'ep2')?.trace.template).toBe('temporal bridge');
    expect(causal.ranked.find((e) => e.episodeId === 'ep3')?.trace.template).toBe('causal bridge');
  });
});

describe('speakers the query names', () => {
  /** Two conversations in one memory: Caroline and Melanie (Episodes 1 and 3), Jon and Gina (Episode 2). */
  const twoConversations = () =>
    new GraphBuilder()
      .episode('ep1', 1, atCos(0.5, 1), [
        ['D1:1', 'Caroline', 'I painted the lake at dawn.'],
        ['D1:2', 'Melanie', 'Lovely.'],
      ])
      .facet('fc1', 'ep1', 'painting', atCos(0.5, 2))
      .point('fp1', 'fc1', 'Caroline painted the lake', atCos(0.6, 3), { dialogIds: ['D1:1'] })
      .episode('ep2', 2, atCos(0.9, 4), [
        ['D2:1', 'Jon', 'I painted my dance studio blue.'],
        ['D2:2', 'Gina', 'Bold choice!'],
      ])
      .facet('fc2', 'ep2', 'painting', atCos(0.9, 5))
      .point('fp2', 'fc2', 'Jon painted his studio', atCos(0.9, 6), { dialogIds: ['D2:1'] })
      .episode('ep3', 3, atCos(0.2, 7), [['D3:1', 'Melanie', 'Caroline, how was your week?']])
      .build();

  it('replaces the words of named speakers’ names in the query, possessives and case included', () => {
    expect(maskSpeakerNames("What did Caroline's mother give caroline?", new Set(['carolin']))).toBe("What did someone's mother give someone?");
    // Terms are compared normalised, as the query's are; other words stay as written.
    expect(maskSpeakerNames('Where do Jon and Gina dance?', new Set([normaliseTerm('Jon') ?? '', normaliseTerm('Gina') ?? '']))).toBe('Where do someone and someone dance?');
    expect(maskSpeakerNames('Where is Jonathan?', new Set([normaliseTerm('Jon') ?? '']))).toBe('Where is Jonathan?');
    expect(maskSpeakerNames('anything', new Set())).toBe('anything');
    // Names alone are what the query asks about.
    expect(maskSpeakerNames("Caroline's?", new Set(['carolin']))).toBe("Caroline's?");
  });

  it('finds the named speakers and their Episodes, or nothing to narrow when they speak in all of them', () => {
    const graph = twoConversations();
    const jon = speakerFocus(graph, termsOf('What did Jon paint?'));
    expect([...jon.speakers]).toEqual(['Jon']);
    expect([...(jon.episodes ?? [])]).toEqual(['ep2']);
    expect([...(speakerFocus(graph, termsOf('What did Caroline paint?')).episodes ?? [])]).toEqual(['ep1', 'ep3']);
    // Melanie speaks in ep1 and ep3, Gina in ep2: together, every Episode.
    expect(speakerFocus(graph, termsOf('Did Melanie or Gina paint?')).episodes).toBeNull();
    const nobody = speakerFocus(graph, termsOf('Who painted?'));
    expect([nobody.speakers.size, nobody.episodes]).toEqual([0, null]);
    expect(jon.episodeCount).toBe(3);
  });

  it('reads a capitalised word one letter from a speaker’s name, that no turn holds, as that speaker', () => {
    const graph = twoConversations();
    // The memory's own words, as retrieval reads them (its lexical index), and any added below.
    const lexical = LexicalIndex.fromGraph(graph);
    const words = new Set<string>();
    const focus = (query: string) => speakerFocus(graph, termsOf(query), { query, heldTerm: (term) => lexical.holdsTerm(term) || words.has(term) });
    expect([lexical.holdsTerm(normaliseTerm('studio') ?? ''), lexical.holdsTerm(normaliseTerm('John') ?? '')]).toEqual([true, false]);
    // "John" for Jon (one letter put in), "Carolien" for Caroline (two swapped), "Melaine" for Melanie.
    expect([...focus('Which city did John visit?').speakers]).toEqual(['Jon']);
    expect([...focus('Which city did John visit?').nameTerms]).toEqual([normaliseTerm('John')]);
    expect([...focus('What did Carolien paint?').speakers]).toEqual(['Caroline']);
    expect([...focus('Did Melaine paint?').speakers]).toEqual(['Melanie']);
    // A word some turn holds is its own; so is a lower-case one; and without the option nothing is read.
    words.add(normaliseTerm('John') ?? '');
    expect(focus('Which city did John visit?').speakers.size).toBe(0);
    expect(focus('which city did jonh visit?').speakers.size).toBe(0);
    expect(speakerFocus(graph, termsOf('Did Melaine paint?')).speakers.size).toBe(0);
  });

  it('counts one letter put in, left out, changed or swapped, keeping the first and four letters', () => {
    expect([oneEditApart('john', 'jon'), oneEditApart('andew', 'andrew'), oneEditApart('gina', 'gena'), oneEditApart('carolin', 'caorlin')]).toEqual([true, true, true, true]);
    // Not the same word, not two edits, not a different first letter, not names of three letters.
    expect([oneEditApart('jon', 'jon'), oneEditApart('jean', 'gina'), oneEditApart('tina', 'gina'), oneEditApart('jon', 'jan'), oneEditApart('andrew', 'andy')]).toEqual([false, false, false, false, false]);
  });

  it('embeds the query with names masked and searches only the named speakers’ Episodes', async () => {
    const embedded: string[] = [];
    const deps = depsFor(twoConversations(), { embedQuery: async (text) => (embedded.push(text), Q) });
    const episodes = async (flags: Partial<PrismConfig['flags']>) =>
      new Set((await retrieve('What did Caroline paint?', deps, { budget: 2000, mode: 'zero-llm', config: { flags } })).units.map((u) => u.episodeId));
    // Jon's Episode is the closest to the query vector, but Caroline never speaks in it.
    expect(await episodes({ maskSpeakerNames: true, speakerScope: true })).toEqual(new Set(['ep1', 'ep3']));
    expect(embedded.at(-1)).toBe('What did someone paint?');
    expect((await episodes({ maskSpeakerNames: false, speakerScope: false })).has('ep2')).toBe(true);
    expect(embedded.at(-1)).toBe('What did Caroline paint?');
    // A query naming nobody searches everything.
    const all = await retrieve('What was painted?', deps, { budget: 2000, mode: 'zero-llm' });
    expect(new Set(all.units.map((u) => u.episodeId))).toEqual(new Set(['ep1', 'ep2', 'ep3']));
  });

  it('reads a misspelt name as its speaker where the lexical index shows no turn holds the word', async () => {
    const embedded: string[] = [];
    const graph = twoConversations();
    const search = async (overrides: Partial<RetrieveDeps>, flags: Partial<PrismConfig['flags']> = {}) => {
      const deps = depsFor(graph, { embedQuery: async (text) => (embedded.push(text), Q), ...overrides });
      return new Set((await retrieve('What did Carolien paint?', deps, { budget: 2000, mode: 'zero-llm', config: { flags } })).units.map((u) => u.episodeId));
    };
    const lexical = LexicalIndex.fromGraph(graph);
    // Caroline's sessions only: Jon's Episode is the closest to the query vector.
    const named = await search({ lexical });
    expect([named.has('ep1'), named.has('ep2')]).toEqual([true, false]);
    expect(embedded.at(-1)).toBe('What did someone paint?');
    // Off, or with no index to tell the memory's words by, the word is only a word.
    for (const [overrides, flags] of [[{ lexical }, { nameTypos: false }], [{}, {}]] as const) {
      expect((await search(overrides, flags)).has('ep2')).toBe(true);
      expect(embedded.at(-1)).toBe('What did Carolien paint?');
    }
  });
});

describe('dates the query names', () => {
  /** Sessions of 1, 2 and 3 May 2023; the first is closest to the query, the third farthest. */
  const threeDays = () =>
    new GraphBuilder()
      .episode('ep1', 1, atCos(0.9, 1), [
        ['D1:1', 'Ana', 'We talked about the garden.'],
        ['D1:2', 'Ana', 'Yesterday I fixed the fence.'],
      ])
      .facet('fc1', 'ep1', 'garden', atCos(0.8, 2))
      .point('fp1', 'fc1', 'Ana talked about the garden', atCos(0.8, 3), { dialogIds: ['D1:1'] })
      // "Yesterday" in a session of 1 May resolves to 30 April.
      .point('fp2', 'fc1', 'Ana fixed the fence yesterday', atCos(0.5, 4), { dialogIds: ['D1:2'], time: '2023-04-30' })
      .episode('ep2', 2, atCos(0.6, 5), [['D2:1', 'Ana', 'Work was busy.']])
      .facet('fc2', 'ep2', 'work', atCos(0.5, 6))
      .point('fp3', 'fc2', 'Ana was busy at work', atCos(0.5, 7), { dialogIds: ['D2:1'] })
      .episode('ep3', 3, atCos(0.1, 8), [['D3:1', 'Ana', 'We hiked the ridge.']])
      .facet('fc3', 'ep3', 'hiking', atCos(0.1, 9))
      .point('fp4', 'fc3', 'Ana hiked the ridge', atCos(0.1, 10), { dialogIds: ['D3:1'] })
      .build();

  it('reads dates written with their year, at the precision written, and nothing relative', async () => {
    expect(absoluteDates('What did Gina find on 1 February, 2023?')).toEqual(['2023-02-01']);
    expect(absoluteDates('What did Maria start in December 2023?')).toEqual(['2023-12']);
    expect(absoluteDates('Where was she on 05/03/2023?')).toEqual(['2023-05-03']);
    expect(absoluteDates('Between May 3, 2023 and June 2023?')).toEqual(['2023-05-03', '2023-06']);
    for (const relative of ['What did I do last week?', 'Where did she move from 4 years ago?', 'What happened on Tuesday?', 'on 3 May?']) {
      expect(absoluteDates(relative)).toEqual([]);
    }
    expect(await queryTimeSpans('What did we do on 3 May, 2023?', null)).toEqual([{ start: Date.UTC(2023, 4, 3), end: Date.UTC(2023, 4, 4) }]);
    // Relative time needs the time the query is asked (see test/now.test.ts).
    expect(await queryTimeSpans('What did we do yesterday?', null)).toEqual([]);
  });

  it('finds the Episodes of sessions on those dates, within a scope', async () => {
    const graph = threeDays();
    const spans = (query: string) => queryTimeSpans(query, null);
    expect(fallsOn('2023-05-03T12:00:00', await spans('on 3 May, 2023'))).toBe(true);
    expect(fallsOn('2023-05-03T12:00:00', await spans('in June 2023 or in May 2023'))).toBe(true);
    expect(fallsOn('2023', await spans('in May 2023'))).toBe(false);
    expect(fallsOn(null, await spans('in May 2023'))).toBe(false);
    expect([...episodesOn(graph, await spans('in May 2023'), null, new Set(['ep2']))]).toEqual(['ep1', 'ep3']);
    expect([...episodesOn(graph, await spans('on 3 May, 2023'), new Set(['ep1', 'ep2']), new Set())]).toEqual([]);
    expect(episodesOn(graph, [], null, new Set()).size).toBe(0);
  });

  it('brings in the session of a date the query names and lifts its turns and those whose facts fall on it', async () => {
    const deps = depsFor(threeDays());
    // One Episode searched, one anchor per layer, no turn anchors: only date focus can reach ep3.
    const narrow = { retrieval: { unitEpisodes: 1, unitBudgets: 0, anchorsPerLayer: 1, turnAnchors: 0 } };
    const search = (query: string, flags: Partial<PrismConfig['flags']>, date = 0.5) =>
      retrieve(query, deps, { budget: 2000, k: 1, mode: 'zero-llm', config: { ...narrow, flags, retrieval: { ...narrow.retrieval, turnScore: { date } } } });
    const score = (result: RetrieveResult, dialogId: string) => result.units.find((u) => u.dialogIds.includes(dialogId))?.score;

    const on = await search('What did we do on 3 May, 2023?', { dateFocus: true });
    const ridge = on.units.find((u) => u.dialogIds.includes('D3:1'));
    // Reached through its own Episode vector, the one anchor N1 lacked.
    expect(ridge?.trace.template).toBe('Ep');
    expect(ridge?.trace.nodes.map((n) => n.id)).toEqual(['ep3']);
    expect(on.dialogIds).toContain('D3:1');
    const unweighted = await search('What did we do on 3 May, 2023?', { dateFocus: true }, 0);
    expect((score(on, 'D3:1') ?? 0) - (score(unweighted, 'D3:1') ?? 0)).toBeCloseTo(0.5, 9);
    expect(score(on, 'D1:1')).toBe(score(unweighted, 'D1:1'));
    // Off: the search never leaves the Episode N1 chose.
    const off = await search('What did we do on 3 May, 2023?', { dateFocus: false });
    expect(new Set(off.units.map((u) => u.episodeId))).toEqual(new Set(['ep1']));

    // A fact resolved to the date lifts its turn in a session of another day; the other turn keeps its score.
    const fence = await search('What happened on April 30, 2023?', { dateFocus: true });
    const fenceUnweighted = await search('What happened on April 30, 2023?', { dateFocus: true }, 0);
    expect((score(fence, 'D1:2') ?? 0) - (score(fenceUnweighted, 'D1:2') ?? 0)).toBeCloseTo(0.5, 9);
    expect(score(fence, 'D1:1')).toBe(score(fenceUnweighted, 'D1:1'));
  });
});

describe('session-independent turn anchors and adaptive fusion', () => {
  /** ep-near wins N1 on its own vector; the turn closest to the query sits in ep-far. */
  function anchorGraph(): MemoryGraph {
    return new GraphBuilder()
      .episode('ep-near', 1, atCos(0.9, 1), [['D1:1', 'Ana', 'Chatter about the weather.']])
      .facet('fc-near', 'ep-near', 'Ana: Chatter about the weather.', atCos(0.2, 2))
      .point('fp-near', 'fc-near', 'Ana: Chatter about the weather.', atCos(0.2, 3), { dialogIds: ['D1:1'] })
      .episode('ep-far', 2, unrelated(), [
        ['D2:1', 'Ben', 'The sunrise canvas hangs over my sofa.'],
        ['D2:2', 'Ana', 'Nice.'],
      ])
      .facet('fc-far', 'ep-far', 'Ben: The sunrise canvas hangs over my sofa.', atCos(0.8, 4))
      .point('fp-far', 'fc-far', 'Ben: The sunrise canvas hangs over my sofa.', atCos(0.7, 5), { dialogIds: ['D2:1'] })
      .facet('fc-far2', 'ep-far', 'Ana: Nice.', atCos(0.1, 6))
      .point('fp-far2', 'fc-far2', 'Ana: Nice.', atCos(0.1, 7), { dialogIds: ['D2:2'] })
      .build();
  }

  it('maps the best Facets to their turns by Episode, keeping each turn’s best cosine', () => {
    const graph = anchorGraph();
    const facets = [
      { id: 'fc-far', score: 0.8 },
      { id: 'fc-near', score: 0.2 },
      { id: 'fc-far2', score: 0.1 },
    ];
    expect(turnAnchors(graph, facets, 2)).toEqual(
      new Map([
        ['ep-far', new Map([['D2:1', 0.8]])],
        ['ep-near', new Map([['D1:1', 0.2]])],
      ]),
    );
    expect(turnAnchors(graph, facets, 0).size).toBe(0);
    // Ids of other layers are not turns.
    expect(turnAnchors(graph, [{ id: 'fp-far', score: 0.9 }], 5).size).toBe(0);
  });

  it('offers an anchored turn whose Episode N1 left out, with its Facet path as trace', async () => {
    const deps = depsFor(anchorGraph());
    const run = (turnAnchorCount: number) =>
      retrieve('q', deps, { budget: 2000, k: 1, mode: 'zero-llm', config: { retrieval: { unitEpisodes: 1, unitBudgets: 0, turnAnchors: turnAnchorCount } } });
    const without = await run(0);
    expect(without.units.map((u) => u.dialogIds[0])).toEqual(['D1:1']);
    const withAnchors = await run(1);
    // Only the anchored turn of ep-far joins (not its other turn), and it outranks the weaker selected turn on its fact.
    expect(withAnchors.units.map((u) => u.dialogIds[0])).toEqual(['D2:1', 'D1:1']);
    expect(withAnchors.units[0]?.trace.template).toBe('Fc→Ep');
    expect(withAnchors.units[0]?.trace.nodes[0]?.id).toBe('fc-far');
    // The bundle the ER@K metric reads is unchanged.
    expect(withAnchors.bundle.map((e) => e.episodeId)).toEqual(['ep-near']);
  });

  it('under adaptive fusion, weighs the anchor term by how little the query’s words match', async () => {
    const graph = anchorGraph();
    const deps = depsFor(graph, { lexical: LexicalIndex.fromGraph(graph) });
    const anchorScore = async (query: string, anchor: number) => {
      const config = { flags: { adaptiveFusion: true, meaningRoute: false }, retrieval: { turnAnchors: 2, lexicalFullShare: 1, turnScore: { anchor } } };
      const units = (await retrieve(query, deps, { budget: 2000, mode: 'zero-llm', config })).units;
      return units.find((u) => u.dialogIds[0] === 'D2:1')?.score ?? Number.NaN;
    };
    // Every term in the anchored turn: BM25 has full say, the anchor term none.
    expect((await anchorScore('sunrise canvas sofa', 1)) - (await anchorScore('sunrise canvas sofa', 0))).toBeCloseTo(0);
    // No term anywhere: the anchor term counts in full (the turn's Facet cosine, 0.8).
    expect((await anchorScore('zebra', 1)) - (await anchorScore('zebra', 0))).toBeCloseTo(0.8);
  });

  it('takes the meaning route when the query’s words or its closest turn fall short', () => {
    const route = { lexicalConfidence: 0.5, bestCosine: 0.5 };
    expect(takesMeaningRoute(1, 0.7, route)).toBe(false);
    expect(takesMeaningRoute(0.5, 0.5, route)).toBe(false);
    expect(takesMeaningRoute(0.4, 0.9, route)).toBe(true);
    expect(takesMeaningRoute(0.9, 0.49, route)).toBe(true);
    // Every word found in one turn: not oblique, however far its meaning.
    expect(takesMeaningRoute(1, 0.2, route)).toBe(false);
    expect(takesMeaningRoute(0, 0, { lexicalConfidence: 0, bestCosine: 0 })).toBe(false);
    // Not measured (a speaker's name masked out of the query vector): the words alone decide.
    expect(takesMeaningRoute(1, null, route)).toBe(false);
    expect(takesMeaningRoute(0.4, null, route)).toBe(true);
    // No lexical index: the cosine alone decides.
    expect(takesMeaningRoute(null, 0.4, route)).toBe(true);
    expect(takesMeaningRoute(null, 0.6, route)).toBe(false);
    expect(takesMeaningRoute(null, null, route)).toBe(false);
  });

  it('on the meaning route ranks turns by their own cosine, or their reply’s, over more turn anchors', async () => {
    // ep-main wins N1; in ep-cue a remark (0.3) is answered by a reply close to the query (0.7).
    const graph = new GraphBuilder()
      .episode('ep-main', 1, atCos(0.9, 1), [
        ['D1:1', 'Ana', 'The quarterly report is due on Friday afternoon.'],
        ['D1:2', 'Ben', 'Then we should start drafting it tomorrow.'],
      ])
      .facet('fc-m1', 'ep-main', 'Ana: The quarterly report is due on Friday afternoon.', atCos(0.45, 2))
      .point('fp-m1', 'fc-m1', 'Ana: The quarterly report is due on Friday afternoon.', atCos(0.6, 3), { dialogIds: ['D1:1'] })
      .facet('fc-m2', 'ep-main', 'Ben: Then we should start drafting it tomorrow.', atCos(0.4, 4))
      .point('fp-m2', 'fc-m2', 'Ben: Then we should start drafting it tomorrow.', atCos(0.6, 5), { dialogIds: ['D1:2'] })
      .episode('ep-cue', 2, unrelated(), [
        ['D2:1', 'Ana', 'I give credit to whoever had the idea.'],
        ['D2:2', 'Ben', 'You believe in giving people their due.'],
      ])
      .facet('fc-c1', 'ep-cue', 'Ana: I give credit to whoever had the idea.', atCos(0.3, 6))
      .point('fp-c1', 'fc-c1', 'Ana: I give credit to whoever had the idea.', atCos(0.3, 7), { dialogIds: ['D2:1'] })
      .facet('fc-c2', 'ep-cue', 'Ben: You believe in giving people their due.', atCos(0.7, 8))
      .point('fp-c2', 'fc-c2', 'Ben: You believe in giving people their due.', atCos(0.7, 9), { dialogIds: ['D2:2'] })
      .build();
    const deps = depsFor(graph, { lexical: LexicalIndex.fromGraph(graph) });
    const order = async (query: string, meaningRoute: boolean, reply: number) => {
      // Each turn by its Facet's cosine (`composedTurns` off; the next test reads turns by their sentences).
      const config = { flags: { meaningRoute, composedTurns: false }, retrieval: { unitEpisodes: 1, unitBudgets: 0, turnAnchors: 1, meaningRoute: { lexicalConfidence: 0.5, bestCosine: 0.5, turns: 4, reply } } };
      return (await retrieve(query, deps, { budget: 2000, k: 1, mode: 'zero-llm', config })).units.map((u) => [u.dialogIds[0], Number(u.score.toFixed(3))]);
    };
    // No word of the remark is in memory: its turns rank by cosine, the remark at 0.9 × its reply's.
    expect(await order('everyone congratulates me on the promotion', true, 0.9)).toEqual([
      ['D2:2', 0.7],
      ['D2:1', 0.63],
      ['D1:1', 0.45],
      ['D1:2', 0.4],
    ]);
    expect((await order('everyone congratulates me on the promotion', true, 0)).map(([id]) => id)).toEqual(['D2:2', 'D1:1', 'D1:2', 'D2:1']);
    // Off, only one turn anchor (the reply) joins the selected Episode's turns: the remark is not offered.
    expect((await order('everyone congratulates me on the promotion', false, 0.9)).map(([id]) => id).sort()).toEqual(['D1:1', 'D1:2', 'D2:2']);
    // A query whose words the memory holds, with a close turn, is ranked as without the route.
    expect(await order('when is the quarterly report due', true, 0.9)).toEqual(await order('when is the quarterly report due', false, 0.9));
  });

  it('scores Facets as turns by their FacetPoints’ vectors taken together, best first', () => {
    const [p1, p2] = [atCos(0.6, 2), atCos(0.6, 3)];
    const graph = new GraphBuilder()
      .episode('ep', 1, unrelated(), [
        ['D1:1', 'Ana', 'I stopped eating out. Every dollar goes to my loans.'],
        ['D1:2', 'Ben', 'Good plan.'],
      ])
      .facet('fc-two', 'ep', 'Ana: I stopped eating out. Every dollar goes to my loans.', atCos(0.2, 4))
      .point('fp-a', 'fc-two', 'Ana: I stopped eating out.', p1, { dialogIds: ['D1:1'] })
      .point('fp-b', 'fc-two', 'Ana: Every dollar goes to my loans.', p2, { dialogIds: ['D1:1'] })
      .facet('fc-one', 'ep', 'Ben: Good plan.', atCos(0.65, 5))
      .point('fp-c', 'fc-one', 'Ben: Good plan.', atCos(0.65, 6), { dialogIds: ['D1:2'] })
      .build();
    const scored = composedTurnCosines(graph, ['fc-one', 'fp-a', 'fc-two', 'fc-one', 'missing'], Q);
    // Two sentences at 0.6 that say different things sum to a turn closer than either (1.2 / ‖p1 + p2‖ ≈ 0.73), and than fc-one's 0.65.
    expect(scored.map((a) => a.id)).toEqual(['fc-two', 'fc-one']);
    expect(scored[0]?.score).toBeCloseTo(dot(normalisedSum(p1, p2), Q), 6);
    expect(scored[0]?.score).toBeCloseTo(1.2 / Math.sqrt(2 + 2 * 0.36), 6);
    expect(scored[1]?.score).toBeCloseTo(0.65, 6);
  });

  it('on the meaning route with composedTurns, reads the turns of the FacetPoint anchors and ranks them by their sentences', async () => {
    // ep-main wins N1. In ep-cue the turn whose two sentences each sit at 0.6 has a Facet (its line cut short) at 0.1.
    const [p1, p2] = [atCos(0.6, 2), atCos(0.6, 3)];
    const graph = new GraphBuilder()
      .episode('ep-main', 1, atCos(0.9, 1), [['D1:1', 'Ben', 'Then we should start drafting it tomorrow.']])
      .facet('fc-m', 'ep-main', 'Ben: Then we should start drafting it tomorrow.', atCos(0.5, 4))
      .point('fp-m', 'fc-m', 'Ben: Then we should start drafting it tomorrow.', atCos(0.5, 5), { dialogIds: ['D1:1'] })
      .episode('ep-cue', 2, unrelated(), [['D2:1', 'Ana', 'I stopped eating out. Every dollar goes to my loans.']])
      .facet('fc-c', 'ep-cue', 'Ana: I stopped eating out. Every…', atCos(0.1, 6))
      .point('fp-c1', 'fc-c', 'Ana: I stopped eating out.', p1, { dialogIds: ['D2:1'] })
      .point('fp-c2', 'fc-c', 'Ana: Every dollar goes to my loans.', p2, { dialogIds: ['D2:1'] })
      .build();
    const deps = depsFor(graph, { lexical: LexicalIndex.fromGraph(graph) });
    const ranked = async (composedTurns: boolean) => {
      // One turn read on the route: the closest Facet alone, or with the Facets of the FacetPoint anchors.
      const config = { flags: { composedTurns }, retrieval: { unitEpisodes: 1, unitBudgets: 0, turnAnchors: 0, meaningRoute: { lexicalConfidence: 0.5, bestCosine: 0.5, turns: 1, reply: 0 } } };
      return (await retrieve('treat myself to a fancy dinner', deps, { budget: 2000, k: 1, mode: 'zero-llm', config })).units.map((u) => [u.dialogIds[0], Number(u.score.toFixed(3))]);
    };
    expect(await ranked(true)).toEqual([
      ['D2:1', Number(dot(normalisedSum(p1, p2), Q).toFixed(3))],
      ['D1:1', 0],
    ]);
    // Off: the closest Facet is fc-m (0.5); ep-cue's turn is never read.
    expect(await ranked(false)).toEqual([['D1:1', 0.5]]);
  });

  it('on the meaning route finds its Episodes by meaning alone, without BM25’s anchors', async () => {
    // ep-lex holds one of the remark's words and nothing of its meaning; ep-near and ep-mid are close by meaning.
    const graph = new GraphBuilder()
      .episode('ep-near', 1, atCos(0.5, 1), [['D1:1', 'Ben', 'I finally paid off the last of the loans.']])
      .facet('fc-near', 'ep-near', 'Ben: I finally paid off the last of the loans.', atCos(0.45, 2))
      .point('fp-near', 'fc-near', 'Ben: I finally paid off the last of the loans.', atCos(0.45, 3), { dialogIds: ['D1:1'] })
      .episode('ep-mid', 2, atCos(0.3, 4), [['D2:1', 'Ana', 'Money has been tight since spring.']])
      .facet('fc-mid', 'ep-mid', 'Ana: Money has been tight since spring.', atCos(0.3, 5))
      .point('fp-mid', 'fc-mid', 'Ana: Money has been tight since spring.', atCos(0.3, 6), { dialogIds: ['D2:1'] })
      .episode('ep-lex', 3, unrelated(), [['D3:1', 'Ana', 'The blender broke again this morning.']])
      .facet('fc-lex', 'ep-lex', 'Ana: The blender broke again this morning.', atCos(0.05, 7))
      .point('fp-lex', 'fc-lex', 'Ana: The blender broke again this morning.', atCos(0.05, 8), { dialogIds: ['D3:1'] })
      .build();
    const deps = depsFor(graph, { lexical: LexicalIndex.fromGraph(graph) });
    const bundle = async (query: string, flags: Partial<PrismConfig['flags']>) =>
      (await retrieve(query, deps, { budget: 2000, k: 2, mode: 'zero-llm', config: { flags, retrieval: { unitEpisodes: 2, unitBudgets: 0 } } })).bundle.map((e) => e.episodeId);
    const remark = 'honestly the blender is the least of my worries these days';
    // Kept, BM25's one word brings ep-lex into N1's two Episodes.
    expect(await bundle(remark, { meaningRouteLexicalAnchors: true })).toContain('ep-lex');
    // On the route by default: the dense anchors alone, as with no lexical anchors at all.
    expect(await bundle(remark, {})).toEqual(['ep-near', 'ep-mid']);
    expect(await bundle(remark, {})).toEqual(await bundle(remark, { hybridAnchors: false }));
    // A query whose words a turn holds is not on the route, and keeps them.
    expect(await bundle('when did the blender break', {})).toContain('ep-lex');
  });

  it('trusts BM25 in proportion to the query terms its best turn shares, full at the given share', () => {
    const terms = termsOf('Ben sunrise canvas sofa');
    expect(lexicalConfidence(terms, 'Ben: The sunrise canvas hangs over my sofa.', 1)).toBe(1);
    expect(lexicalConfidence(terms, 'Ben: nice weather', 1)).toBe(0.25);
    expect(lexicalConfidence(terms, 'Ben: nice weather', 0.5)).toBe(0.5);
    expect(lexicalConfidence(terms, 'Ben: sunrise at the sofa', 0.5)).toBe(1);
    expect(lexicalConfidence(terms, null, 1)).toBe(0);
    expect(lexicalConfidence(new Set(), 'anything', 1)).toBe(0);
  });

  it('reads the text of the best BM25 turn', () => {
    const graph = anchorGraph();
    const { turns } = LexicalIndex.fromGraph(graph).search('sunrise canvas weather');
    expect(turns.get('ep-near')?.size).toBe(1);
    expect(turns.best).toMatchObject({ episodeId: 'ep-far', dialogId: 'D2:1' });
    expect(bestLexicalTurnText(graph, turns)).toBe('Ben: The sunrise canvas hangs over my sofa.');
    expect(bestLexicalTurnText(graph, turns.within(new Set(['ep-near'])))).toBe('Ana: Chatter about the weather.');
    expect(bestLexicalTurnText(graph, NO_TURN_SCORES)).toBeNull();
  });

  it('fuses with the lexical list scaled by its weight: none leaves the dense order', () => {
    const dense = [
      { id: 'a', score: 0.7 },
      { id: 'b', score: 0.6 },
    ];
    const lexical = [{ id: 'b', score: 12 }, { id: 'lex-only', score: 9 }];
    const ctx = { queryVector: Q, vectors: new Map([['lex-only', atCos(0.3, 1)]]), rrfK: 60, lexicalPerLayer: 30 };
    expect(fuseAnchors(dense, lexical, { ...ctx, lexicalWeight: 0 })).toEqual(dense);
    expect(fuseAnchors(dense, lexical, { ...ctx, lexicalWeight: 1 }).map((a) => a.id)).toEqual(['b', 'a', 'lex-only']);
    // A weak lexical say keeps the dense leader first but still admits the lexical-only hit.
    expect(fuseAnchors(dense, lexical, { ...ctx, lexicalWeight: 0.01 }).map((a) => a.id)).toEqual(['a', 'b', 'lex-only']);
  });
});
