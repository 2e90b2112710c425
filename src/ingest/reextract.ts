import { PrismError, throwIfAborted } from '../errors.ts';
import type { MemoryGraph } from '../graph/memory-graph.ts';
import type { Chunk } from '../graph/types.ts';
import type { WriteBatch } from '../store/types.ts';
import { splitVectors, textsToEmbed } from './build-graph.ts';
import { deletionBatch } from './chunk-removal.ts';
import { chunkExtraction, type Extraction } from './extraction.ts';
import { applyBatch, buildChunk, type IngestDeps } from './pipeline.ts';

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
  const { state, extractor, signal } = { ...deps, signal: options.signal };
  if (extractor.mode !== 'llm') throw new PrismError('LLM_NOT_CONFIGURED', 're-extraction needs a memory opened with LLM extraction');
  const report: ReextractReport = { chunksReextracted: 0, chunksStillFallback: 0, nodesAdded: 0, edgesAdded: 0, warnings: [], ms: 0 };
  for (const id of fallbackChunkIds(state.graph)) {
    throwIfAborted(signal);
    const chunk = state.graph.chunks.get(id);
    if (!chunk) continue;
    const outcome = await extractor.extract({ chunkId: chunk.id, header: chunk.header, time: chunk.time, turns: chunk.turns }, signal);
    if (chunkExtraction(extractor, outcome) === 'fallback') {
      report.chunksStillFallback++;
      report.warnings.push(`chunk ${chunk.sessionId}: ${outcome.warning ?? 'fell back again'}`);
      continue;
    }
    const replaced = await replaceChunk(deps, { ...chunk, extraction: 'llm' }, outcome.extraction, signal);
    report.chunksReextracted++;
    report.nodesAdded += replaced.nodes;
    report.edgesAdded += replaced.edges;
  }
  report.ms = Date.now() - started;
  return report;
}

/**
 * Replaces everything `chunk` owns with the graph of `extraction`, committed as one batch. The
 * old nodes leave the in-memory graph first so the new ones are built (entity merges, chain
 * neighbours) as if the chunk were new; if the commit fails they are put back.
 */
async function replaceChunk(deps: IngestDeps, chunk: Chunk, extraction: Extraction, signal?: AbortSignal): Promise<{ nodes: number; edges: number }> {
  const { state, embedder } = deps;
  const vectors = splitVectors(extraction, await embedder.embed(textsToEmbed(extraction), signal ? { signal } : {}));
  throwIfAborted(signal);

  const { deleteChunks: _chunkStays, deleteHashes: _hashStays, ...removal } = deletionBatch(state, new Set([chunk.id]));
  const undo = undoBatch(state, removal);
  applyBatch(state, removal);
  try {
    const { built, edgeVectors, nextKey } = await buildChunk(deps, chunk, extraction, vectors, signal);
    throwIfAborted(signal);
    // Edges of other chunks (say, causal ones into this Episode) survive when both ends still exist.
    const builtNodes = new Set(built.nodes.map((n) => n.id));
    const builtEdges = new Set(built.edges.map((e) => e.id));
    const kept = (undo.putEdges ?? []).filter(
      (e) => e.chunkId !== chunk.id && !builtEdges.has(e.id) && [e.from, e.to].every((id) => builtNodes.has(id) || state.graph.nodes.has(id)),
    );
    const keptIds = new Set(kept.map((e) => e.id));
    const additions: WriteBatch = {
      putNodes: built.nodes,
      putEdges: [...built.edges, ...kept],
      putChunks: [chunk],
      putVectors: [...built.nodeVectors, ...edgeVectors, ...(undo.putVectors ?? []).filter(([id]) => keptIds.has(id))],
      meta: { ...state.meta, nextKey },
    };
    await deps.store.commit(netBatch(removal, additions));
    applyBatch(state, additions);
    return { nodes: built.nodes.length, edges: built.edges.length };
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
