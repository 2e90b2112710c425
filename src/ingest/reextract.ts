import { PrismError, throwIfAborted } from '../errors.ts';
import type { MemoryGraph } from '../graph/memory-graph.ts';
import { edgeId, type Chunk, type FacetPointNode, type GraphEdge, type GraphNode } from '../graph/types.ts';
import type { WriteBatch } from '../store/types.ts';
import { chunkWithMentions, embedExtraction, type ExtractionVectors } from './build-graph.ts';
import { deletionBatch } from './chunk-removal.ts';
import { chunkExtraction, type Extraction } from './extraction.ts';
import { applyBatch, buildChunk, edgeVectorsFor, type IngestDeps } from './pipeline.ts';
import { isoToMillis } from './time.ts';

export interface ReextractOptions {
  signal?: AbortSignal;
}

export interface ReextractReport {
  /** Fallback chunks whose nodes and edges were replaced by a full LLM extraction. */
  chunksReextracted: number;
  /** Fallback chunks whose answer was invalid again; they stay marked and are tried by the next call. */
  chunksStillFallback: number;
  nodesAdded: number;
  edgesAdded: number;
  warnings: string[];
  ms: number;
}

/** Ids of the chunks whose LLM extraction fell back (`Chunk.extraction === 'fallback'`), in ingestion order. */
export function fallbackChunkIds(graph: MemoryGraph): string[] {
  return [...graph.chunks.values()]
    .filter((chunk) => chunk.extraction === 'fallback')
    .sort((a, b) => a.order - b.order)
    .map((chunk) => chunk.id);
}

/**
 * Extracts every fallback chunk again with the LLM. A chunk that now gets a valid answer has its
 * nodes and edges replaced in one atomic batch (it keeps its id, hash and position in the
 * Episode chain); one whose answer is invalid again stays as it is. Endpoint failures stop the
 * call like an ingest: chunks replaced before stay replaced.
 */
export async function reextractFallbackChunks(deps: IngestDeps, options: ReextractOptions = {}): Promise<ReextractReport> {
  const started = Date.now();
  const { state, extractor, writer, signal } = { ...deps, signal: options.signal };
  if (extractor.mode !== 'llm') throw new PrismError('LLM_NOT_CONFIGURED', 're-extraction needs a memory opened with LLM extraction');
  const report: ReextractReport = { chunksReextracted: 0, chunksStillFallback: 0, nodesAdded: 0, edgesAdded: 0, warnings: [], ms: 0 };
  for (const id of await writer.locked(async () => fallbackChunkIds(state.graph))) {
    throwIfAborted(signal);
    const chunk = state.graph.chunks.get(id);
    if (!chunk) continue;
    const outcome = await extractor.extract({ chunkId: chunk.id, header: chunk.header, time: chunk.time, turns: chunk.turns }, signal);
    if (chunkExtraction(extractor, outcome) === 'fallback') {
      report.chunksStillFallback++;
      report.warnings.push(`chunk ${chunk.sessionId}: ${outcome.warning ?? 'fell back again'}`);
      continue;
    }
    const extraction = outcome.extraction;
    const vectors = await embedExtraction(extraction, deps.embedder, signal);
    const replaced = await writer.locked(async () => {
      // Another writer may have deleted or re-extracted the chunk meanwhile (the lock caught up with it).
      const current = state.graph.chunks.get(id);
      return current?.extraction === 'fallback' ? replaceChunk(deps, { ...current, extraction: 'llm' }, extraction, vectors, signal) : null;
    });
    if (!replaced) continue;
    report.chunksReextracted++;
    report.nodesAdded += replaced.nodes;
    report.edgesAdded += replaced.edges;
  }
  report.ms = Date.now() - started;
  return report;
}

/**
 * Replaces everything `chunk` owns with the graph of `extraction`, committed as one batch (the
 * caller holds the writer lock). The old nodes leave the in-memory graph first so the new ones
 * are built (entity merges, chain neighbours) as if the chunk were new; if the commit fails they
 * are put back.
 */
