import { FactColumns, type WholeFacts } from '../graph/fact-columns.ts';
import type { Chunk } from '../graph/types.ts';
import { isPlainEnd, isStretchOf, isStringOrNull, ReadSharing } from './record-codec.ts';

/**
 * A memory's facts as one value of derived state (`GraphStore.saveDerived`), so that an open reads
 * them without their records: at 100K messages of chat a SQL open stepped and parsed 317K fact
 * rows (~0.8 s of a 5 s open) to fill the same columns (`FactColumns`) this holds. It is the
 * columns as the records would read at the revision it was saved at, in record-codec's plain keyed
 * form; a store reads it in place of the fact rows only at that revision (`SqlStore`), and every
 * fact it holds is checked against its chunk as a row's is (record-codec's `addPlainFact`).
 */

/** The name the fact image is saved under in a store's derived state. */
export const FACT_IMAGE = 'facts';

/** Version of the layout; bytes of another are not read (the open reads the rows). */
const FACT_IMAGE_FORMAT = 1;

/** The numbers a fact image holds for each fact, a column each, in this order. */
const COLUMNS = ['chunk', 'facet', 'entity', 'key', 'belongsKey', 'involvesKey', 'turn', 'start', 'end'] as const;
type ColumnName = (typeof COLUMNS)[number];
type Columns = Record<ColumnName, ArrayLike<number>>;

/** A value for each column, `make` of its name and place. */
function eachColumn<T>(make: (name: ColumnName, at: number) => T): Record<ColumnName, T> {
  return Object.fromEntries(COLUMNS.map((name, at) => [name, make(name, at)])) as Record<ColumnName, T>;
}

/** Whether this machine's typed arrays are little-endian, as the layout's columns are. */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** Every number a column holds is below this (the largest u32, 2^32 − 1). */
const U32_END = 2 ** 32 - 1;

/** Bytes of the layout's head: three u32s (the format, the facts' count, the bytes of the lists' JSON), then each column's width in bytes, to a multiple of four. */
const HEAD_BYTES = alignedToFour(12 + COLUMNS.length);

/** A column's values in the fewest bytes that hold its largest (1, 2 or 4 a value). */
const WIDTHS = [
  { bytes: 1, end: 2 ** 8, view: Uint8Array },
  { bytes: 2, end: 2 ** 16, view: Uint16Array },
  { bytes: 4, end: U32_END, view: Uint32Array },
] as const;

/**
 * `facts` as bytes for `readFactImage`, or null where a number does not fit the layout (a key
 * past 2^32 − 2, a big-endian machine). After the head: the facts' ids, the chunks', Facets' and
 * Entities' ids and the facts' times as one JSON text; then, each from a multiple of four, their
 * numbers (`COLUMNS`) a column at a time in the width the head gives, so that a reader takes each
 * whole: its chunk, Facet and Entity by their place in those lists (the Entity one up, 0 for
 * none), its key, its edges' keys as their distance from it (zigzag, one up; 0 for no edge: an
 * edge is made just after its node, so most take a byte), its turn and the stretch of its text.
 * The facts keep their order.
 */
