import { PrismError } from '../errors.ts';
import { DEFAULT_LOCK_TIMEOUT_MS, KeyedMutex } from './lock.ts';
import { SqlStore, steppedRows, type SqlDriver, type SqlRow, type SqlValue, type WriteLock } from './sql.ts';

/**
 * The part of a Durable Object's storage API (`ctx.storage`) this store uses, declared here so
 * PRISM needs no Workers type package: a SQLite-backed object's `sql.exec` and `transactionSync`.
 */
type SqlStorageValue = ArrayBuffer | string | number | null;
interface SqlStorageCursor extends Iterator<Record<string, SqlStorageValue>> {
  toArray(): Array<Record<string, SqlStorageValue>>;
  /** The rows as arrays of their values, in column order. */
  raw(): IterableIterator<SqlStorageValue[]>;
}
export interface DurableObjectStorageLike {
  readonly sql: { exec(query: string, ...bindings: SqlStorageValue[]): SqlStorageCursor };
  transactionSync<T>(fn: () => T): T;
}

/** A Durable Object's SQLite failure as a PrismError; its messages carry SQLite's wording. */
function storeError(action: string, err: unknown): PrismError {
  if (err instanceof PrismError) return err;
  const reason = err instanceof Error ? err.message : String(err);
  if (/SQLITE_FULL|database or disk is full|exceeded.*(size|storage)/i.test(reason)) {
    return new PrismError('STORE_QUOTA_EXCEEDED', `${action} the Durable Object's database: it is full (${reason}); nothing of this write was kept`, { cause: err });
  }
  if (/SQLITE_CORRUPT|malformed|SQLITE_NOTADB/i.test(reason)) {
    return new PrismError('CORRUPT_CHECKPOINT', `${action} the Durable Object's database: it is damaged (${reason})`, { cause: err });
  }
  return new PrismError('STORE_IO', `${action} the Durable Object's database: ${reason}`, { cause: err });
}

/** Durable Object SQL binds blobs as ArrayBuffers, not views. */
function bindable(value: SqlValue): SqlStorageValue {
  if (!(value instanceof Uint8Array)) return value;
  return value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength) as ArrayBuffer;
}

class DurableObjectSqlDriver implements SqlDriver {
  constructor(private readonly storage: DurableObjectStorageLike) {}

  run(sql: string, params: readonly SqlValue[] = []): void {
    this.all(sql, params);
  }

  all(sql: string, params: readonly SqlValue[] = []): SqlRow[] {
    try {
      return this.storage.sql.exec(sql, ...params.map(bindable)).toArray();
    } catch (err) {
      throw storeError('querying', err);
    }
  }

  each(sql: string, params: readonly SqlValue[] = []): Iterable<readonly SqlValue[]> {
    return steppedRows(() => this.storage.sql.exec(sql, ...params.map(bindable)).raw(), (err) => storeError('querying', err));
  }

  rows(sql: string, params: readonly SqlValue[] = []): Array<readonly SqlValue[]> {
    try {
      return Array.from(this.storage.sql.exec(sql, ...params.map(bindable)).raw());
    } catch (err) {
      throw storeError('querying', err);
    }
  }

  /** One object has one connection, so reading and writing transactions are the same. */
  transaction<T>(_mode: 'read' | 'write', fn: () => T): T {
    try {
      return this.storage.transactionSync(fn);
    } catch (err) {
      throw storeError('committing to', err);
    }
  }

  /**
   * Nothing can be erased from here: workerd refuses `PRAGMA secure_delete` and
   * `PRAGMA wal_checkpoint` (SQLITE_AUTH) and `VACUUM` (always inside a transaction). Deleted
   * rows stay in the object's `-wal` file while the object runs and then in the free space of
   * its database file until SQLite reuses it; `ctx.storage.deleteAll()` is the erase that
   * reaches them (it empties the object's whole database, other data included).
   */
  async eraseDeleted(): Promise<void> {}

  /** The runtime owns the database; there is nothing to close. */
  close(): void {}
}

/**
 * Within one Durable Object the writer lock is an in-memory queue: the runtime runs exactly one
 * instance of an object, single-threaded, so every writer — each request — is in this realm.
 */
class ObjectWriteLock implements WriteLock {
  private readonly queue = new KeyedMutex();

  run<T>(partition: string, fn: () => Promise<T>): Promise<T> {
    return this.queue.run(partition, fn, { ms: DEFAULT_LOCK_TIMEOUT_MS, what: `locking partition ${JSON.stringify(partition)} of the Durable Object` });
  }
}

/**
 * The SQL graph store in a SQLite-backed Durable Object (`enableSql` / a `new_sqlite_classes`
 * migration): call from the object's constructor with `ctx.storage`. Typically one object per
 * user, holding that user's partitions. Schema creation is synchronous, so no
 * `blockConcurrencyWhile` is needed.
 */
export function openDurableObjectStore(storage: DurableObjectStorageLike): SqlStore {
  return SqlStore.open(new DurableObjectSqlDriver(storage), new ObjectWriteLock());
}
