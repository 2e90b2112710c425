import { PrismError } from '../errors.ts';
import { bruteForceSearch } from './brute-force.ts';
import { dot } from '../util/vectors.ts';
import type { IndexRows, SearchHit, VectorIndex } from './types.ts';
import { checkK, checkKeys, checkRows } from './validate.ts';

/** Rows a new index has room for before it first grows. */
const INITIAL_ROWS = 64;

/**
 * Exact inner-product search in plain JavaScript: the vectors packed in one Float32Array that
 * doubles as it fills, searched by `bruteForceSearch` (same ranking as the usearch index: higher
 * score first, ties to the smaller key). It holds 4 × `dim` bytes per vector and nothing else.
 * The usearch WASM flat index packs its rows the same way, but in a WASM memory that starts at
 * 16 MB and never gives memory back to the runtime. For
 * runtimes that count every megabyte (a Cloudflare Worker has 128 MB), and for memories small
 * enough that a scan is quick: about 1 ms per 2,000 vectors of 384 dimensions.
 */
export function flatIndex(dim: number): VectorIndex {
  if (!Number.isSafeInteger(dim) || dim <= 0) throw new PrismError('INVALID_INPUT', `dim must be positive, got ${dim}`);
  return new FlatIndex(dim);
}

class FlatIndex implements VectorIndex {
  readonly dim: number;
  readonly rows: IndexRows = {
    vector: (key) => this.#row(key)?.slice(),
    dot: (key, query) => {
      const row = this.#row(key);
      return row && dot(row, query);
    },
    pairDot: (a, b) => {
      const rowA = this.#row(a);
      const rowB = this.#row(b);
      return rowA && rowB && dot(rowA, rowB);
    },
  };
  #vectors: Float32Array;
  #keys: number[] = [];
  /** Row of each key. */
  #rows = new Map<number, number>();

  constructor(dim: number) {
    this.dim = dim;
    this.#vectors = new Float32Array(INITIAL_ROWS * dim);
  }

  get size(): number {
    return this.#keys.length;
  }

  /** All or nothing: an invalid row, or a key already in the index, leaves the index unchanged. */
  add(keys: readonly number[], vectors: Float32Array): void {
    checkKeys(keys);
    checkRows(vectors, this.dim, keys.length);
    const taken = keys.find((key) => this.#rows.has(key));
    if (taken !== undefined) throw new PrismError('INVALID_INPUT', `vector key ${taken} is already in the index`);
    const size = this.#keys.length;
    const needed = (size + keys.length) * this.dim;
    if (needed > this.#vectors.length) {
      const grown = new Float32Array(Math.max(needed, this.#vectors.length * 2));
      grown.set(this.#vectors.subarray(0, size * this.dim));
      this.#vectors = grown;
    }
    this.#vectors.set(vectors, size * this.dim);
    keys.forEach((key, i) => {
      this.#rows.set(key, size + i);
      this.#keys.push(key);
    });
  }

  /** The vector of `key` as a view of its row, or undefined. */
  #row(key: number): Float32Array | undefined {
    const row = this.#rows.get(key);
    return row === undefined ? undefined : this.#vectors.subarray(row * this.dim, (row + 1) * this.dim);
  }

  /** Each removed row is filled by the last one, so the rows stay packed. */
  remove(keys: readonly number[]): number {
    checkKeys(keys);
    let removed = 0;
    for (const key of keys) {
      const row = this.#rows.get(key);
      if (row === undefined) continue;
      const last = this.#keys.length - 1;
      const lastKey = this.#keys[last]!;
      this.#vectors.copyWithin(row * this.dim, last * this.dim, (last + 1) * this.dim);
      this.#keys[row] = lastKey;
      this.#rows.set(lastKey, row);
      this.#keys.pop();
      this.#rows.delete(key);
      removed++;
    }
    return removed;
  }

  search(queries: Float32Array, k: number): SearchHit[][] {
    checkK(k);
    return bruteForceSearch(this.#vectors.subarray(0, this.#keys.length * this.dim), this.dim, this.#keys, queries, k);
  }

  /** The keys (float64) then the vectors (float32), after a header of the row count and the dimension (uint32 each). */
  serialize(): Uint8Array {
    const size = this.#keys.length;
    const bytes = new Uint8Array(8 + size * 8 + size * this.dim * 4);
    const header = new DataView(bytes.buffer);
    header.setUint32(0, size, true);
    header.setUint32(4, this.dim, true);
    new Float64Array(bytes.buffer, 8, size).set(this.#keys);
    new Float32Array(bytes.buffer, 8 + size * 8, size * this.dim).set(this.#vectors.subarray(0, size * this.dim));
    return bytes;
  }

  dispose(): void {
    this.#vectors = new Float32Array(0);
    this.#keys = [];
    this.#rows.clear();
  }
}
