import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { PrismError } from '../errors.ts';
import { DEFAULT_LOCK_TIMEOUT_MS, KeyedMutex, lockTimeoutError } from './lock.ts';
import { SqlStore, type SqlDriver, type SqlRow, type SqlValue, type WriteLock } from './sql.ts';

export interface SqliteStoreOptions {
  /**
   * How long `withWriteLock` waits for another writer (in this or another process) before it
   * fails with `STORE_BUSY`. Default 30 000 ms.
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

/** The SqlDriver over one better-sqlite3 connection; statements are prepared once and reused. */
class BetterSqliteDriver implements SqlDriver {
  private readonly statements = new Map<string, Database.Statement>();

  constructor(
    private readonly db: Database.Database,
    private readonly path: string,
  ) {}

  private statement(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) this.statements.set(sql, (statement = this.db.prepare(sql)));
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

  transaction<T>(mode: 'read' | 'write', fn: () => T): T {
    try {
      const transaction = this.db.transaction(fn);
      return mode === 'write' ? transaction.immediate() : transaction.deferred();
    } catch (err) {
      throw storeError(this.path, 'committing to', err);
    }
  }

  close(): void {
    this.db.close();
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
 * commits, one transaction per batch. Several processes may open one file; their writers
 * serialise on the partition's lock. A damaged file throws CORRUPT_CHECKPOINT naming it.
 */
export async function openSqliteStore(path: string, options: SqliteStoreOptions = {}): Promise<SqlStore> {
  const lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  const db = openDatabase(path);
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
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
        return SqlStore.open(new BetterSqliteDriver(db, path), new ProcessWriteLock(path, lockTimeoutMs));
      },
      Date.now() + lockTimeoutMs,
      (err) => storeError(path, 'opening', err),
    );
  } catch (err) {
    db.close();
    // Errors from inside the schema check (STORE_VERSION) do not know the file yet.
    if (err instanceof PrismError && !err.message.includes(path)) throw new PrismError(err.code, `${path}: ${err.message}`, { cause: err });
    throw storeError(path, 'opening', err);
  }
}
