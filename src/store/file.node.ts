import { access, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { PrismError } from '../errors.ts';
import { DEFAULT_PARTITION } from '../scope.ts';
import { importCheckpoint } from './checkpoint.ts';
import type { GraphStore } from './types.ts';

/**
 * The v0.2 file store (one `memory.prism` checkpoint plus `cache.jsonl` per directory) is
 * read once, by `migrateFileStore`, and never written again: SQLite replaced it.
 */
export const LEGACY_FILES = {
  checkpoint: 'memory.prism',
  /** JSON lines of [key, value]; a later line for the same key wins. */
  cache: 'cache.jsonl',
} as const;

/** Appended to a legacy file's name once its content lives in the new store. */
export const MIGRATED_SUFFIX = '.migrated';

function errnoCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : undefined;
}

async function readIfExists(path: string): Promise<Uint8Array | null> {
  try {
    return await readFile(path);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return null;
    throw new PrismError('STORE_IO', `reading ${path}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/**
 * The legacy cache file's entries. A crash mid-append could only tear the last line, which is
 * skipped; a bad line anywhere else is corruption.
 */
function parseCache(path: string, bytes: Uint8Array): Array<[string, string]> {
  const lines = new TextDecoder().decode(bytes).split('\n');
  lines.pop();
  return lines.map((line, index): [string, string] => {
    let entry: unknown;
    try {
      entry = JSON.parse(line);
    } catch (err) {
      throw new PrismError('CORRUPT_CHECKPOINT', `${path}: line ${index + 1} does not parse`, { cause: err });
    }
    if (!Array.isArray(entry) || entry.length !== 2 || typeof entry[0] !== 'string' || typeof entry[1] !== 'string') {
      throw new PrismError('CORRUPT_CHECKPOINT', `${path}: line ${index + 1} is not a [key, value] pair of strings`);
    }
    return [entry[0], entry[1]];
  });
}

async function markMigrated(path: string): Promise<void> {
  try {
    await rename(path, `${path}${MIGRATED_SUFFIX}`);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return;
    throw new PrismError('STORE_IO', `renaming ${path}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/**
 * Moves a v0.2 store directory (`memory.prism`, `cache.jsonl`) into `store`'s default
 * partition, then renames the old files to `*.migrated`. Safe to repeat and to race: it runs
 * under the partition's writer lock, imports only into an empty partition (a crash between
 * import and rename leaves the import done, and the next call just renames), and does nothing
 * once the files are renamed. Returns whether a checkpoint was imported. A damaged checkpoint
 * throws CORRUPT_CHECKPOINT naming the file and leaves everything as it was.
 */
export async function migrateFileStore(dir: string, store: GraphStore): Promise<boolean> {
  const checkpointPath = join(dir, LEGACY_FILES.checkpoint);
  const cachePath = join(dir, LEGACY_FILES.cache);
  // The common case, nothing to migrate, must not wait for a writer holding the lock.
  const present = await Promise.all([checkpointPath, cachePath].map((path) => access(path).then(() => true, () => false)));
  if (!present.includes(true)) return false;
  return store.withWriteLock(DEFAULT_PARTITION, async () => {
    const checkpoint = await readIfExists(checkpointPath);
    const cache = await readIfExists(cachePath);
    let imported = false;
    if (checkpoint !== null && (await store.load(DEFAULT_PARTITION)) === null) {
      try {
        await importCheckpoint(store, DEFAULT_PARTITION, checkpoint);
      } catch (err) {
        if (err instanceof PrismError) throw new PrismError(err.code, `${checkpointPath}: ${err.message}`, { cause: err });
        throw err;
      }
      imported = true;
    }
    if (cache !== null) {
      for (const [key, value] of parseCache(cachePath, cache)) await store.putCached(key, value);
      await markMigrated(cachePath);
    }
    if (checkpoint !== null) await markMigrated(checkpointPath);
    return imported;
  });
}
