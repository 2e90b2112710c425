import { termsOf } from '../retrieve/lexical.ts';

/**
 * The lexical-gap slice: a question none of whose gold turns shares a content word with it
 * (after the same stop-word removal and stemming the BM25 index applies). Keyword search cannot
 * find such evidence; only meaning can. The turns' own words count, not their speakers' names.
 */
export function isLexicalGap(question: string, goldTexts: readonly string[]): boolean {
  if (goldTexts.length === 0) return false;
  const asked = termsOf(question);
  return goldTexts.every((text) => ![...termsOf(text)].some((term) => asked.has(term)));
}
