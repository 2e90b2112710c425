import type { EdgeType, Layer } from '../graph/types.ts';
import { decodeVector } from '../store/vector-codec.ts';
import { packRows } from '../util/vectors.ts';
import type { SearchHit, VectorIndex } from './types.ts';

/** The per-layer node indexes and the relation-edge indexes of design §1. */
export type IndexSpace = Layer | 'edge_relation' | 'edge_semantic';

/** Where an embedded edge type is indexed; `belongs_to` edges carry no vector. */
export function edgeSpace(type: EdgeType): IndexSpace | null {
  if (type === 'belongs_to') return null;
  return type === 'semantic' ? 'edge_semantic' : 'edge_relation';
}

/** A vector to index: its floats, or its i8 record (store/vector-codec.ts) as a store keeps it. */
export type IndexEntry = { key: number; vector: Float32Array } | RecordEntry;
type RecordEntry = { key: number; record: Uint8Array };

function packRecords(records: readonly Uint8Array[], bytes: number): Uint8Array {
  const packed = new Uint8Array(records.length * bytes);
  records.forEach((record, i) => packed.set(record, i * bytes));
  return packed;
}

/** A lazily created vector index per space, all of one dimension. */
export class IndexSet {
  private readonly spaces = new Map<IndexSpace, VectorIndex>();

  constructor(
    private readonly dim: number,
    private readonly create: (dim: number) => VectorIndex,
  ) {}

  /**
   * Adds entries to the space's index in one batch. A batch of i8 records only goes to an index
   * that takes records as they are (`VectorIndex.addRecords`); otherwise every entry is added as
   * its floats.
   */
  add(space: IndexSpace, entries: ReadonlyArray<IndexEntry>): void {
    if (entries.length === 0) return;
    let index = this.spaces.get(space);
    if (!index) this.spaces.set(space, (index = this.create(this.dim)));
    const keys = entries.map((e) => e.key);
    const records = entries.every((e): e is RecordEntry => 'record' in e) ? entries.map((e) => e.record) : null;
    if (records && index.addRecords) index.addRecords(keys, packRecords(records, this.dim + 4));
    else index.add(keys, packRows(entries.map((e) => ('record' in e ? decodeVector(e.record, this.dim) : e.vector)), this.dim));
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
