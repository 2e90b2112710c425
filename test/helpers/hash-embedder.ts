import type { Embedder } from '../../src/embed/types.ts';

/**
 * A deterministic stand-in for MiniLM where a test is about graph bookkeeping, not semantics
 * (reopen-and-continue equality, many writers): lower-cased words hashed into 384 buckets,
 * L2-normalised. The same text always gives the same vector, on every run and machine.
 */
export function hashEmbedder(dim = 384): Embedder {
  const embedOne = (text: string): Float32Array => {
    const vector = new Float32Array(dim);
    for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
      let h = 2166136261;
      for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 16777619);
      vector[(h >>> 0) % dim]! += 1;
    }
    let norm = 0;
    for (const x of vector) norm += x * x;
    if (norm === 0) vector[0] = 1;
    else for (let i = 0; i < dim; i++) vector[i]! /= Math.sqrt(norm);
    return vector;
  };
  return { id: `test/hash-bow-${dim}`, dim, embed: async (texts) => texts.map(embedOne) };
}
