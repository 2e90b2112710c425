import type { ChunkTurn } from '../graph/types.ts';
import { turnLine } from '../graph/chunk-text.ts';
import { countTokens } from './pack.ts';

const GAP = ' … ';
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
  const sentences = splitSentences(turn.text);
  const order = sentences.map((sentence, i) => ({ i, score: sentenceScore(sentence) })).sort((a, b) => b.score - a.score || a.i - b.i);
  const render = (picked: readonly number[]): string => {
    const sorted = [...picked].sort((a, b) => a - b);
    let text = (sorted[0] ?? 0) > 0 ? '… ' : '';
    sorted.forEach((i, k) => (text += `${k === 0 ? '' : sorted[k - 1] === i - 1 ? ' ' : GAP}${sentences[i]}`));
    if (sorted.at(-1) !== sentences.length - 1) text += ' …';
    return turnLine({ ...turn, text });
  };
  const floor = (order[0]?.score ?? 0) * RELATIVE_FLOOR;
  const picked: number[] = [];
  for (const { i, score } of order) {
    if (picked.length > 0 && score < floor) break;
    if (countTokens(render([...picked, i])) <= maxTokens) picked.push(i);
    else if (picked.length > 0) break;
    else return cutToTokens(render([i]), maxTokens);
  }
  return render(picked);
}

/** Sentences by the platform's Unicode segmenter (browsers, Node, Deno and workerd all have it). */
function splitSentences(text: string): string[] {
  const segmenter = new Intl.Segmenter(undefined, { granularity: 'sentence' });
  const sentences = [...segmenter.segment(text)].map((s) => s.segment.trim()).filter((s) => s.length > 0);
  return sentences.length > 0 ? sentences : [text];
}

function cutToTokens(text: string, maxTokens: number): string {
  let cut = text;
  while (cut.length > 1 && countTokens(`${cut} …`) > maxTokens) cut = cut.slice(0, Math.floor(cut.length * 0.9));
  return `${cut} …`;
}
