import type { EdgeType, Layer } from '../graph/types.ts';
import { packRows } from '../util/vectors.ts';
import type { SearchHit, VectorIndex } from './types.ts';

/** The per-layer node indexes and the relation-edge indexes of design §1. */
export type IndexSpace = Layer | 'edge_relation' | 'edge_semantic';

/** Where an embedded edge type is indexed; `belongs_to` edges carry no vector. */
export function edgeSpace(type: EdgeType): IndexSpace | null {
  if (type === 'belongs_to') return null;
  return type === 'semantic' ? 'edge_semantic' : 'edge_relation';
}

/** A lazily created vector index per space, all of one dimension. */
export class IndexSet {
  private readonly spaces = new Map<IndexSpace, VectorIndex>();

  constructor(
    private readonly dim: number,
    private readonly create: (dim: number) => VectorIndex,
  ) {}

  add(space: IndexSpace, entries: ReadonlyArray<{ key: number; vector: Float32Array }>): void {
    if (entries.length === 0) return;
    let index = this.spaces.get(space);
    if (!index) this.spaces.set(space, (index = this.create(this.dim)));
    index.add(
      entries.map((e) => e.key),
      packRows(
        entries.map((e) => e.vector),
        this.dim,
      ),
    );
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
