import { PrismError } from '../errors.ts';
import { putVarint, readVarint } from '../util/bytes.ts';
import type { KeyedVectorGroup } from './types.ts';

/**
 * How the SQL stores keep vectors: in groups, a row a group, not a row a vector. Graph building
 * names a chunk's nodes `<layer>:<chunk prefix>:<n>`, so the vectors of one layer of one chunk
 * share a stem (`fp:000edcccf4d3`), are written together, and leave together. As rows of their
 * own, 161,024 vectors of 388 bytes (30K messages of chat) took 90.5 MB of pages for 62.5 MB of
 * values: a 4 KB B-tree page holds nine such rows and stays about three quarters full, and
 * every row repeats its partition and id. A group's values sit end to end in one blob, which
 * SQLite keeps in full overflow pages.
 *
 * An id joins its stem's group when its last `:`-separated part is at most `MEMBER_CHARS`
 * long and what comes before it holds a `:` itself; any other id (an Episode's
 * `ep:<16 hex>`, a hand-made `n1`) is a group of one, named by the id. Grouping is a
 * function of the id alone, so a delete finds its vector without reading the node it belonged to.
 *
 * IndexedDB groups the vectors sealed under one key instead (a chunk's, as a row here, plus the
 * Entities whose first chunk it is), since a group is sealed whole, and its nodes (but
 * Entities) the same way; it lays the values out as here (`joinGroupValues`) and finds a group
 * by the stems of its members' ids (`vectorGroupOf`).
 */

/** The longest last part of an id that joins its stem's group (graph building's are a fact's number, or `rest`). */
const MEMBER_CHARS = 4;

/** Where a vector is kept: its group's stem, and its member name there (null: the id is the stem itself). */
export interface VectorGroupKey {
  stem: string;
  member: string | null;
}

export function vectorGroupOf(id: string): VectorGroupKey {
  const cut = id.lastIndexOf(':');
  // The stem keeps a `:` of its own, so `n:1` … `n:9999` are groups of one, not one group growing without bound.
  if (cut > 0 && id.length - cut - 1 <= MEMBER_CHARS && id.lastIndexOf(':', cut - 1) >= 0) return { stem: id.slice(0, cut), member: id.slice(cut + 1) };
  return { stem: id, member: null };
}

/** A stored group's rows: its members' names (JSON) and their values end to end, each after its length (4 bytes, little-endian). */
export interface StoredVectorGroup {
  members: string;
  data: Uint8Array;
}

/** A group's members, in the order they were stored: member name → stored vector bytes. */
export type VectorGroup = Map<string | null, Uint8Array>;

export function encodeVectorGroup(group: VectorGroup): StoredVectorGroup {
  return { members: JSON.stringify([...group.keys()]), data: joinGroupValues(group.values()) };
}

/**
 * A stored group read back, its values as views into `data` (not copies); CORRUPT_CHECKPOINT,
 * naming the stem, when its members and values do not match.
 */
export function decodeVectorGroup(stem: string, stored: StoredVectorGroup): VectorGroup {
  return splitGroupValues(`vector group ${JSON.stringify(stem)}`, vectorGroupMembers(stem, stored.members), stored.data);
}

/** Stored values (vectors; in IndexedDB, nodes' JSON too) end to end, each after its length (4 bytes, little-endian): a group's values. */
export function joinGroupValues(values: Iterable<Uint8Array>): Uint8Array<ArrayBuffer> {
  const list = [...values];
  const data = new Uint8Array(list.reduce((size, bytes) => size + 4 + bytes.length, 0));
  const view = new DataView(data.buffer);
  let at = 0;
  for (const bytes of list) {
    view.setUint32(at, bytes.length, true);
    data.set(bytes, at + 4);
    at += 4 + bytes.length;
  }
  return data;
}

/**
 * `joinGroupValues`'s bytes taken apart, as views into `data`, under the names of their
 * members in order; CORRUPT_CHECKPOINT, naming `what`, when names and values do not match.
 */
export function splitGroupValues<K>(what: string, members: readonly K[], data: Uint8Array): Map<K, Uint8Array> {
  const values = new Map<K, Uint8Array>();
  walkGroupValues(what, members, data, (member, start, end) => values.size < values.set(member, data.subarray(start, end)).size);
  return values;
}

const UTF8 = new TextDecoder();

