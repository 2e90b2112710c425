import type { EdgeVectorMode, PrismConfig } from '../config.ts';
import type { Embedder } from '../embed/types.ts';
import { PrismError, throwIfAborted } from '../errors.ts';
import type { MemoryGraph } from '../graph/memory-graph.ts';
import { turnLine } from '../graph/chunk-text.ts';
import { VectorTable } from '../graph/vector-table.ts';
import { COMPOSABLE_EDGE_TYPES, edgeId, type Chunk, type ChunkTurn, type EpisodeNode, type GraphEdge, type GraphNode, type MemoryMeta } from '../graph/types.ts';
import { edgeSpace, type IndexSet, type IndexSpace, type IndexVectors } from '../vector/index-set.ts';
import type { LlmClient } from '../llm/types.ts';
import { usageTotals } from '../llm/usage.ts';
import type { WriteBatch } from '../store/types.ts';
import { sha256Hex } from '../util/hash.ts';
import { createSerial, type Serial } from '../util/serial.ts';
import { defaultCounterTokens } from '../util/tokens.ts';
import { buildChunkGraph, chunkWithMentions, embedExtraction, type BuildOutput, type ExtractionVectors } from './build-graph.ts';
import { chunkIdOf, isIngested, type ChunkDraft } from './chunking.ts';
import { consolidateCausal } from './consolidate.ts';
import { chunkExtraction, type Extraction, type ExtractionOutcome, type Extractor } from './extraction.ts';
import type { SkippedMessage } from './identity.ts';

/** The mutable state of an open memory that ingestion advances batch by batch. */
export interface MemoryState {
  graph: MemoryGraph;
  indexes: IndexSet;
  meta: MemoryMeta;
  hashes: Set<string>;
  /** Bumped by every applied batch: derived indexes (BM25) catch up when it moved. */
  version: number;
}

/**
 * Where ingestion commits: one partition of a store, shared with other writers (processes,
 * tabs). `locked` holds the partition's writer lock and first brings the state up to every
 * batch another writer committed; `commit` makes a batch durable and then applies it.
 */
export interface BatchWriter {
  locked<T>(task: () => Promise<T>): Promise<T>;
  commit(batch: WriteBatch): Promise<void>;
}

export type IngestStage = 'extract' | 'embed' | 'commit' | 'consolidate' | 'done';

/** Reported after each stage of each chunk while adding. */
export interface IngestProgress {
  stage: IngestStage;
  chunksDone: number;
  chunksTotal: number;
  /** Chunks skipped because their hash was already ingested. */
  chunksSkipped: number;
  llmCalls: number;
}

/** Control of a long add: cancel it, or follow it. */
export interface IngestOptions {
  /** Aborting stops between chunks with `ABORTED`; what was committed stays, and the same add resumes. Default: none. */
  signal?: AbortSignal;
  /** Called after each stage of each chunk. Default: none. */
  onProgress?: (progress: IngestProgress) => void;
}

/** What an add did: chunks added or already present (skipped), graph growth, warnings, time. */
export interface IngestReport {
  chunksAdded: number;
  chunksSkipped: number;
  nodesAdded: number;
  edgesAdded: number;
  causalEdgesAdded: number;
  /** Extraction fallbacks and failed consolidations; ingestion went on past each. */
  warnings: string[];
  /** Messages of an `add()` not stored, each with the reason and the stored id it matched. */
  skipped: SkippedMessage[];
  ms: number;
}

export interface IngestDeps {
  state: MemoryState;
  writer: BatchWriter;
  embedder: Embedder;
  extractor: Extractor;
  llm: LlmClient | null;
  config: PrismConfig;
  /** Extractions started ahead of the chunk being built (LLM mode overlaps network with building). */
  extractAhead: number;
  /**
   * Called under the writer lock, against the committed state, right before a chunk is built
   * and committed; throwing stops the ingest before that chunk. `add()` re-checks message
   * identity here. Default: none.
   */
  confirm?: (chunk: Omit<Chunk, 'order'>) => void;
}

const CONSOLIDATED_THROUGH = 'consolidatedThrough';

/**
 * Ingests chunk drafts in order. Each chunk is one atomic store commit (hash included), so
 * an abort or crash leaves the memory at its last committed chunk and a re-run skips what
 * is done. Causal consolidation runs in the background every `consolidateEvery` chunks and
 * is awaited before returning.
 */
