/** A sentence embedder: texts in, L2-normalised vectors of `dim` floats out. */
export interface Embedder {
  /** Stable identifier of model + precision, e.g. `Xenova/all-MiniLM-L6-v2/int8`; part of cache keys. */
  readonly id: string;
  readonly dim: number;
  embed(texts: readonly string[], options?: EmbedOptions): Promise<Float32Array[]>;
  dispose?(): Promise<void>;
}

export interface EmbedOptions {
  signal?: AbortSignal;
  /** Called after each batch with the number of texts done so far. */
  onProgress?: (done: number, total: number) => void;
}
