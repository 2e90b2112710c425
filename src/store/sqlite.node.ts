import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, readFileSync, rmSync, statfsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { PrismError, type PrismErrorCode } from '../errors.ts';
import { DEFAULT_LOCK_TIMEOUT_MS, KeyedMutex, lockTimeoutError } from './lock.ts';
import { SqlStore, steppedRows, type SqlDriver, type SqlRow, type SqlValue, type WriteLock } from './sql.ts';

export interface SqliteStoreOptions {
  /**
   * How long `withWriteLock` waits for another writer (in this or another process) before it
   * fails with `STORE_BUSY`, and how long a delete waits for other connections' reads before
   * it erases the deleted rows' old copies from the write-ahead log. Default 30 000 ms.
   */
  lockTimeoutMs?: number;
  /**
   * A cap on the database size in bytes; a commit that would grow it beyond fails with
   * `STORE_QUOTA_EXCEEDED` and changes nothing, as on a full disk. Default: no cap.
   */
  maxBytes?: number;
}

/**
 * How long one statement waits, blocking, for a lock another connection holds. Writers
 * normally hold the partition's writer lock first, so this covers only the short moments a
 * commit and a checkpoint of the write-ahead log overlap.
 */
const BUSY_TIMEOUT_MS = 5_000;
/** Retry delays while another process holds a partition's writer lock: random in [min, max). */
const LOCK_RETRY_MS = { min: 5, max: 40 } as const;

function sqliteCode(err: unknown): string | undefined {
  return err instanceof Database.SqliteError ? err.code : undefined;
}

function isBusy(err: unknown): boolean {
  const cause = err instanceof PrismError ? err.cause : err;
  return sqliteCode(cause)?.startsWith('SQLITE_BUSY') ?? false;
}

/**
 * Runs `attempt` until it does not fail with SQLITE_BUSY, waiting a short random delay between
 * tries (never blocking the event loop); past `deadline` the busy failure is `onTimeout()`.
 */
async function retryWhileBusy<T>(attempt: () => T, deadline: number, onTimeout: (err: unknown) => Error): Promise<T> {
  for (;;) {
    try {
      return attempt();
    } catch (err) {
      if (!isBusy(err)) throw err;
      if (Date.now() >= deadline) throw onTimeout(err);
    }
    const { min, max } = LOCK_RETRY_MS;
    await new Promise((resolve) => setTimeout(resolve, min + Math.random() * (max - min)));
  }
}

/** A better-sqlite3 failure as a PrismError naming the file. */
function storeError(path: string, action: string, err: unknown): PrismError {
  if (err instanceof PrismError) return err;
  const reason = err instanceof Error ? err.message : String(err);
  const code = sqliteCode(err) ?? '';
  if (code === 'SQLITE_FULL') {
    return new PrismError('STORE_QUOTA_EXCEEDED', `${action} ${path}: the database is full (${reason}); nothing of this write was kept`, { cause: err });
  }
  if (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB') {
    return new PrismError('CORRUPT_CHECKPOINT', `${action} ${path}: the file is damaged or not a PRISM database (${reason})`, { cause: err });
  }
  if (code.startsWith('SQLITE_BUSY')) {
    return new PrismError('STORE_BUSY', `${action} ${path}: another connection held the database for more than ${BUSY_TIMEOUT_MS} ms`, { cause: err });
  }
  return new PrismError('STORE_IO', `${action} ${path}: ${reason}`, { cause: err });
}

/**
 * Why a store whose writable open failed with `err` can still be read: the failure was one of
 * writing (a full disk, a file or directory this process may not write), not of a damaged or
 * busy database. `null` when it was not.
 */
function readOnlyReason(path: string, err: unknown): PrismError | null {
  const cause = err instanceof PrismError ? err.cause : err;
  const code = sqliteCode(cause) ?? '';
  const reason = cause instanceof Error ? cause.message : String(cause);
  const diskFull = code === 'SQLITE_FULL' || (code.startsWith('SQLITE_IOERR') && statfsSync(dirname(path)).bavail === 0);
  if (diskFull) return readOnly(path, 'STORE_QUOTA_EXCEEDED', `the disk is full (${reason})`, cause);
  if (code.startsWith('SQLITE_READONLY') || code === 'SQLITE_CANTOPEN' || code === 'SQLITE_PERM') {
    return readOnly(path, 'STORE_READONLY', `SQLite cannot write it or its -wal/-shm files (${reason})`, cause);
  }
  if (code.startsWith('SQLITE_IOERR')) return readOnly(path, 'STORE_IO', `writing failed (${reason})`, cause);
  return null;
}