async function replaceChunk(
  deps: IngestDeps,
  chunk: Chunk,
  extraction: Extraction,
  vectors: ExtractionVectors,
  signal?: AbortSignal,
): Promise<{ nodes: number; edges: number }> {
  const { state } = deps;
  state.graph.holdRelations();
  const { deleteChunks: _chunkStays, deleteHashes: _hashStays, ...removal } = deletionBatch(state.graph, state.meta, new Set([chunk.id]));
  const undo = undoBatch(state, removal);
  applyBatch(state, removal);
  try {
    const build = await buildChunk(deps, chunk, extraction, vectors, signal);
    let { nextKey } = build;
    const evolution = evolutionInTimeOrder(state.graph, chunk, build.built.nodes, build.built.edges, () => nextKey++);
    const addedVectors = await edgeVectorsFor(evolution.added, deps.embedder, deps.config.ingest.edgeVectors, signal);
    throwIfAborted(signal);
    // Edges of other chunks (the chain edge the next chunk made, causal edges into this Episode)
    // stay as they were, owner and key included, when both their ends are still there.
    const builtNodes = new Set(build.built.nodes.map((n) => n.id));
    const kept = (undo.putEdges ?? []).filter((e) => e.chunkId !== chunk.id && [e.from, e.to].every((id) => builtNodes.has(id) || state.graph.nodes.has(id)));
    const superseded = new Set([...evolution.dropped, ...kept.map((e) => e.id)]);
    const edges = [...build.built.edges.filter((e) => !superseded.has(e.id)), ...evolution.added];
    const keptIds = new Set(kept.map((e) => e.id));
    const additions: WriteBatch = {
      putNodes: build.built.nodes,
      putEdges: [...edges, ...kept],
      putChunks: [chunkWithMentions(chunk, build.built)],
      putVectors: [
        ...build.built.nodeVectors,
        ...build.edgeVectors.filter(([id]) => !superseded.has(id)),
        ...addedVectors,
        ...(undo.putVectors ?? []).filter(([id]) => keptIds.has(id)),
      ],
      meta: { ...state.meta, nextKey },
    };
    // Applied over the state with the removal already in it: re-deleting what is gone is a no-op.
    const batch = netBatch(removal, additions);
    await deps.writer.commit({
      ...batch,
      deleteEdges: [...(batch.deleteEdges ?? []), ...evolution.bypassed],
      deleteVectors: [...(batch.deleteVectors ?? []), ...evolution.bypassed.filter((id) => state.graph.vectors.has(id))],
    });
    return { nodes: build.built.nodes.length, edges: edges.length };
  } catch (err) {
    applyBatch(state, undo);
    throw err;
  }
}

/** Puts back, in memory, what `removal` takes away: the nodes, edges and vectors as they are now. */
function undoBatch(state: IngestDeps['state'], removal: WriteBatch): WriteBatch {
  const { graph } = state;
  const present = <T>(value: T | undefined): T[] => (value === undefined ? [] : [value]);
  const nodeIds = [...(removal.deleteNodes ?? []), ...(removal.putNodes ?? []).map((n) => n.id)];
  return {
    putNodes: nodeIds.flatMap((id) => present(graph.nodes.get(id))),
    putEdges: (removal.deleteEdges ?? []).flatMap((id) => present(graph.edges.get(id))),
    putVectors: (removal.deleteVectors ?? []).flatMap((id) => present(graph.vectors.get(id)).map((vector): [string, Float32Array] => [id, vector])),
    meta: state.meta,
  };
}

/**
 * `removal` followed by `additions` as one batch whose result does not depend on the order a
 * store applies deletes and puts in: ids that are put again are not deleted.
 */
