import type { MemorySnapshot } from '../graph/types.ts';
import { DEFAULT_LOCK_TIMEOUT_MS, KeyedMutex } from './lock.ts';
import { SnapshotTable } from './snapshot.ts';
import type { GraphStore, WriteBatch } from './types.ts';

interface CacheEntry {
  value: string;
  tags: readonly string[];
}

/**
 * A store that lives only in memory: for edge runtimes without persistent storage, and
 * tests. Commits are all-or-nothing because a batch is fully validated before it applies,
 * and `load()` hands out a copy so callers cannot change the store behind its back. Its
 * writers can only be in this realm, so the writer lock is an in-process queue.
 */
export class MemoryStore implements GraphStore {
  private readonly tables = new Map<string, SnapshotTable>();
  private readonly revisions = new Map<string, number>();
  private readonly cache = new Map<string, CacheEntry>();
  private readonly locks = new KeyedMutex();

  async partitions(): Promise<string[]> {
    return [...this.tables].filter(([, table]) => !table.isEmpty()).map(([partition]) => partition);
  }

  async load(partition: string): Promise<MemorySnapshot | null> {
    const view = this.tables.get(partition)?.view() ?? null;
    return view && structuredClone(view);
  }

  async revision(partition: string): Promise<number> {
    return this.revisions.get(partition) ?? 0;
  }

  withWriteLock<T>(partition: string, fn: () => Promise<T>): Promise<T> {
    return this.locks.run(partition, fn, { ms: DEFAULT_LOCK_TIMEOUT_MS, what: `locking partition ${JSON.stringify(partition)}` });
  }

  async commit(partition: string, batch: WriteBatch): Promise<number> {
    let table = this.tables.get(partition);
    if (!table) this.tables.set(partition, (table = new SnapshotTable()));
    table.apply(batch);
    return this.bump(partition);
  }

  async clear(partition?: string): Promise<void> {
    if (partition === undefined) {
      for (const name of this.tables.keys()) this.bump(name);
      this.tables.clear();
      this.cache.clear();
      return;
    }
    this.tables.delete(partition);
    this.bump(partition);
  }

  async getCached(key: string): Promise<string | undefined> {
    return this.cache.get(key)?.value;
  }

  async putCached(key: string, value: string, tags: readonly string[] = []): Promise<void> {
    this.cache.set(key, { value, tags: [...tags] });
  }

  async deleteCached(tags: readonly string[]): Promise<void> {
    const doomed = new Set(tags);
    for (const [key, entry] of this.cache) if (entry.tags.some((tag) => doomed.has(tag))) this.cache.delete(key);
  }

  async close(): Promise<void> {}

  private bump(partition: string): number {
    const next = (this.revisions.get(partition) ?? 0) + 1;
    this.revisions.set(partition, next);
    return next;
  }
}
