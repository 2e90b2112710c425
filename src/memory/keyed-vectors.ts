import { PrismError } from '../errors.ts';
import { LAYERS, type EdgeType, type Layer } from '../graph/types.ts';
import type { VectorTable } from '../graph/vector-table.ts';
import { DERIVED_EDGE_TYPES } from '../graph/derived-edges.ts';
import type { MemoryState } from '../ingest/pipeline.ts';
import type { KeyedVectorGroup } from '../store/types.ts';
import { decodeStoredVector, I4_MIN_DIM } from '../store/vector-codec.ts';
import { decodeGroupKeys, vectorGroupMembers, walkGroupValues } from '../store/vector-groups.ts';
import { edgeSpace, type IndexSpace, type IndexVectors } from '../vector/index-set.ts';
import { recordBytes, type IndexRows, type RecordForm } from '../vector/types.ts';

/**
 * Hands a working set's keyed vectors (`WorkingSnapshot.keyedVectors`) to `state`'s indexes by
 * key, once its graph holds the working set's nodes and edges: each space's vectors in key order,
 * as an open that finds them by id adds them (`applyBatch`), so the indexes are the same row for
 * row; lent by key to the indexes that read vectors back (`VectorTable.addLent`: found by id
 * through the graph's records, with no entry of their own), kept in `vectors` otherwise. At 100K
 * messages an open that finds them by id keys ~464K vectors by id twice (the table's map as they
 * are read, its lookup as each node is indexed), which the keys spare. An IndexedDB group keeps
 * no keys: each member's is found once, by its id, in the graph's own map of records.
 *
 * False, with some vectors perhaps indexed, when the keys are not the ones to trust: a member whose
 * key names no node or edge of the member's id (or names it under another key now), or whose id
 * names none; two members of one key; a value that is no i4 record of the memory's dimension or
 * whose scale is not finite; a vector of an edge no index takes; a group of a derived edge type
 * (whose vectors decide which edges the graph holds as edges). The caller then opens the memory as before, from the vectors
 * found by id, which fails as that open fails where the vectors are damaged.
 */
export function indexKeyedVectors(state: MemoryState, groups: readonly KeyedVectorGroup[], vectors: VectorTable): boolean {
  const { dim, nextKey } = state.meta;
  const length = recordBytes(dim, 'i4');
  if (dim < I4_MIN_DIM) return false;
  // Where each key's vector is (−1: none), and where each vector lies: its group and first byte
  // (at most a vector a record of the group's length, its values' length prefixes each 4 bytes).
  const placeOfKey = new Int32Array(nextKey).fill(-1);
  const most = groups.reduce((sum, group) => sum + Math.floor(group.data.length / (length + 4)), 0);
  const groupOf = new Int32Array(most);
  const startOf = new Int32Array(most);
  // Each vector's space, by its position in `spaces`.
  const spaces: IndexSpace[] = [];
  const spaceAt = new Uint8Array(most);
  let place = 0;
  for (let g = 0; g < groups.length; g++) {
    const group = groups[g] as KeyedVectorGroup;
    const { data } = group;
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    let trusted = true;
    try {
      const members = membersOf(group, state);
      if (members === null) return false;
      walkGroupValues(members.what, members.names, data, (member, start, end) => {
        const key = members.next(member);
        const space = key < 0 ? null : spaceOf(state.graph.kindOfKey(key));
        trusted &&= space !== null && key >= 0 && key < nextKey && end - start === length && Number.isFinite(view.getFloat32(start, true)) && placeOfKey[key] === -1;
        if (trusted) {
          let code = spaces.indexOf(space as IndexSpace);
          if (code < 0) code = spaces.push(space as IndexSpace) - 1;
          placeOfKey[key] = place;
          spaceAt[place] = code;
          groupOf[place] = g;
          startOf[place++] = start;
        }
        return true;
      });
    } catch (error) {
      if (error instanceof PrismError && error.code === 'CORRUPT_CHECKPOINT') return false;
      throw error;
    }
    if (!trusted) return false;
  }
  const lists = spaces.map(() => ({ keys: [] as number[], ids: [] as string[], places: [] as number[] }));
  for (let key = 0; key < nextKey; key++) {
    const at = placeOfKey[key] as number;
    if (at < 0) continue;
    const list = lists[spaceAt[at] as number] as (typeof lists)[number];
    list.keys.push(key);
    list.ids.push(state.graph.idForKey(key) as string);
    list.places.push(at);
  }
  const records = new KeyedRecords(groups, groupOf, startOf, length, dim);
  lists.forEach(({ keys, ids, places }, code) => state.indexes.add(spaces[code] as IndexSpace, keys, ids, records.forSpace(ids, places, vectors), places));
  // An index that reads no vector back was lent none: the table keeps those, as it keeps every vector an open finds by id.
  records.keepUnlent(lists, vectors);
  return true;
}

