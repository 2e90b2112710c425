import { PrismError } from '../errors.ts';
import { decodeStoredVector, decodeVector, encodeVector, expandI4Into, expandI4Record, i4RecordDot, i4RecordPairDot, i8RecordDot, i8RecordOfStored, i8RecordPairDot, i8RecordScale, i8ScaleIsFinite, isValidI4Record, scratchI8Record, type I8Record } from '../store/vector-codec.ts';
import { dot } from '../util/vectors.ts';
import { recordBytes, type IndexRows, type RecordForm } from '../vector/types.ts';

/** Records per page of a record pool: pages are allocated as the table grows, and a freed record is reused. */
const RECORDS_PER_PAGE = 1024;

/** Decoded vectors kept for `get`: more than one query's working set, a few MB. */
const DECODED_CACHE_LIMIT = 4096;

/** Indexes one table lends to at most (a memory has six index spaces); a lent slot names its lender in its low bits. */
const LENDERS = 8;

/** Keys a lent slot can name exactly: the slot is −2 − (key × LENDERS + lender), a safe integer. */
const MAX_LENT_KEY = Math.floor((Number.MAX_SAFE_INTEGER - 2) / LENDERS) - 1;

/** Where i4 records' slots start: below it a slot is an i8 record's, from it an i4 record's (slot − base in its pool). */
const I4_SLOTS = 2 ** 40;

/** A store's read that met vector `id` twice: a damaged store (`VectorTable.setStored`). */
function storedTwice(id: string): PrismError {
  return new PrismError('CORRUPT_CHECKPOINT', `vector ${JSON.stringify(id)} is stored twice`);
}

/**
 * Records of one size in pages allocated as they fill (`RECORDS_PER_PAGE` a page), a freed
 * record's place reused; every page goes once none holds a record (an open lends them all).
 */
class RecordPool {
  readonly pages: Uint8Array[] = [];
  /** Each page as signed codes and as a view for its scales, for `dot`. */
  readonly codeViews: Int8Array[] = [];
  readonly scaleViews: DataView[] = [];
  /** Each page as 32-bit words, for `copyRecords`. */
  readonly wordViews: Int32Array[] = [];
  private readonly freePlaces: number[] = [];
  private nextPlace = 0;
  private held = 0;

  constructor(readonly bytes: number) {}

  /** Keeps `record` (`bytes` long); returns its place. */
  store(record: Uint8Array): number {
    const place = this.freePlaces.pop() ?? this.nextPlace++;
    const page = Math.floor(place / RECORDS_PER_PAGE);
    if (this.pages[page] === undefined) {
      const bytes = new Uint8Array(RECORDS_PER_PAGE * this.bytes);
      this.pages[page] = bytes;
      this.codeViews[page] = new Int8Array(bytes.buffer);
      this.scaleViews[page] = new DataView(bytes.buffer);
      this.wordViews[page] = new Int32Array(bytes.buffer, 0, Math.floor(bytes.length / 4));
    }
    // Not through a view of its own: an open stores every vector of a memory, and a view made for each was garbage.
    (this.pages[page] as Uint8Array).set(record, (place % RECORDS_PER_PAGE) * this.bytes);
    this.held++;
    return place;
  }

  /** Which page holds `place`'s record, and at which byte it starts. */
  locate(place: number): { page: number; start: number } {
    return { page: Math.floor(place / RECORDS_PER_PAGE), start: (place % RECORDS_PER_PAGE) * this.bytes };
  }

  /** Copies `place`'s record to `target[at]`: word by word where both are aligned, with no view made. */
  copy(place: number, target: Uint8Array, words: Int32Array | null, at: number): void {
    const { page, start } = this.locate(place);
    if (words && this.bytes % 4 === 0) {
      const source = this.wordViews[page] as Int32Array;
      for (let w = 0, from = start / 4, to = at / 4; w < this.bytes / 4; w++) words[to + w] = source[from + w] as number;
    } else {
      const source = this.pages[page] as Uint8Array;
      for (let b = 0; b < this.bytes; b++) target[at + b] = source[start + b] as number;
    }
  }

  free(place: number): void {
    this.freePlaces.push(place);
    if (--this.held === 0) this.clear();
  }