export async function ingestChunks(drafts: readonly ChunkDraft[], deps: IngestDeps, options: IngestOptions = {}): Promise<IngestReport> {
  const started = Date.now();
  const { state, config, signal } = { ...deps, signal: options.signal };
  const report: IngestReport = { chunksAdded: 0, chunksSkipped: 0, nodesAdded: 0, edgesAdded: 0, causalEdgesAdded: 0, warnings: [], skipped: [], ms: 0 };
  const totalLlmCalls = () => (deps.llm ? usageTotals(deps.llm.usage()).calls : 0);
  const llmCallsBefore = totalLlmCalls();
  const llmCalls = () => totalLlmCalls() - llmCallsBefore;
  const progress = (stage: IngestStage) =>
    options.onProgress?.({ stage, chunksDone: report.chunksAdded + report.chunksSkipped, chunksTotal: drafts.length, chunksSkipped: report.chunksSkipped, llmCalls: llmCalls() });

  const digests = await Promise.all(drafts.map((d) => sha256Hex(d.dedupKey ?? d.text)));
  const ids = digests.map(chunkIdOf);
  const todo = drafts.map((draft, i) => ({ draft, id: ids[i] ?? '' })).filter((_, i) => {
    const skipped = isIngested(state.hashes, digests[i] ?? '') || ids.indexOf(ids[i] ?? '') < i;
    if (skipped) report.chunksSkipped++;
    return !skipped;
  });
  progress('extract');

  const extractions = new Map<number, Promise<ExtractionOutcome>>();
  // Extractions started ahead are cancelled when the ingest stops, so none keeps retrying after it.
  const ahead = new AbortController();
  const extractSignal = signal ? AbortSignal.any([signal, ahead.signal]) : ahead.signal;
  const startExtraction = (i: number) => {
    const item = todo[i];
    if (!item || extractions.has(i)) return;
    const promise = deps.extractor.extract({ chunkId: item.id, header: item.draft.header, time: item.draft.time, turns: item.draft.turns }, extractSignal);
    promise.catch(() => undefined); // observed when awaited below
    extractions.set(i, promise);
  };

  // Background consolidation and the main loop both allocate index keys and commit batches:
  // each does so inside `exclusive`, so keys never collide and memory follows the store in order.
  const exclusive = createSerial();
  let consolidation: Promise<void> = Promise.resolve();
  try {
    for (let i = 0; i < todo.length; i++) {
      throwIfAborted(signal);
      for (let j = i; j <= i + deps.extractAhead; j++) startExtraction(j);
      const item = todo[i];
      if (!item) continue;
      const outcome = await extractions.get(i);
      extractions.delete(i);
      if (!outcome) continue;
      if (outcome.warning) report.warnings.push(`chunk ${item.draft.sessionId}: ${outcome.warning}`);
      throwIfAborted(signal);

      progress('embed');
      const extraction = outcome.extraction;
      const vectors = await embedExtraction(extraction, deps.embedder, signal);
      const textTokens = defaultCounterTokens(item.draft.text);
      const chunk = {
        id: item.id,
        sessionId: item.draft.sessionId,
        header: item.draft.header,
        text: item.draft.text,
        time: item.draft.time,
        turns: item.draft.turns.map(withLineTokens),
        extraction: chunkExtraction(deps.extractor, outcome),
        ...(textTokens === undefined ? {} : { textTokens }),
      };
      const built = await exclusive(() => deps.writer.locked(() => commitChunk(deps, chunk, extraction, vectors, () => progress('commit'), signal)));
      if (!built) {
        // Another writer committed the same chunk while this one was extracting it.
        report.chunksSkipped++;
        continue;
      }
      report.chunksAdded++;
      report.nodesAdded += built.nodes.length;
      report.edgesAdded += built.edges.length;
      progress('extract');

      if (deps.llm && shouldConsolidate(state.meta, config.ingest.consolidateEvery)) {
        const llm = deps.llm;
        const through = state.meta.chunkCount;
        consolidation = consolidation.then(() => runConsolidation(deps, llm, through, report, exclusive, () => progress('consolidate'), signal));
      }
    }
  } finally {
    ahead.abort();
    // Background consolidation is part of this ingest: wait for it even when a chunk failed.
    await consolidation;
  }
  progress('done');
  report.ms = Date.now() - started;
  return report;
}

/** Builds one chunk's nodes and edges against the current graph, embeds its edges and commits it (hash included) as one batch. */
async function commitChunk(
  deps: IngestDeps,
  draft: Omit<Chunk, 'order'>,
  extraction: Extraction,
  vectors: ExtractionVectors,
  onCommit: () => void,
  signal?: AbortSignal,
): Promise<BuildOutput | null> {
  const { state } = deps;
  if (state.hashes.has(draft.id)) return null;
  deps.confirm?.(draft);
  const chunk: Chunk = { ...draft, order: state.meta.chunkCount };
  const { built, edgeVectors, nextKey } = await buildChunk(deps, chunk, extraction, vectors, signal);
  throwIfAborted(signal);

  onCommit();
  const batch: WriteBatch = {
    putNodes: built.nodes,
    putEdges: built.edges,
    putChunks: [chunkWithMentions(chunk, built)],
    putVectors: [...built.nodeVectors, ...edgeVectors],
    putHashes: [chunk.id],
    meta: { ...state.meta, nextKey, chunkCount: state.meta.chunkCount + 1 },
  };
  await deps.writer.commit(batch);
  return built;
}