/**
 * A group's member names, in order, and `next`, which gives the key of each member's node or edge
 * in turn (−1 where the group does not name one): a SQL group's stored key, trusted where the
 * record of that key has the member's id; an IndexedDB group's by the member's id, but a derived
 * edge's. Null where a SQL group's keys cannot be trusted at all: a group of a derived edge type
 * (whose vectors decide which edges the graph holds as edges), or stored keys that are not one a
 * member. No node of a fact held as columns is made.
 */
function membersOf(group: KeyedVectorGroup, state: MemoryState): { what: string; names: ReadonlyArray<string | null>; next: (name: string | null) => number } | null {
  const { graph } = state;
  // A derived edge's id names no owner (as a derived type's stem makes a SQL group untrusted),
  // told as the walk reaches it rather than in a pass of its own over every id.
  if ('ids' in group) return { what: group.name, names: group.ids, next: (id) => (id === null || ofDerivedType(id) ? -1 : (graph.keyOfRecord(id) ?? -1)) };
  const { stem } = group;
  if (ofDerivedType(stem)) return null;
  const names = vectorGroupMembers(stem, group.members);
  const keys = decodeGroupKeys(group.keys, names.length);
  if (keys === null) return null;
  let i = 0;
  return {
    what: `vector group ${JSON.stringify(stem)}`,
    names,
    next: (member) => {
      const key = keys[i++] as number;
      const owner = graph.currentIdOfKey(key);
      return owner !== undefined && isMemberId(owner, stem, member) ? key : -1;
    },
  };
}

/** Whether `id` is (or is the stem of) a derived edge's. */
function ofDerivedType(id: string): boolean {
  return DERIVED_EDGE_TYPES.some((type) => id.startsWith(`${type}:`));
}

/** The index space of the vector of a node of layer `kind`, or of an edge of type `kind`; null for an edge type no index takes, or none. */
function spaceOf(kind: Layer | EdgeType | undefined): IndexSpace | null {
  if (kind === undefined) return null;
  return isLayer(kind) ? kind : edgeSpace(kind);
}

function isLayer(kind: Layer | EdgeType): kind is Layer {
  return (LAYERS as readonly string[]).includes(kind);
}

/** Whether `id` is `memberId(stem, member)`, told without making that string. */
function isMemberId(id: string, stem: string, member: string | null): boolean {
  if (member === null) return id === stem;
  return id.length === stem.length + 1 + member.length && id.startsWith(stem) && id.charCodeAt(stem.length) === 58 && id.endsWith(member);
}

/** The keyed vectors' records where their groups hold them, copied out for the indexes (`IndexVectors`). */
class KeyedRecords {
  /** By place: whether an index was lent the vector. */
  private readonly lent: Uint8Array;

  constructor(
    private readonly groups: readonly KeyedVectorGroup[],
    private readonly groupOf: Int32Array,
    private readonly startOf: Int32Array,
    private readonly length: number,
    private readonly dim: number,
  ) {
    this.lent = new Uint8Array(groupOf.length);
  }

  /** The record at `place`, a view into its group. */
  record(place: number): Uint8Array {
    const start = this.startOf[place] as number;
    return (this.groups[this.groupOf[place] as number] as KeyedVectorGroup).data.subarray(start, start + this.length);
  }

  /** What one space's `IndexSet.add` reads its vectors from: `ids` at `places`, lent on to `vectors`. */
  forSpace(ids: readonly string[], places: readonly number[], vectors: VectorTable): IndexVectors {
    let placeOf: Map<string, number> | null = null;
    // Only an index that takes no records asks for floats.
    const find = (id: string) => (placeOf ??= new Map(ids.map((each, i) => [each, places[i] as number]))).get(id);
    return {
      has: (id) => find(id) !== undefined,
      get: (id) => {
        const place = find(id);
        return place === undefined ? undefined : decodeStoredVector(id, this.record(place), this.dim);
      },
      copyRecords: (batch: readonly number[], target: Uint8Array, form: RecordForm) => {
        if (form !== 'i4' || target.length !== batch.length * this.length) return false;
        for (let i = 0; i < batch.length; i++) target.set(this.record(batch[i] as number), i * this.length);
        return true;
      },
      lend: (lentIds: readonly string[], keys: readonly number[], rows: IndexRows, lentPlaces: readonly number[]) => {
        vectors.addLent(lentIds, keys, rows);
        for (const lentPlace of lentPlaces) this.lent[lentPlace] = 1;
      },
    };
  }

  /** Keeps in `vectors` each vector of `lists` that no index was lent. */
  keepUnlent(lists: Iterable<{ ids: string[]; places: number[] }>, vectors: VectorTable): void {
    for (const { ids, places } of lists) {
      for (let i = 0; i < ids.length; i++) {
        const place = places[i] as number;
        if (this.lent[place] === 0) vectors.addStored(ids[i] as string, this.record(place), this.dim);
      }
    }
  }
}
