import type { PrismConfig } from '../config.ts';
import type { MemoryGraph } from '../graph/memory-graph.ts';
import type { ChunkTurn } from '../graph/types.ts';
import { turnLine } from '../ingest/chunking.ts';
import { factCosines, type QueryEvidence } from './evidence.ts';
import { dot } from '../util/vectors.ts';
import type { ContextUnit } from './pack.ts';
import type { PathTrace, RankedEpisode } from './types.ts';

/** `episode`: all turns of an Episode; `turn`: one turn of it (fine units). */
export type UnitKind = 'episode' | 'turn';

export interface RetrievedUnit extends ContextUnit {
  episodeId: string;
  kind: UnitKind;
  /** The N1 path that brought the unit's Episode into the bundle. */
  trace: PathTrace;
}

/**
 * Context units for ranked Episodes, in the order the packer should take them: whole Episodes,
 * or with `fine`, every turn of the ranked Episodes is scored on its own
 * (see `turnScore`) and offered as a unit, best first, so a tight budget holds the best
 * evidence from several Episodes rather than all of one.
 */
export function buildUnits(graph: MemoryGraph, ranked: readonly RankedEpisode[], evidence: QueryEvidence, config: PrismConfig, fine: boolean): RetrievedUnit[] {
  const episodes = ranked.flatMap((episode) => {
    const node = graph.nodes.get(episode.episodeId);
    const chunk = node?.layer === 'episode' ? graph.chunks.get(node.chunkId) : undefined;
    return node?.layer === 'episode' && chunk && chunk.turns.length > 0 ? [{ episode, node, chunk }] : [];
  });
  if (!fine) {
    return episodes.map(({ episode, node, chunk }) => ({
      ...turnsText(chunk.turns),
      id: node.id,
      episodeId: node.id,
      header: chunk.header,
      score: episode.score,
      time: node.time ?? chunk.time,
      trace: episode.trace,
      kind: 'episode',
    }));
  }
  const w = config.retrieval.turnScore;
  const lexicalMax = Math.max(0, ...[...evidence.lexicalTurns.values()].flatMap((m) => [...m.values()]));
  const scores = episodes.map((e) => e.episode.score);
  const [lo, hi] = [Math.min(...scores), Math.max(...scores)];
  const units: RetrievedUnit[] = [];
  for (const { episode, node, chunk } of episodes) {
    const episodeWeight = hi > lo ? (episode.score - lo) / (hi - lo) : 1;
    const onPath = new Set<string>();
    for (const traced of episode.trace.nodes) {
      const point = graph.nodes.get(traced.id);
      if (point?.layer === 'facetPoint' && point.episodeId === node.id) point.dialogIds.forEach((d) => onPath.add(d));
    }
    const fact = new Map<string, number>();
    const facet = new Map<string, number>();
    for (const { point, cosine } of factCosines(graph, node.id, evidence.queryVector)) {
      const facetVector = graph.vectors.get(point.facetId);
      const facetCosine = facetVector ? dot(facetVector, evidence.queryVector) : 0;
      for (const d of point.dialogIds) {
        fact.set(d, Math.max(cosine, fact.get(d) ?? -1));
        facet.set(d, Math.max(facetCosine, facet.get(d) ?? -1));
      }
    }
    const lexical = evidence.lexicalTurns.get(node.id);
    for (const turn of chunk.turns) {
      const score =
        w.episode * episodeWeight +
        w.fact * Math.max(0, fact.get(turn.dialogId) ?? 0) +
        w.facet * Math.max(0, facet.get(turn.dialogId) ?? 0) +
        (lexicalMax > 0 ? (w.lexical * (lexical?.get(turn.dialogId) ?? 0)) / lexicalMax : 0) +
        (onPath.has(turn.dialogId) ? w.path : 0);
      units.push({
        ...turnsText([turn]),
        id: `${node.id}#${turn.dialogId}`,
        episodeId: node.id,
        header: chunk.header,
        score,
        time: node.time ?? chunk.time,
        trace: episode.trace,
        kind: 'turn',
      });
    }
  }
  // Stable: equal scores keep Episode rank, then conversation order.
  return units.map((u, i) => ({ u, i })).sort((a, b) => b.u.score - a.u.score || a.i - b.i).map(({ u }) => u);
}

function turnsText(turns: readonly ChunkTurn[]): { text: string; dialogIds: string[] } {
  return { text: turns.map(turnLine).join('\n'), dialogIds: turns.map((t) => t.dialogId) };
}