  clear(): void {
    this.pages.length = 0;
    this.codeViews.length = 0;
    this.scaleViews.length = 0;
    this.wordViews.length = 0;
    this.freePlaces.length = 0;
    this.nextPlace = 0;
    this.held = 0;
  }
}

/**
 * Node and edge vectors by id, held as compactly as they stay exact: a vector that the i8 store
 * encoding (one byte a dimension and an f32 scale, see store/vector-codec.ts) rebuilds bit for bit
 * — every vector a SQL or IndexedDB store wrote or will write — is kept as those bytes, a quarter of
 * its floats; one a store read as i4 (`setStored`) is kept as those bytes, an eighth; any other
 * vector is kept as it is. `get` decodes (the recent ones are cached), so every reader sees
 * exactly the floats that were set.
 *
 * On a memory of 10,000 chat messages, f32 copies of the vectors were ~90 MB of a Node process.
 *
 * A record an index holds too, and can read back (`VectorIndex.rows`), is lent to it (`lend`):
 * the table then keeps only its key there and reads the vector from the index.
 */
export class VectorTable implements Map<string, Float32Array> {
  /** Each vector's place in `slots`, by id, in insertion order. */
  private readonly places = new Map<string, number>();
  /**
   * By place: the record slot of a vector kept as bytes (≥ 0: an i8 record's below `I4_SLOTS`, an
   * i4 record's from it), −1 for one kept as floats, or, at most −2, where a lent one is (`lentTo`).
   * An array beside the map, so that lending a vector found by its place (`recordPlace`) changes it
   * with no second lookup by id: an open lends every vector of a memory.
   */
  private readonly slots: number[] = [];
  /** Places freed by deletes, reused before `slots` grows. */
  private readonly freePlaces: number[] = [];
  /** Where lent vectors are read, by the number a lent slot names. */
  private readonly lenders: IndexRows[] = [];
  private readonly floats = new Map<string, Float32Array>();
  private readonly decoded = new Map<string, Float32Array>();
  /** The records, made when the dimension is known (by the first one). */
  private i8: RecordPool | null = null;
  private i4: RecordPool | null = null;
  /** Two buffers an i4 record is expanded into as the i8 record it names, for its readers that take i8 records (`pairDot` of an i4 and an i8 record reads two). */
  private expanded: [I8Record, I8Record] | null = null;
  /** Dimensions of the records (fixed by the first one). */
  private dim = 0;
  /**
   * Vectors lent by key alone (`addLent`), by their index key: the number of the index that holds
   * each, plus one (0 or absent: none). Found by id through `owners`, with no entry of their own
   * in `places`: an open lends ~464K at 100K messages, and a map set of each id was ~0.3 s of it.
   */
  private lentByKey = new Uint8Array(0);
  private lentCount = 0;
  /** The records vectors lent by key belong to: the graph the table serves (`attachOwners`). */
  private owners: VectorOwners | null = null;

  constructor(entries?: Iterable<readonly [string, Float32Array]>) {
    for (const [id, vector] of entries ?? []) this.set(id, vector);
  }

  get size(): number {
    return this.places.size + this.lentCount;
  }

  /** Tells the table whose records its vectors lent by key (`addLent`) belong to: found by id through them. */
  attachOwners(owners: VectorOwners): void {
    this.owners = owners;
  }

  get [Symbol.toStringTag](): string {
    return 'VectorTable';
  }

  has(id: string): boolean {
    return this.slotOf(id) !== undefined;
  }

  /** The vector under `id`, decoded afresh and not remembered: for a pass over every vector (indexing a loaded memory). */
  peek(id: string): Float32Array | undefined {
    const slot = this.slotOf(id);
    if (slot === undefined) return undefined;
    if (slot === -1) return this.floats.get(id);
    const cached = this.decoded.get(id);
    if (cached) return cached;
    if (slot < -1) return this.lentVector(slot, id);
    const { bytes, start } = this.i8Record(slot, 0);
    return decodeVector(bytes.subarray(start, start + this.dim + 4), this.dim);
  }

