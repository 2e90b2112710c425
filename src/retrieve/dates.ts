import type { MemoryGraph } from '../graph/memory-graph.ts';
import type { EpisodeNode } from '../graph/types.ts';
import { WRITTEN_YEAR } from '../util/written-year.ts';

/**
 * The dates a query names outright (see `absoluteDates`), as ISO prefixes. The date parser
 * (chrono, part of ingest) is loaded only for a query that writes a year.
 */
export async function queryDates(query: string): Promise<string[]> {
  if (!WRITTEN_YEAR.test(query)) return [];
  const { absoluteDates } = await import('../ingest/time.ts');
  return absoluteDates(query);
}

/** Does an ISO time (a session's date-time, or a fact's resolved date) fall on or in one of `dates`? */
export function fallsOn(time: string | null, dates: readonly string[]): boolean {
  return time !== null && dates.some((date) => time.startsWith(date));
}

/** The session time of an Episode: its own, else its chunk's. */
export function episodeTime(graph: MemoryGraph, episode: EpisodeNode): string | null {
  return episode.time ?? graph.chunks.get(episode.chunkId)?.time ?? null;
}

/**
 * The Episodes whose session falls on one of `dates`, among `within` when given (the speaker
 * scope), except those in `excluded`.
 */
export function episodesOn(graph: MemoryGraph, dates: readonly string[], within: ReadonlySet<string> | null, excluded: ReadonlySet<string>): Set<string> {
  const found = new Set<string>();
  if (dates.length === 0) return found;
  for (const episode of graph.nodesOfLayer('episode')) {
    if (excluded.has(episode.id) || (within && !within.has(episode.id))) continue;
    if (fallsOn(episodeTime(graph, episode), dates)) found.add(episode.id);
  }
  return found;
}
