import type { MemorySnapshot } from '../graph/types.ts';
import { createSerial, type Serial } from '../util/serial.ts';
import { SnapshotTable } from './snapshot.ts';
import type { GraphStore, WriteBatch } from './types.ts';

interface MemoryPartition {
  table: SnapshotTable;
  revision: number;
  lock: Serial;
}

/**
 * A store that lives only in memory: for edge runtimes without persistent storage, and
 * tests. Commits are all-or-nothing because a batch is fully validated before it applies,
 * and `load()` hands out a copy so callers cannot change the store behind its back. The
 * writer lock is an in-process queue: nothing outside the process can reach this store.
 */
export class MemoryStore implements GraphStore {
  private readonly parts = new Map<string, MemoryPartition>();
  private readonly cache = new Map<string, { value: string; tags: readonly string[] }>();

  private part(name: string): MemoryPartition {
    let part = this.parts.get(name);
    if (!part) this.parts.set(name, (part = { table: SnapshotTable.from(null), revision: 0, lock: createSerial() }));
    return part;
  }

  async partitions(): Promise<string[]> {
    return [...this.parts].filter(([, part]) => part.table.view() !== null).map(([name]) => name);
  }

  async load(partition: string): Promise<MemorySnapshot | null> {
    return structuredClone(this.parts.get(partition)?.table.view() ?? null);
  }

  async revision(partition: string): Promise<number> {
    return this.parts.get(partition)?.revision ?? 0;
  }

  withWriteLock<T>(partition: string, fn: () => Promise<T>): Promise<T> {
    return this.part(partition).lock(fn);
  }

  async commit(partition: string, batch: WriteBatch): Promise<number> {
    const part = this.part(partition);
    part.table.apply(batch);
    return ++part.revision;
  }

  async clear(partition?: string): Promise<void> {
    if (partition === undefined) {
      for (const part of this.parts.values()) {
        part.table.clear();
        part.revision++;
      }
      this.cache.clear();
      return;
    }
    const part = this.part(partition);
    part.table.clear();
    part.revision++;
  }

  async getCached(key: string): Promise<string | undefined> {
    return this.cache.get(key)?.value;
  }

  async putCached(key: string, value: string, tags: readonly string[] = []): Promise<void> {
    this.cache.set(key, { value, tags: [...tags] });
  }

  async deleteCached(tags: readonly string[]): Promise<void> {
    const gone = new Set(tags);
    for (const [key, entry] of this.cache) if (entry.tags.some((tag) => gone.has(tag))) this.cache.delete(key);
  }

  async close(): Promise<void> {}
}
