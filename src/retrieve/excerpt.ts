import type { ChunkTurn } from '../graph/types.ts';
import { turnLineHead } from '../graph/chunk-text.ts';
import { countedApart, countTokens } from '../util/tokens.ts';

/** What marks left-out sentences, with the space before it (a gap between two sentences is " … "). */
const ELLIPSIS = ' …';
/** Sentences scoring under this share of the best one are left out even when they would fit. */
const RELATIVE_FLOOR = 0.5;

/**
 * A turn longer than `maxTokens` (a pasted document, a long monologue) would never fit a tight
 * budget whole, so it is offered as an excerpt: its sentences, best first by `sentenceScore`,
 * written back in their original order with "…" marking what was left out, as many as fit
 * and score at least half as well as the best.
 * A single sentence longer than the cap is cut at the cap.
 */
export function excerptTurn(turn: ChunkTurn, sentenceScore: (sentence: string) => number, maxTokens: number): string {
  const excerpt = pickSentences(turn, sentenceScore, maxTokens);
  return 'text' in excerpt ? excerpt.text : cutToTokens(excerpt.bestAlone, maxTokens);
}

/**
 * The excerpt `excerptTurn` makes, or null when not even the turn's best sentence fits in
 * `maxTokens`: the packer's way to fit the rest of a budget with whole sentences only.
 */
export function excerptWithin(turn: ChunkTurn, sentenceScore: (sentence: string) => number, maxTokens: number): string | null {
  const excerpt = pickSentences(turn, sentenceScore, maxTokens);
  return 'text' in excerpt ? excerpt.text : null;
}

/** The excerpt of the sentences that fit, or (when the best one alone does not) that sentence's line uncut. */
function pickSentences(turn: ChunkTurn, sentenceScore: (sentence: string) => number, maxTokens: number): { text: string } | { bestAlone: string } {
  const sentences = sentencesOf(turn);
  const order = sentences.map((sentence, i) => ({ i, score: sentenceScore(sentence) })).sort((a, b) => b.score - a.score || a.i - b.i);
  // The excerpt's line as parts that join into it: the line's head, then each sentence and
  // each "…" with the space before it. Made once, then named by position: `pieces[0]` is the
  // head, `pieces[1]` the "…", `pieces[2 + i]` sentence i.
  const head = turnLineHead(turn).trimEnd();
  const pieces = [head, ELLIPSIS, ...sentences.map((sentence) => ` ${sentence}`)];
  const partsOf = (picked: readonly number[]): number[] => {
    const sorted = [...picked].sort((a, b) => a - b);
    const out = [0];
    sorted.forEach((i, k) => {
      if (k === 0 ? i > 0 : sorted[k - 1] !== i - 1) out.push(1);
      out.push(2 + i);
    });
    if (sorted.at(-1) !== sentences.length - 1) out.push(1);
    return out;
  };
  // The parts join into the excerpt's turn line: the head, its space, then the text.
  const render = (picked: readonly number[]): string => partsOf(picked).map((k) => pieces[k]).join('');
  // Counted apart (the default counter), a candidate's tokens are its parts' counts summed
  // (`countSpaced`), each part's looked up once for all the candidates that hold it.
  const apart = countedApart(pieces);
  const counts: number[] = [];
  const tokensOf = (picked: readonly number[]): number =>
    apart ? partsOf(picked).reduce((sum, k) => sum + (counts[k] ??= countTokens(pieces[k] as string)), 0) : countTokens(render(picked));
  const floor = (order[0]?.score ?? 0) * RELATIVE_FLOOR;
  const picked: number[] = [];
  for (const { i, score } of order) {
    if (picked.length > 0 && score < floor) break;
    if (tokensOf([...picked, i]) <= maxTokens) picked.push(i);
    else if (picked.length > 0) break;
    else return { bestAlone: render([i]) };
  }
  return { text: render(picked) };
}

let segmenter: Intl.Segmenter | undefined;
/**
 * A turn's sentences, kept while the turn is: a long turn a search reaches is split again by the
 * next search that reaches it, and the split does not depend on the query.
 */
const sentencesOfTurn = new WeakMap<ChunkTurn, readonly string[]>();

function sentencesOf(turn: ChunkTurn): readonly string[] {
  let sentences = sentencesOfTurn.get(turn);
  if (!sentences) sentencesOfTurn.set(turn, (sentences = splitSentences(turn.text)));
  return sentences;
}

/** Sentences by the platform's Unicode segmenter (browsers, Node, Deno and workerd all have it). */
function splitSentences(text: string): string[] {
  segmenter ??= new Intl.Segmenter(undefined, { granularity: 'sentence' });
  const sentences = [...segmenter.segment(text)].map((s) => s.segment.trim()).filter((s) => s.length > 0);
  return sentences.length > 0 ? sentences : [text];
}

function cutToTokens(text: string, maxTokens: number): string {
  let cut = text;
  while (cut.length > 1 && countTokens(`${cut} …`) > maxTokens) cut = cut.slice(0, Math.floor(cut.length * 0.9));
  return `${cut} …`;
}
