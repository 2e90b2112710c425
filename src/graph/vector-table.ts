import { decodeStoredVector, decodeVector, encodeVector, i8RecordDot, i8RecordScale, i8ScaleIsFinite } from '../store/vector-codec.ts';
import { dot } from '../util/vectors.ts';

/** i8 records per page: pages are allocated as the table grows, and a freed record is reused. */
const RECORDS_PER_PAGE = 1024;

/** Decoded vectors kept for `get`: more than one query's working set, a few MB. */
const DECODED_CACHE_LIMIT = 4096;

/**
 * Node and edge vectors by id, held as compactly as they stay exact: a vector that the i8 store
 * encoding (one byte a dimension and an f32 scale, see store/vector-codec.ts) rebuilds bit for bit
 * — every vector a SQL or IndexedDB store wrote or will write — is kept as those bytes, a quarter of
 * its floats; any other vector is kept as it is. `get` decodes (the recent ones are cached), so
 * every reader sees exactly the floats that were set.
 *
 * On a memory of 10,000 chat messages, f32 copies of the vectors were ~90 MB of a Node process.
 */
export class VectorTable implements Map<string, Float32Array> {
  /** Record slot (≥ 0) of an i8 vector, or −1 for one kept as floats; in insertion order. */
  private readonly slots = new Map<string, number>();
  private readonly floats = new Map<string, Float32Array>();
  private readonly decoded = new Map<string, Float32Array>();
  private readonly pages: Uint8Array[] = [];
  /** Each page as signed codes and as a view for its scales, for `dot`. */
  private readonly codeViews: Int8Array[] = [];
  private readonly scaleViews: DataView[] = [];
  /** Each page as 32-bit words, for `copyRecords`. */
  private readonly wordViews: Int32Array[] = [];
  private readonly freeSlots: number[] = [];
  private nextSlot = 0;
  /** Dimensions of the i8 records (fixed by the first one). */
  private dim = 0;

  constructor(entries?: Iterable<readonly [string, Float32Array]>) {
    for (const [id, vector] of entries ?? []) this.set(id, vector);
  }

  get size(): number {
    return this.slots.size;
  }

  get [Symbol.toStringTag](): string {
    return 'VectorTable';
  }

  has(id: string): boolean {
    return this.slots.has(id);
  }

  /** The vector under `id`, decoded afresh and not remembered: for a pass over every vector (indexing a loaded memory). */
  peek(id: string): Float32Array | undefined {
    const slot = this.slots.get(id);
    if (slot === undefined) return undefined;
    return slot < 0 ? this.floats.get(id) : (this.decoded.get(id) ?? decodeVector(this.record(slot), this.dim));
  }

  /**
   * Copies the i8 records of `ids` end to end into `target` (each `dim` + 4 bytes); false, with
   * `target` partly written, when one is not kept as a record or they do not fill it. Word by
   * word with no view made per record: an open copies every vector of a memory for its indexes.
   */
  copyRecords(ids: readonly string[], target: Uint8Array): boolean {
    const bytes = this.dim + 4;
    if (this.dim === 0 || target.length !== ids.length * bytes) return false;
    const words = bytes % 4 === 0 && target.byteOffset % 4 === 0 ? new Int32Array(target.buffer, target.byteOffset, target.length / 4) : null;
    for (let i = 0; i < ids.length; i++) {
      const slot = this.slots.get(ids[i] as string);
      if (slot === undefined || slot < 0) return false;
      const { page, start } = this.place(slot);
      const at = i * bytes;
      if (words) {
        const source = this.wordViews[page] as Int32Array;
        for (let w = 0, from = start / 4, to = at / 4; w < bytes / 4; w++) words[to + w] = source[from + w] as number;
      } else {
        const source = this.pages[page] as Uint8Array;
        for (let b = 0; b < bytes; b++) target[at + b] = source[start + b] as number;
      }
    }
    return true;
  }

  /**
   * Whether `id` is an i8 record of `dim` dimensions whose every value is finite, told from its
   * scale alone (its values are at most 128 × the scale in magnitude): a loaded memory is checked
   * without decoding each vector. False for anything else, which its checker then decodes.
   */
  isFiniteRecord(id: string, dim: number): boolean {
    const slot = this.slots.get(id);
    if (slot === undefined || slot < 0 || dim !== this.dim) return false;
    const { page, start } = this.place(slot);
    return i8ScaleIsFinite(i8RecordScale(this.scaleViews[page] as DataView, start));
  }

  /**
   * The inner product of `id`'s vector and `query`, without decoding an i8 record: the same
   * double `dot(get(id), query)` gives, bit for bit (each product is the decoded float times the
   * query's, added in the same order). Undefined when `id` holds nothing.
   */
  dot(id: string, query: Float32Array): number | undefined {
    const slot = this.slots.get(id);
    if (slot === undefined) return undefined;
    if (slot < 0) return dot(this.floats.get(id) as Float32Array, query);
    const { page, start } = this.place(slot);
    return i8RecordDot(this.scaleViews[page] as DataView, this.codeViews[page] as Int8Array, start, this.dim, query);
  }

