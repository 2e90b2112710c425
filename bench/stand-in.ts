import type { Embedder } from '../src/embed/types.ts';
import { mulberry32 } from '../src/eval/stats.ts';

/** 32-bit FNV-1a of a string's UTF-16 units: a seed, not a checksum. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/**
 * A stand-in for MiniLM where a bench grows a memory (sizes, counts and costs do not depend on
 * the vectors' meaning): unit vectors drawn from a PRNG seeded by the text, so the same text
 * always gets the same vector. It takes the real embedder's `id`, so the real one opens the memory.
 */
export function standInEmbedder(id: string, dim: number): Embedder {
  const vectorOf = (text: string) => {
    const random = mulberry32(fnv1a(text));
    const v = Float32Array.from({ length: dim }, () => random() * 2 - 1);
    const norm = Math.hypot(...v);
    return v.map((x) => x / norm);
  };
  return { id, dim, embed: async (texts) => texts.map(vectorOf) };
}
