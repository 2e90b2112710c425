import { mkdir, open, readFile, rename, rm, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import process from 'node:process';
import { PrismError } from '../errors.ts';
import type { MemorySnapshot } from '../graph/types.ts';
import { decodeCheckpoint, encodeCheckpoint } from './checkpoint.ts';
import { SnapshotTable } from './snapshot.ts';
import type { GraphStore, WriteBatch } from './types.ts';

/** File names inside a FileStore directory. */
export const FILE_STORE_FILES = {
  checkpoint: 'memory.prism',
  /** Written in full, synced, then renamed over the checkpoint; a leftover one is never read. */
  checkpointTemp: 'memory.prism.tmp',
  /** JSON lines of [key, value]; a later line for the same key wins. */
  cache: 'cache.jsonl',
} as const;

function errnoCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : undefined;
}

function ioError(action: string, path: string, err: unknown): PrismError {
  const code = errnoCode(err);
  const reason = err instanceof Error ? err.message : String(err);
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new PrismError('STORE_QUOTA_EXCEEDED', `${action} ${path}: the disk is full (${reason})`, { cause: err });
  }
  return new PrismError('STORE_IO', `${action} ${path}: ${reason}`, { cause: err });
}

async function readIfExists(path: string): Promise<Uint8Array | null> {
  try {
    return await readFile(path);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return null;
    throw ioError('reading', path, err);
  }
}

/** Makes a rename in `dir` durable; Windows cannot open directories, and NTFS journals renames. */
async function syncDirectory(dir: string): Promise<void> {
  if (process.platform === 'win32') return;
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function writeSynced(path: string, flags: 'w' | 'a', data: Uint8Array | string): Promise<void> {
  const handle = await open(path, flags);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Node persistence as one checkpoint file (see checkpoint.ts) plus a cache file. The memory
 * is held in memory; every commit rewrites the checkpoint atomically (temp file, fsync,
 * rename, directory fsync) and resolves only once it is durable, so a crash at any point
 * leaves the file at the last committed batch. Operations run one at a time, in call order.
 */
export class FileStore implements GraphStore {
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly dir: string,
    private table: SnapshotTable,
    private readonly cache: Map<string, string>,
  ) {}

  /**
   * Opens (creating if needed) the store in `dir`. A damaged checkpoint throws
   * CORRUPT_CHECKPOINT naming the file and the cause; the file is left untouched.
   */
  static async open(dir: string): Promise<FileStore> {
    try {
      await mkdir(dir, { recursive: true });
    } catch (err) {
      throw ioError('creating', dir, err);
    }
    const table = await readTable(dir);
    const cache = await readCache(join(dir, FILE_STORE_FILES.cache));
    return new FileStore(dir, table, cache);
  }

  private path(file: keyof typeof FILE_STORE_FILES): string {
    return join(this.dir, FILE_STORE_FILES[file]);
  }

  private enqueue<T>(operation: () => Promise<T>): Promise<T> {
    const result = this.queue.then(operation);
    this.queue = result.catch(() => undefined);
    return result;
  }

  async load(): Promise<MemorySnapshot | null> {
    return this.enqueue(async () => structuredClone(this.table.view()));
  }

  commit(batch: WriteBatch): Promise<void> {
    return this.enqueue(async () => {
      this.table.apply(batch);
      const snapshot = this.table.view() as MemorySnapshot;
      const temp = this.path('checkpointTemp');
      try {
        await writeSynced(temp, 'w', encodeCheckpoint(snapshot));
        await rename(temp, this.path('checkpoint'));
        await syncDirectory(this.dir);
      } catch (err) {
        // Every earlier commit is durable, so the file on disk is exactly the state before
        // this batch: return to it.
        this.table = await readTable(this.dir);
        throw ioError('writing', temp, err);
      }
    });
  }

  clear(): Promise<void> {
    return this.enqueue(async () => {
      for (const file of ['checkpoint', 'checkpointTemp', 'cache'] as const) {
        try {
          await rm(this.path(file), { force: true });
        } catch (err) {
          throw ioError('removing', this.path(file), err);
        }
      }
      this.table.clear();
      this.cache.clear();
    });
  }

  async getCached(key: string): Promise<string | undefined> {
    return this.cache.get(key);
  }

  putCached(key: string, value: string): Promise<void> {
    return this.enqueue(async () => {
      const path = this.path('cache');
      try {
        await writeSynced(path, 'a', `${JSON.stringify([key, value])}\n`);
      } catch (err) {
        throw ioError('appending to', path, err);
      }
      this.cache.set(key, value);
    });
  }

  /** Waits for queued writes; the store holds no open file handles between operations. */
  async close(): Promise<void> {
    await this.enqueue(async () => undefined);
  }
}

async function readTable(dir: string): Promise<SnapshotTable> {
  const path = join(dir, FILE_STORE_FILES.checkpoint);
  const bytes = await readIfExists(path);
  if (bytes === null) return new SnapshotTable();
  try {
    return SnapshotTable.from(decodeCheckpoint(bytes));
  } catch (err) {
    if (err instanceof PrismError) throw new PrismError(err.code, `${path}: ${err.message}`, { cause: err });
    throw err;
  }
}

/**
 * Reads the cache file. A crash mid-append can only tear the last line: it is cut off so
 * the next append starts on a fresh line. A bad line anywhere else is corruption.
 */
async function readCache(path: string): Promise<Map<string, string>> {
  const cache = new Map<string, string>();
  const bytes = await readIfExists(path);
  if (bytes === null) return cache;
  const text = new TextDecoder().decode(bytes);
  const complete = text.lastIndexOf('\n') + 1;
  if (complete < text.length) {
    try {
      await truncate(path, new TextEncoder().encode(text.slice(0, complete)).length);
    } catch (err) {
      throw ioError('truncating the torn last line of', path, err);
    }
  }
  const lines = text.slice(0, complete).split('\n');
  lines.pop();
  lines.forEach((line, index) => {
    let entry: unknown;
    try {
      entry = JSON.parse(line);
    } catch (err) {
      throw new PrismError('CORRUPT_CHECKPOINT', `${path}: line ${index + 1} does not parse`, { cause: err });
    }
    if (!Array.isArray(entry) || entry.length !== 2 || typeof entry[0] !== 'string' || typeof entry[1] !== 'string') {
      throw new PrismError('CORRUPT_CHECKPOINT', `${path}: line ${index + 1} is not a [key, value] pair of strings`);
    }
    cache.set(entry[0], entry[1]);
  });
  return cache;
}