/** One chunk's graph against the current state, with its edge vectors; keys are allocated from `meta.nextKey` (returned advanced). */
export async function buildChunk(
  deps: Pick<IngestDeps, 'state' | 'config' | 'embedder'>,
  chunk: Chunk,
  extraction: Extraction,
  vectors: ExtractionVectors,
  signal?: AbortSignal,
): Promise<{ built: BuildOutput; edgeVectors: Array<[string, Float32Array]>; nextKey: number }> {
  const { state, config } = deps;
  let nextKey = state.meta.nextKey;
  const built = buildChunkGraph({
    chunk,
    extraction,
    vectors,
    graph: state.graph,
    nearestEntity: (v) => nearest(state, 'entity', v),
    nearestFacetPoint: (v) => nearest(state, 'facetPoint', v),
    config: config.ingest,
    nextKey: () => nextKey++,
  });
  const edgeVectors = await edgeVectorsFor(built.edges, deps.embedder, config.ingest.edgeVectors, signal);
  return { built, edgeVectors, nextKey };
}

/** True when at least `every` chunks have been committed since the last consolidation. */
function shouldConsolidate(meta: MemoryMeta, every: number): boolean {
  const through = Number(meta.settings[CONSOLIDATED_THROUGH] ?? 0);
  return meta.chunkCount - through >= every;
}

/** Consolidation failures are warnings: the causal layer is an enrichment, never a reason to lose chunks. */
async function runConsolidation(
  deps: IngestDeps,
  llm: LlmClient,
  through: number,
  report: IngestReport,
  exclusive: Serial,
  onStart: () => void,
  signal?: AbortSignal,
): Promise<void> {
  const { state, config } = deps;
  onStart();
  const episodes = state.graph
    .nodesOfLayer('episode')
    .filter((ep) => ep.order < through)
    .sort((a, b) => b.order - a.order)
    .slice(0, config.ingest.consolidateWindow)
    .reverse();
  try {
    const pairs = await consolidateCausal(episodes, state.graph, llm, config.ingest, signal);
    const added = await exclusive(() => deps.writer.locked(async () => {
      let nextKey = state.meta.nextKey;
      // Another writer may have deleted an Episode while the LLM judged it: no edge may dangle.
      const held = pairs.filter((p) => state.graph.nodes.has(p.causeId) && state.graph.nodes.has(p.effectId));
      const edges: GraphEdge[] = held.map((p) => ({
        id: edgeId('causal', p.causeId, p.effectId),
        key: nextKey++,
        type: 'causal',
        from: p.causeId,
        to: p.effectId,
        chunkId: (state.graph.nodes.get(p.effectId) as EpisodeNode | undefined)?.chunkId ?? '',
        description: p.description,
        confidence: p.confidence,
      }));
      const vectors = await edgeVectorsFor(edges, deps.embedder, 'embedded', signal);
      const meta: MemoryMeta = { ...state.meta, nextKey, settings: { ...state.meta.settings, [CONSOLIDATED_THROUGH]: Math.max(through, Number(state.meta.settings[CONSOLIDATED_THROUGH] ?? 0)) } };
      const batch: WriteBatch = { putEdges: edges, putVectors: vectors, meta };
      await deps.writer.commit(batch);
      return edges.length;
    }));
    report.causalEdgesAdded += added;
  } catch (err) {
    if (err instanceof PrismError && err.code === 'ABORTED') return;
    report.warnings.push(`causal consolidation through chunk ${through} failed: ${err instanceof Error ? err.message : String(err)}`);
  }
}


/**
 * Vectors of relation edges to store: embedded from their descriptions, except the types
 * `mode` governs (`COMPOSABLE_EDGE_TYPES`), which get none when `mode` is `none` or `composed`
 * (N2 composes those from the endpoint vectors when it reads them).
 */
export async function edgeVectorsFor(
  edges: readonly GraphEdge[],
  embedder: Embedder,
  mode: EdgeVectorMode,
  signal?: AbortSignal,
): Promise<Array<[string, Float32Array]>> {
  const out: Array<[string, Float32Array]> = [];
  const toEmbed: GraphEdge[] = [];
  for (const edge of edges) {
    if (edge.description === null || edgeSpace(edge.type) === null) continue;
    if (COMPOSABLE_EDGE_TYPES.has(edge.type) && mode !== 'embedded') continue;
    toEmbed.push(edge);
  }
  if (toEmbed.length === 0) return out;
  const vectors = await embedder.embed(
    toEmbed.map((e) => e.description ?? ''),
    signal ? { signal } : {},
  );
  toEmbed.forEach((e, i) => out.push([e.id, vectors[i] ?? new Float32Array(embedder.dim)]));
  return out;
}

