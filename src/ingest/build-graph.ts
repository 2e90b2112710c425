import type { IngestConfig } from '../config.ts';
import type { Embedder } from '../embed/types.ts';
import type { MemoryGraph } from '../graph/memory-graph.ts';
import { COMPOSABLE_EDGE_TYPES, edgeId, episodeIdOf, type Chunk, type EdgeType, type EntityMention, type EntityNode, type EpisodeNode, type FacetNode, type FacetPointNode, type GraphEdge, type GraphNode } from '../graph/types.ts';
import { appended } from '../util/appended.ts';
import { dot, normalisedSum } from '../util/vectors.ts';
import type { Extraction } from './extraction.ts';
import { compareTimes, isoToMillis } from './time.ts';

/** Vectors for the texts of one extraction, computed before building (see `embedExtraction`). */
export interface ExtractionVectors {
  summary: Float32Array;
  entities: Float32Array[];
  facetPoints: Float32Array[];
  facets: Float32Array[];
}

export interface BuildInput {
  chunk: Chunk;
  extraction: Extraction;
  vectors: ExtractionVectors;
  graph: MemoryGraph;
  /** Nearest existing Entity to a name vector (the Entity index), or null when there is none. */
  nearestEntity: (vector: Float32Array) => { id: string; score: number } | null;
  /** Nearest FacetPoint of an earlier chunk (the FacetPoint index); asked only when semantic edges are on. */
  nearestFacetPoint: (vector: Float32Array) => { id: string; score: number } | null;
  config: IngestConfig;
  /** Allocates index keys (unique across nodes and edges). */
  nextKey: () => number;
}

/** What one chunk adds: new or updated nodes (merged Entities gain the chunk), new edges, node vectors, and the chunk's `mentions`. */
export interface BuildOutput {
  nodes: GraphNode[];
  edges: GraphEdge[];
  nodeVectors: Array<[string, Float32Array]>;
  mentions: EntityMention[];
}

/**
 * The vectors of one extraction's texts — summary, entity names, facts, facet themes — from one
 * embed call, so identical texts (a one-sentence turn's fact and theme) are embedded once and
 * every text shares length-bucketed batches with the others. A summary quoted from the facts
 * (`Extraction.summaryQuotes`) is not embedded: its vector is the normalised sum of the quoted
 * facts' vectors (it would be the longest text of the chunk, embedded for the second time).
 */
export async function embedExtraction(extraction: Extraction, embedder: Embedder, signal?: AbortSignal): Promise<ExtractionVectors> {
  const quotes = extraction.summaryQuotes ?? [];
  const texts = [...extraction.entities.map((e) => e.name), ...extraction.facetPoints.map((p) => p.content), ...extraction.facets.map((f) => f.theme)];
  if (quotes.length === 0) texts.push(extraction.summary);
  const vectors = await embedder.embed(texts, signal ? { signal } : {});
  if (vectors.length !== texts.length) throw new Error(`expected ${texts.length} vectors, got ${vectors.length}`);
  const e = extraction.entities.length;
  const p = extraction.facetPoints.length;
  const f = extraction.facets.length;
  const facetPoints = vectors.slice(e, e + p);
  const summary = quotes.length > 0 ? normalisedSum(...quotes.flatMap((i) => facetPoints[i] ?? [])) : vectors[e + p + f];
  if (!summary) throw new Error('no summary vector');
  return { summary, entities: vectors.slice(0, e), facetPoints, facets: vectors.slice(e + p, e + p + f) };
}

/**
 * Design §2.4 for one chunk, as a pure function of the current graph: Episode (chained in
 * time), Entities (merged by exact name, then by name cosine), Facets (merged within the
 * Episode by theme cosine), FacetPoints with `belongs_to` and `involves_entity`, `temporal`
 * edges between facts of definite order, `evolution` edges per entity, and (when switched on)
 * `semantic` edges to the nearest earlier fact.
 */
