import { speakerLead } from './chunk-text.ts';
import type { Chunk, ChunkTurn, EpisodeFact, FacetPointNode } from './types.ts';

/**
 * A working set's FacetPoints held as columns, not as node objects: an open reads every fact of a
 * memory (317K at 100K messages of chat, two in three of its nodes), but a search reads those of
 * ~60 chunks. Each fact here is what its stored record says in record-codec's plain keyed form
 * (its content a stretch of its turn, its dialog ids that turn's, its Episode its chunk's), a
 * row of numbers and shared strings; the graph makes a fact's node when something reads it
 * (`MemoryGraph.putFactColumns`, which puts its own strings for the Facets' and Entities' ids in
 * place of the read's, and changes nothing else).
 */
export class FactColumns {
  /** Each fact's id, `fp:<chunk prefix>:<n>` (`isCanonicalFactId`). */
  readonly ids: string[];
  readonly chunkIds: string[];
  /** Each fact's Facet and Entity: the read's strings, then the graph's own (`MemoryGraph.putFactColumns` puts equal ones in their place). */
  readonly facetIds: string[];
  readonly entityIds: Array<string | null>;
  /** Each fact's key. */
  keys: ArrayLike<number> = new Float64Array(0);
  /** The keys of the `belongs_to` and `involves_entity` edges each fact keeps (−1: none). */
  belongsKeys: ArrayLike<number> = new Float64Array(0);
  involvesKeys: ArrayLike<number> = new Float64Array(0);
  /** Each fact's turn, by its index in its chunk, and the stretch of that turn's text its content quotes. */
  turns: ArrayLike<number> = new Int32Array(0);
  starts: ArrayLike<number> = new Int32Array(0);
  ends: ArrayLike<number> = new Int32Array(0);
  /** 1 where the fact has a `timeText` or a `time` (`times`). */
  private timed = new Uint8Array(0);
  private count = 0;
  private capacity = 0;
  /** `timeText` and `time` of the facts that have either (a fact's time expression is rare). */
  private readonly times = new Map<number, readonly [timeText: string | null, time: string | null]>();
  /** Each chunk's facts by the number their id ends in: a fact's place in its chunk's extraction. */
  private readonly byChunk = new Map<string, number[]>();

  /** No facts, or (`FactColumns.whole`) the lists of `whole`, taken over. */
  private constructor(whole?: WholeFacts) {
    this.ids = whole?.ids ?? [];
    this.chunkIds = whole?.chunkIds ?? [];
    this.facetIds = whole?.facetIds ?? [];
    this.entityIds = whole?.entityIds ?? [];
  }

  /** No facts, to `add` to. */
  static empty(): FactColumns {
    return new FactColumns();
  }

  get size(): number {
    return this.count;
  }

  /**
   * Facts given whole, a column each (a fact image's, store/fact-image.ts): the typed columns are
   * taken over, and each chunk's places are found once. Null where an id is not canonical for its
   * chunk, or two facts have one id.
   */
  static whole(facts: WholeFacts): FactColumns | null {
    const columns = new FactColumns(facts);
    const { ids, chunkIds } = facts;
    let chunkId = '';
    let prefix: string | null = null;
    let places: number[] = [];
    for (let ordinal = 0; ordinal < ids.length; ordinal++) {
      const id = ids[ordinal] as string;
      // A chunk's facts come together: its prefix and places are found once for them.
      if (chunkIds[ordinal] !== chunkId) {
        chunkId = chunkIds[ordinal] as string;
        prefix = chunkPrefixOf(chunkId);
        places = prefix === null ? [] : columns.placesOf(prefix);
      }
      // The id's number at its place, once: an id canonical for its chunk names one place.
      const number = prefix !== null && isCanonicalFactIdWith(id, prefix) ? factNumberOf(id) : Number.NaN;
      if (Number.isNaN(number) || places[number] !== undefined) return null;
      places[number] = ordinal;
    }
    columns.keys = facts.keys;
    columns.belongsKeys = facts.belongsKeys;
    columns.involvesKeys = facts.involvesKeys;
    columns.turns = facts.turns;
    columns.starts = facts.starts;
    columns.ends = facts.ends;
    columns.count = columns.capacity = ids.length;
    columns.timed = new Uint8Array(ids.length);
    for (const [ordinal, times] of facts.times) {
      columns.times.set(ordinal, times);
      columns.timed[ordinal] = 1;
    }
    return columns;
  }

