import type { EdgeType, Layer } from '../graph/types.ts';
import { packRows } from '../util/vectors.ts';
import type { IndexRows, SearchHit, VectorIndex } from './types.ts';

/** The per-layer node indexes and the relation-edge indexes of design §1. */
export type IndexSpace = Layer | 'edge_relation' | 'edge_semantic';

/** Where an embedded edge type is indexed; `belongs_to` edges carry no vector. */
export function edgeSpace(type: EdgeType): IndexSpace | null {
  if (type === 'belongs_to') return null;
  return type === 'semantic' ? 'edge_semantic' : 'edge_relation';
}

/** Where vectors to index are read, by node or edge id: floats, or i8 records (store/vector-codec.ts) as a store keeps them. */
export interface IndexVectors {
  has(id: string): boolean;
  get(id: string): Float32Array | undefined;
  /**
   * Copies the i8 records of `ids` end to end into `target`; false when one is not kept as a
   * record (`VectorTable.copyRecords`). Absent where vectors are floats.
   */
  copyRecords?(ids: readonly string[], target: Uint8Array): boolean;
  /**
   * Told, once an index holds the vectors of `ids` under `keys`, where to read them back
   * (`VectorTable.lend`), so that whoever keeps them can drop its copy. Absent: nothing is lent.
   */
  lend?(ids: readonly string[], keys: readonly number[], rows: IndexRows): void;
}

/** A lazily created vector index per space, all of one dimension. */
export class IndexSet {
  private readonly spaces = new Map<IndexSpace, VectorIndex>();

  constructor(
    private readonly dim: number,
    private readonly create: (dim: number) => VectorIndex,
  ) {}

  /**
   * Adds the vectors of `ids` (each held by `vectors`) under `keys` to the space's index, in one
   * batch. When every one is an i8 record and the index takes records as they are
   * (`VectorIndex.addRecords`), they are copied into the batch straight from where they are kept
   * (a view of each, kept until the add, was a million objects for the collector when a memory
   * of 100K messages opened); otherwise every one is added as its floats. An index that reads
   * its vectors back (`VectorIndex.rows`) is then lent them.
   */
  add(space: IndexSpace, keys: readonly number[], ids: readonly string[], vectors: IndexVectors): void {
    if (keys.length === 0) return;
    let index = this.spaces.get(space);
    if (!index) this.spaces.set(space, (index = this.create(this.dim)));
    const records = index.addRecords && vectors.copyRecords ? new Uint8Array(ids.length * (this.dim + 4)) : null;
    if (records && vectors.copyRecords?.(ids, records)) index.addRecords?.(keys, records);
    else index.add(keys, packRows(ids.map((id) => vectors.get(id) as Float32Array), this.dim));
    if (index.rows) vectors.lend?.(ids, keys, index.rows);
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

  dispose(): void {
    for (const index of this.spaces.values()) index.dispose();
    this.spaces.clear();
  }
}