export function buildChunkGraph(input: BuildInput): BuildOutput {
  const { chunk, extraction, vectors, graph, config } = input;
  const nodes: GraphNode[] = [];
  const edges: GraphEdge[] = [];
  const nodeVectors: Array<[string, Float32Array]> = [];
  // A description is the text an edge is embedded from; edges whose vector is composed from
  // their endpoints (or that get none) are never embedded, so they keep none: on LongMemEval
  // chat the descriptions of involves_entity and evolution edges were ~4 KB per message.
  const describes = (type: EdgeType) => config.edgeVectors === 'embedded' || !COMPOSABLE_EDGE_TYPES.has(type);
  const edge = (type: EdgeType, from: string, to: string, description: string | null, confidence: number | null = null) => {
    edges.push({ id: edgeId(type, from, to), key: input.nextKey(), type, from, to, chunkId: chunk.id, description: describes(type) ? description : null, confidence });
  };

  // Episode, linked into the chronological chain.
  const episode: EpisodeNode = {
    id: episodeIdOf(chunk.id),
    key: input.nextKey(),
    layer: 'episode',
    chunkId: chunk.id,
    summary: extraction.summary,
    time: chunk.time,
    order: chunk.order,
  };
  nodes.push(episode);
  nodeVectors.push([episode.id, vectors.summary]);
  const { before, after } = graph.episodeNeighbours(episode);
  if (before) edge('temporal', before.id, episode.id, chainDescription(before, episode));
  if (after) edge('temporal', episode.id, after.id, chainDescription(episode, after));

  // Entities: exact name (case-insensitive), else name cosine ≥ threshold, else new. With
  // `sharedEntities` a new name is a mention of this chunk, made an Entity by the next chunk that
  // names it. Names met in this chunk shadow the graph's index until the chunk is committed.
  const entityByName = new Map<string, { id: string; name: string }>();
  const mentions: EntityMention[] = [];
  extraction.entities.forEach((entity, i) => {
    const vector = vectors.entities[i];
    const key = entity.name.toLowerCase();
    if (!vector || entityByName.has(key)) return;
    let target = graph.entityNamed(key);
    if (!target) {
      const nearest = input.nearestEntity(vector);
      const candidate = nearest && nearest.score >= config.entityMergeThreshold ? graph.nodes.get(nearest.id) : undefined;
      if (candidate?.layer === 'entity') target = candidate;
    }
    if (target) {
      // Joined already when another name of this chunk merged into it, or, for a chunk the graph
      // holds (extracted again), when its list names the chunk; a new chunk is in no list (an
      // Entity names only chunks the graph holds), so a speaker's list of every chunk is not searched.
      const built = nodes.find((n): n is EntityNode => n.id === target?.id);
      if (built) target = built;
      else if (!(graph.chunks.has(chunk.id) && target.chunkIds.includes(chunk.id))) {
        target = { ...target, chunkIds: appended(target.chunkIds, chunk.id) };
        nodes.push(target);
      }
    } else {
      const id = `en:${chunk.id.slice(0, 12)}:${i}`;
      // A chunk extracted again finds its own mentions: they are made afresh, as for a new chunk.
      const held = config.sharedEntities ? graph.mentionNamed(key) : undefined;
      const mentioned = held?.chunkId === chunk.id ? undefined : held;
      if (config.sharedEntities && !mentioned) {
        const mention: EntityMention = { id, name: entity.name, type: entity.type };
        mentions.push(mention);
        entityByName.set(key, mention);
        return;
      }
      // The mention's id is the one its chunk's facts name, so their edges now reach the Entity.
      // This chunk comes first in its list: the chunk whose commit makes a node owns it (a store
      // may keep a node and its vector with its owner's records: IndexedDB seals them under its
      // key and groups them, so the older chunk's group is not written again).
      target = mentioned
        ? { id: mentioned.mention.id, key: input.nextKey(), layer: 'entity', name: mentioned.mention.name, entityType: mentioned.mention.type, chunkIds: [chunk.id, mentioned.chunkId] }
        : { id, key: input.nextKey(), layer: 'entity', name: entity.name, entityType: entity.type, chunkIds: [chunk.id] };
      nodes.push(target);
      nodeVectors.push([target.id, vector]);
    }
    entityByName.set(key, target);
  });

  // Facets: merge near-duplicate themes within this Episode.
  const facetOfPoint = new Map<number, FacetNode>();
  const facetNodes: Array<{ node: FacetNode; vector: Float32Array }> = [];
  extraction.facets.forEach((facet, i) => {
    const vector = vectors.facets[i];
    if (!vector) return;
    let target = facetNodes.find((f) => dot(f.vector, vector) >= config.facetMergeThreshold)?.node;
    if (!target) {
      target = { id: `fc:${chunk.id.slice(0, 12)}:${i}`, key: input.nextKey(), layer: 'facet', chunkId: chunk.id, episodeId: episode.id, theme: facet.theme };
      facetNodes.push({ node: target, vector });
      nodes.push(target);
      nodeVectors.push([target.id, vector]);
      edge('belongs_to', target.id, episode.id, null);
    }
    for (const p of facet.pointIndices) if (!facetOfPoint.has(p)) facetOfPoint.set(p, target);
  });

  // FacetPoints: always new; points no facet claims get a catch-all facet so every fact reaches its Episode.
  const points: FacetPointNode[] = [];
  extraction.facetPoints.forEach((fp, i) => {
    const vector = vectors.facetPoints[i];
    if (!vector) return;
    let facet = facetOfPoint.get(i);
    if (!facet) {
      facet = { id: `fc:${chunk.id.slice(0, 12)}:rest`, key: input.nextKey(), layer: 'facet', chunkId: chunk.id, episodeId: episode.id, theme: 'other facts' };
      facetOfPoint.set(i, facet);
      if (!nodes.some((n) => n.id === facet?.id)) {
        nodes.push(facet);
        nodeVectors.push([facet.id, vector]);
        edge('belongs_to', facet.id, episode.id, null);
      }
    }
    const entity = fp.entityName ? entityByName.get(fp.entityName.toLowerCase()) : undefined;
    const entityId = entity?.id ?? null;
    const point: FacetPointNode = {
      id: `fp:${chunk.id.slice(0, 12)}:${i}`,
      key: input.nextKey(),
      layer: 'facetPoint',
      chunkId: chunk.id,
      episodeId: episode.id,
      facetId: facet.id,
      content: fp.content,
      entityId,
      timeText: fp.timeText,
      time: fp.time,
      dialogIds: fp.dialogIds,
    };
    points.push(point);
    nodes.push(point);
    nodeVectors.push([point.id, vector]);
    edge('belongs_to', point.id, facet.id, null);
    if (config.semanticEdges) {
      const similar = input.nearestFacetPoint(vector);
      const other = similar && similar.score >= config.semanticThreshold ? graph.nodes.get(similar.id) : undefined;
      if (other?.layer === 'facetPoint') edge('semantic', point.id, other.id, `${point.content} (similar to: ${other.content})`);
    }
    if (entity) edge('involves_entity', point.id, entity.id, `${point.content} (involves ${entity.name})`);
  });

  // Temporal: a chain through this chunk's facts in definite time order.
  const timed = points.filter((p) => p.time !== null).sort((a, b) => (a.time ?? '').localeCompare(b.time ?? ''));
  for (let i = 1; i < timed.length; i++) {
    const a = timed[i - 1];
    const b = timed[i];
    if (a && b && a.time && b.time && compareTimes(a.time, b.time) < 0) {
      edge('temporal', a.id, b.id, `${a.content} (${a.time}) happened before ${b.content} (${b.time})`);
    }
  }

  // Evolution: per entity, the latest existing fact → the earliest new one, then the new ones in time order.
  const pointsByEntity = new Map<string, FacetPointNode[]>();
  for (const p of points) {
    if (!p.entityId) continue;
    const list = pointsByEntity.get(p.entityId) ?? [];
    list.push(p);
    pointsByEntity.set(p.entityId, list);
  }
  for (const [entityId, list] of pointsByEntity) {
    const ordered = [...list].sort((a, b) => factOrder(graph, a, episode) - factOrder(graph, b, episode));
    const latest = latestFactOf(graph, entityId);
    const chain = latest ? [latest, ...ordered] : ordered;
    for (let i = 1; i < chain.length; i++) {
      const a = chain[i - 1];
      const b = chain[i];
      if (a && b) edge('evolution', a.id, b.id, `${a.content} → later: ${b.content}`);
    }
  }

  return { nodes, edges, nodeVectors, mentions };
}