  /**
   * Where `id`'s record is found again by `copyRecords` and `lend` (its place, not a lookup by
   * id), or undefined when it is not kept as one (floats, lent, or absent).
   */
  recordPlace(id: string): number | undefined {
    const place = this.places.get(id);
    return place !== undefined && (this.slots[place] as number) >= 0 ? place : undefined;
  }

  /**
   * Copies the records at `places` (from `recordPlace`, none deleted or lent since) end to end into `target`
   * in `form` (default i8): an i8 record as it is kept, an i4 one as it is (`i4`) or expanded to
   * the i8 record it names (`i8`). False, with `target` partly written, when one is an i8 record
   * asked for as i4, or they do not fill it. No view is made per record: an open copies every
   * vector of a memory for its indexes.
   */
  copyRecords(places: readonly number[], target: Uint8Array, form: RecordForm = 'i8'): boolean {
    const bytes = recordBytes(this.dim, form);
    if (this.dim === 0 || target.length !== places.length * bytes) return false;
    const words = target.byteOffset % 4 === 0 ? new Int32Array(target.buffer, target.byteOffset, Math.floor(target.length / 4)) : null;
    for (let i = 0; i < places.length; i++) {
      const slot = this.slots[places[i] as number];
      if (slot === undefined || slot < 0) return false;
      const at = i * bytes;
      if (slot < I4_SLOTS) {
        if (form !== 'i8') return false;
        (this.i8 as RecordPool).copy(slot, target, words, at);
      } else if (form === 'i4') {
        (this.i4 as RecordPool).copy(slot - I4_SLOTS, target, words, at);
      } else {
        const pool = this.i4 as RecordPool;
        const { page, start } = pool.locate(slot - I4_SLOTS);
        expandI4Record(pool.pages[page] as Uint8Array, start, this.dim, target, at);
      }
    }
    return true;
  }

  /**
   * Calls `visit` with each id and whether its vector is a record of `dim` dimensions whose every
   * value is finite, told from its scale alone (its values are at most 128 × the scale in
   * magnitude); false for anything else, which its checker then decodes. By place, with no lookup
   * by id: a loaded memory's ~464K vectors at 100K messages are checked this way at every open.
   */
  visitFiniteness(dim: number, visit: (id: string, finite: boolean) => void): void {
    this.forEachKeyLent((id) => visit(id, false));
    // `forEach`, not `for…of`: an entry array a vector was ~50 MB for the collector at 100K messages.
    this.places.forEach((place, id) => {
      const slot = this.slots[place] as number;
      if (slot < 0 || dim !== this.dim) {
        visit(id, false);
        return;
      }
      const i4 = slot >= I4_SLOTS;
      const pool = (i4 ? this.i4 : this.i8) as RecordPool;
      const { page, start } = pool.locate(i4 ? slot - I4_SLOTS : slot);
      visit(id, i8ScaleIsFinite(i8RecordScale(pool.scaleViews[page] as DataView, start)));
    });
  }

  /** Whether the id of any vector held starts with `prefix`, told from the ids alone. */
  hasIdStartingWith(prefix: string): boolean {
    let found = false;
    const test = (id: string) => {
      found ||= id.startsWith(prefix);
    };
    this.places.forEach((_, id) => test(id));
    this.forEachKeyLent(test);
    return found;
  }

  /**
   * The inner product of `id`'s vector and `query`, without decoding a record: the same double
   * `dot(get(id), query)` gives, bit for bit (each product is the decoded float times the
   * query's, added in the same order). Undefined when `id` holds nothing.
   */
  dot(id: string, query: Float32Array): number | undefined {
    const slot = this.slotOf(id);
    if (slot === undefined) return undefined;
    if (slot === -1) return dot(this.floats.get(id) as Float32Array, query);
    if (slot < -1) return this.lentDot(slot, id, query);
    if (slot >= I4_SLOTS) {
      const { bytes, view, start } = this.i4Record(slot);
      return i4RecordDot(bytes, view, start, this.dim, query);
    }
    const { view, codes, start } = this.i8Record(slot, 0);
    return i8RecordDot(view, codes, start, this.dim, query);
  }