function netBatch(removal: WriteBatch, additions: WriteBatch): WriteBatch {
  const putNodes = new Set((additions.putNodes ?? []).map((n) => n.id));
  const putEdges = new Set((additions.putEdges ?? []).map((e) => e.id));
  const putVectors = new Set((additions.putVectors ?? []).map(([id]) => id));
  return {
    ...additions,
    putNodes: [...(removal.putNodes ?? []).filter((n) => !putNodes.has(n.id)), ...(additions.putNodes ?? [])],
    deleteNodes: (removal.deleteNodes ?? []).filter((id) => !putNodes.has(id)),
    deleteEdges: (removal.deleteEdges ?? []).filter((id) => !putEdges.has(id)),
    deleteVectors: (removal.deleteVectors ?? []).filter((id) => !putVectors.has(id)),
  };
}

/**
 * `buildChunkGraph` links an entity's new facts after the entity's latest existing fact: right for
 * a new chunk, backwards for a re-extracted older one. Here each such link is replaced by the
 * links of the chunk's chain into the entity's timeline: from the last existing fact before the
 * chunk, and to the first existing fact after it; the link that went straight from the one to
 * the other is `bypassed` (to delete). A pure function of the graph and the build.
 */
export function evolutionInTimeOrder(
  graph: MemoryGraph,
  chunk: Chunk,
  builtNodes: readonly GraphNode[],
  builtEdges: readonly GraphEdge[],
  nextKey: () => number,
): { dropped: Set<string>; added: GraphEdge[]; bypassed: string[] } {
  const newFacts = new Map(builtNodes.flatMap((n) => (n.layer === 'facetPoint' ? [[n.id, n] as const] : [])));
  const nextInChain = new Map(builtEdges.filter((e) => e.type === 'evolution' && newFacts.has(e.from)).map((e) => [e.from, e.to]));
  const chunkPlace = timelinePlace(chunk.time, chunk.order);
  const dropped = new Set<string>();
  const added: GraphEdge[] = [];
  const bypassed: string[] = [];
  const link = (from: FacetPointNode, to: FacetPointNode) =>
    added.push({ id: edgeId('evolution', from.id, to.id), key: nextKey(), type: 'evolution', from: from.id, to: to.id, chunkId: chunk.id, description: `${from.content} → later: ${to.content}`, confidence: null });
  for (const edge of builtEdges) {
    const first = newFacts.get(edge.to);
    if (edge.type !== 'evolution' || newFacts.has(edge.from) || !first?.entityId) continue;
    dropped.add(edge.id);
    let last = first;
    for (let id = nextInChain.get(first.id); id !== undefined; id = nextInChain.get(id)) last = newFacts.get(id) ?? last;
    let before: { fact: FacetPointNode; place: TimelinePlace } | null = null;
    let after: { fact: FacetPointNode; place: TimelinePlace } | null = null;
    for (const involves of graph.edgesTo(first.entityId, 'involves_entity')) {
      const fact = graph.nodes.get(involves.from);
      const episode = fact?.layer === 'facetPoint' ? graph.nodes.get(fact.episodeId) : undefined;
      if (fact?.layer !== 'facetPoint' || episode?.layer !== 'episode') continue;
      const place = timelinePlace(episode.time, episode.order);
      if (comparePlaces(place, chunkPlace) < 0 && (!before || comparePlaces(place, before.place) > 0)) before = { fact, place };
      if (comparePlaces(place, chunkPlace) > 0 && (!after || comparePlaces(place, after.place) < 0)) after = { fact, place };
    }
    if (before) link(before.fact, first);
    if (after) link(last, after.fact);
    const straight = before && after ? edgeId('evolution', before.fact.id, after.fact.id) : '';
    if (graph.edges.has(straight)) bypassed.push(straight);
  }
  return { dropped, added, bypassed };
}

/** Position of an Episode on the timeline: its time, ties broken by ingestion order. */
interface TimelinePlace {
  millis: number;
  order: number;
}

function timelinePlace(time: string | null, order: number): TimelinePlace {
  return { millis: isoToMillis(time), order };
}

function comparePlaces(a: TimelinePlace, b: TimelinePlace): number {
  return a.millis - b.millis || a.order - b.order;
}