/** `chunk` as committed with its graph: holding the build's mentions (and no earlier ones, for a chunk extracted again). */
export function chunkWithMentions(chunk: Chunk, built: BuildOutput): Chunk {
  const { mentions: _earlier, ...rest } = chunk;
  return built.mentions.length > 0 ? { ...rest, mentions: built.mentions } : rest;
}

/**
 * Temporal edges that keep the Episode chain whole when `removed` Episodes leave: each
 * remaining Episode is linked to the next remaining one across a gap. The edge belongs to
 * the later Episode's chunk, as a chain edge made at ingest time does.
 */
export function chainGapEdges(graph: MemoryGraph, removed: ReadonlySet<string>, nextKey: () => number): GraphEdge[] {
  const chain = graph.episodesInTime();
  const edges: GraphEdge[] = [];
  let last: EpisodeNode | null = null;
  let gap = false;
  for (const ep of chain) {
    if (removed.has(ep.id)) {
      gap = true;
      continue;
    }
    const id = last ? edgeId('temporal', last.id, ep.id) : '';
    if (last && gap && !graph.edges.has(id)) {
      edges.push({ id, key: nextKey(), type: 'temporal', from: last.id, to: ep.id, chunkId: ep.chunkId, description: chainDescription(last, ep), confidence: null });
    }
    last = ep;
    gap = false;
  }
  return edges;
}

