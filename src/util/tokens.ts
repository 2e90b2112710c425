import { PrismError } from '../errors.ts';
import { LruCache } from './lru-cache.ts';

/** Counts the tokens of `text` the way the answer model will see them. Must be synchronous: packing calls it per unit. */
export type TokenCounter = (text: string) => number;

let active: TokenCounter | null = null;
/**
 * Whether `active` is the default o200k_base counter, whose pre-tokenizer never joins text across
 * a line break or a part's leading space, so joined text is counted from its parts' counts
 * (`countLines`, `countSpaced`).
 */
let countsPartsApart = false;
let loadingDefault: Promise<TokenCounter> | null = null;
const NO_SPECIAL_TOKENS = new Set<string>();

/**
 * Counts the installed counter already made. Search counts the same turn lines and session
 * headers for every query (and ingest counted them first), so each is tokenised once. Bounded
 * by characters held, least recently used first out: a memory with more text than the bound
 * keeps the lines its searches keep reaching (starting over when full re-tokenised them all, a
 * third of a search's time on 10,000 chat messages).
 */
const counted = new LruCache<string, number>(4_000_000, (_, text) => text.length);

/**
 * Makes `countTokens` ready: installs `custom` when given, else loads the default counter,
 * o200k_base (the BPE of gpt-4o-mini, the paper's answer model), whose tables are ~1 MB of
 * gzipped JS and so are imported only here. Budgets, chunk windows and every compared system
 * count with the one installed counter; it is process-wide (one answer model per process or
 * page), and `Memory.open` awaits this before its first add or search. A counter must give
 * the same count for the same text every time: counts are remembered.
 */
export async function loadTokenCounter(custom?: TokenCounter): Promise<TokenCounter> {
  if (custom !== undefined && typeof custom !== 'function') throw new PrismError('INVALID_INPUT', 'countTokens must be a function (text: string) => number');
  if (custom) {
    install(custom, false);
    return custom;
  }
  // Text that spells a special token ("<|endoftext|>") is counted as the text it is: the
  // library's default throws on it, and a user may well paste one into a message.
  loadingDefault ??= import('gpt-tokenizer/encoding/o200k_base').then((o200k) => {
    const count = (text: string) => o200k.countTokens(text, { disallowedSpecial: NO_SPECIAL_TOKENS });
    // Its tables are built at the first count (~80 ms in Chromium): here, while an open's reads are in flight, not in its first search.
    count(' ');
    return count;
  });
  loadingDefault.catch(() => (loadingDefault = null));
  const o200k = await loadingDefault;
  if (!active) install(o200k, true);
  return active ?? o200k;
}

function install(counter: TokenCounter, o200k: boolean): void {
  if (counter !== active) {
    counted.clear();
  }
  active = counter;
  countsPartsApart = o200k;
}

/** Tokens of `text` under the installed counter (see `loadTokenCounter`). */
export function countTokens(text: string): number {
  if (!active) throw new PrismError('INVALID_INPUT', 'no token counter loaded yet: await loadTokenCounter() (Memory.open does) before counting tokens');
  const known = counted.get(text);
  if (known !== undefined) return known;
  const tokens = active(text);
  counted.set(text, tokens);
  return tokens;
}

/** Tokens of `text` under the default counter (o200k_base) when it is the one installed, else undefined: what a record may keep (`Chunk.textTokens`). */
export function defaultCounterTokens(text: string): number | undefined {
  return countsPartsApart ? countTokens(text) : undefined;
}

/** Tokens of `text`: `kept` (a `defaultCounterTokens` count a record kept) while the default counter is installed, else counted. */
export function countKeptTokens(text: string, kept: number | undefined): number {
  return kept !== undefined && countsPartsApart ? kept : countTokens(text);
}

/**
 * Tokens of `pieces.join('')`. With o200k_base, where every piece but the last ends in a line
 * break, this is the sum of the pieces' own (remembered) counts: its pre-tokenizer splits the
 * text into words, numbers, punctuation runs and whitespace runs, and the only ones that may
 * hold a line break end there unless the next character is whitespace or `/` (a punctuation
 * run takes trailing `\r`, `\n` and `/`; a whitespace run takes all of it). So a context
 * rendered from many known lines is counted without tokenising it again. Any other joint, or
 * another counter, counts the joined text.
 */
export function countLines(pieces: readonly string[]): number {
  if (!countsPartsApart) return countTokens(pieces.join(''));
  let tokens = 0;
  let run = '';
  pieces.forEach((piece, i) => {
    run += piece;
    const next = pieces[i + 1];
    if (next === undefined || (/[\r\n]$/.test(piece) && /^[^\s/]/.test(next))) {
      tokens += countTokens(run);
      run = '';
    }
  });
  return tokens;
}

/**
 * What follows the one space of a part `countSpaced` can count apart (every part but the first):
 * a non-space character at its start and at its end.
 */
const SPACED_TEXT = /^\S(?:.*\S)?$/su;

/**
 * Tokens of `parts.join('')`, where every part ends in a non-space character and every part but
 * the first is one space followed by a non-space character and more (" word…", " …"). With
 * o200k_base this is the sum of the parts' own (remembered) counts: no piece of its
 * pre-tokenizer holds a space unless the space starts it or it is all whitespace, so every
 * piece ends where a part does and the piece at each part's space is the one the part begins
 * with alone. Excerpts of long turns are weighed sentence by sentence this way, instead of
 * tokenising each candidate excerpt whole. Parts of any other shape, or another counter, count
 * the joined text.
 */
export function countSpaced(parts: readonly string[]): number {
  if (!countedApart(parts)) return countTokens(parts.join(''));
  let tokens = 0;
  for (const part of parts) tokens += countTokens(part);
  return tokens;
}

/**
 * Whether `countSpaced` counts these parts apart (the default counter, parts of the shape it
 * counts apart): then the tokens of any join of them in which the first stays first are the sum
 * of its parts' own counts.
 */
function countedApart(parts: readonly string[]): boolean {
  return countsPartsApart && spacedParts(parts);
}

/** Whether `parts` have the shape `countSpaced` counts apart, whatever counter is installed (see `countedApart`). */
export function spacedParts(parts: readonly string[]): boolean {
  const first = parts[0] ?? '';
  return /\S$/u.test(first) && parts.every((part, i) => i === 0 || (part.startsWith(' ') && isSpacedPart(part.slice(1))));
}

/** Whether ` ${text}` is a part of the shape `spacedParts` asks of every part but the first, without making it. */
export function isSpacedPart(text: string): boolean {
  return SPACED_TEXT.test(text);
}

/** Whether the installed counter is the default one, which counts parts of `spacedParts`' shape apart. */
export function countingPartsApart(): boolean {
  return countsPartsApart;
}