function nearest(state: MemoryState, layer: 'entity' | 'facetPoint', vector: Float32Array): { id: string; score: number } | null {
  const [hit] = state.indexes.search(layer, vector, 1);
  const id = hit ? state.graph.idForKey(hit.key) : undefined;
  return hit && id ? { id, score: hit.score } : null;
}

/** `turn` with its line's tokens under the default counter (`ChunkTurn.lineTokens`), when that counter is installed. */
function withLineTokens(turn: ChunkTurn): ChunkTurn {
  const lineTokens = defaultCounterTokens(turnLine(turn));
  return lineTokens === undefined ? turn : { ...turn, lineTokens };
}

/** A batch's own vectors, for `applyBatch` to index; the graph's table (which has just taken the same values) lends them on. */
function batchVectors(batch: WriteBatch, table: ReadonlyMap<string, Float32Array>): IndexVectors {
  const own = new Map(batch.putVectors ?? []);
  if (!(table instanceof VectorTable)) return own;
  return { has: (id) => own.has(id), get: (id) => own.get(id), lend: (ids, keys, rows) => table.lend(ids, keys, rows) };
}

/**
 * Mirrors a committed batch into the in-memory graph and the vector indexes. Called only
 * after the store accepted the batch, so memory never runs ahead of what is durable. New nodes
 * and edges are indexed under their vectors in `indexVectors`: the batch's own by default (which
 * the graph's table then lends to the index, holding the same values); a reload passes the
 * graph's table, which already holds them.
 */
export function applyBatch(state: MemoryState, batch: WriteBatch, indexVectors: IndexVectors = batchVectors(batch, state.graph.vectors)): void {
  const { graph, indexes } = state;
  for (const id of batch.deleteEdges ?? []) {
    const edge = graph.edges.get(id);
    const space = edge ? edgeSpace(edge.type) : null;
    if (edge && space) indexes.remove(space, [edge.key]);
    graph.deleteEdge(id);
  }
  for (const id of batch.deleteNodes ?? []) {
    const node = graph.nodes.get(id);
    if (node) indexes.remove(node.layer, [node.key]);
    graph.deleteNode(id);
  }
  for (const id of batch.deleteChunks ?? []) graph.deleteChunk(id);
  for (const hash of batch.deleteHashes ?? []) state.hashes.delete(hash);

  for (const chunk of batch.putChunks ?? []) graph.putChunk(chunk);
  for (const [id, vector] of batch.putVectors ?? []) graph.vectors.set(id, vector);
  // Index additions are grouped per space so each index takes one batched add.
  const additions = new Map<IndexSpace, { keys: number[]; ids: string[]; places: number[] }>();
  const queue = (space: IndexSpace | null, key: number, id: string) => {
    if (!space) return;
    // One lookup a vector where records are kept (a reload indexes every vector of a memory).
    const place = indexVectors.recordPlace?.(id);
    if (place === undefined && !indexVectors.has(id)) return;
    let list = additions.get(space);
    if (!list) additions.set(space, (list = { keys: [], ids: [], places: [] }));
    list.keys.push(key);
    list.ids.push(id);
    list.places.push(place ?? -1);
  };
  // A batch's node ids are distinct (checked), so into a graph that holds no node (an open's) each is new.
  const intoEmpty = graph.nodes.size === 0;
  // Indexed, not `for…of`: an open puts every record of a memory here, and an iterator's step was garbage for the collector.
  const putNodes = batch.putNodes ?? [];
  for (let i = 0; i < putNodes.length; i++) {
    const node = putNodes[i] as GraphNode;
    if (intoEmpty) graph.putNewNode(node);
    // A re-put node (an Entity gaining a chunk) keeps its indexed vector.
    else if (!graph.putNode(node)) continue;
    queue(node.layer, node.key, node.id);
  }
  const putEdges = batch.putEdges ?? [];
  for (let i = 0; i < putEdges.length; i++) {
    const edge = putEdges[i] as GraphEdge;
    graph.putEdge(edge);
    queue(edgeSpace(edge.type), edge.key, edge.id);
  }
  for (const [space, { keys, ids, places }] of additions) indexes.add(space, keys, ids, indexVectors, places);
  for (const hash of batch.putHashes ?? []) state.hashes.add(hash);
  if (batch.meta) state.meta = batch.meta;
  state.version++;
}
