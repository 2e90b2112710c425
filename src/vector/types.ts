/**
 * How a packed record holds a vector (store/vector-codec.ts): an f32 scale, then one signed byte a
 * dimension (`i8`, dim + 4 bytes) or one half byte a dimension, low half first, each naming one of
 * the i4 levels' i8 codes (`i4`, 4 + ⌈dim / 2⌉ bytes: a store's default encoding, as it is stored).
 */
export type RecordForm = 'i8' | 'i4';

/** Bytes of one record of `form` in `dim` dimensions. */
export function recordBytes(dim: number, form: RecordForm): number {
  return form === 'i4' ? 4 + Math.ceil(dim / 2) : dim + 4;
}

/**
 * Exact or approximate inner-product search over L2-normalised vectors.
 * Keys are non-negative safe integers chosen by the caller.
 */
export interface VectorIndex {
  readonly dim: number;
  readonly size: number;
  /** Adds `keys.length` vectors packed row-major in `vectors` (length keys.length × dim). */
  add(keys: readonly number[], vectors: Float32Array): void;
  /**
   * Adds `keys.length` vectors given as records of `form` (default i8; see `RecordForm`), packed:
   * the same as adding their decoded floats. Optional: without it, callers decode and `add`.
   */
  addRecords?(keys: readonly number[], records: Uint8Array, form?: RecordForm): void;
  /**
   * Makes room for `count` more vectors at once, ahead of adds that bring them in batches (an
   * open's every vector of a layer). Optional: adds make their own room without it.
   */
  reserve?(count: number): void;
  /** Removes the keys that exist; returns how many were removed. */
  remove(keys: readonly number[]): number;
  /** Top-k by inner product for each packed query row; best first. */
  search(queries: Float32Array, k: number): SearchHit[][];
  serialize(): Uint8Array;
  dispose(): void;
  /**
   * The vectors as the index keeps them, read back by key; absent where it keeps none it can hand
   * out (usearch's HNSW graph). With it the graph's vector table keeps no copy of an indexed
   * vector (`VectorTable.lend`): on a memory of 100K chat messages that copy was ~200 MB.
   */
  readonly rows?: IndexRows;
}

/** Reads a vector an index holds, exactly as it was added; until the index is disposed. */
export interface IndexRows {
  /** The vector under `key` as a new array, or undefined when the index holds no such key. */
  vector(key: number): Float32Array | undefined;
  /** `dot(vector(key), query)`, bit for bit, with nothing decoded; undefined when the key is absent. */
  dot(key: number, query: Float32Array): number | undefined;
  /** `dot(vector(a), vector(b))`, bit for bit, with nothing decoded; undefined when either key is absent. */
  pairDot(a: number, b: number): number | undefined;
}

export interface SearchHit {
  key: number;
  /** Inner product (= cosine for L2-normalised vectors). */
  score: number;
}

export type IndexKind = 'flat' | 'hnsw';
