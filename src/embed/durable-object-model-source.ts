import type { DurableObjectStorageLike } from '../store/durable-object.ts';
import type { ModelSource } from './model-source.ts';

/** The table a Durable Object keeps model files in, beside the memory's own tables. */
const TABLE = 'prism_model_files';
/** A Durable Object's SQLite holds at most 2 MB per row; files are kept in parts of 1 MiB. */
const PART_BYTES = 1 << 20;

/**
 * Model files read from `source` once per Durable Object and then kept in its SQLite storage, so
 * the object's next cold start reads them from its own disk instead of fetching them again. A
 * file is written whole or not at all (one transaction), keyed by `source.location` and its path:
 * a model published under a new URL is fetched anew. Keeping is best effort: when the storage
 * refuses the write (full, say), the fetched bytes are used all the same.
 *
 * Costs the object's storage what the files weigh (24 MB for int8 MiniLM). `ctx.storage.deleteAll()`
 * drops them with everything else.
 */
export function durableObjectModelSource(storage: DurableObjectStorageLike, source: ModelSource): ModelSource {
  return {
    location: source.location,
    async read(relPath, signal) {
      const kept = keptFile(storage, source.location, relPath);
      if (kept) return kept;
      const bytes = await source.read(relPath, signal);
      keep(storage, source.location, relPath, bytes);
      return bytes;
    },
  };
}

/** Created before every read and write: `deleteAll()` may have emptied the database since the last one. */
const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS ${TABLE} (location TEXT NOT NULL, path TEXT NOT NULL, part INTEGER NOT NULL, bytes BLOB NOT NULL, PRIMARY KEY (location, path, part))`;

/** The kept file, or undefined when there is none (or the storage cannot be read: the file is then fetched). */
function keptFile(storage: DurableObjectStorageLike, location: string, relPath: string): Uint8Array | undefined {
  try {
    storage.sql.exec(CREATE_TABLE);
    const parts = storage.sql.exec(`SELECT bytes FROM ${TABLE} WHERE location = ? AND path = ? ORDER BY part`, location, relPath).toArray().map((row) => row['bytes']);
    if (parts.length === 0 || !parts.every((part) => part instanceof ArrayBuffer)) return undefined;
    const bytes = new Uint8Array(parts.reduce((sum, part) => sum + part.byteLength, 0));
    let offset = 0;
    for (const part of parts) {
      bytes.set(new Uint8Array(part), offset);
      offset += part.byteLength;
    }
    return bytes;
  } catch {
    return undefined;
  }
}

function keep(storage: DurableObjectStorageLike, location: string, relPath: string, bytes: Uint8Array): void {
  try {
    storage.transactionSync(() => {
      storage.sql.exec(CREATE_TABLE);
      for (let part = 0; part * PART_BYTES < bytes.length; part++) {
        const piece = bytes.slice(part * PART_BYTES, (part + 1) * PART_BYTES);
        storage.sql.exec(`INSERT OR REPLACE INTO ${TABLE} (location, path, part, bytes) VALUES (?, ?, ?, ?)`, location, relPath, part, piece.buffer);
      }
    });
  } catch {
    // Not kept (the storage is full, say): the next cold start fetches the file again.
  }
}