/**
 * `splitGroupValues` of values that are UTF-8 text (IndexedDB's node and edge records), each
 * decoded, with its member. The group is decoded in one call and each value sliced out of it: a
 * browser's decoder costs about a microsecond a call, and an open reads some 210,000 node and edge
 * values at 30,000 messages of chat.
 *
 * The lengths between the values are blanked while the group is decoded, so that the decoder
 * reads each as four spaces, and put back after (in `data` itself: a copy a group was ~30 ms of
 * that open). A length's bytes are not text: decoded as UTF-8 they could run into a value, and as
 * windows-1252 (the only one-byte decoding there is, `latin1`) they made nearly every group a
 * two-byte string (bytes of 0x80–0x9f, as in every length from 128 to 159, decode to characters
 * above 0xff). A value's characters then start as many characters before its bytes as the
 * non-ASCII characters before it have bytes to spare (`slicedTexts`). Bytes that are not UTF-8
 * (which no write makes) leave the counts short, and each value is then decoded on its own.
 *
 * Unlike `splitGroupValues`, this does not check members for repeats (a set a group was ~200 ms
 * of a cold open at 30K messages in Chromium): a node named twice is two records of one id, which
 * the open's structure check refuses (CORRUPT_CHECKPOINT), and an edge row named twice is read as
 * edge rows of one id always are, the later one kept.
 */
export function splitGroupTexts<K>(what: string, members: readonly K[], data: Uint8Array): Array<[K, string]> {
  const starts: number[] = [];
  const ends: number[] = [];
  walkGroupValues(what, members, data, (_member, start, end) => {
    starts.push(start);
    ends.push(end);
    return true;
  });
  for (const start of starts) data[start - 4] = data[start - 3] = data[start - 2] = data[start - 1] = SPACE;
  const text = UTF8.decode(data);
  // The lengths put back, as they were.
  for (let i = 0; i < starts.length; i++) {
    const start = starts[i] as number;
    const length = (ends[i] as number) - start;
    data[start - 4] = length & 0xff;
    data[start - 3] = (length >>> 8) & 0xff;
    data[start - 2] = (length >>> 16) & 0xff;
    data[start - 1] = length >>> 24;
  }
  return slicedTexts(text, members, starts, ends, data.length) ?? eachDecoded(members, data, starts, ends);
}

/**
 * The values of a group decoded whole, its lengths blanked (`text`), sliced out under their
 * members: value i's bytes run from `starts[i]` to `ends[i]` of the group's `bytes`. Null where
 * the characters do not add up to the bytes, as bytes that are not UTF-8 leave them.
 */
export function slicedTexts<K>(text: string, members: readonly K[], starts: readonly number[], ends: readonly number[], bytes: number): Array<[K, string]> | null {
  const texts: Array<[K, string]> = [];
  NON_ASCII.lastIndex = 0;
  let next = NON_ASCII.exec(text);
  // Bytes less characters before the value being sliced.
  let spare = 0;
  for (let i = 0; i < members.length; i++) {
    const start = (starts[i] as number) - spare;
    let end = (ends[i] as number) - spare;
    for (; next !== null && next.index < end; next = NON_ASCII.exec(text)) {
      const unit = text.charCodeAt(next.index);
      // A four-byte character is two units, its bytes to spare counted at the first.
      const more = unit < 0x800 ? 1 : unit >= 0xdc00 && unit <= 0xdfff ? 0 : 2;
      spare += more;
      end -= more;
    }
    texts.push([members[i] as K, text.slice(start, end)]);
  }
  return next === null && text.length === bytes - spare ? texts : null;
}

const SPACE = 0x20;
const NON_ASCII = /[^\x00-\x7f]/g;

/** `splitGroupTexts` of a group whose bytes are not all UTF-8: each value decoded on its own, as the decoder reads it alone. */
function eachDecoded<K>(members: readonly K[], data: Uint8Array, starts: readonly number[], ends: readonly number[]): Array<[K, string]> {
  return members.map((member, i) => [member, UTF8.decode(data.subarray(starts[i], ends[i]))]);
}

/**
 * Calls `visit` with each member and where its value lies in `data`, in order; `visit` keeps the
 * value and tells whether the member was new (the caller's own map or set knows, so none is kept
 * here twice). CORRUPT_CHECKPOINT, naming `what`, when names and values do not match.
 */
