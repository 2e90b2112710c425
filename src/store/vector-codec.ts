import { PrismError } from '../errors.ts';

/**
 * How a store keeps vectors on disk:
 * - `f32`: 4 bytes a dimension, exact;
 * - `f16`: IEEE half floats, 2 bytes a dimension (a unit vector's components lose nothing that
 *   moves a cosine by more than ~1e-4);
 * - `i8`: one signed byte a dimension plus the vector's f32 scale (max |x| / 127), 4 bytes more;
 * - `i4`: half a byte a dimension plus an f32 scale (`i4Scale`): each value is one of 15 levels,
 *   the i8 codes spread evenly over i8's range (`I4_LEVELS`), two a byte. Such a record reads
 *   back as the i8 record it names, so a memory in RAM (vector table, index) holds it as it
 *   holds any i8 vector; only the store's bytes shrink (196 a MiniLM vector instead of 388).
 *   Vectors under `I4_MIN_DIM` dimensions are kept as i8, since their i4 length could be
 *   another precision's.
 * A blob's length tells its precision, so a store reads vectors written at any of them.
 */
export type VectorPrecision = 'f32' | 'f16' | 'i8' | 'i4';

/**
 * What the stores write unless told otherwise: an eighth of f32's bytes (196 a MiniLM vector),
 * for rankings that stay within LoCoMo dev's paired CIs (see the README's storage section). A
 * vector is the bulk of a node's bytes, so this sets the store's size per message.
 */
export const DEFAULT_VECTOR_PRECISION: VectorPrecision = 'i4';

/** The i8 code of each i4 level's magnitude: round(k × 127 / 7), k = 0 … 7. */
const I4_LEVELS = [0, 18, 36, 54, 73, 91, 109, 127] as const;

/** The smallest dimension kept at i4: below it, i4's length (4 + ⌈dim / 2⌉) can equal f16's or i8's. */
export const I4_MIN_DIM = 8;

/** The index (0 … 7) of the level nearest |x| at this scale; the top level takes every larger value. */
function i4Level(x: number, scale: number): number {
  // NaN (which no embedder gives) takes level 0, as i8 stores it as code 0.
  return Math.min(7, Math.round((Math.abs(x / scale) * 7) / 127)) || 0;
}

/** The i8 scale's fractions an i4 scale is chosen from (see `i4Scale`), largest first. */
const I4_SCALE_FRACTIONS = Array.from({ length: 21 }, (_, i) => 1 - i / 40);

/**
 * The scale of a vector's i4 record: of the i8 scale times each of `I4_SCALE_FRACTIONS`, the one
 * whose levels are nearest the vector (least squared error; the larger on a tie). A scale below
 * i8's clips the few largest values to the top level and spaces the levels the rest fall in
 * more finely: on MiniLM vectors, whose largest values stand out, that keeps more of i8's top 10
 * by inner product than the i8 scale itself does (0.944 against 0.931 of them, 1,345 LoCoMo dev
 * questions over their conversations' turns). The largest value always takes the top level, so
 * the decoded floats' i8 scale (their max |x| / 127) is the record's own, and they encode back
 * to the i8 record the i4 one names.
 */