function chainDescription(before: EpisodeNode, after: EpisodeNode): string {
  return `${label(before)} happened before ${label(after)}`;
}

function label(ep: EpisodeNode): string {
  return `episode ${ep.order}${ep.time ? ` (${ep.time.slice(0, 10)})` : ''}`;
}

/** Sort key of a fact: its own date if any, else its Episode's. */
function factOrder(graph: MemoryGraph, p: FacetPointNode, fallback: EpisodeNode): number {
  const ep = graph.nodes.get(p.episodeId);
  const time = p.time ?? (ep?.layer === 'episode' ? ep.time : fallback.time) ?? '';
  return isoToMillis(time);
}

/** The existing FacetPoint of an entity that is latest in time (then in ingestion order). */
function latestFactOf(graph: MemoryGraph, entityId: string): FacetPointNode | null {
  let best: FacetPointNode | null = null;
  let bestRank = -Infinity;
  for (const e of graph.edgesTo(entityId, 'involves_entity')) {
    const p = graph.nodes.get(e.from);
    if (p?.layer !== 'facetPoint') continue;
    const ep = graph.nodes.get(p.episodeId);
    const order = ep?.layer === 'episode' ? ep.order : 0;
    const rank = factRank(p.time ?? (ep?.layer === 'episode' ? ep.time : null), order);
    if (rank > bestRank) {
      bestRank = rank;
      best = p;
    }
  }
  return best;
}

function factRank(time: string | null, order: number): number {
  return isoToMillis(time) * 1e-3 + order * 1e-9;
}
