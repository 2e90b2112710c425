import { PrismError } from '../errors.ts';

/**
 * How a store keeps vectors on disk:
 * - `f32`: 4 bytes a dimension, exact;
 * - `f16`: IEEE half floats, 2 bytes a dimension (a unit vector's components lose nothing that
 *   moves a cosine by more than ~1e-4);
 * - `i8`: one signed byte a dimension plus the vector's f32 scale (max |x| / 127), 4 bytes more.
 * A blob's length tells its precision, so a store reads vectors written at any of them.
 */
export type VectorPrecision = 'f32' | 'f16' | 'i8';

/**
 * What the SQL stores write unless told otherwise: a quarter of f32's bytes (388 a MiniLM
 * vector), for rankings that stay within LoCoMo dev's paired CIs (see the README's storage
 * section). A vector is the bulk of a node's bytes, so this sets the store's size per message.
 */
export const DEFAULT_VECTOR_PRECISION: VectorPrecision = 'i8';

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The half float nearest `value` (round to nearest even), as its 16 bits. */
function toHalfBits(value: number): number {
  f32[0] = value;
  const bits = u32[0] as number;
  const sign = (bits >>> 16) & 0x8000;
  const exponent = (bits >>> 23) & 0xff;
  let mantissa = bits & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa !== 0 ? 0x200 : 0);
  const e = exponent - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mantissa |= 0x800000;
    const shift = 14 - e;
    const half = mantissa >>> shift;
    const rest = mantissa & ((1 << shift) - 1);
    const midpoint = 1 << (shift - 1);
    return sign | (rest > midpoint || (rest === midpoint && (half & 1) === 1) ? half + 1 : half);
  }
  const half = (e << 10) | (mantissa >>> 13);
  const rest = mantissa & 0x1fff;
  return sign | (rest > 0x1000 || (rest === 0x1000 && (half & 1) === 1) ? half + 1 : half);
}

/** The value of a half float's 16 bits. */
function fromHalfBits(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >>> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 0x1f) return mantissa !== 0 ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/** Every half float's value by its bits: decoding is one lookup a dimension. */
let halfTable: Float32Array | undefined;
function halves(): Float32Array {
  if (!halfTable) {
    halfTable = new Float32Array(65536);
    for (let bits = 0; bits < 65536; bits++) halfTable[bits] = fromHalfBits(bits);
  }
  return halfTable;
}

/** The i8 scale of a vector: its largest magnitude over 127 (1 for a zero vector), as an f32. */
function i8Scale(vector: Float32Array): number {
  let max = 0;
  for (const x of vector) max = Math.max(max, Math.abs(x));
  return Math.fround(max === 0 ? 1 : max / 127);
}

/** Bytes of a vector of `dim` dimensions at `precision`. */
export function encodedBytes(dim: number, precision: VectorPrecision): number {
  return precision === 'f32' ? dim * 4 : precision === 'f16' ? dim * 2 : dim + 4;
}

/** The vector as `precision` stores it: decoding its encoding gives exactly these values. */
export function roundVector(vector: Float32Array, precision: VectorPrecision): Float32Array {
  if (precision === 'f32') return vector;
  return decodeVector(encodeVector(vector, precision), vector.length);
}

/** Vectors by id as `precision` stores them (the same array when `precision` is f32 or absent). */
export function roundVectors(vectors: Array<[string, Float32Array]>, precision: VectorPrecision | undefined): Array<[string, Float32Array]> {
  if (precision === undefined || precision === 'f32') return vectors;
  return vectors.map(([id, vector]): [string, Float32Array] => [id, roundVector(vector, precision)]);
}

/** A vector's bytes at `precision` (little-endian; i8 puts its f32 scale first). */
export function encodeVector(vector: Float32Array, precision: VectorPrecision): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(encodedBytes(vector.length, precision));
  const view = new DataView(bytes.buffer);
  if (precision === 'f32') {
    vector.forEach((x, i) => view.setFloat32(i * 4, x, true));
  } else if (precision === 'f16') {
    vector.forEach((x, i) => view.setUint16(i * 2, toHalfBits(x), true));
  } else {
    const scale = i8Scale(vector);
    view.setFloat32(0, scale, true);
    vector.forEach((x, i) => view.setInt8(4 + i, Math.max(-127, Math.min(127, Math.round(x / scale)))));
  }
  return bytes;
}

/** The f32 scale of the i8 record at byte `offset` of `view` (see `encodeVector`): one view serves a whole run of packed records. */
export function i8RecordScale(view: DataView, offset = 0): number {
  return view.getFloat32(offset, true);
}

/** Whether every value an i8 record of this scale decodes to is finite: they are at most 128 × the scale in magnitude. */
export function i8ScaleIsFinite(scale: number): boolean {
  return Number.isFinite(Math.fround(128 * Math.abs(scale)));
}

/** A vector of `dim` dimensions from its bytes at any precision (told by their length). */
export function decodeVector(bytes: Uint8Array, dim: number): Float32Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const vector = new Float32Array(dim);
  if (bytes.byteLength === dim * 4) {
    for (let i = 0; i < dim; i++) vector[i] = view.getFloat32(i * 4, true);
  } else if (bytes.byteLength === dim * 2) {
    const table = halves();
    for (let i = 0; i < dim; i++) vector[i] = table[view.getUint16(i * 2, true)] as number;
  } else if (bytes.byteLength === dim + 4) {
    const scale = view.getFloat32(0, true);
    for (let i = 0; i < dim; i++) vector[i] = Math.fround(view.getInt8(4 + i) * scale);
  } else {
    throw new PrismError('CORRUPT_CHECKPOINT', `a stored vector has ${bytes.byteLength} bytes, which fits no precision of dimension ${dim}`);
  }
  return vector;
}

/**
 * The inner product of `query` and the i8 record at byte `start` (its scale read from `view`, its
 * codes from `codes`, both over the same bytes), without decoding it: the same double `dot` gives
 * over `decodeVector`'s floats, bit for bit (each decoded value is rounded to f32 as there, and
 * the products are added in the same order).
 */
export function i8RecordDot(view: DataView, codes: Int8Array, start: number, dim: number, query: Float32Array): number {
  if (query.length !== dim) throw new PrismError('DIMENSION_MISMATCH', `vectors of ${dim} and ${query.length} dimensions`);
  const scale = i8RecordScale(view, start);
  let sum = 0;
  for (let i = 0; i < dim; i++) sum += Math.fround((codes[start + 4 + i] as number) * scale) * (query[i] as number);
  return sum;
}

/** A stored vector's floats (any precision, told by its length); a length that fits none is CORRUPT_CHECKPOINT naming the vector. */
export function decodeStoredVector(id: string, bytes: Uint8Array, dim: number): Float32Array {
  try {
    return decodeVector(bytes, dim);
  } catch (err) {
    throw new PrismError('CORRUPT_CHECKPOINT', `vector ${id}: ${err instanceof Error ? err.message : String(err)}`);
  }
}