  /**
   * `dot(get(a), get(b))`, bit for bit, without decoding either where both are records kept
   * here, or lent to one index. Undefined when either holds nothing.
   */
  pairDot(a: string, b: string): number | undefined {
    const slotA = this.slotOf(a);
    const slotB = this.slotOf(b);
    if (slotA === undefined || slotB === undefined) return undefined;
    if (slotA >= I4_SLOTS && slotB >= I4_SLOTS) {
      const recordA = this.i4Record(slotA);
      const recordB = this.i4Record(slotB);
      return i4RecordPairDot(recordA.bytes, recordA.view, recordA.start, recordB.bytes, recordB.view, recordB.start, this.dim);
    }
    if (slotA >= 0 && slotB >= 0) {
      const recordA = this.i8Record(slotA, 0);
      const recordB = this.i8Record(slotB, 1);
      return i8RecordPairDot(recordA.view, recordA.codes, recordA.start, recordB.view, recordB.codes, recordB.start, this.dim);
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
    if (vector && this.slotOf(id) !== -1) {
      if (this.decoded.size >= DECODED_CACHE_LIMIT) this.decoded.delete(this.decoded.keys().next().value as string);
      this.decoded.set(id, vector);
    }
    return vector;
  }

  set(id: string, vector: Float32Array): this {
    this.delete(id);
    const bytes = this.dim === 0 || vector.length === this.dim ? encodeVector(vector, 'i8') : null;
    if (bytes && sameFloats(decodeVector(bytes, vector.length), vector)) {
      this.place(id, this.pools(vector.length).i8.store(bytes));
    } else {
      this.floats.set(id, vector);
      this.place(id, -1);
    }
    return this;
  }

  /**
   * Sets a vector from its stored bytes (any precision a store writes, told by their length, for
   * `dim` dimensions): i8 and i4 bytes are kept as they are, which is what makes loading a
   * memory cheap (an i4 record reaches an index as it is, and stays an i4 row there). Bytes that fit
   * no precision, or an i4 half byte that names no level, are CORRUPT_CHECKPOINT naming the vector.
   */
  setStored(id: string, bytes: Uint8Array, dim: number): this {
    const kept = this.storedSlot(id, bytes, dim);
    if (kept instanceof Float32Array) return this.set(id, kept);
    this.delete(id);
    this.place(id, kept);
    return this;
  }

  /**
   * `setStored` for a store's read, where each id is stored once: the table is not asked first
   * whether it holds `id` (an open reads every vector of a memory, and that was a second lookup
   * of each), and one it holds already is CORRUPT_CHECKPOINT, a damaged store's.
   */
  addStored(id: string, bytes: Uint8Array, dim: number): this {
    const kept = this.storedSlot(id, bytes, dim);
    const held = this.places.size;
    if (kept instanceof Float32Array) {
      if (this.places.has(id)) throw storedTwice(id);
      return this.set(id, kept);
    }
    this.place(id, kept);
    if (this.places.size === held) throw storedTwice(id);
    return this;
  }

  /** How stored `bytes` are kept: the slot of the record they are kept as, or the floats they decode to where they are no record this table keeps. */
  private storedSlot(id: string, bytes: Uint8Array, dim: number): number | Float32Array {
    if ((this.dim === 0 || this.dim === dim) && isValidI4Record(bytes, dim)) return I4_SLOTS + this.pools(dim).i4.store(bytes);
    const record = this.dim === 0 || this.dim === dim ? i8RecordOfStored(id, bytes, dim) : null;
    return record ? this.pools(dim).i8.store(record) : decodeStoredVector(id, bytes, dim);
  }

  delete(id: string): boolean {
    const place = this.places.get(id);
    if (place === undefined) return this.forgetKeyLent(id);
    const slot = this.slots[place] as number;
    this.places.delete(id);
    this.freePlaces.push(place);
    this.decoded.delete(id);
    if (slot === -1) this.floats.delete(id);
    else if (slot >= 0) this.freeRecord(slot);
    return true;
  }

  /**
   * Lends the records of `ids` to an index that holds each under the key at the same place in
   * `keys` (as it was added) and reads it back through `rows`: the table frees them and reads
   * them from there. `places`, where given, are where `recordPlace` found them (none deleted
   * since; −1: look the id up). A vector kept as floats, or already lent, stays as it is. The
   * index must hold these vectors for as long as the table does; the graph deletes a vector
   * together with its index entry (ingest's `applyBatch`).
   */
  lend(ids: readonly string[], keys: readonly number[], rows: IndexRows, places?: readonly number[]): void {
    let lender = this.lenders.indexOf(rows);
    if (lender < 0 && this.lenders.length < LENDERS) lender = this.lenders.push(rows) - 1;
    if (lender < 0) return;
    for (let i = 0; i < ids.length; i++) {
      const key = keys[i] as number;
      const known = places?.[i] ?? -1;
      const place = known >= 0 ? known : this.places.get(ids[i] as string);
      const slot = place === undefined ? -1 : (this.slots[place] as number);
      if (place === undefined || slot < 0 || !Number.isSafeInteger(key) || key < 0 || key > MAX_LENT_KEY) continue;
      this.freeRecord(slot);
      this.slots[place] = -2 - (key * LENDERS + lender);
    }
  }

  /**
   * Keeps the vectors of `ids`, which an index holds already under the key at the same place in
   * `keys` and reads back through `rows`, with no record kept here first (`lend` without the
   * record): an open that handed a store's records to the index by key (memory/keyed-vectors.ts).
   * An id the table holds already is CORRUPT_CHECKPOINT, as a store's read that meets it twice.
   */
  addLent(ids: readonly string[], keys: readonly number[], rows: IndexRows): void {
    if (!this.owners) throw new PrismError('INVALID_INPUT', 'vectors are lent by key only to a table whose owners are attached');
    let lender = this.lenders.indexOf(rows);
    if (lender < 0 && this.lenders.length < LENDERS) lender = this.lenders.push(rows) - 1;
    if (lender < 0) throw new PrismError('INVALID_INPUT', `a vector table lends to at most ${LENDERS} indexes`);
    const most = keys.reduce((max, key) => Math.max(max, key), -1);
    if (!Number.isSafeInteger(most) || most > MAX_LENT_KEY || keys.some((key) => key < 0)) throw new PrismError('INVALID_INPUT', 'keys must be non-negative integers that can be lent');
    if (most >= this.lentByKey.length) {
      const grown = new Uint8Array(Math.max(most + 1, this.lentByKey.length * 2));
      grown.set(this.lentByKey);
      this.lentByKey = grown;
    }
    for (let i = 0; i < ids.length; i++) {
      const key = keys[i] as number;
      if (this.lentByKey[key] !== 0 || (this.places.size > 0 && this.places.has(ids[i] as string))) throw storedTwice(ids[i] as string);
      this.lentByKey[key] = lender + 1;
    }
    this.lentCount += ids.length;
  }

  /**
   * The vector lent by key under `key`, whose owner now has another key, kept as lent under its
   * own id from now on (the index still holds it under `key`): the graph calls this as a record
   * comes back under a new key.
   */
  rekeyLent(id: string, key: number): void {
    const code = this.lentByKey[key] ?? 0;
    if (code === 0) return;
    this.lentByKey[key] = 0;
    this.lentCount--;
    this.place(id, -2 - (key * LENDERS + code - 1));
  }

  clear(): void {
    this.lentByKey = new Uint8Array(0);
    this.lentCount = 0;
    this.places.clear();
    this.slots.length = 0;
    this.freePlaces.length = 0;
    this.floats.clear();
    this.decoded.clear();
    this.lenders.length = 0;
    this.i8 = null;
    this.i4 = null;
    this.dim = 0;
  }

  forEach(visit: (vector: Float32Array, id: string, table: Map<string, Float32Array>) => void, thisArg?: unknown): void {
    for (const [id, vector] of this) visit.call(thisArg, vector, id, this);
  }

  *entries(): MapIterator<[string, Float32Array]> {
    for (const id of this.keys()) yield [id, this.get(id) as Float32Array];
  }

  *keys(): MapIterator<string> {
    yield* this.places.keys();
    const ids: string[] = [];
    this.forEachKeyLent((id) => ids.push(id));
    yield* ids;
  }

  *values(): MapIterator<Float32Array> {
    for (const [, vector] of this.entries()) yield vector;
  }

  [Symbol.iterator](): MapIterator<[string, Float32Array]> {
    return this.entries();
  }

  /** The key `id`'s vector is lent by (`addLent`), or −1 where it is not lent so. */
  private lentKey(id: string): number {
    if (this.lentCount === 0) return -1;
    const key = this.owners?.keyOf(id);
    return key !== undefined && (this.lentByKey[key] ?? 0) !== 0 ? key : -1;
  }

  /** Calls `visit` with the id of each vector lent by key. */
  private forEachKeyLent(visit: (id: string) => void): void {
    if (this.lentCount === 0 || !this.owners) return;
    for (let key = 0; key < this.lentByKey.length; key++) {
      if ((this.lentByKey[key] ?? 0) === 0) continue;
      const id = this.owners.idOf(key);
      if (id !== undefined) visit(id);
    }
  }

  /** Forgets the vector lent by key under `id`; false where there is none. */
  private forgetKeyLent(id: string): boolean {
    const key = this.lentKey(id);
    if (key < 0) return false;
    this.lentByKey[key] = 0;
    this.lentCount--;
    this.decoded.delete(id);
    return true;
  }

  /**
   * `id`'s slot (see `slots`), or undefined when the table holds no vector under it. A vector lent
   * by key has no place: its slot is made as a vector lent by id would name it (`lentTo`), so
   * every reader treats the two alike.
   */
  private slotOf(id: string): number | undefined {
    const place = this.places.get(id);
    if (place !== undefined) return this.slots[place];
    const key = this.lentKey(id);
    return key < 0 ? undefined : -2 - (key * LENDERS + (this.lentByKey[key] as number) - 1);
  }

  /** Keeps `slot` under `id`, which holds nothing (a caller deletes it first). */
  private place(id: string, slot: number): void {
    const place = this.freePlaces.pop() ?? this.slots.length;
    this.slots[place] = slot;
    this.places.set(id, place);
  }

  /** The record pools, made for `dim` dimensions by the first record (which fixes the table's). */
  private pools(dim: number): { i8: RecordPool; i4: RecordPool } {
    if (!this.i8 || !this.i4) {
      this.dim = dim;
      this.i8 = new RecordPool(recordBytes(dim, 'i8'));
      this.i4 = new RecordPool(recordBytes(dim, 'i4'));
      this.expanded = [scratchI8Record(dim), scratchI8Record(dim)];
    }
    return { i8: this.i8, i4: this.i4 };
  }

  /**
   * The i8 record in `slot` (≥ 0): where it is kept, or, for an i4 record, the i8 record it
   * names expanded into scratch buffer `scratch` (valid until that buffer is used again).
   */
  private i8Record(slot: number, scratch: 0 | 1): I8Record {
    if (slot < I4_SLOTS) {
      const pool = this.i8 as RecordPool;
      const { page, start } = pool.locate(slot);
      return { bytes: pool.pages[page] as Uint8Array, view: pool.scaleViews[page] as DataView, codes: pool.codeViews[page] as Int8Array, start };
    }
    const { bytes, start } = this.i4Record(slot);
    return expandI4Into(bytes, start, this.dim, (this.expanded as [I8Record, I8Record])[scratch]);
  }

  /** Where the i4 record in `slot` (at least `I4_SLOTS`) is kept, with a view for its scale. */
  private i4Record(slot: number): { bytes: Uint8Array; view: DataView; start: number } {
    const pool = this.i4 as RecordPool;
    const { page, start } = pool.locate(slot - I4_SLOTS);
    return { bytes: pool.pages[page] as Uint8Array, view: pool.scaleViews[page] as DataView, start };
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

  /** Frees a record's slot (its pool's pages go once none holds a record: an open lends them all). */
  private freeRecord(slot: number): void {
    if (slot < I4_SLOTS) (this.i8 as RecordPool).free(slot);
    else (this.i4 as RecordPool).free(slot - I4_SLOTS);
  }
}

/** The records vectors lent by key belong to (`VectorTable.attachOwners`): each one's key, and the id a key is now. */
export interface VectorOwners {
  keyOf(id: string): number | undefined;
  idOf(key: number): string | undefined;
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