function i4Scale(vector: Float32Array): number {
  const full = i8Scale(vector);
  // A NaN or an infinity (which no embedder gives) makes the i8 scale so, and every scale's error
  // NaN: no scale beats the i8 one.
  if (!Number.isFinite(full)) return readBackScale(full);
  const magnitudes = new Float64Array(vector.length);
  for (let i = 0; i < vector.length; i++) magnitudes[i] = Math.abs(vector[i] as number);
  const ascending = magnitudes.slice().sort();
  const levelValues = new Float64Array(I4_LEVELS.length);
  const starts = new Float64Array(I4_LEVELS.length);
  let best = full;
  let bestError = Infinity;
  for (const fraction of I4_SCALE_FRACTIONS) {
    const scale = Math.fround(full * fraction);
    for (let level = 0; level < I4_LEVELS.length; level++) levelValues[level] = Math.fround((I4_LEVELS[level] as number) * scale);
    levelStarts(ascending, scale, starts);
    const s1 = starts[1] as number;
    const s2 = starts[2] as number;
    const s3 = starts[3] as number;
    const s4 = starts[4] as number;
    const s5 = starts[5] as number;
    const s6 = starts[6] as number;
    const s7 = starts[7] as number;
    let error = 0;
    // A sum of squares only grows: one that reaches the best so far cannot beat it (ties keep the larger scale).
    for (let i = 0; i < magnitudes.length && error < bestError; i++) {
      const x = magnitudes[i] as number;
      // Counted, not branched on: one value's level says nothing of the next one's.
      const level = (x >= s1 ? 1 : 0) + (x >= s2 ? 1 : 0) + (x >= s3 ? 1 : 0) + (x >= s4 ? 1 : 0) + (x >= s5 ? 1 : 0) + (x >= s6 ? 1 : 0) + (x >= s7 ? 1 : 0);
      error += (x - (levelValues[level] as number)) ** 2;
    }
    if (error < bestError) {
      bestError = error;
      best = scale;
    }
    // A vector already on its levels (as a store gets it: rounded before the commit) is done.
    if (error === 0) break;
  }
  return readBackScale(best);
}

/**
 * Fills `starts[k]` (k = 1 … 7) with the least value of `ascending` (a vector's |x|, finite and
 * ascending) whose `i4Level` at `scale` is k or more, Infinity where none is. The level only grows
 * with |x| (each step of it rounds monotonically), so a value of the vector is at level k or above
 * exactly when it is at least `starts[k]`, and `i4Scale` levels its values by comparing them with
 * these: two divisions a value at each of 21 scales were ~170 µs a MiniLM vector, about a
 * millisecond of each chat message's add. Each start is looked for where the level's rounding
 * turns, (k − ½) × 127 / 7 × scale, and moved to the exact one by `i4Level` (a value or two).
 */
function levelStarts(ascending: Float64Array, scale: number, starts: Float64Array): void {
  const count = ascending.length;
  let from = 0;
  for (let level = 1; level < I4_LEVELS.length; level++) {
    const turn = (((level - 0.5) * 127) / 7) * scale;
    let low = from;
    let high = count;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((ascending[middle] as number) < turn) low = middle + 1;
      else high = middle;
    }
    while (low < count && i4Level(ascending[low] as number, scale) < level) low++;
    while (low > from && i4Level(ascending[low - 1] as number, scale) >= level) low--;
    starts[level] = low < count ? (ascending[low] as number) : Infinity;
    from = low;
  }
}

/**
 * A scale near `scale` that the i8 encoding of the record's decoded floats finds again: their
 * largest is fround(127 × scale), and i8 takes that over 127, which can be an f32 step away.
 * Without it ~1 vector in 100 would not read back as its own record.
 */
function readBackScale(scale: number): number {
  let current = scale;
  for (let step = 0; step < 4; step++) {
    const next = Math.fround(Math.fround(127 * current) / 127);
    if (next === current) return current;
    current = next;
  }
  return current;
}

/** Bytes of an i4 record of `dim` dimensions. */
function i4Bytes(dim: number): number {
  return 4 + Math.ceil(dim / 2);
}

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
  if (precision === 'i4' && dim >= I4_MIN_DIM) return i4Bytes(dim);
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

/**
 * A vector's bytes at `precision` (little-endian; i8 and i4 put its f32 scale first; i4 packs
 * dimension 2j in the low half of byte j and 2j + 1 in the high half, each as its level's index
 * k + 7 for k = −7 … 7).
 */
