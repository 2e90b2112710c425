import { PrismError } from '../errors.ts';
import type { Chunk, GraphEdge, GraphNode, MemoryMeta, MemorySnapshot } from '../graph/types.ts';
import type { WriteBatch } from './types.ts';
import { checkChunk, checkEdge, checkId, checkMeta, checkNode, checkVector, type Fail } from './validate-snapshot.ts';

/**
 * Batch validation and the in-memory table every backend shares. A batch is checked in
 * full before anything changes, which is what makes commits all-or-nothing.
 *
 * Semantics of one batch: deletions are applied before puts (so a batch can replace a
 * record), `meta` replaces the stored meta, and the store does not enforce references
 * between records — the writer composes consistent batches.
 */

/** A batch the writer composed wrongly: INVALID_INPUT, unless the check names a more specific code. */
const invalid: Fail = (message, code = 'INVALID_INPUT') => {
  throw new PrismError(code, message);
};

function checkIds(what: string, ids: readonly unknown[] | undefined): void {
  for (const id of ids ?? []) checkId(id, `${what} id`, invalid);
}

/** True when the batch sets a meta whose dimension differs from the stored one. */
export function changesDimension(current: MemoryMeta | null, batch: WriteBatch): boolean {
  return current !== null && batch.meta !== undefined && batch.meta.dim !== current.dim;
}

/**
 * Checks a whole batch against the stored meta and returns the meta in force after it.
 * `storedVectorIds` is consulted only when the batch changes the dimension: every stored
 * vector must then be deleted by the same batch, so no vector of the old size survives.
 */
export function validateBatch(batch: WriteBatch, current: MemoryMeta | null, storedVectorIds: Iterable<string>): MemoryMeta {
  if (batch.meta !== undefined) checkMeta(batch.meta, invalid);
  const meta = batch.meta ?? current;
  if (meta === null) invalid('the first batch written to an empty store must carry meta');
  if (changesDimension(current, batch)) {
    const deleted = new Set(batch.deleteVectors ?? []);
    for (const id of storedVectorIds) {
      if (!deleted.has(id)) {
        throw new PrismError('DIMENSION_MISMATCH', `meta.dim changes to ${meta.dim} but stored vector ${id} keeps the old size`);
      }
    }
  }
  for (const node of batch.putNodes ?? []) checkNode(node, invalid);
  for (const edge of batch.putEdges ?? []) checkEdge(edge, invalid);
  for (const chunk of batch.putChunks ?? []) checkChunk(chunk, invalid);
  for (const entry of batch.putVectors ?? []) {
    if (!Array.isArray(entry)) invalid('putVectors entries must be [id, vector] pairs');
    checkId(entry[0], 'vector id', invalid);
    checkVector(entry[0], entry[1], meta.dim, invalid);
  }
  checkIds('hash', batch.putHashes);
  checkIds('node', batch.deleteNodes);
  checkIds('edge', batch.deleteEdges);
  checkIds('chunk', batch.deleteChunks);
  checkIds('vector', batch.deleteVectors);
  checkIds('hash', batch.deleteHashes);
  return meta;
}

/**
 * A vector the store owns: a copy with its own buffer. A view into a larger matrix would
 * otherwise drag the whole matrix into structured clones and IndexedDB records.
 */
export function ownVector(vector: Float32Array): Float32Array {
  return vector.slice();
}

/** Code-unit order — the order IndexedDB returns string keys in, so every backend agrees. */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function sortById<T extends { id: string }>(items: Iterable<T>): T[] {
  return [...items].sort((a, b) => compareIds(a.id, b.id));
}

function sortedVectors(vectors: Iterable<[string, Float32Array]>): Map<string, Float32Array> {
  return new Map([...vectors].sort((a, b) => compareIds(a[0], b[0])));
}

function checkUnique(what: string, sorted: readonly { id: string }[]): void {
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i]?.id === sorted[i - 1]?.id) invalid(`${what} id ${String(sorted[i]?.id)} occurs twice`);
  }
}