export function walkGroupValues<K>(what: string, members: readonly K[], data: Uint8Array, visit: (member: K, start: number, end: number) => boolean): void {
  const damaged = (problem: string) => new PrismError('CORRUPT_CHECKPOINT', `${what}: ${problem}`);
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let at = 0;
  for (const member of members) {
    const length = at + 4 <= data.length ? view.getUint32(at, true) : -1;
    if (length < 0 || at + 4 + length > data.length) throw damaged(`its values end before member ${JSON.stringify(member)}`);
    if (!visit(member, at + 4, at + 4 + length)) throw damaged(`member ${JSON.stringify(member)} appears twice`);
    at += 4 + length;
  }
  if (at !== data.length) throw damaged(`${data.length - at} bytes follow its last member`);
}

/**
 * The index keys of a group's members, in member order, as a SQL store keeps them beside the
 * group (one varint a key): an open then hands each vector to its index under its key without
 * looking its id up (see `KeyedVectorGroup`). Null where a member's key is not known.
 */
export function encodeGroupKeys(keys: ReadonlyArray<number | undefined>): Uint8Array | null {
  if (!keys.every((key): key is number => key !== undefined && Number.isSafeInteger(key) && key >= 0)) return null;
  const bytes = new Uint8Array(keys.length * 8);
  let at = 0;
  for (const key of keys) at = putVarint(bytes, at, key);
  return bytes.slice(0, at);
}

/** `encodeGroupKeys`'s bytes read back: `count` keys, or null when they do not hold exactly that many. */
export function decodeGroupKeys(bytes: Uint8Array, count: number): number[] | null {
  const keys: number[] = [];
  let at = 0;
  while (keys.length < count) {
    const read = readVarint(bytes, at, bytes.length, 8);
    if (read === null) return null;
    keys.push(read[0]);
    at = read[1];
  }
  return at === bytes.length ? keys : null;
}

/** A stored group's member names, in order; CORRUPT_CHECKPOINT, naming the stem, when they are not a list of names. */
export function vectorGroupMembers(stem: string, stored: string): Array<string | null> {
  let members: unknown;
  try {
    members = JSON.parse(stored);
  } catch {
    throw damaged(stem, 'its member list is not JSON');
  }
  if (!Array.isArray(members) || !members.every((m): m is string | null => m === null || typeof m === 'string')) throw damaged(stem, 'its member list is not a list of names');
  return members;
}

function damaged(stem: string, problem: string): PrismError {
  return new PrismError('CORRUPT_CHECKPOINT', `vector group ${JSON.stringify(stem)}: ${problem}`);
}

/**
 * The groups one write changes, as edits over what is stored: each group read once (through
 * `stored`) when first touched, changed in memory, and handed back by `touched` to be written
 * once (an empty one deleted). Both stores use it, SQL over stems and IndexedDB over key ids.
 */
export class GroupEdits<M> {
  private readonly edited = new Map<string, Map<M, Uint8Array>>();

  constructor(private readonly stored: (group: string) => ReadonlyMap<M, Uint8Array> | undefined) {}

  /** The group's members as this write leaves them; reading it marks it to be written. */
  group(group: string): Map<M, Uint8Array> {
    let members = this.edited.get(group);
    if (!members) this.edited.set(group, (members = new Map(this.stored(group))));
    return members;
  }

  /** The groups read, with their members as this write leaves them. */
  touched(): IterableIterator<[string, Map<M, Uint8Array>]> {
    return this.edited.entries();
  }
}

/**
 * The id of a group's member. Joined, not concatenated: a concatenation is a rope that hashing
 * flattens into a second string, and an open keys its vector table by every member's id (at
 * 100K messages ~464K of them, the two strings ~15 MB more than one).
 */
export function memberId(stem: string, member: string | null): string {
  return member === null ? stem : [stem, member].join(':');
}

/** `groups`' vectors put in `vectors` by id, as a store hands them to an open where it keeps no keys. */
export function addKeyedGroups(vectors: { addStored(id: string, bytes: Uint8Array, dim: number): unknown }, groups: readonly KeyedVectorGroup[], dim: number): void {
  for (const group of groups) {
    if ('ids' in group) {
      for (const [id, bytes] of splitGroupValues(group.name, group.ids, group.data)) vectors.addStored(id, bytes, dim);
      continue;
    }
    const { stem, members, data } = group;
    for (const [member, bytes] of decodeVectorGroup(stem, { members, data })) vectors.addStored(memberId(stem, member), bytes, dim);
  }
}
