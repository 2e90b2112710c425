import { FactColumns, type WholeFacts } from '../graph/fact-columns.ts';
import type { Chunk } from '../graph/types.ts';
import { isPlainEnd, isStretchOf, isStringOrNull, ReadSharing } from './record-codec.ts';

/**
 * A memory's facts as one value of derived state (`GraphStore.saveDerived`), so that an open reads
 * them without their records: at 100K messages of chat a SQL open stepped and parsed 317K fact
 * rows (~0.8 s of a 5 s open) to fill the same columns (`FactColumns`) this holds. It is the
 * columns as the records would read at the revision it was saved at, in record-codec's plain keyed
 * form; a store reads it in place of the fact rows only at that revision (`SqlStore`), and every
 * fact it holds is checked against its chunk as a row's is (`addCheckedFact`'s checks).
 */

/** The name the fact image is saved under in a store's derived state. */
export const FACT_IMAGE = 'facts';

/** Version of the layout; bytes of another are not read (the open reads the rows). */
const FACT_IMAGE_FORMAT = 1;

/** The numbers a fact image holds for each fact, a column of u32s each, in this order. */
const COLUMNS = ['chunk', 'facet', 'entity', 'key', 'belongsKey', 'involvesKey', 'turn', 'start', 'end'] as const;
type Columns = { [name in (typeof COLUMNS)[number]]: Uint32Array };

/** Whether this machine's typed arrays are little-endian, as the layout's columns are. */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** Every number a column holds is below this (the largest u32, 2^32 − 1). */
const U32_END = 2 ** 32 - 1;

/** Bytes of the layout's head: three u32s (the format, the facts' count, the bytes of the lists' JSON). */
const HEAD_BYTES = 12;

/**
 * `facts` as bytes for `readFactImage`, or null where a number does not fit the layout (a key
 * past 2^32 − 2, a big-endian machine). After the head: the facts' ids, the chunks', Facets' and
 * Entities' ids and the facts' times as one JSON text; then, from a multiple of four,
 * their numbers (`COLUMNS`) a column at a time as u32s, so that a reader takes each whole: its
 * chunk, Facet and Entity by their place in those lists (the Entity one up, 0 for none), its key
 * and edges' keys (one up, 0 for no edge), its turn and the stretch of its text. The facts keep
 * their order.
 */
export function factImageBytes(facts: WholeFacts): Uint8Array | null {
  if (!LITTLE_ENDIAN) return null;
  const chunks = new Places();
  const facets = new Places();
  const entities = new Places();
  const count = facts.ids.length;
  const numbers = new Uint32Array(count * COLUMNS.length);
  const column = columnsOf(numbers, count);
  for (let ordinal = 0; ordinal < count; ordinal++) {
    const entityId = facts.entityIds[ordinal] as string | null;
    const key = facts.keys[ordinal] as number;
    const belongsKey = (facts.belongsKeys[ordinal] as number) + 1;
    const involvesKey = (facts.involvesKeys[ordinal] as number) + 1;
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
  const numbersAt = alignedToFour(HEAD_BYTES + lists.length);
  const out = new Uint8Array(numbersAt + numbers.byteLength);
  new Uint32Array(out.buffer, 0, HEAD_BYTES / 4).set([FACT_IMAGE_FORMAT, count, lists.length]);
  out.set(lists, HEAD_BYTES);
  out.set(new Uint8Array(numbers.buffer), numbersAt);
  return out;
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
  const head = new DataView(bytes.buffer, bytes.byteOffset, HEAD_BYTES);
  const [format, count, listsBytes] = [0, 4, 8].map((at) => head.getUint32(at, true)) as [number, number, number];
  const numbersAt = alignedToFour(HEAD_BYTES + listsBytes);
  if (format !== FACT_IMAGE_FORMAT || bytes.length !== numbersAt + count * COLUMNS.length * 4) return null;
  let lists: unknown;
  try {
    lists = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(HEAD_BYTES, HEAD_BYTES + listsBytes)));
  } catch {
    return null;
  }
  // Read in place where the numbers start at a multiple of four in memory, else from a copy.
  const numbers = (bytes.byteOffset + numbersAt) % 4 === 0 ? new Uint32Array(bytes.buffer, bytes.byteOffset + numbersAt, count * COLUMNS.length) : new Uint32Array(bytes.slice(numbersAt).buffer);
  return checkedFacts(lists, count, columnsOf(numbers, count), chunks);
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
  const keys = (stored: Uint32Array, step: number, none: Uint32Array | null = null) => {
    const out = new Float64Array(count);
    // An involves_entity key of a fact with no Entity (`none` 0) stands for no edge, as a row's reads.
    for (let i = 0; i < count; i++) out[i] = none !== null && none[i] === 0 ? -1 : (stored[i] as number) + step;
    return out;
  };
  // Copied: the image's bytes are not kept. Each is below 2^31 (at most a turn's length).
  const ints = (stored: Uint32Array) => new Int32Array(stored.buffer, stored.byteOffset, count).slice();
  return FactColumns.whole({
    ids,
    chunkIds: chunkIdOf,
    facetIds: facetIdOf,
    entityIds: entityIdOf,
    keys: keys(column.key, 0),
    belongsKeys: keys(column.belongsKey, -1),
    involvesKeys: keys(column.involvesKey, -1, column.entity),
    turns: ints(column.turn),
    starts: ints(column.start),
    ends: ints(column.end),
    times,
  });
}

/** The columns of `numbers`, `count` facts' each, in `COLUMNS` order. */
function columnsOf(numbers: Uint32Array, count: number): Columns {
  return Object.fromEntries(COLUMNS.map((name, i) => [name, numbers.subarray(i * count, (i + 1) * count)])) as Columns;
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