/** The error every write through a read-only store fails with (`code` says why it is read-only). */
function readOnly(path: string, code: PrismErrorCode, why: string, cause: unknown): PrismError {
  return new PrismError(code, `${path} is open read-only because ${why}: searches and reads work, writes are refused; open it again once it is writable`, { cause });
}

/** A store file that exists but that this process may not write (or whose directory it may not). */
function unwritable(path: string): PrismError | null {
  if (!existsSync(path)) return null;
  for (const target of [path, dirname(path)]) {
    try {
      accessSync(target, constants.W_OK);
    } catch (err) {
      const code = err instanceof Error && 'code' in err ? String(err.code) : String(err);
      return readOnly(path, 'STORE_READONLY', `${target} is not writable by this process (${code})`, err);
    }
  }
  return null;
}

const logFiles = (path: string): string[] => [`${path}-wal`, `${path}-shm`];

/**
 * Opens the store file for reading only, creating nothing beside it. With a write-ahead log
 * present (a writer has the store open, or crashed) SQLite reads through the log and its
 * existing index. Without one, the file holds every commit; SQLite would still create the
 * -wal and -shm files to read it, with the store file's own (read-only) modes, which later
 * break a writable open. So the file is read into memory and opened there: a snapshot of the
 * store as of this open, costing its size in memory.
 */
function openReadOnlyDatabase(path: string): Database.Database {
  try {
    if (!existsSync(`${path}-wal`)) {
      const image = readFileSync(path);
      // Header bytes 18-19: 2 marks a write-ahead-log database, which an in-memory copy cannot be.
      image.fill(1, 18, 20);
      // A writer that opened meanwhile has created its log: read through it instead.
      if (!existsSync(`${path}-wal`)) return new Database(image, { readonly: true });
    }
    return new Database(path, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw storeError(path, 'opening', err);
  }
}

/** Errors from inside the schema check (STORE_VERSION) do not know the file yet. */
function openError(path: string, err: unknown): PrismError {
  if (err instanceof PrismError && !err.message.includes(path)) return new PrismError(err.code, `${path}: ${err.message}`, { cause: err });
  return storeError(path, 'opening', err);
}

/** A store open for reading only: search, list and get work; every write fails with `refusal`'s code. */
function openReadOnly(path: string, refusal: PrismError): SqlStore {
  const db = openReadOnlyDatabase(path);
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    return SqlStore.open(new BetterSqliteDriver(db, path, { refusal }), new RefusedWriteLock(refusal));
  } catch (err) {
    db.close();
    throw openError(path, err);
  }
}

/** better-sqlite3 binds byte views (any offset) but not bare ArrayBuffers. */
function bindable(params: readonly SqlValue[]): unknown[] {
  return params.map((value) => (value instanceof ArrayBuffer ? new Uint8Array(value) : value));
}

function openDatabase(path: string): Database.Database {
  try {
    mkdirSync(dirname(path), { recursive: true });
    return new Database(path);
  } catch (err) {
    throw storeError(path, 'opening', err);
  }
}

/** A writable connection erases within `eraseTimeoutMs`; a read-only one refuses every write with `refusal`'s code. */
type Access = { eraseTimeoutMs: number } | { refusal: PrismError };

/** The SqlDriver over one better-sqlite3 connection; statements are prepared once and reused. */
class BetterSqliteDriver implements SqlDriver {
  private readonly statements = new Map<string, Database.Statement>();
  private readonly rawStatements = new Map<string, Database.Statement>();
  /** A second connection that only erases (rebuild, checkpoint), so its zero busy timeout touches no other statement. */
  private eraser: Database.Database | null = null;

  constructor(
    private readonly db: Database.Database,
    private readonly path: string,
    private readonly access: Access,
  ) {}