  get(id: string): Float32Array | undefined {
    const cached = this.decoded.get(id);
    if (cached) return cached;
    const vector = this.peek(id);
    // Only decoded records are remembered: a vector kept as floats is its own entry.
    if (vector && (this.slots.get(id) ?? -1) >= 0) {
      if (this.decoded.size >= DECODED_CACHE_LIMIT) this.decoded.delete(this.decoded.keys().next().value as string);
      this.decoded.set(id, vector);
    }
    return vector;
  }

  set(id: string, vector: Float32Array): this {
    this.delete(id);
    const bytes = this.dim === 0 || vector.length === this.dim ? encodeVector(vector, 'i8') : null;
    if (bytes && sameFloats(decodeVector(bytes, vector.length), vector)) {
      this.dim = vector.length;
      this.store(id, bytes);
    } else {
      this.floats.set(id, vector);
      this.slots.set(id, -1);
    }
    return this;
  }

  /**
   * Sets a vector from its stored bytes (any precision a store writes, told by their length, for
   * `dim` dimensions): i8 bytes are kept as they are, which is what makes loading a memory cheap.
   * Bytes that fit no precision are CORRUPT_CHECKPOINT naming the vector.
   */
  setStored(id: string, bytes: Uint8Array, dim: number): this {
    if (bytes.length !== dim + 4 || (this.dim !== 0 && this.dim !== dim)) return this.set(id, decodeStoredVector(id, bytes, dim));
    this.delete(id);
    this.dim = dim;
    this.store(id, bytes);
    return this;
  }

  delete(id: string): boolean {
    const slot = this.slots.get(id);
    if (slot === undefined) return false;
    this.slots.delete(id);
    this.decoded.delete(id);
    if (slot < 0) this.floats.delete(id);
    else this.freeSlots.push(slot);
    return true;
  }

  clear(): void {
    this.slots.clear();
    this.floats.clear();
    this.decoded.clear();
    this.pages.length = 0;
    this.codeViews.length = 0;
    this.scaleViews.length = 0;
    this.wordViews.length = 0;
    this.freeSlots.length = 0;
    this.nextSlot = 0;
    this.dim = 0;
  }

  forEach(visit: (vector: Float32Array, id: string, table: Map<string, Float32Array>) => void, thisArg?: unknown): void {
    for (const [id, vector] of this) visit.call(thisArg, vector, id, this);
  }

  *entries(): MapIterator<[string, Float32Array]> {
    for (const id of this.slots.keys()) yield [id, this.get(id) as Float32Array];
  }

  keys(): MapIterator<string> {
    return this.slots.keys();
  }

  *values(): MapIterator<Float32Array> {
    for (const [, vector] of this.entries()) yield vector;
  }

  [Symbol.iterator](): MapIterator<[string, Float32Array]> {
    return this.entries();
  }

  /** Keeps `bytes`, an i8 record of this table's dimensions, under `id` (which holds nothing). */
  private store(id: string, bytes: Uint8Array): void {
    const slot = this.freeSlots.pop() ?? this.nextSlot++;
    const page = Math.floor(slot / RECORDS_PER_PAGE);
    if (this.pages[page] === undefined) {
      const bytes = new Uint8Array(RECORDS_PER_PAGE * (this.dim + 4));
      this.pages[page] = bytes;
      this.codeViews[page] = new Int8Array(bytes.buffer);
      this.scaleViews[page] = new DataView(bytes.buffer);
      this.wordViews[page] = new Int32Array(bytes.buffer, 0, Math.floor(bytes.length / 4));
    }
    this.record(slot).set(bytes);
    this.slots.set(id, slot);
  }

  /** Which page holds `slot`'s record, and at which byte it starts. */
  private place(slot: number): { page: number; start: number } {
    return { page: Math.floor(slot / RECORDS_PER_PAGE), start: (slot % RECORDS_PER_PAGE) * (this.dim + 4) };
  }

  /** The i8 record (f32 scale, then one byte a dimension) in `slot`, as a view. */
  private record(slot: number): Uint8Array {
    const { page, start } = this.place(slot);
    return (this.pages[page] as Uint8Array).subarray(start, start + this.dim + 4);
  }
}

/** Whether two float arrays hold the same values, bit for bit (−0 and 0 differ). */
function sameFloats(a: Float32Array, b: Float32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
  return true;
}

/** `dot(vectors.get(id), query)`, bit for bit; a VectorTable's i8 records are not decoded for it. Undefined when `id` has no vector. */
export function vectorDot(vectors: ReadonlyMap<string, Float32Array>, id: string, query: Float32Array): number | undefined {
  if (vectors instanceof VectorTable) return vectors.dot(id, query);
  const vector = vectors.get(id);
  return vector && dot(vector, query);
}
