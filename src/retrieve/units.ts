import type { PrismConfig } from '../config.ts';
import type { MemoryGraph } from '../graph/memory-graph.ts';
import type { ChunkTurn } from '../graph/types.ts';
import { turnLine } from '../ingest/chunking.ts';
import { factCosines, type QueryEvidence } from './evidence.ts';
import type { ContextUnit } from './pack.ts';
import type { PathTrace, RankedEpisode } from './types.ts';

/** `episode`: all turns of an Episode; `key-turns`: its best evidence turns; `other-turns`: the rest of it. */
export type UnitKind = 'episode' | 'key-turns' | 'other-turns';

export interface RetrievedUnit extends ContextUnit {
  episodeId: string;
  kind: UnitKind;
  /** The N1 path that brought the unit's Episode into the bundle. */
  trace: PathTrace;
}

/**
 * Context units for ranked Episodes, in the order the packer should take them. Whole Episodes
 * by default; with `flags.fineUnits`, every Episode's key turns come first (in Episode rank
 * order) and the rest of each Episode after them, so a tight budget holds the best evidence of
 * more Episodes, and a loose one still gets the whole conversation around it.
 */
export function buildUnits(graph: MemoryGraph, ranked: readonly RankedEpisode[], evidence: QueryEvidence, config: PrismConfig): RetrievedUnit[] {
  const units: RetrievedUnit[] = [];
  const rest: RetrievedUnit[] = [];
  for (const episode of ranked) {
    const node = graph.nodes.get(episode.episodeId);
    const chunk = node?.layer === 'episode' ? graph.chunks.get(node.chunkId) : undefined;
    if (!node || node.layer !== 'episode' || !chunk || chunk.turns.length === 0) continue;
    const base = { episodeId: node.id, header: chunk.header, score: episode.score, time: node.time ?? chunk.time, trace: episode.trace };
    if (!config.flags.fineUnits) {
      units.push({ ...base, ...turnsText(chunk.turns), id: node.id, kind: 'episode' });
      continue;
    }
    const key = keyTurns(graph, episode, chunk.turns, evidence, config);
    units.push({ ...base, ...turnsText(chunk.turns.filter((t) => key.has(t.dialogId))), id: `${node.id}#key`, kind: 'key-turns' });
    const others = chunk.turns.filter((t) => !key.has(t.dialogId));
    if (others.length > 0) rest.push({ ...base, ...turnsText(others), id: `${node.id}#rest`, kind: 'other-turns' });
  }
  return [...units, ...rest];
}

function turnsText(turns: readonly ChunkTurn[]): { text: string; dialogIds: string[] } {
  return { text: turns.map(turnLine).join('\n'), dialogIds: turns.map((t) => t.dialogId) };
}

/**
 * The Episode's best evidence turns, at most `keyTurnsPerEpisode`: first the turns behind the
 * FacetPoints on its winning path, then by w_fact · (best cosine of a FacetPoint citing the
 * turn) + w_lex · (turn BM25 / the Episode's best), the local precision step's weights.
 */
function keyTurns(graph: MemoryGraph, episode: RankedEpisode, turns: readonly ChunkTurn[], evidence: QueryEvidence, config: PrismConfig): Set<string> {
  const w = config.retrieval.localPrecision;
  const onPath = new Set<string>();
  for (const node of episode.trace.nodes) {
    const point = graph.nodes.get(node.id);
    if (point?.layer === 'facetPoint' && point.episodeId === episode.episodeId) point.dialogIds.forEach((d) => onPath.add(d));
  }
  const factScore = new Map<string, number>();
  for (const { point, cosine } of factCosines(graph, episode.episodeId, evidence.queryVector)) {
    for (const d of point.dialogIds) factScore.set(d, Math.max(cosine, factScore.get(d) ?? 0));
  }
  const lexical = evidence.lexicalTurns.get(episode.episodeId);
  const lexicalMax = Math.max(0, ...(lexical?.values() ?? []));
  const score = (d: string): number =>
    (onPath.has(d) ? Infinity : 0) + w.fact * (factScore.get(d) ?? 0) + (lexicalMax > 0 ? (w.lexical * (lexical?.get(d) ?? 0)) / lexicalMax : 0);
  const ranked = turns
    .map((t, position) => ({ dialogId: t.dialogId, position, score: score(t.dialogId) }))
    .sort((a, b) => b.score - a.score || a.position - b.position);
  return new Set(ranked.slice(0, Math.max(1, config.retrieval.keyTurnsPerEpisode)).map((t) => t.dialogId));
}