  /**
   * Appends a fact whose `id` is canonical for `chunkId` (`isCanonicalFactIdOf`); its position
   * (ordinal), or −1, appending nothing, where a fact of that id is held already: the columns'
   * ids are unique, which an open's check relies on instead of claiming each.
   */
  add(id: string, key: number, chunkId: string, facetId: string, entityId: string | null, turn: number, start: number, end: number, timeText: string | null, time: string | null, belongsKey: number, involvesKey: number): number {
    const places = this.placesOf(chunkId.slice(0, CHUNK_PREFIX));
    const number = factNumberOf(id);
    if (places[number] !== undefined) return -1;
    const ordinal = this.count++;
    if (ordinal === this.capacity) this.resize(Math.max(1024, this.capacity * 2));
    this.ids.push(id);
    this.chunkIds.push(chunkId);
    this.facetIds.push(facetId);
    this.entityIds.push(entityId);
    // The numeric columns are typed arrays of this class's own making (`resize`), shown read-only.
    (this.keys as Float64Array)[ordinal] = key;
    (this.belongsKeys as Float64Array)[ordinal] = belongsKey;
    (this.involvesKeys as Float64Array)[ordinal] = involvesKey;
    (this.turns as Int32Array)[ordinal] = turn;
    (this.starts as Int32Array)[ordinal] = start;
    (this.ends as Int32Array)[ordinal] = end;
    if (timeText !== null || time !== null) {
      this.times.set(ordinal, [timeText, time]);
      this.timed[ordinal] = 1;
    }
    places[number] = ordinal;
    return ordinal;
  }

  /** The places of the facts of the chunk whose ids start `prefix`, by the number each id ends in. */
  private placesOf(prefix: string): number[] {
    let places = this.byChunk.get(prefix);
    if (!places) this.byChunk.set(prefix, (places = []));
    return places;
  }

  /** Gives back the room appended facts did not take: once the last is added. */
  trim(): void {
    this.resize(this.count);
  }

  private resize(capacity: number): void {
    resizeNumbers(this, this.count, capacity);
    const timed = new Uint8Array(capacity);
    timed.set(this.timed.subarray(0, this.count));
    this.timed = timed;
    this.capacity = capacity;
  }

  /** The fact's `timeText` and `time` (both null for most facts). */
  timesOf(ordinal: number): readonly [timeText: string | null, time: string | null] {
    return (this.timed[ordinal] === 1 && this.times.get(ordinal)) || NO_TIMES;
  }

  /** The ordinal of the fact of id `id`, or −1. */
  ordinalOf(id: string): number {
    // Told apart by their first characters: the graph asks this of every node id it looks up.
    if (id.length < MIN_FACT_ID || id.charCodeAt(0) !== 0x66 || id.charCodeAt(1) !== 0x70 || id.charCodeAt(2) !== 0x3a) return -1;
    // A chunk's facts are read together (an Episode's, a Facet's): its places are looked up once for them.
    if (!id.startsWith(this.lastPrefix, FACT_ID_PREFIX.length)) {
      this.lastPrefix = id.slice(FACT_ID_PREFIX.length, FACT_ID_PREFIX.length + CHUNK_PREFIX);
      this.lastPlaces = this.byChunk.get(this.lastPrefix);
    }
    const ordinal = this.lastPlaces?.[factNumberOf(id)];
    return ordinal !== undefined && this.ids[ordinal] === id ? ordinal : -1;
  }

  /** The chunk prefix `ordinalOf` looked up last, and its facts' places. */
  private lastPrefix = '\u0000';
  private lastPlaces: number[] | undefined;
}

const NO_TIMES = [null, null] as const;

/** Facts appended one by one into `WholeFacts`, its numbers in typed arrays grown as they come. */
export class WholeFactsBuilder {
  private readonly facts: WholeFacts = { ids: [], chunkIds: [], facetIds: [], entityIds: [], keys: new Float64Array(1024), belongsKeys: new Float64Array(1024), involvesKeys: new Float64Array(1024), turns: new Int32Array(1024), starts: new Int32Array(1024), ends: new Int32Array(1024), times: new Map() };