  /** The prepared statement of `sql`, kept; `raw`: one that returns rows as arrays (`each`), kept apart from the one returning objects. */
  private statement(sql: string, rows: 'objects' | 'raw' = 'objects'): Database.Statement {
    const cache = rows === 'raw' ? this.rawStatements : this.statements;
    let statement = cache.get(sql);
    if (!statement) cache.set(sql, (statement = rows === 'raw' ? this.db.prepare(sql).raw(true) : this.db.prepare(sql)));
    return statement;
  }

  run(sql: string, params: readonly SqlValue[] = []): void {
    try {
      this.statement(sql).run(...bindable(params));
    } catch (err) {
      throw storeError(this.path, 'writing', err);
    }
  }

  all(sql: string, params: readonly SqlValue[] = []): SqlRow[] {
    try {
      return this.statement(sql).all(...bindable(params)) as SqlRow[];
    } catch (err) {
      throw storeError(this.path, 'reading', err);
    }
  }

  rows(sql: string, params: readonly SqlValue[] = []): Array<readonly SqlValue[]> {
    try {
      return this.statement(sql, 'raw').all(...bindable(params)) as Array<readonly SqlValue[]>;
    } catch (err) {
      throw storeError(this.path, 'reading', err);
    }
  }

  each(sql: string, params: readonly SqlValue[] = []): Iterable<readonly SqlValue[]> {
    return steppedRows(() => this.statement(sql, 'raw').iterate(...bindable(params)), (err) => storeError(this.path, 'reading', err));
  }

  transaction<T>(mode: 'read' | 'write', fn: () => T): T {
    if (mode === 'write' && 'refusal' in this.access) throw refused(this.access.refusal);
    try {
      const transaction = this.db.transaction(fn);
      return mode === 'write' ? transaction.immediate() : transaction.deferred();
    } catch (err) {
      throw storeError(this.path, 'committing to', err);
    }
  }

  /**
   * `secure_delete` zeroes a deleted row's cells, but not every copy: the write-ahead log keeps
   * the pages' older images, and a page SQLite rebalanced can keep stale bytes of a row (the
   * partition name in an index key, say) in its unused middle. So the file is rebuilt from the
   * live rows (`VACUUM`: fresh pages, the free ones gone) and the log is then folded into it and
   * truncated. Another connection's write, or its read of an older snapshot, holds either step
   * back for milliseconds: they are retried, without blocking the event loop, for up to the
   * store's lock timeout.
   */
  async eraseDeleted(): Promise<void> {
    if ('refusal' in this.access) throw refused(this.access.refusal);
    const { eraseTimeoutMs } = this.access;
    const eraser = (this.eraser ??= openDatabase(this.path));
    eraser.pragma('busy_timeout = 0');
    const committed = 'the delete is committed, but copies of the deleted rows stay on disk until the next delete';
    let rebuilt = false;
    await retryWhileBusy(
      () => {
        try {
          if (!rebuilt) eraser.exec('VACUUM');
          rebuilt = true;
          const [result] = eraser.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
          if (result?.busy !== 0) throw new Database.SqliteError('the checkpoint waits for a reader', 'SQLITE_BUSY');
        } catch (err) {
          if (isBusy(err)) throw err;
          // The rebuild needs free space of about twice the file (its copy, then the log).
          const reason = err instanceof Error ? err.message : String(err);
          throw new PrismError(storeError(this.path, 'erasing', err).code, `erasing deleted records from ${this.path}: ${reason}; ${committed}`, { cause: err });
        }
      },
      Date.now() + eraseTimeoutMs,
      (err) =>
        new PrismError(
          'STORE_BUSY',
          `erasing deleted records from ${this.path}: another connection kept writing or reading an older snapshot for more than ${eraseTimeoutMs} ms; ${committed}`,
          { cause: err },
        ),
    );
  }

  close(): void {
    this.eraser?.close();
    this.db.close();
  }
}

function refused(refusal: PrismError): PrismError {
  return new PrismError(refusal.code, refusal.message, { cause: refusal.cause });
}

/** The writer lock of a read-only store: every writer is refused up front, before it takes a lock file. */
class RefusedWriteLock implements WriteLock {
  constructor(private readonly refusal: PrismError) {}

  run<T>(): Promise<T> {
    return Promise.reject(refused(this.refusal));
  }
}

