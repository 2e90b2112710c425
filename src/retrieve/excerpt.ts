import type { ChunkTurn } from '../graph/types.ts';
import { turnLineHead } from '../graph/chunk-text.ts';
import { utf8Length } from '../util/ascii.ts';
import { LruCache } from '../util/lru-cache.ts';
import { splitSentences } from '../util/sentences.ts';
import { countingPartsApart, countTokens, isSpacedPart, spacedParts } from '../util/tokens.ts';

/** What marks left-out sentences, with the space before it (a gap between two sentences is " … "). */
const ELLIPSIS = ' …';
/** Sentences scoring under this share of the best one are left out even when they would fit. */
const RELATIVE_FLOOR = 0.5;

/**
 * An excerpt's line and its tokens under the installed counter: weighing the sentences counted
 * them, so packing need not tokenise the excerpt again.
 */
export interface Excerpt {
  text: string;
  tokens: number;
}

/**
 * A turn longer than a cap (a pasted document, a long monologue) would never fit a tight budget
 * whole, so it is offered as an excerpt: its sentences, best first by their score, written
 * back in their original order with "…" marking what was left out, as many as fit and score at
 * least half as well as the best. One weighing serves every excerpt packing asks of a turn for
 * one query: the sentences are scored once, and each is counted when an excerpt first needs it.
 */
export class SentenceWeighing {
  private readonly sentences: readonly string[];
  /** The turn line's head (the first piece of an excerpt's line). */
  private readonly head: string;
  /** Counted apart (the default counter), a candidate's tokens are its parts' counts summed (`countSpaced`). */
  private readonly apart: boolean;
  /** UTF-8 bytes of the longest sentence piece (`piece`), or a little more: its tokens at most. */
  private readonly longestPiece: number;
  /** Tokens of each piece, counted when first needed. */
  private readonly counts: number[] = [];
  private ranked: ReadonlyArray<{ i: number; score: number }> | undefined;

  constructor(
    turn: ChunkTurn,
    /** Makes the score of a sentence: called when the sentences are first ranked, which a turn packing passes by need not be. */
    private readonly scoring: () => (sentence: string) => number,
  ) {
    const split = splitOf(turn);
    this.sentences = split.sentences;
    this.head = split.head;
    this.apart = split.spaced && countingPartsApart();
    this.longestPiece = split.longestPiece;
  }

  /** The excerpt within `maxTokens`; a best sentence longer than that alone is cut at it. */
  excerpt(maxTokens: number): Excerpt {
    const picked = this.pick(maxTokens);
    return 'text' in picked ? picked : cutToTokens(picked.bestAlone, maxTokens);
  }

  /**
   * The excerpt `excerpt` makes, or null when not even the best sentence fits in `maxTokens`:
   * the packer's way to fit the rest of a budget with whole sentences only.
   */
  within(maxTokens: number): Excerpt | null {
    const picked = this.pick(maxTokens);
    return 'text' in picked ? picked : null;
  }

  /**
   * Tokens `excerpt(maxTokens)` has at least, counting only the head and the best sentence:
   * every excerpt of whole sentences holds both, and the other parts count for something or
   * nothing. When the two alone are over the cap the excerpt is the cut line, which this does
   * not bound: 0. With another counter (parts not counted apart) also 0. Once the head alone is
   * over `room`, any bound over it may be given instead (the head and one token).
   */
  leastTokens(maxTokens: number, room = Infinity): number {
    if (!this.apart || this.sentences.length === 0) return 0;
    const head = this.countOf(0);
    // Past `room` on the head alone, where no sentence can take the two over the cap (a piece has
    // a token at least, and byte-level BPE no more tokens than UTF-8 bytes): the sentences are
    // not weighed. Packing asks this of every long turn it reads on past a nearly full budget.
    if (head + 1 > room && this.longestPiece <= maxTokens - head) return head + 1;
    const best = this.order()[0] as { i: number };
    const least = head + this.countOf(2 + best.i);
    return least <= maxTokens ? least : 0;
  }

  private order(): ReadonlyArray<{ i: number; score: number }> {
    if (this.ranked === undefined) {
      const score = this.scoring();
      this.ranked = this.sentences.map((sentence, i) => ({ i, score: score(sentence) })).sort((a, b) => b.score - a.score || a.i - b.i);
    }
    return this.ranked;
  }