  /** Appends fact `at` of `from` with the edges' keys given (−1: none). */
  copy(from: FactColumns, at: number, belongsKey: number, involvesKey: number): void {
    const { facts } = this;
    const ordinal = facts.ids.push(from.ids[at] as string) - 1;
    if (ordinal === facts.keys.length) this.grow(ordinal * 2);
    facts.chunkIds.push(from.chunkIds[at] as string);
    facts.facetIds.push(from.facetIds[at] as string);
    facts.entityIds.push(from.entityIds[at] as string | null);
    facts.keys[ordinal] = from.keys[at] as number;
    facts.belongsKeys[ordinal] = belongsKey;
    facts.involvesKeys[ordinal] = involvesKey;
    facts.turns[ordinal] = from.turns[at] as number;
    facts.starts[ordinal] = from.starts[at] as number;
    facts.ends[ordinal] = from.ends[at] as number;
    const times = from.timesOf(at);
    if (times !== NO_TIMES) facts.times.set(ordinal, times);
  }

  /** The facts appended, the typed arrays cut to their count. */
  finish(): WholeFacts {
    this.grow(this.facts.ids.length);
    return this.facts;
  }

  private grow(capacity: number): void {
    resizeNumbers(this.facts, this.facts.ids.length, capacity);
  }
}

/** The number columns facts are kept in (`FactColumns`, `WholeFacts`). */
interface NumberColumns {
  keys: ArrayLike<number>;
  belongsKeys: ArrayLike<number>;
  involvesKeys: ArrayLike<number>;
  turns: ArrayLike<number>;
  starts: ArrayLike<number>;
  ends: ArrayLike<number>;
}

/** Moves the number columns of `facts` (typed arrays) into arrays of `capacity`, their first `count` values kept. */
function resizeNumbers(facts: NumberColumns, count: number, capacity: number): void {
  const kept = <A extends Float64Array | Int32Array>(from: ArrayLike<number>, to: A): A => {
    to.set((from as A).subarray(0, Math.min(count, capacity)));
    return to;
  };
  facts.keys = kept(facts.keys, new Float64Array(capacity));
  facts.belongsKeys = kept(facts.belongsKeys, new Float64Array(capacity));
  facts.involvesKeys = kept(facts.involvesKeys, new Float64Array(capacity));
  facts.turns = kept(facts.turns, new Int32Array(capacity));
  facts.starts = kept(facts.starts, new Int32Array(capacity));
  facts.ends = kept(facts.ends, new Int32Array(capacity));
}

/**
 * Facts a column a field, one entry a fact (`times` only of the facts with a time): what
 * `FactColumns.whole` takes over (its numbers as typed arrays), and what a fact image is made of.
 */
export interface WholeFacts {
  ids: string[];
  chunkIds: string[];
  facetIds: string[];
  entityIds: Array<string | null>;
  keys: Float64Array;
  belongsKeys: Float64Array;
  involvesKeys: Float64Array;
  turns: Int32Array;
  starts: Int32Array;
  ends: Int32Array;
  times: Map<number, readonly [timeText: string | null, time: string | null]>;
}

/** How every fact id graph building makes starts. */
export const FACT_ID_PREFIX = 'fp:';
/** Characters of a chunk id a fact's id names its chunk by (graph building's `fp:<chunk.id.slice(0, 12)>:<n>`). */
const CHUNK_PREFIX = 12;
const CANONICAL_FACT_ID = /^fp:[0-9a-f]{12}:(?:0|[1-9][0-9]{0,5})$/;

/** Whether `id` reads as graph building names a fact: `fp:`, twelve hex digits of its chunk's id, `:` and a number. */
function isCanonicalFactId(id: string): boolean {
  return CANONICAL_FACT_ID.test(id);
}

/** Whether `id` is the canonical id of a fact of chunk `chunkId`. */
export function isCanonicalFactIdOf(id: string, chunkId: string): boolean {
  const prefix = chunkPrefixOf(chunkId);
  return prefix !== null && isCanonicalFactIdWith(id, prefix);
}

/** The characters of `chunkId` its facts' ids name it by; null where it is too short to have canonical facts. */
function chunkPrefixOf(chunkId: string): string | null {
  return chunkId.length >= CHUNK_PREFIX ? chunkId.slice(0, CHUNK_PREFIX) : null;
}