export function factImageBytes(facts: WholeFacts): Uint8Array | null {
  if (!LITTLE_ENDIAN) return null;
  const chunks = new Places();
  const facets = new Places();
  const entities = new Places();
  const count = facts.ids.length;
  const column = eachColumn(() => new Uint32Array(count));
  for (let ordinal = 0; ordinal < count; ordinal++) {
    const entityId = facts.entityIds[ordinal] as string | null;
    const key = facts.keys[ordinal] as number;
    const belongsKey = edgeKeyFrom(key, facts.belongsKeys[ordinal] as number);
    const involvesKey = edgeKeyFrom(key, facts.involvesKeys[ordinal] as number);
    if (key >= U32_END || belongsKey >= U32_END || involvesKey >= U32_END) return null;
    column.chunk[ordinal] = chunks.of(facts.chunkIds[ordinal] as string);
    column.facet[ordinal] = facets.of(facts.facetIds[ordinal] as string);
    column.entity[ordinal] = entityId === null ? 0 : entities.of(entityId) + 1;
    column.key[ordinal] = key;
    column.belongsKey[ordinal] = belongsKey;
    column.involvesKey[ordinal] = involvesKey;
  }
  column.turn.set(facts.turns);
  column.start.set(facts.starts);
  column.end.set(facts.ends);
  const times = [...facts.times].map(([ordinal, [timeText, time]]) => [ordinal, timeText, time]);
  // Parsed from JSON, each id is a string of its own (a slice of one long text keeps the text, and reads slower).
  const lists = new TextEncoder().encode(JSON.stringify([facts.ids, chunks.list, facets.list, entities.list, times]));
  const widths = COLUMNS.map((name) => widthOf(column[name]));
  let at = alignedToFour(HEAD_BYTES + lists.length);
  const starts = widths.map((width) => (at += alignedToFour(count * width.bytes)) - alignedToFour(count * width.bytes));
  const out = new Uint8Array(at);
  new Uint32Array(out.buffer, 0, 3).set([FACT_IMAGE_FORMAT, count, lists.length]);
  out.set(widths.map((width) => width.bytes), 12);
  out.set(lists, HEAD_BYTES);
  COLUMNS.forEach((name, i) => new (widths[i] as Width).view(out.buffer, starts[i], count).set(column[name]));
  return out;
}

type Width = (typeof WIDTHS)[number];

/** The fewest bytes a value that hold every value of `values`. */
function widthOf(values: Uint32Array): Width {
  let largest = 0;
  for (const value of values) if (value > largest) largest = value;
  return WIDTHS.find((width) => largest < width.end) as Width;
}

/** An edge's key (−1: no edge) as stored beside its node's key `key`: 0 for none, else its distance zigzagged, one up. */
function edgeKeyFrom(key: number, edgeKey: number): number {
  if (edgeKey < 0) return 0;
  const distance = edgeKey - key;
  return (distance >= 0 ? 2 * distance : -2 * distance - 1) + 1;
}

/** The edge's key `edgeKeyFrom` stored beside node key `key` (−1: no edge). */
function edgeKeyOf(key: number, stored: number): number {
  if (stored === 0) return -1;
  const zigzag = stored - 1;
  return key + (zigzag % 2 === 0 ? zigzag / 2 : -(zigzag + 1) / 2);
}

function alignedToFour(at: number): number {
  return Math.ceil(at / 4) * 4;
}

/**
 * The facts `factImageBytes` wrote, each checked against its chunk of `chunks` as a stored row is;
 * null where the bytes are not such an image whole (another format, damage), or a fact fails its
 * check or repeats another's id: the store then reads the fact rows.
 */
export function readFactImage(bytes: Uint8Array, chunks: ReadonlyMap<string, Chunk>): FactColumns | null {
  if (!LITTLE_ENDIAN || bytes.length < HEAD_BYTES) return null;
  // From a copy where the bytes do not start at a multiple of four in memory: the columns are read in place.
  const image = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice();
  const [format, count, listsBytes] = new Uint32Array(image.buffer, image.byteOffset, 3) as unknown as [number, number, number];
  const widths = [...image.subarray(12, 12 + COLUMNS.length)].map((bytesEach) => WIDTHS.find((width) => width.bytes === bytesEach));
  let at = alignedToFour(HEAD_BYTES + listsBytes);
  if (format !== FACT_IMAGE_FORMAT || widths.some((width) => width === undefined)) return null;
  const starts = (widths as Width[]).map((width) => (at += alignedToFour(count * width.bytes)) - alignedToFour(count * width.bytes));
  if (image.length !== at) return null;
  let lists: unknown;
  try {
    lists = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(image.subarray(HEAD_BYTES, HEAD_BYTES + listsBytes)));
  } catch {
    return null;
  }
  const column = eachColumn((_, i) => new (widths[i] as Width).view(image.buffer as ArrayBuffer, image.byteOffset + (starts[i] as number), count));
  return checkedFacts(lists, count, column, chunks);
}

