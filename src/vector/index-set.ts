import type { EdgeType, Layer } from '../graph/types.ts';
import { packRows } from '../util/vectors.ts';
import { recordBytes, type IndexRows, type RecordForm, type SearchHit, type VectorIndex } from './types.ts';

/** The per-layer node indexes and the relation-edge indexes of design §1. */
export type IndexSpace = Layer | 'edge_relation' | 'edge_semantic';

/** Where an embedded edge type is indexed; `belongs_to` edges carry no vector. */
export function edgeSpace(type: EdgeType): IndexSpace | null {
  if (type === 'belongs_to') return null;
  return type === 'semantic' ? 'edge_semantic' : 'edge_relation';
}

/** Where vectors to index are read, by node or edge id: floats, or records (store/vector-codec.ts) as a store keeps them. */
export interface IndexVectors {
  has(id: string): boolean;
  get(id: string): Float32Array | undefined;
  /**
   * Where `id`'s record is kept, when it is kept as one (`VectorTable.recordPlace`), else undefined:
   * a vector found so is copied and lent by its place, with no second lookup by id (an open
   * indexes every vector of a memory). Absent where vectors are floats.
   */
  recordPlace?(id: string): number | undefined;
  /**
   * Copies the records at `places` end to end into `target` in `form` (an i8 record is also what
   * an i4 one names); false when one is not kept in that form (`VectorTable.copyRecords`).
   */
  copyRecords?(places: readonly number[], target: Uint8Array, form: RecordForm): boolean;
  /**
   * Told, once an index holds the vectors of `ids` under `keys`, where to read them back
   * (`VectorTable.lend`), so that whoever keeps them can drop its copy; `places` are where their
   * records are kept (−1: look the id up). Absent: nothing is lent.
   */
  lend?(ids: readonly string[], keys: readonly number[], rows: IndexRows, places: readonly number[]): void;
}

/**
 * Bytes of i8 records copied at a time into an index from where they are kept: the batch is
 * reused, where one a whole layer long was 116 MB when a memory of 100K messages opened (and
 * a view per vector, before that, a million objects for the collector).
 */
const RECORD_BATCH_BYTES = 4 << 20;

/** The record forms a batch is copied in, the first that holds every vector of it. */
const RECORD_FORMS: readonly RecordForm[] = ['i4', 'i8'];

/** A lazily created vector index per space, all of one dimension. */
export class IndexSet {
  private readonly spaces = new Map<IndexSpace, VectorIndex>();
  /** Reads in flight (`reading`); a disposal asked for meanwhile waits for the last. */
  private readers = 0;
  private disposeWhenRead = false;

  constructor(
    private readonly dim: number,
    private readonly create: (dim: number) => VectorIndex,
  ) {}

  /**
   * Adds the vectors of `ids` (each held by `vectors`) under `keys` to the space's index, all or
   * nothing. `places` are where their records are kept as `vectors.recordPlace` gave them (−1 where it gave
   * none). When each has one and the index takes records (`VectorIndex.addRecords`), they are
   * copied from where they are kept a batch of `RECORD_BATCH_BYTES` at a time (see `addRecords`);
   * otherwise every one is added as its floats. An index that reads its vectors back
   * (`VectorIndex.rows`) is then lent them.
   */
  add(space: IndexSpace, keys: readonly number[], ids: readonly string[], vectors: IndexVectors, places: readonly number[]): void {
    if (keys.length === 0) return;
    let index = this.spaces.get(space);
    if (!index) this.spaces.set(space, (index = this.create(this.dim)));
    // The room for every vector first: the batches below would each make their own.
    index.reserve?.(keys.length);
    if (!this.addRecords(index, keys, places, vectors)) index.add(keys, packRows(ids.map((id) => vectors.get(id) as Float32Array), this.dim));
    if (index.rows) vectors.lend?.(ids, keys, index.rows, places);
  }

  /**
   * The vectors added as records from their places, batch by batch: a batch goes as the i4
   * records a store wrote where each of its vectors is kept so (half the bytes to copy, expanded
   * by the index), else as i8 records; false, with nothing added, when one has no record or the
   * index takes none.
   */
  private addRecords(index: VectorIndex, keys: readonly number[], places: readonly number[], vectors: IndexVectors): boolean {
    if (!index.addRecords || !vectors.copyRecords || places.some((place) => place < 0)) return false;
    // Room for a batch in the larger form.
    const perBatch = Math.max(1, Math.floor(RECORD_BATCH_BYTES / recordBytes(this.dim, 'i8')));
    const batch = new Uint8Array(Math.min(places.length, perBatch) * recordBytes(this.dim, 'i8'));
    let added = 0;
    try {
      for (let start = 0; start < places.length; start = added) {
        const end = Math.min(places.length, start + perBatch);
        const batchPlaces = places.slice(start, end);
        const recordsIn = (form: RecordForm) => batch.subarray(0, batchPlaces.length * recordBytes(this.dim, form));
        const form = RECORD_FORMS.find((f) => vectors.copyRecords?.(batchPlaces, recordsIn(f), f));
        if (!form) break;
        index.addRecords(keys.slice(start, end), recordsIn(form), form);
        added = end;
      }
    } catch (error) {
      index.remove(keys.slice(0, added));
      throw error;
    }
    if (added < places.length) index.remove(keys.slice(0, added));
    return added === places.length;
  }

  remove(space: IndexSpace, keys: readonly number[]): void {
    if (keys.length > 0) this.spaces.get(space)?.remove(keys);
  }

  search(space: IndexSpace, query: Float32Array, k: number): SearchHit[] {
    const index = this.spaces.get(space);
    if (!index || index.size === 0) return [];
    return index.search(query, Math.min(k, index.size))[0] ?? [];
  }

  size(space: IndexSpace): number {
    return this.spaces.get(space)?.size ?? 0;
  }

  /**
   * Runs `read`, which reads these indexes (or the vectors lent to them) across awaits, with the
   * indexes kept until it settles: a search awaits its query's embedding between taking the graph
   * and searching, and meanwhile another writer's commit may reload the scope (which disposes
   * the set it replaces) or the memory may close.
   */
  async reading<T>(read: () => Promise<T>): Promise<T> {
    this.readers++;
    try {
      return await read();
    } finally {
      if (--this.readers === 0 && this.disposeWhenRead) this.dispose();
    }
  }

  /** Frees the indexes, once no `reading` is in flight. */
  dispose(): void {
    this.disposeWhenRead = this.readers > 0;
    if (this.disposeWhenRead) return;
    for (const index of this.spaces.values()) index.dispose();
    this.spaces.clear();
  }
}
