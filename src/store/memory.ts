import type { MemorySnapshot } from '../graph/types.ts';
import { SnapshotTable } from './snapshot.ts';
import type { GraphStore, WriteBatch } from './types.ts';

/**
 * A store that lives only in memory: for edge runtimes without persistent storage, and
 * tests. Commits are all-or-nothing because a batch is fully validated before it applies,
 * and `load()` hands out a copy so callers cannot change the store behind its back.
 */
export class MemoryStore implements GraphStore {
  private readonly table: SnapshotTable;
  private readonly cache = new Map<string, string>();

  constructor(initial: MemorySnapshot | null = null) {
    this.table = SnapshotTable.from(initial);
  }

  async load(): Promise<MemorySnapshot | null> {
    return structuredClone(this.table.view());
  }

  async commit(batch: WriteBatch): Promise<void> {
    this.table.apply(batch);
  }

  async clear(): Promise<void> {
    this.table.clear();
    this.cache.clear();
  }

  async getCached(key: string): Promise<string | undefined> {
    return this.cache.get(key);
  }

  async putCached(key: string, value: string): Promise<void> {
    this.cache.set(key, value);
  }

  async close(): Promise<void> {}
}