/** Whether `id` is the canonical id of a fact of the chunk whose prefix is `prefix` (`chunkPrefixOf`). */
function isCanonicalFactIdWith(id: string, prefix: string): boolean {
  return isCanonicalFactId(id) && id.startsWith(prefix, FACT_ID_PREFIX.length);
}

/** The shortest canonical fact id: `fp:`, the chunk prefix, `:` and a digit. */
const MIN_FACT_ID = FACT_ID_PREFIX.length + CHUNK_PREFIX + 2;

/** The number a canonical fact id ends in (NaN, naming no place, for any other id of its length). */
export function factNumberOf(id: string): number {
  let number = 0;
  for (let at = FACT_ID_PREFIX.length + CHUNK_PREFIX + 1; at < id.length; at++) {
    const digit = id.charCodeAt(at) - 0x30;
    if (digit < 0 || digit > 9) return Number.NaN;
    number = number * 10 + digit;
  }
  return number;
}

/**
 * The node of fact `ordinal` of `columns`, whose chunk is `chunk`, naming its Episode, Facet and
 * Entity by the strings given (the reader's or the graph's own): the record `decodeNode` makes of
 * its stored form, field for field and in the same key order. Its dialog ids are one frozen list
 * per turn, as a read shares them.
 */
export function factNode(columns: FactColumns, ordinal: number, chunk: Chunk, episodeId: string, facetId: string, entityId: string | null): FacetPointNode {
  const turn = chunk.turns[columns.turns[ordinal] as number] as ChunkTurn;
  const [timeText, time] = columns.timesOf(ordinal);
  return {
    id: columns.ids[ordinal] as string,
    key: columns.keys[ordinal] as number,
    layer: 'facetPoint',
    chunkId: chunk.id,
    episodeId,
    facetId,
    content: stretchOf(turn, columns.starts[ordinal] as number, columns.ends[ordinal] as number),
    entityId,
    timeText,
    time,
    dialogIds: dialogIdsOf(turn),
  };
}

/** A fact's content: its speaker's lead, then the stretch of its turn's text it quotes (as `decodeNode` rebuilds it). */
function stretchOf(turn: ChunkTurn, start: number, end: number): string {
  return speakerLead(turn.speaker) + turn.text.slice(start, end);
}

/** Each turn's dialog id as a frozen one-item list, shared by the facts made of it. */
const turnDialogIds = new WeakMap<ChunkTurn, readonly string[]>();

function dialogIdsOf(turn: ChunkTurn): readonly string[] {
  let ids = turnDialogIds.get(turn);
  if (!ids) turnDialogIds.set(turn, (ids = Object.freeze([turn.dialogId])));
  return ids;
}

/**
 * A fact held as columns as `MemoryGraph.facetPointsOf` hands it to retrieval (`EpisodeFact`): its
 * fields, and its content made from its turn when first read. A search weighs ~2,200 facts of ~60
 * Episodes by their cosines, turns and Facets, and reads the content of the few in the turns it
 * cuts into excerpts: making each fact's node first cost ~2 ms a question at 100K messages.
 */
export class ColumnFact implements EpisodeFact {
  private made: string | undefined;

  constructor(
    readonly id: string,
    readonly key: number,
    readonly facetId: string,
    readonly time: string | null,
    readonly dialogIds: readonly string[],
    private readonly turn: ChunkTurn,
    private readonly start: number,
    private readonly end: number,
  ) {}

  get content(): string {
    return (this.made ??= stretchOf(this.turn, this.start, this.end));
  }
}

/** Fact `ordinal` of `columns`, whose chunk is `chunk`, as retrieval reads it (`ColumnFact`). */
export function columnFact(columns: FactColumns, ordinal: number, chunk: Chunk, facetId: string): ColumnFact {
  const turn = chunk.turns[columns.turns[ordinal] as number] as ChunkTurn;
  return new ColumnFact(columns.ids[ordinal] as string, columns.keys[ordinal] as number, facetId, columns.timesOf(ordinal)[1], dialogIdsOf(turn), turn, columns.starts[ordinal] as number, columns.ends[ordinal] as number);
}
