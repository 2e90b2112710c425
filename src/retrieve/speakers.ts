import type { MemoryGraph } from '../graph/memory-graph.ts';
import type { Chunk, GraphNode } from '../graph/types.ts';
import { LruCache } from '../util/lru-cache.ts';
import { normaliseTerm, termsOf } from './lexical.ts';
import type { LayerAnchors } from './types.ts';

/** The memory's speakers a query names, and where they speak. */
export interface SpeakerFocus {
  /** Speakers (as the turns name them) one of whose name terms is among the query's terms. */
  speakers: ReadonlySet<string>;
  /** The normalised terms of those speakers' names (see `termsOf`). */
  nameTerms: ReadonlySet<string>;
  /**
   * The Episodes in which a named speaker speaks or is named, or null when there is nothing to
   * narrow: the query names no speaker, or every Episode is one of theirs (one conversation).
   */
  episodes: ReadonlySet<string> | null;
  /** How many Episodes the memory holds (the share `episodes` keeps sizes the anchor over-fetch). */
  episodeCount: number;
}

/**
 * The terms of chunks' turns and speakers, read only by queries naming a speaker, for the sessions
 * that speaker does not speak in. Least recently used first out past 4M characters of text: kept
 * for as long as each chunk lived, they grew with every session such a query read.
 */
const chunkTerms = new LruCache<Chunk, ReadonlySet<string>>(4_000_000, (_, chunk) => chunk.text.length);

function termsOfChunk(chunk: Chunk): ReadonlySet<string> {
  const known = chunkTerms.get(chunk);
  if (known) return known;
  const terms = new Set<string>();
  for (const turn of chunk.turns) for (const text of [turn.speaker, turn.text]) for (const term of termsOf(text)) terms.add(term);
  chunkTerms.set(chunk, terms);
  return terms;
}

/**
 * Which of the memory's speakers the query names (by any term of their name), and the
 * Episodes they speak in or are named in (a session about someone counts as theirs too).
 * With `misspelt`, a capitalised word of the query that no turn of the memory holds (`heldTerm`) and
 * that is one letter away from a speaker's name term names that speaker too ("John" for Jon,
 * "Andew" for Andrew; see `oneEditApart`): a word the memory holds is someone's or something's own.
 */
export function speakerFocus(graph: MemoryGraph, queryTerms: ReadonlySet<string>, misspelt: { query: string; heldTerm: (term: string) => boolean } | null = null): SpeakerFocus {
  const speakers = new Set<string>();
  const nameTerms = new Set<string>();
  const speakerNames = [...graph.speakers()].map((speaker) => ({ speaker, terms: [...termsOf(speaker)] }));
  const unknownNames = misspelt ? capitalisedTerms(misspelt.query).filter((word) => !misspelt.heldTerm(word) && speakerNames.every(({ terms }) => !terms.includes(word))) : [];
  for (const { speaker, terms } of speakerNames) {
    const named = [...terms.filter((term) => queryTerms.has(term)), ...unknownNames.filter((word) => terms.some((term) => oneEditApart(word, term)))];
    if (named.length > 0) speakers.add(speaker);
    for (const term of named) nameTerms.add(term);
  }
  // Most queries name no speaker: nothing to narrow, and no Episode to read.
  if (nameTerms.size === 0) return { speakers, nameTerms, episodes: null, episodeCount: graph.countOfLayer('episode') };
  const episodes = new Set<string>();
  const names = [...nameTerms];
  let episodeCount = 0;
  for (const episode of graph.nodesOfLayer('episode')) {
    episodeCount++;
    const chunk = graph.chunks.get(episode.chunkId);
    if (!chunk) continue;
    // The chunk's terms include its speakers' names, so a session a named speaker speaks in is
    // theirs without reading its text: in assistant chat, whose every session has the assistant
    // speak, a query naming it read every session's terms and kept them (2.2 s and 53 MB at 30K
    // messages) to narrow nothing.
    if (chunk.turns.some((turn) => speakers.has(turn.speaker)) || names.some((term) => termsOfChunk(chunk).has(term))) episodes.add(episode.id);
  }
  return { speakers, nameTerms, episodes: episodes.size > 0 && episodes.size < episodeCount ? episodes : null, episodeCount };
}

/** The terms (`termsOf`) of the query's words that start with a capital letter. */
function capitalisedTerms(query: string): string[] {
  return [...termsOf((query.match(/\p{Lu}[\p{L}\p{N}]*/gu) ?? []).join(' '))];
}

/**
 * Whether `a` and `b` differ by one letter put in, left out, changed or swapped with its
 * neighbour, both starting with the same letter and the longer of at least 4 letters: a typo
 * of a name keeps its first letter, and among names of 3 letters one edit apart ("Jon", "Jan")
 * most are other names.
 */
export function oneEditApart(a: string, b: string): boolean {
  if (a === b || a[0] !== b[0] || Math.max(a.length, b.length) < 4 || Math.abs(a.length - b.length) > 1) return false;
  const [short, long] = a.length <= b.length ? [a, b] : [b, a];
  let i = 0;
  while (i < short.length && short[i] === long[i]) i++;
  if (short.length < long.length) return short.slice(i) === long.slice(i + 1);
  // Same length: one letter changed, or two neighbours swapped.
  return short.slice(i + 1) === long.slice(i + 1) || (short[i] === long[i + 1] && short[i + 1] === long[i] && short.slice(i + 2) === long.slice(i + 2));
}

/** What stands for a named speaker in the text the query vector is embedded from. */
const SPEAKER_PLACEHOLDER = 'someone';

/**
 * The query with every word that is a named speaker's name term replaced by "someone"
 * ("What did Caroline's mother give her?" → "What did someone's mother give her?"). Who is
 * meant is matched by who speaks (the speaker term, `speakerScope`); left in, the name pulls the
 * query vector towards every short turn that merely addresses that person ("Go get 'em, Jon!").
 * A query of names alone ("Caroline?") is left as it is: the name is all it asks about.
 */
export function maskSpeakerNames(query: string, nameTerms: ReadonlySet<string>): string {
  if (nameTerms.size === 0 || [...termsOf(query)].every((term) => nameTerms.has(term))) return query;
  return query.replace(/[\p{L}\p{N}]+/gu, (word) => {
    const term = normaliseTerm(word);
    return term !== null && nameTerms.has(term) ? SPEAKER_PLACEHOLDER : word;
  });
}

/** The Episode a node belongs to; null for an Entity (it spans Episodes). */
function episodeOf(node: GraphNode): string | null {
  return node.layer === 'episode' ? node.id : node.layer === 'entity' ? null : node.episodeId;
}

/**
 * Anchors in the given Episodes, at most `perLayer` a layer, best first as given. Entity anchors
 * are kept: their paths are confined to the Episodes by N1 itself (`bundleSearch`'s `within`).
 */
export function anchorsWithin<A extends { id: string }>(graph: MemoryGraph, anchors: Record<keyof LayerAnchors, A[]>, episodes: ReadonlySet<string>, perLayer: number): Record<keyof LayerAnchors, A[]> {
  const keep = (anchor: A): boolean => {
    const node = graph.nodes.get(anchor.id);
    const episode = node ? episodeOf(node) : null;
    return episode === null || episodes.has(episode);
  };
  return {
    episode: anchors.episode.filter(keep).slice(0, perLayer),
    facet: anchors.facet.filter(keep).slice(0, perLayer),
    facetPoint: anchors.facetPoint.filter(keep).slice(0, perLayer),
    entity: anchors.entity.slice(0, perLayer),
  };
}