/** The snapshot in canonical (id) order, unchecked; records are shared, not copied. */
export function inIdOrder(snapshot: MemorySnapshot): MemorySnapshot {
  return {
    meta: snapshot.meta,
    nodes: sortById(snapshot.nodes),
    edges: sortById(snapshot.edges),
    chunks: sortById(snapshot.chunks),
    vectors: sortedVectors(snapshot.vectors),
    hashes: new Set([...snapshot.hashes].sort(compareIds)),
  };
}

/**
 * The snapshot validated and in canonical (id) order. Records are shared, not copied:
 * this is for reading (e.g. encoding), not for keeping.
 */
export function canonicalSnapshot(snapshot: MemorySnapshot): MemorySnapshot {
  validateBatch(snapshotAsBatch(snapshot), null, []);
  const canonical = inIdOrder(snapshot);
  checkUnique('node', canonical.nodes);
  checkUnique('edge', canonical.edges);
  checkUnique('chunk', canonical.chunks);
  return canonical;
}

/** A memory as keyed tables: the working state of MemoryStore, and how checkpoints are validated. */
export class SnapshotTable {
  private meta: MemoryMeta | null = null;
  private readonly nodes = new Map<string, GraphNode>();
  private readonly edges = new Map<string, GraphEdge>();
  private readonly chunks = new Map<string, Chunk>();
  private readonly vectors = new Map<string, Float32Array>();
  private readonly hashes = new Set<string>();

  /** A table holding a copy of `snapshot` (validated like any batch). */
  static from(snapshot: MemorySnapshot | null): SnapshotTable {
    const table = new SnapshotTable();
    if (snapshot) table.apply(snapshotAsBatch(snapshot));
    return table;
  }

  /** Validates the whole batch, then applies it; on a validation error nothing changes. */
  apply(batch: WriteBatch): void {
    this.meta = structuredClone(validateBatch(batch, this.meta, this.vectors.keys()));
    for (const id of batch.deleteNodes ?? []) this.nodes.delete(id);
    for (const id of batch.deleteEdges ?? []) this.edges.delete(id);
    for (const id of batch.deleteChunks ?? []) this.chunks.delete(id);
    for (const id of batch.deleteVectors ?? []) this.vectors.delete(id);
    for (const hash of batch.deleteHashes ?? []) this.hashes.delete(hash);
    for (const node of structuredClone(batch.putNodes ?? [])) this.nodes.set(node.id, node);
    for (const edge of structuredClone(batch.putEdges ?? [])) this.edges.set(edge.id, edge);
    for (const chunk of structuredClone(batch.putChunks ?? [])) this.chunks.set(chunk.id, chunk);
    for (const [id, vector] of batch.putVectors ?? []) this.vectors.set(id, ownVector(vector));
    for (const hash of batch.putHashes ?? []) this.hashes.add(hash);
  }

  /** True until a batch (which must carry meta) has been applied. */
  isEmpty(): boolean {
    return this.meta === null;
  }

  /**
   * The table as a snapshot in canonical (id) order, or `null` when empty. It shares
   * records with the table: read it (e.g. to encode), or `structuredClone` it to keep it.
   */
  view(): MemorySnapshot | null {
    if (this.meta === null) return null;
    return inIdOrder({
      meta: this.meta,
      nodes: [...this.nodes.values()],
      edges: [...this.edges.values()],
      chunks: [...this.chunks.values()],
      vectors: this.vectors,
      hashes: this.hashes,
    });
  }
}

/** The batch that writes `snapshot` into an empty store. */
export function snapshotAsBatch(snapshot: MemorySnapshot): WriteBatch {
  return {
    meta: snapshot.meta,
    putNodes: snapshot.nodes,
    putEdges: snapshot.edges,
    putChunks: snapshot.chunks,
    putVectors: [...snapshot.vectors],
    putHashes: [...snapshot.hashes],
  };
}

/**
 * Pure: the snapshot after `batch`, in canonical order, leaving `snapshot` untouched.
 * Throws the batch's validation error (INVALID_INPUT, DIMENSION_MISMATCH, NON_FINITE_VECTOR).
 */
export function applyBatch(snapshot: MemorySnapshot | null, batch: WriteBatch): MemorySnapshot {
  const table = SnapshotTable.from(snapshot);
  table.apply(batch);
  return table.view() as MemorySnapshot;
}