  private countOf(piece: number): number {
    return (this.counts[piece] ??= countTokens(this.piece(piece)));
  }

  /**
   * The excerpt's line as pieces that join into it: piece 0 the line's head, 1 the "…" with its
   * space, 2 + i sentence i with its space. Made when one is counted or written: packing counts a
   * few sentences of each long turn it meets, and writes fewer.
   */
  private piece(k: number): string {
    return k === 0 ? this.head : k === 1 ? ELLIPSIS : ` ${this.sentences[k - 2] as string}`;
  }

  /** The pieces of the excerpt of `picked`: the head, then each sentence in order, a "…" for each gap. */
  private partsOf(picked: readonly number[]): number[] {
    const sorted = [...picked].sort((a, b) => a - b);
    const out = [0];
    sorted.forEach((i, k) => {
      if (k === 0 ? i > 0 : sorted[k - 1] !== i - 1) out.push(1);
      out.push(2 + i);
    });
    if (sorted.at(-1) !== this.sentences.length - 1) out.push(1);
    return out;
  }

  private render(picked: readonly number[]): string {
    return this.partsOf(picked)
      .map((k) => this.piece(k))
      .join('');
  }

  private tokensOf(picked: readonly number[]): number {
    return this.apart ? this.partsOf(picked).reduce((sum, k) => sum + this.countOf(k), 0) : countTokens(this.render(picked));
  }

  /** The excerpt of the sentences that fit, or (when the best one alone does not) that sentence's line uncut. */
  private pick(maxTokens: number): Excerpt | { bestAlone: string } {
    const order = this.order();
    const floor = (order[0]?.score ?? 0) * RELATIVE_FLOOR;
    const picked: number[] = [];
    // Set by the first pick: the loop picks at least one sentence or returns.
    let tokens = 0;
    for (const { i, score } of order) {
      if (picked.length > 0 && score < floor) break;
      const withIt = this.tokensOf([...picked, i]);
      if (withIt <= maxTokens) {
        picked.push(i);
        tokens = withIt;
      } else if (picked.length > 0) break;
      else return { bestAlone: this.render([i]) };
    }
    return { text: this.render(picked), tokens };
  }
}

/** A long turn cut for excerpts: its sentences and its line's head. */
interface SplitTurn {
  sentences: readonly string[];
  /** The turn line's head, without its trailing space. */
  head: string;
  /** Whether an excerpt's pieces (see `SentenceWeighing.piece`) have the shape the default counter counts apart (`spacedParts`). */
  spaced: boolean;
  /** Characters the split holds, for the cache's bound. */
  chars: number;
  /** `utf8Length` of the longest sentence with the space before it. */
  longestPiece: number;
}

/**
 * Long turns split lately, least recently used first out past 2M characters of their text: a
 * long turn a search reaches is often reached by the next, and its split does not depend on the
 * query. Kept for as long as the turn lived, they grew with every long turn a long-running
 * process had ever reached.
 */
const splitTurns = new LruCache<ChunkTurn, SplitTurn>(2_000_000, (split) => split.chars);

function splitOf(turn: ChunkTurn): SplitTurn {
  const known = splitTurns.get(turn);
  if (known) return known;
  const sentences = splitSentences(turn.text);
  const head = turnLineHead(turn).trimEnd();
  const longestPiece = sentences.reduce((longest, sentence) => Math.max(longest, 1 + utf8Length(sentence)), 0);
  const split: SplitTurn = { sentences, head, spaced: spacedParts([head, ELLIPSIS]) && sentences.every(isSpacedPart), chars: turn.text.length, longestPiece };
  splitTurns.set(turn, split);
  return split;
}

function cutToTokens(text: string, maxTokens: number): Excerpt {
  let cut = text;
  let tokens = countTokens(`${cut} …`);
  while (cut.length > 1 && tokens > maxTokens) {
    cut = cut.slice(0, Math.floor(cut.length * 0.9));
    tokens = countTokens(`${cut} …`);
  }
  return { text: `${cut} …`, tokens };
}
