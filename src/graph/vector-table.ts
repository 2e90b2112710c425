import { PrismError } from '../errors.ts';
import { decodeStoredVector, decodeVector, encodeVector, i8RecordDot, i8RecordOfStored, i8RecordPairDot, i8RecordScale, i8ScaleIsFinite } from '../store/vector-codec.ts';
import { dot } from '../util/vectors.ts';
import type { IndexRows } from '../vector/types.ts';

/** i8 records per page: pages are allocated as the table grows, and a freed record is reused. */
const RECORDS_PER_PAGE = 1024;

/** Decoded vectors kept for `get`: more than one query's working set, a few MB. */
const DECODED_CACHE_LIMIT = 4096;

/** Indexes one table lends to at most (a memory has six index spaces); a lent slot names its lender in its low bits. */
const LENDERS = 8;

/** Keys a lent slot can name exactly: the slot is −2 − (key × LENDERS + lender), a safe integer. */
const MAX_LENT_KEY = Math.floor((Number.MAX_SAFE_INTEGER - 2) / LENDERS) - 1;

/**
 * Node and edge vectors by id, held as compactly as they stay exact: a vector that the i8 store
 * encoding (one byte a dimension and an f32 scale, see store/vector-codec.ts) rebuilds bit for bit
 * — every vector a SQL or IndexedDB store wrote or will write — is kept as those bytes, a quarter of
 * its floats; any other vector is kept as it is. `get` decodes (the recent ones are cached), so
 * every reader sees exactly the floats that were set.
 *
 * On a memory of 10,000 chat messages, f32 copies of the vectors were ~90 MB of a Node process.
 *
 * An i8 record an index holds too, and can read back (`VectorIndex.rows`), is lent to it
 * (`lend`): the table then keeps only its key there and reads the vector from the index.
 */
