import type { Embedder } from '../../src/embed/types.ts';

/** Text → vector, as JSON can carry it. */
export type VectorTable = Record<string, number[]>;

/**
 * Records every text an embedder is asked for, so a runtime that cannot run MiniLM (workerd)
 * can be handed the same real vectors.
 */
export function recordingEmbedder(inner: Embedder): { embedder: Embedder; table: VectorTable } {
  const table: VectorTable = {};
  return {
    table,
    embedder: {
      id: inner.id,
      dim: inner.dim,
      async embed(texts, options) {
        const vectors = await inner.embed(texts, options);
        texts.forEach((text, i) => (table[text] = Array.from(vectors[i] ?? [])));
        return vectors;
      },
    },
  };
}

/** Serves recorded vectors; a text that was never recorded is an error, not a made-up vector. */
export function tableEmbedder(id: string, dim: number, table: VectorTable): Embedder {
  return {
    id,
    dim,
    async embed(texts) {
      return texts.map((text) => {
        const vector = table[text];
        if (!vector) throw new Error(`no recorded vector for ${JSON.stringify(text.slice(0, 80))}`);
        return Float32Array.from(vector);
      });
    },
  };
}
