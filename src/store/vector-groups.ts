import { PrismError } from '../errors.ts';

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
  let size = 0;
  for (const bytes of group.values()) size += 4 + bytes.length;
  const data = new Uint8Array(size);
  const view = new DataView(data.buffer);
  let at = 0;
  for (const bytes of group.values()) {
    view.setUint32(at, bytes.length, true);
    data.set(bytes, at + 4);
    at += 4 + bytes.length;
  }
  return { members: JSON.stringify([...group.keys()]), data };
}

/**
 * A stored group read back, its values as views into `data` (not copies); CORRUPT_CHECKPOINT,
 * naming the stem, when its members and values do not match.
 */
export function decodeVectorGroup(stem: string, stored: StoredVectorGroup): VectorGroup {
  const members = vectorGroupMembers(stem, stored.members);
  const { data } = stored;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const group: VectorGroup = new Map();
  let at = 0;
  for (const member of members) {
    const length = at + 4 <= data.length ? view.getUint32(at, true) : -1;
    if (length < 0 || at + 4 + length > data.length) throw damaged(stem, `its values end before member ${JSON.stringify(member)}`);
    if (group.has(member)) throw damaged(stem, `member ${JSON.stringify(member)} appears twice`);
    group.set(member, data.subarray(at + 4, at + 4 + length));
    at += 4 + length;
  }
  if (at !== data.length) throw damaged(stem, `${data.length - at} bytes follow its last member`);
  return group;
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

function damaged(stem: string, what: string): PrismError {
  return new PrismError('CORRUPT_CHECKPOINT', `vector group ${JSON.stringify(stem)}: ${what}`);
}

/** The id of a group's member. */
export function memberId(stem: string, member: string | null): string {
  return member === null ? stem : `${stem}:${member}`;
}