export class VectorTable implements Map<string, Float32Array> {
  /**
   * Record slot (≥ 0) of an i8 vector, −1 for one kept as floats, or, at most −2, where a lent
   * one is (`lentTo`); in insertion order.
   */
  private readonly slots = new Map<string, number>();
  /** Where lent vectors are read, by the number a lent slot names. */
  private readonly lenders: IndexRows[] = [];
  /** Slots that hold a record (≥ 0): when none does, the pages go. */
  private heldRecords = 0;
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
    if (slot === -1) return this.floats.get(id);
    const cached = this.decoded.get(id);
    if (cached) return cached;
    return slot >= 0 ? decodeVector(this.record(slot), this.dim) : this.lentVector(slot, id);
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
      const page = Math.floor(slot / RECORDS_PER_PAGE);
      const start = (slot % RECORDS_PER_PAGE) * bytes;
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
    if (slot === -1) return dot(this.floats.get(id) as Float32Array, query);
    if (slot < -1) return this.lentDot(slot, id, query);
    const { page, start } = this.place(slot);
    return i8RecordDot(this.scaleViews[page] as DataView, this.codeViews[page] as Int8Array, start, this.dim, query);
  }

  /**
   * `dot(get(a), get(b))`, bit for bit, without decoding either where both are i8 records kept
   * here, or lent to one index. Undefined when either holds nothing.
   */
  pairDot(a: string, b: string): number | undefined {
    const slotA = this.slots.get(a);
    const slotB = this.slots.get(b);
    if (slotA === undefined || slotB === undefined) return undefined;
    if (slotA >= 0 && slotB >= 0) {
      const placeA = this.place(slotA);
      const placeB = this.place(slotB);
      const [viewA, viewB] = [this.scaleViews[placeA.page] as DataView, this.scaleViews[placeB.page] as DataView];
      return i8RecordPairDot(viewA, this.codeViews[placeA.page] as Int8Array, placeA.start, viewB, this.codeViews[placeB.page] as Int8Array, placeB.start, this.dim);
    }
    if (slotA < -1 && slotB < -1) {
      const lentA = this.lentTo(slotA);
      const lentB = this.lentTo(slotB);
      if (lentA.rows === lentB.rows) return lentA.rows.pairDot(lentA.key, lentB.key) ?? lost(lentA.rows.vector(lentA.key) ? b : a);
    }
    return dot(this.get(a) as Float32Array, this.get(b) as Float32Array);
  }

  get(id: string): Float32Array | undefined {
    const cached = this.decoded.get(id);
    if (cached) return cached;
    const vector = this.peek(id);
    // Only decoded records are remembered: a vector kept as floats is its own entry.
    if (vector && this.slots.get(id) !== -1) {
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
   * `dim` dimensions): i8 bytes are kept as they are and i4 bytes as the i8 record they name,
   * which is what makes loading a memory cheap. Bytes that fit no precision are
   * CORRUPT_CHECKPOINT naming the vector.
   */
  setStored(id: string, bytes: Uint8Array, dim: number): this {
    // An i4 record comes expanded in the codec's shared buffer, which `store` copies at once.
    const record = this.dim === 0 || this.dim === dim ? i8RecordOfStored(id, bytes, dim) : null;
    if (!record) return this.set(id, decodeStoredVector(id, bytes, dim));
    this.delete(id);
    this.dim = dim;
    this.store(id, record);
    return this;
  }

  delete(id: string): boolean {
    const slot = this.slots.get(id);
    if (slot === undefined) return false;
    this.slots.delete(id);
    this.decoded.delete(id);
    if (slot === -1) this.floats.delete(id);
    else if (slot >= 0) this.freeRecord(slot);
    return true;
  }

  /**
   * Lends the i8 records of `ids` to an index that holds each under the key at the same place
   * in `keys` (as it was added) and reads it back through `rows`: the table frees them and reads
   * them from there. A vector kept as floats, or already lent, stays as it is. The index must
   * hold these vectors for as long as the table does; the graph deletes a vector together with
   * its index entry (ingest's `applyBatch`).
   */
  lend(ids: readonly string[], keys: readonly number[], rows: IndexRows): void {
    let lender = this.lenders.indexOf(rows);
    if (lender < 0 && this.lenders.length < LENDERS) lender = this.lenders.push(rows) - 1;
    if (lender < 0) return;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as string;
      const key = keys[i] as number;
      const slot = this.slots.get(id);
      if (slot === undefined || slot < 0 || !Number.isSafeInteger(key) || key < 0 || key > MAX_LENT_KEY) continue;
      this.freeRecord(slot);
      this.slots.set(id, -2 - (key * LENDERS + lender));
    }
  }

  clear(): void {
    this.slots.clear();
    this.floats.clear();
    this.decoded.clear();
    this.lenders.length = 0;
    this.dropPages();
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

  /** The vector lent under `slot` (at most −2), from its index; a lender that lost it is a broken invariant. */
  private lentVector(slot: number, id: string): Float32Array {
    const { rows, key } = this.lentTo(slot);
    return rows.vector(key) ?? lost(id);
  }

  /** `dot` of the vector lent under `slot`, as its index gives it. */
  private lentDot(slot: number, id: string, query: Float32Array): number {
    const { rows, key } = this.lentTo(slot);
    return rows.dot(key, query) ?? lost(id);
  }

  /** The index a lent slot (at most −2) names, and the key the vector is under there. */
  private lentTo(slot: number): { rows: IndexRows; key: number } {
    const code = -2 - slot;
    const lender = code % LENDERS;
    return { rows: this.lenders[lender] as IndexRows, key: (code - lender) / LENDERS };
  }

  /** Frees a record's slot; once none holds a record, every page goes (an open lends them all). */
  private freeRecord(slot: number): void {
    this.freeSlots.push(slot);
    if (--this.heldRecords === 0) this.dropPages();
  }

  private dropPages(): void {
    this.pages.length = 0;
    this.codeViews.length = 0;
    this.scaleViews.length = 0;
    this.wordViews.length = 0;
    this.freeSlots.length = 0;
    this.nextSlot = 0;
    this.heldRecords = 0;
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
    // Not through `record`: an open stores every vector of a memory, and a view made for each was garbage.
    (this.pages[page] as Uint8Array).set(bytes, (slot % RECORDS_PER_PAGE) * (this.dim + 4));
    this.slots.set(id, slot);
    this.heldRecords++;
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

function lost(id: string): never {
  throw new PrismError('INVALID_INPUT', `vector ${id} was lent to an index that no longer holds it`);
}

/** Whether two float arrays hold the same values, bit for bit (−0 and 0 differ). */
function sameFloats(a: Float32Array, b: Float32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
  return true;
}

/** `vectors.get(id)`, decoded afresh where a VectorTable holds it: a read that would only crowd out the vectors queries read again. */
export function vectorOnce(vectors: ReadonlyMap<string, Float32Array>, id: string): Float32Array | undefined {
  return vectors instanceof VectorTable ? vectors.peek(id) : vectors.get(id);
}

/** `dot(vectors.get(a), vectors.get(b))`, bit for bit; a VectorTable's i8 records are not decoded for it. Undefined when either has no vector. */
export function vectorPairDot(vectors: ReadonlyMap<string, Float32Array>, a: string, b: string): number | undefined {
  if (vectors instanceof VectorTable) return vectors.pairDot(a, b);
  const [vectorA, vectorB] = [vectors.get(a), vectors.get(b)];
  return vectorA && vectorB && dot(vectorA, vectorB);
}

/** `dot(vectors.get(id), query)`, bit for bit; a VectorTable's i8 records are not decoded for it. Undefined when `id` has no vector. */
export function vectorDot(vectors: ReadonlyMap<string, Float32Array>, id: string, query: Float32Array): number | undefined {
  if (vectors instanceof VectorTable) return vectors.dot(id, query);
  const vector = vectors.get(id);
  return vector && dot(vector, query);
}