/**
 * The writer lock across processes: one small lock database per partition beside the store,
 * held by an open `BEGIN IMMEDIATE` for as long as the writer runs. SQLite's file locks are
 * released by the operating system when a process dies, so a killed writer never leaves the
 * lock behind. Acquiring never blocks the event loop: a busy lock is retried after a short
 * random delay until the timeout. Within one process, callers first queue per partition.
 */
class ProcessWriteLock implements WriteLock {
  private readonly queue = new KeyedMutex();

  constructor(
    private readonly storePath: string,
    private readonly timeoutMs: number,
  ) {}

  run<T>(partition: string, fn: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.timeoutMs;
    const what = `locking ${this.storePath} for partition ${JSON.stringify(partition)}`;
    return this.queue.run(
      partition,
      async () => {
        const lock = await this.acquire(partition, deadline, what);
        try {
          return await fn();
        } finally {
          lock.close();
        }
      },
      { ms: this.timeoutMs, what },
    );
  }

  private lockPath(partition: string): string {
    const digest = createHash('sha256').update(partition).digest('hex').slice(0, 32);
    return join(`${this.storePath}-locks`, `${digest}.lock`);
  }

  /** Opens the partition's lock database and holds its write lock; closing it releases the lock. */
  private async acquire(partition: string, deadline: number, what: string): Promise<Database.Database> {
    const path = this.lockPath(partition);
    const db = openDatabase(path);
    try {
      db.pragma('busy_timeout = 0');
      await retryWhileBusy(
        () => {
          try {
            db.exec('BEGIN IMMEDIATE');
          } catch (err) {
            throw isBusy(err) ? err : storeError(path, 'locking', err);
          }
        },
        deadline,
        () => lockTimeoutError(what, this.timeoutMs),
      );
      return db;
    } catch (err) {
      db.close();
      throw err;
    }
  }
}

/**
 * Opens (creating if needed) the SQLite store at `path`: write-ahead logging, fully synced
 * commits, deleted rows zeroed on disk (`secure_delete`), one transaction per batch. Several
 * processes may open one file; their writers serialise on the partition's lock. A damaged file
 * throws CORRUPT_CHECKPOINT naming it.
 *
 * A store that exists but cannot be written — the file or its directory not writable by this
 * process, or a full disk — opens read-only and leaves its directory as it found it: reads
 * work, and every write fails with STORE_READONLY (STORE_QUOTA_EXCEEDED for the full disk).
 */
export async function openSqliteStore(path: string, options: SqliteStoreOptions = {}): Promise<SqlStore> {
  const lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  const refusal = unwritable(path);
  if (refusal) return openReadOnly(path, refusal);
  const existed = existsSync(path);
  const logsBefore = logFiles(path).filter((file) => existsSync(file));
  const db = openDatabase(path);
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    // Freed cells and pages are overwritten with zeros, so a deleted row's bytes leave the file.
    db.pragma('secure_delete = ON');
    // Switching a new file to WAL and creating the schema can fail with SQLITE_BUSY at once,
    // without waiting busy_timeout, when another process opens the same new file at the same
    // moment (SQLite refuses a lock upgrade that could deadlock): such a race is retried.
    return await retryWhileBusy(
      () => {
        db.pragma('journal_mode = WAL');
        // FULL: a commit is on disk (WAL synced) before it resolves, not only after the next checkpoint.
        db.pragma('synchronous = FULL');
        if (options.maxBytes !== undefined) {
          const pageSize = Number(db.pragma('page_size', { simple: true }));
          db.pragma(`max_page_count = ${Math.max(1, Math.floor(options.maxBytes / pageSize))}`);
        }
        return SqlStore.open(new BetterSqliteDriver(db, path, { eraseTimeoutMs: lockTimeoutMs }), new ProcessWriteLock(path, lockTimeoutMs));
      },
      Date.now() + lockTimeoutMs,
      (err) => storeError(path, 'opening', err),
    );
  } catch (err) {
    db.close();
    const reason = existed ? readOnlyReason(path, err) : null;
    if (!reason) throw openError(path, err);
    // The failed open created an empty log and its index, nothing in them: removed, or they
    // would stay behind (half-allocated on a full disk) and fail the next open too.
    const wal = `${path}-wal`;
    if (logsBefore.length === 0 && !(existsSync(wal) && statSync(wal).size > 0)) for (const file of logFiles(path)) rmSync(file, { force: true });
    return openReadOnly(path, reason);
  }
}
