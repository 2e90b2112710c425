import { PrismError } from '../errors.ts';
import { recordBytes, type RecordForm, type SearchHit } from './types.ts';
import { i8RecordScale, i8ScaleIsFinite } from '../store/vector-codec.ts';

/**
 * Keys must be distinct safe non-negative integers (they cross into WASM as f64 → u64). While the
 * keys ascend, each is only compared with the one before; a set of those seen is made once one
 * does not. An open adds every vector of a memory in key order, and a set of them all (~464K keys
 * at 100K messages) was ~0.1 s of it and ~10 MB for the collector.
 */
export function checkKeys(keys: readonly number[]): void {
  let seen: Set<number> | null = null;
  let last = -1;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as number;
    if (!Number.isSafeInteger(key) || key < 0) {
      throw new PrismError('INVALID_INPUT', `vector key ${key} is not a safe non-negative integer`);
    }
    if (seen === null) {
      if (key > last) {
        last = key;
        continue;
      }
      seen = new Set(keys.slice(0, i));
    }
    if (seen.has(key)) throw new PrismError('INVALID_INPUT', `vector key ${key} appears twice in one batch`);
    seen.add(key);
  }
}

/** `rows` records of `form` in `dim` dimensions, packed (see `VectorIndex.addRecords`), each with a scale its values stay finite under. */
export function checkRecords(records: Uint8Array, dim: number, rows: number, form: RecordForm = 'i8'): void {
  if (!(records instanceof Uint8Array)) throw new PrismError('INVALID_INPUT', `records must be a Uint8Array of packed ${form} records`);
  const perRecord = recordBytes(dim, form);
  if (records.length !== rows * perRecord) {
    throw new PrismError('DIMENSION_MISMATCH', `got ${records.length} bytes, expected ${rows} ${form} records × ${perRecord} = ${rows * perRecord}`);
  }
  const view = new DataView(records.buffer, records.byteOffset, records.byteLength);
  for (let row = 0; row < rows; row++) {
    const scale = i8RecordScale(view, row * perRecord);
    if (!i8ScaleIsFinite(scale)) throw new PrismError('NON_FINITE_VECTOR', `record ${row} has scale ${scale}`);
  }
}

/** Checks a packed row-major matrix: `rows` rows of `dim` finite floats; returns the row count. */
export function checkRows(vectors: Float32Array, dim: number, rows?: number): number {
  if (!(vectors instanceof Float32Array)) {
    throw new PrismError('INVALID_INPUT', 'vectors must be a Float32Array packed row-major');
  }
  if (vectors.length % dim !== 0 || (rows !== undefined && vectors.length !== rows * dim)) {
    const expected = rows === undefined ? `a multiple of ${dim}` : `${rows} × ${dim} = ${rows * dim}`;
    throw new PrismError('DIMENSION_MISMATCH', `got ${vectors.length} floats, expected ${expected}`);
  }
  for (let i = 0; i < vectors.length; i++) {
    if (!Number.isFinite(vectors[i])) {
      throw new PrismError('NON_FINITE_VECTOR', `row ${Math.floor(i / dim)} holds ${vectors[i]} at column ${i % dim}`);
    }
  }
  return vectors.length / dim;
}

export function checkK(k: number): void {
  if (!Number.isSafeInteger(k) || k <= 0) throw new PrismError('INVALID_INPUT', `k must be a positive integer, got ${k}`);
}

/** The one ranking every index uses: higher score first, ties broken by the smaller key. */
export function compareHits(a: SearchHit, b: SearchHit): number {
  return b.score - a.score || a.key - b.key;
}