/** The `count` facts of an image's lists and numbers, each checked against its chunk as a stored row is; null where one fails. */
function checkedFacts(lists: unknown, count: number, column: Columns, chunks: ReadonlyMap<string, Chunk>): FactColumns | null {
  if (!Array.isArray(lists) || lists.length !== 5 || !lists.slice(0, 4).every(isStringList) || !Array.isArray(lists[4])) return null;
  const [ids, chunkIds, facetIds, entityIds, timeList] = lists as [string[], string[], string[], string[], unknown[]];
  if (ids.length !== count) return null;
  if (!facetIds.every(isPlainEnd) || !entityIds.every(isPlainEnd)) return null;
  const times = new Map<number, readonly [string | null, string | null]>();
  for (const entry of timeList) {
    if (!Array.isArray(entry) || entry.length !== 3 || !Number.isInteger(entry[0]) || entry[0] < 0 || entry[0] >= count || !isStringOrNull(entry[1]) || !isStringOrNull(entry[2])) return null;
    times.set(entry[0] as number, [entry[1], entry[2]]);
  }
  const chunkIdOf: string[] = [];
  const facetIdOf: string[] = [];
  const entityIdOf: Array<string | null> = [];
  const sharing = new ReadSharing();
  let chunkAt = -1;
  let chunk: Chunk | undefined;
  for (let ordinal = 0; ordinal < count; ordinal++) {
    // A chunk's facts come together: it is looked up once for them.
    if (column.chunk[ordinal] !== chunkAt) {
      chunkAt = column.chunk[ordinal] as number;
      chunk = chunks.get(chunkIds[chunkAt] as string);
    }
    const facetId = facetIds[column.facet[ordinal] as number];
    const entityAt = column.entity[ordinal] as number;
    const entityId = entityAt === 0 ? null : entityIds[entityAt - 1];
    if (chunk === undefined || facetId === undefined || entityId === undefined) return null;
    if (!isStretchOf(sharing.stretchLengths(chunk), column.turn[ordinal], column.start[ordinal] as number, column.end[ordinal] as number)) return null;
    chunkIdOf.push(chunk.id);
    facetIdOf.push(facetId);
    entityIdOf.push(entityId);
  }
  const edgeKeys = (stored: ArrayLike<number>, none: ArrayLike<number> | null = null) => {
    const out = new Float64Array(count);
    // An involves_entity key of a fact with no Entity (`none` 0) stands for no edge, as a row's reads.
    for (let i = 0; i < count; i++) out[i] = none !== null && none[i] === 0 ? -1 : edgeKeyOf(column.key[i] as number, stored[i] as number);
    return out;
  };
  return FactColumns.whole({
    ids,
    chunkIds: chunkIdOf,
    facetIds: facetIdOf,
    entityIds: entityIdOf,
    keys: Float64Array.from(column.key),
    belongsKeys: edgeKeys(column.belongsKey),
    involvesKeys: edgeKeys(column.involvesKey, column.entity),
    // Each below 2^31: at most a turn's length.
    turns: Int32Array.from(column.turn),
    starts: Int32Array.from(column.start),
    ends: Int32Array.from(column.end),
    times,
  });
}

function isStringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}

/** Strings listed in the order first met, each with its place in the list. */
class Places {
  readonly list: string[] = [];
  private readonly places = new Map<string, number>();
  /** The value asked for last, and its place: a chunk's facts come together, and most of a Facet's. */
  private last: string | null = null;
  private lastPlace = -1;

  of(value: string): number {
    if (value === this.last) return this.lastPlace;
    let place = this.places.get(value);
    if (place === undefined) this.places.set(value, (place = this.list.push(value) - 1));
    this.last = value;
    this.lastPlace = place;
    return place;
  }
}