export function encodeVector(vector: Float32Array, precision: VectorPrecision): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(encodedBytes(vector.length, precision));
  const view = new DataView(bytes.buffer);
  if (precision === 'f32') {
    vector.forEach((x, i) => view.setFloat32(i * 4, x, true));
  } else if (precision === 'f16') {
    vector.forEach((x, i) => view.setUint16(i * 2, toHalfBits(x), true));
  } else if (precision === 'i4' && vector.length >= I4_MIN_DIM) {
    const scale = i4Scale(vector);
    view.setFloat32(0, scale, true);
    vector.forEach((x, i) => {
      const level = i4Level(x, scale);
      bytes[4 + (i >> 1)]! |= (x < 0 ? 7 - level : 7 + level) << ((i & 1) * 4);
    });
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
  } else if (isI4Record(bytes, dim)) {
    return decodeVector(i8RecordOf(bytes, dim, expansion(dim)) as Uint8Array, dim);
  } else {
    throw new PrismError('CORRUPT_CHECKPOINT', `a stored vector has ${bytes.byteLength} bytes, which fits no precision of dimension ${dim}`);
  }
  return vector;
}

/**
 * Where an i4 record is expanded into the i8 record it names when the caller keeps no copy of
 * its own (`decodeVector`, `i8RecordOfStored`): one buffer, not a record a call (an open
 * expands every vector of a memory). Valid until the next expansion.
 */
let expanded = new Uint8Array(0);
function expansion(dim: number): Uint8Array {
  if (expanded.length !== dim + 4) expanded = new Uint8Array(dim + 4);
  return expanded;
}

/** Whether stored bytes of `dim` dimensions have an i4 record's length. */
export function isI4Record(bytes: Uint8Array, dim: number): boolean {
  return dim >= I4_MIN_DIM && bytes.byteLength === i4Bytes(dim);
}

/**
 * The i8 record that stored bytes of `dim` dimensions name, when they are i8 (the same bytes)
 * or i4 (expanded into `record`: its scale, then each level's i8 code); null for another
 * precision. An i4 half byte of 15, which no level is, is CORRUPT_CHECKPOINT.
 */
export function i8RecordOf(bytes: Uint8Array, dim: number, record: Uint8Array = new Uint8Array(dim + 4)): Uint8Array | null {
  if (bytes.byteLength === dim + 4) return bytes;
  if (!isI4Record(bytes, dim)) return null;
  if (!expandI4Record(bytes, 0, dim, record, 0)) throw new PrismError('CORRUPT_CHECKPOINT', 'an i4 vector has a half byte of 15, which no level is');
  return record;
}

/**
 * Writes the i8 record that the i4 record of `dim` dimensions at `source[from]` names at
 * `target[to]` (its scale, then each level's i8 code); false, with the target written, when a
 * half byte is 15, which no level is.
 */
export function expandI4Record(source: Uint8Array, from: number, dim: number, target: Uint8Array, to: number): boolean {
  const { low, high, invalid } = i4ByteTables();
  for (let b = 0; b < 4; b++) target[to + b] = source[from + b]!;
  // A table lookup a byte, not a half (an open expands every vector of a memory); an odd
  // dimension's last byte holds one value, its high half unused.
  const pairs = dim >> 1;
  const codes = from + 4;
  let bad = 0;
  for (let j = 0, at = to + 4; j < pairs; j++, at += 2) {
    const byte = source[codes + j]!;
    bad |= invalid[byte]!;
    target[at] = low[byte]!;
    target[at + 1] = high[byte]!;
  }
  if (dim & 1) {
    const byte = (source[codes + pairs]! & 0x0f) | 0x70;
    bad |= invalid[byte]!;
    target[to + 3 + dim] = low[byte]!;
  }
  return bad === 0;
}

/** An i8 record at byte `start` of `bytes`, with the views its readers (`i8RecordDot`, `i8RecordPairDot`) take of those bytes. */
export interface I8Record {
  bytes: Uint8Array;
  view: DataView;
  codes: Int8Array;
  start: number;
}

/** Room for one i8 record of `dim` dimensions, for i4 records to be expanded into (`expandI4Into`). */
export function scratchI8Record(dim: number): I8Record {
  const bytes = new Uint8Array(dim + 4);
  return { bytes, view: new DataView(bytes.buffer), codes: new Int8Array(bytes.buffer), start: 0 };
}

/**
 * `record`, now holding the i8 record that the i4 record of `dim` dimensions at `source[from]`
 * names: for a reader of i4 records kept whose half bytes were checked when they were kept.
 */
export function expandI4Into(source: Uint8Array, from: number, dim: number, record: I8Record): I8Record {
  expandI4Record(source, from, dim, record.bytes, record.start);
  return record;
}

/** Whether stored bytes of `dim` dimensions are an i4 record whose every half byte names a level (see `expandI4Record`). */
export function isValidI4Record(bytes: Uint8Array, dim: number): boolean {
  if (!isI4Record(bytes, dim)) return false;
  const pairs = dim >> 1;
  let bad = 0;
  let j = 4;
  // Four bytes at a time where they are aligned (a stored group's records are): a half byte is 15
  // when its four bits are all set, which ANDing the word with itself shifted by 1, 2 and 3 leaves
  // in the half's low bit. An open checks every vector of a memory (~464K at 100K messages).
  if ((bytes.byteOffset & 3) === 0) {
    const words = new Int32Array(bytes.buffer, bytes.byteOffset + 4, pairs >> 2);
    for (let w = 0; w < words.length; w++) {
      const word = words[w] as number;
      bad |= word & (word >>> 1) & (word >>> 2) & (word >>> 3) & 0x11111111;
    }
    j += words.length * 4;
  }
  const { invalid } = i4ByteTables();
  for (; j < 4 + pairs; j++) bad |= invalid[bytes[j]!]!;
  if (dim & 1) bad |= invalid[(bytes[4 + pairs]! & 0x0f) | 0x70]!;
  return bad === 0;
}

/** For each i4 byte: the i8 codes of its low and high halves (as bytes), and 1 where a half is 15; for each half byte, its code. */
interface I4ByteTables {
  low: Uint8Array;
  high: Uint8Array;
  invalid: Uint8Array;
  /** The i8 code each half byte names, signed (15, which names no level, as 14). */
  signed: Int8Array;
}

let i4Tables: I4ByteTables | undefined;
function i4ByteTables(): I4ByteTables {
  if (!i4Tables) {
    const code = (index: number) => (index < 7 ? -I4_LEVELS[7 - index]! : I4_LEVELS[Math.min(index, 14) - 7]!) & 0xff;
    i4Tables = { low: new Uint8Array(256), high: new Uint8Array(256), invalid: new Uint8Array(256), signed: new Int8Array(16) };
    for (let half = 0; half < 16; half++) i4Tables.signed[half] = code(half);
    for (let byte = 0; byte < 256; byte++) {
      i4Tables.low[byte] = code(byte & 15);
      i4Tables.high[byte] = code(byte >> 4);
      i4Tables.invalid[byte] = (byte & 15) === 15 || byte >> 4 === 15 ? 1 : 0;
    }
  }
  return i4Tables;
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

/**
 * `dot` of the floats of two i8 records (scales read from `viewA` and `viewB`, codes from `codesA`
 * and `codesB`, at bytes `a` and `b`), bit for bit as over `decodeVector`'s floats, with neither
 * decoded.
 */
export function i8RecordPairDot(viewA: DataView, codesA: Int8Array, a: number, viewB: DataView, codesB: Int8Array, b: number, dim: number): number {
  const scaleA = i8RecordScale(viewA, a);
  const scaleB = i8RecordScale(viewB, b);
  let sum = 0;
  for (let i = 0; i < dim; i++) sum += Math.fround((codesA[a + 4 + i] as number) * scaleA) * Math.fround((codesB[b + 4 + i] as number) * scaleB);
  return sum;
}

/**
 * For each half byte of an i4 record of scale `scale`: the float its i8 code decodes to
 * (`Math.fround(code × scale)`, as `decodeVector` rounds it), in `into`.
 */
function i4Floats(scale: number, into: Float64Array): Float64Array {
  const { signed } = i4ByteTables();
  for (let half = 0; half < 16; half++) into[half] = Math.fround((signed[half] as number) * scale);
  return into;
}

/** `i4Floats`' two tables, reused by every read: the readers below never hold one across calls. */
const i4FloatTables = [new Float64Array(16), new Float64Array(16)] as const;

/**
 * The inner product of `query` and the i4 record at byte `start` of `bytes` (its scale read from
 * `view`, over the same bytes), without expanding it: `i8RecordDot` of the i8 record it names, bit
 * for bit (each half byte's decoded float is that record's, times the query's, added in the same
 * order). For records whose half bytes were checked when they were kept.
 */
export function i4RecordDot(bytes: Uint8Array, view: DataView, start: number, dim: number, query: Float32Array): number {
  if (query.length !== dim) throw new PrismError('DIMENSION_MISMATCH', `vectors of ${dim} and ${query.length} dimensions`);
  const floats = i4Floats(i8RecordScale(view, start), i4FloatTables[0]);
  const pairs = dim >> 1;
  let sum = 0;
  for (let j = 0, at = start + 4; j < pairs; j++) {
    const byte = bytes[at + j] as number;
    sum += (floats[byte & 15] as number) * (query[2 * j] as number);
    sum += (floats[byte >> 4] as number) * (query[2 * j + 1] as number);
  }
  if (dim & 1) sum += (floats[(bytes[start + 4 + pairs] as number) & 15] as number) * (query[dim - 1] as number);
  return sum;
}

/** `i8RecordPairDot` of the i8 records two i4 records name (at `a` of `bytesA`, `b` of `bytesB`), bit for bit, with neither expanded. */
export function i4RecordPairDot(bytesA: Uint8Array, viewA: DataView, a: number, bytesB: Uint8Array, viewB: DataView, b: number, dim: number): number {
  const floatsA = i4Floats(i8RecordScale(viewA, a), i4FloatTables[0]);
  const floatsB = i4Floats(i8RecordScale(viewB, b), i4FloatTables[1]);
  const pairs = dim >> 1;
  let sum = 0;
  for (let j = 0; j < pairs; j++) {
    const byteA = bytesA[a + 4 + j] as number;
    const byteB = bytesB[b + 4 + j] as number;
    sum += (floatsA[byteA & 15] as number) * (floatsB[byteB & 15] as number);
    sum += (floatsA[byteA >> 4] as number) * (floatsB[byteB >> 4] as number);
  }
  if (dim & 1) sum += (floatsA[(bytesA[a + 4 + pairs] as number) & 15] as number) * (floatsB[(bytesB[b + 4 + pairs] as number) & 15] as number);
  return sum;
}

/** A stored vector's floats (any precision, told by its length); a length that fits none is CORRUPT_CHECKPOINT naming the vector. */
export function decodeStoredVector(id: string, bytes: Uint8Array, dim: number): Float32Array {
  try {
    return decodeVector(bytes, dim);
  } catch (err) {
    throw storedVectorError(id, err);
  }
}

/**
 * `i8RecordOf` of a stored vector; a bad i4 record is CORRUPT_CHECKPOINT naming the vector. An
 * open calls it for every vector: i8 bytes return at once, and nothing is allocated a call (an
 * i4 record is expanded into a shared buffer, valid until the next expansion: copy it to keep it).
 */
export function i8RecordOfStored(id: string, bytes: Uint8Array, dim: number): Uint8Array | null {
  if (bytes.byteLength === dim + 4) return bytes;
  try {
    return i8RecordOf(bytes, dim, expansion(dim));
  } catch (err) {
    throw storedVectorError(id, err);
  }
}

function storedVectorError(id: string, err: unknown): PrismError {
  return new PrismError('CORRUPT_CHECKPOINT', `vector ${id}: ${err instanceof Error ? err.message : String(err)}`);
}
