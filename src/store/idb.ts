import { openDB } from 'idb';
import type { DBSchema, IDBPDatabase, IDBPTransaction, StoreNames } from 'idb';
import { PrismError } from '../errors.ts';
import type { Chunk, GraphEdge, GraphNode, Layer, EdgeType, MemoryMeta, MemorySnapshot } from '../graph/types.ts';
import { DEFAULT_PARTITION } from '../scope.ts';
import { DEFAULT_LOCK_TIMEOUT_MS, KeyedMutex, lockTimeoutError } from './lock.ts';
import { changesDimension, ownVector, validateBatch } from './snapshot.ts';
import type { GraphStore, WriteBatch } from './types.ts';

/** A record's key: its partition, then its own id (or hash). */
type RecordKey = [partition: string, id: string];

interface CacheEntry {
  value: string;
  tags: string[];
}

interface PrismDb extends DBSchema {
  nodes: { key: RecordKey; value: GraphNode; indexes: { layer: Layer } };
  edges: { key: RecordKey; value: GraphEdge; indexes: { type: EdgeType } };
  chunks: { key: RecordKey; value: Chunk };
  vectors: { key: RecordKey; value: Float32Array };
  /** The value carries nothing; the key is the hash. */
  hashes: { key: RecordKey; value: true };
  /** By partition; a partition holds a memory exactly when it has meta. */
  meta: { key: string; value: MemoryMeta };
  /** By partition; kept when the partition is cleared, so its revision only grows. */
  revisions: { key: string; value: number };
  cache: { key: string; value: CacheEntry; indexes: { tags: string } };
}

type StoreName = StoreNames<PrismDb>;
type UpgradeTransaction = IDBPTransaction<unknown, string[], 'versionchange'>;

const MEMORY_STORES = ['nodes', 'edges', 'chunks', 'vectors', 'hashes', 'meta'] as const satisfies readonly StoreName[];
const RECORD_STORES = ['nodes', 'edges', 'chunks', 'vectors', 'hashes'] as const satisfies readonly StoreName[];
const COMMIT_STORES = [...MEMORY_STORES, 'revisions'] as const satisfies readonly StoreName[];
const ALL_STORES = [...COMMIT_STORES, 'cache'] as const satisfies readonly StoreName[];

/** Every key of one partition: `[p]` sorts before `[p, id]`, and `[p, []]` after (arrays sort after strings). */
function partitionRange(partition: string): IDBKeyRange {
  return IDBKeyRange.bound([partition], [partition, []]);
}

/**
 * Schema migrations: entry i upgrades a database from version i to i + 1, so a database at
 * any older version walks the chain up to `IDB_SCHEMA_VERSION`. Append, never edit. Each sees
 * the schema of its own version, so they work on the untyped database.
 */
const MIGRATIONS: ReadonlyArray<(db: IDBPDatabase, tx: UpgradeTransaction) => Promise<void>> = [
  // v1 (PRISM 0.2): one memory per database, records keyed by their own id.
  async (db) => {
    db.createObjectStore('nodes', { keyPath: 'id' }).createIndex('layer', 'layer');
    db.createObjectStore('edges', { keyPath: 'id' }).createIndex('type', 'type');
    db.createObjectStore('chunks', { keyPath: 'id' });
    db.createObjectStore('vectors');
    db.createObjectStore('hashes');
    db.createObjectStore('meta');
    db.createObjectStore('cache');
  },
  // v2: partitions. Every record store is rekeyed by [partition, id]; what v1 held becomes the
  // default partition at revision 1; cache entries gain tags.
  async (db, tx) => {
    const read = async (name: string) => ({ keys: await tx.objectStore(name).getAllKeys(), values: await tx.objectStore(name).getAll() });
    const old = {
      nodes: await read('nodes'),
      edges: await read('edges'),
      chunks: await read('chunks'),
      vectors: await read('vectors'),
      hashes: await read('hashes'),
      cache: await read('cache'),
    };
    const meta: unknown = await tx.objectStore('meta').get('meta');
    for (const name of ['nodes', 'edges', 'chunks', 'vectors', 'hashes', 'meta', 'cache']) db.deleteObjectStore(name);
    db.createObjectStore('nodes').createIndex('layer', 'layer');
    db.createObjectStore('edges').createIndex('type', 'type');
    for (const name of ['chunks', 'vectors', 'hashes', 'meta', 'revisions']) db.createObjectStore(name);
    db.createObjectStore('cache').createIndex('tags', 'tags', { multiEntry: true });
    const writes: Array<Promise<unknown>> = [];
    for (const name of RECORD_STORES) {
      const { keys, values } = old[name];
      keys.forEach((key, i) => writes.push(tx.objectStore(name).put(values[i], [DEFAULT_PARTITION, String(key)])));
    }
    old.cache.keys.forEach((key, i) => writes.push(tx.objectStore('cache').put({ value: old.cache.values[i], tags: [] }, key)));
    if (meta !== undefined) {
      writes.push(tx.objectStore('meta').put(meta, DEFAULT_PARTITION), tx.objectStore('revisions').put(1, DEFAULT_PARTITION));
    }
    await Promise.all(writes);
  },
];

export const IDB_SCHEMA_VERSION = MIGRATIONS.length;
export const DEFAULT_IDB_NAME = 'prism-memory';

export interface IndexedDbStoreOptions {
  /** Database name; one name per memory. Default `prism-memory`. */
  name?: string;
  /** How long `withWriteLock` waits for a writer in another tab before `STORE_BUSY`. Default 30 000 ms. */
  lockTimeoutMs?: number;
}

function domErrorName(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'name' in err ? String(err.name) : undefined;
}

function storeError(err: unknown, action: string): PrismError {
  if (err instanceof PrismError) return err;
  // DOMExceptions often come with an empty message; the name is then the whole story.
  const reason = err instanceof Error ? [err.name, err.message].filter(Boolean).join(': ') : String(err);
  switch (domErrorName(err)) {
    case 'QuotaExceededError':
      return new PrismError('STORE_QUOTA_EXCEEDED', `${action}: the browser's storage quota is exhausted (${reason})`, { cause: err });
    case 'VersionError':
      return new PrismError('STORE_VERSION', `${action}: the database was written by a newer PRISM (schema above ${IDB_SCHEMA_VERSION}); ${reason}`, { cause: err });
    default:
      return new PrismError('STORE_IO', `${action}: ${reason}`, { cause: err });
  }
}

/**
 * The browser backend: the memory in IndexedDB, one object store per record kind, keyed by
 * [partition, id]. `commit` is one readwrite transaction over every store, so a batch lands
 * whole or not at all — a crash, a quota error or an invalid batch leaves the last committed
 * batch. Tabs share the database: writers serialise on a Web Lock, and every tab reads the
 * partition's revision from the database itself, so each sees the others' commits.
 */
export class IndexedDbStore implements GraphStore {
  /** Set when another connection needs a newer schema: this one closes to let it upgrade. */
  private displacedBy: number | null = null;
  /** Serialises writers where the Web Locks API is missing (then only this tab can be held back). */
  private readonly localLocks = new KeyedMutex();

  private constructor(
    private readonly db: IDBPDatabase<PrismDb>,
    readonly name: string,
    private readonly lockTimeoutMs: number,
  ) {}

  /**
   * Opens or creates the database, upgrading an older schema. A newer schema throws
   * STORE_VERSION; an upgrade held up by an older connection in another tab throws
   * STORE_BLOCKED rather than waiting indefinitely.
   */
  static async open(options: IndexedDbStoreOptions = {}): Promise<IndexedDbStore> {
    const name = options.name ?? DEFAULT_IDB_NAME;
    let store: IndexedDbStore | undefined;
    let rejectBlocked: (err: PrismError) => void = () => undefined;
    const blocked = new Promise<never>((_, reject) => {
      rejectBlocked = reject;
    });
    const opening = openDB<PrismDb>(name, IDB_SCHEMA_VERSION, {
      upgrade(db, oldVersion, _newVersion, tx) {
        const untyped = db as unknown as IDBPDatabase;
        const untypedTx = tx as unknown as UpgradeTransaction;
        // Only IndexedDB requests are awaited in between, which keeps the upgrade transaction alive.
        void (async () => {
          for (let version = oldVersion; version < IDB_SCHEMA_VERSION; version++) await MIGRATIONS[version]?.(untyped, untypedTx);
        })().catch(() => {
          // A failed migration aborts the upgrade, so the database keeps its old version and
          // content; `openDB` then rejects with the abort.
          try {
            tx.abort();
          } catch {
            // Already aborted.
          }
        });
      },
      blocked(currentVersion) {
        rejectBlocked(
          new PrismError(
            'STORE_BLOCKED',
            `opening ${name}: upgrading the schema from version ${currentVersion} to ${IDB_SCHEMA_VERSION} is blocked by another open connection (another tab?); close it and retry`,
          ),
        );
      },
      blocking(_currentVersion, blockedVersion, event) {
        const db = event.target as IDBDatabase;
        db.close();
        if (store) store.displacedBy = blockedVersion;
      },
    });
    try {
      const db = await Promise.race([opening, blocked]);
      store = new IndexedDbStore(db, name, options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS);
      return store;
    } catch (err) {
      // A blocked open may still complete later; close that connection when it does.
      opening.then((db) => db.close(), () => undefined);
      throw storeError(err, `opening ${name}`);
    }
  }

  private usable(action: string): IDBPDatabase<PrismDb> {
    if (this.displacedBy !== null) {
      throw new PrismError(
        'STORE_BLOCKED',
        `${action}: ${this.name} was closed so another connection could upgrade it to version ${this.displacedBy}; reopen (reload the page)`,
      );
    }
    return this.db;
  }

  async partitions(): Promise<string[]> {
    try {
      return await this.usable('listing partitions').getAllKeys('meta');
    } catch (err) {
      throw storeError(err, `listing the partitions of ${this.name}`);
    }
  }

  async load(partition: string): Promise<MemorySnapshot | null> {
    const tx = this.usable('loading').transaction(MEMORY_STORES, 'readonly');
    const range = partitionRange(partition);
    try {
      const [meta, nodes, edges, chunks, vectorKeys, vectors, hashKeys] = await Promise.all([
        tx.objectStore('meta').get(partition),
        tx.objectStore('nodes').getAll(range),
        tx.objectStore('edges').getAll(range),
        tx.objectStore('chunks').getAll(range),
        tx.objectStore('vectors').getAllKeys(range),
        tx.objectStore('vectors').getAll(range),
        tx.objectStore('hashes').getAllKeys(range),
        tx.done,
      ]);
      if (meta === undefined) return null;
      return {
        meta,
        nodes,
        edges,
        chunks,
        vectors: new Map(vectorKeys.map(([, id], i) => [id, vectors[i] as Float32Array])),
        hashes: new Set(hashKeys.map(([, hash]) => hash)),
      };
    } catch (err) {
      throw storeError(err, `loading ${this.name}`);
    }
  }

  async revision(partition: string): Promise<number> {
    try {
      return (await this.usable('reading the revision').get('revisions', partition)) ?? 0;
    } catch (err) {
      throw storeError(err, `reading the revision of ${this.name}`);
    }
  }

  /** The lock is a Web Lock named after the database and partition, shared by every tab of the origin. */
  async withWriteLock<T>(partition: string, fn: () => Promise<T>): Promise<T> {
    const what = `locking ${this.name} for partition ${JSON.stringify(partition)}`;
    const locks = globalThis.navigator?.locks;
    if (!locks) return this.localLocks.run(partition, fn, { ms: this.lockTimeoutMs, what });
    const signal = AbortSignal.timeout(this.lockTimeoutMs);
    let granted = false;
    try {
      return await locks.request(`prism-memory:${this.name}:${partition}`, { signal }, () => {
        granted = true;
        return fn();
      });
    } catch (err) {
      if (!granted && signal.aborted) throw lockTimeoutError(what, this.lockTimeoutMs);
      throw err;
    }
  }

  async commit(partition: string, batch: WriteBatch): Promise<number> {
    const tx = this.usable('committing').transaction(COMMIT_STORES, 'readwrite');
    try {
      // Validation reads the stored meta inside the same transaction, so it judges the
      // batch against exactly the state it will be applied to.
      const current = (await tx.objectStore('meta').get(partition)) ?? null;
      const storedVectorIds = changesDimension(current, batch)
        ? (await tx.objectStore('vectors').getAllKeys(partitionRange(partition))).map(([, id]) => id)
        : [];
      const meta = validateBatch(batch, current, storedVectorIds);
      const requests: Array<Promise<unknown>> = [tx.done];
      const write = (request: Promise<unknown>): void => {
        requests.push(request);
      };
      const key = (id: string): RecordKey => [partition, id];
      for (const id of batch.deleteNodes ?? []) write(tx.objectStore('nodes').delete(key(id)));
      for (const id of batch.deleteEdges ?? []) write(tx.objectStore('edges').delete(key(id)));
      for (const id of batch.deleteChunks ?? []) write(tx.objectStore('chunks').delete(key(id)));
      for (const id of batch.deleteVectors ?? []) write(tx.objectStore('vectors').delete(key(id)));
      for (const hash of batch.deleteHashes ?? []) write(tx.objectStore('hashes').delete(key(hash)));
      for (const node of batch.putNodes ?? []) write(tx.objectStore('nodes').put(node, key(node.id)));
      for (const edge of batch.putEdges ?? []) write(tx.objectStore('edges').put(edge, key(edge.id)));
      for (const chunk of batch.putChunks ?? []) write(tx.objectStore('chunks').put(chunk, key(chunk.id)));
      for (const [id, vector] of batch.putVectors ?? []) write(tx.objectStore('vectors').put(ownVector(vector), key(id)));
      for (const hash of batch.putHashes ?? []) write(tx.objectStore('hashes').put(true, key(hash)));
      if (batch.meta !== undefined || current === null) write(tx.objectStore('meta').put(meta, partition));
      const revision = ((await tx.objectStore('revisions').get(partition)) ?? 0) + 1;
      write(tx.objectStore('revisions').put(revision, partition));
      await Promise.all(requests);
      return revision;
    } catch (err) {
      abortQuietly(tx);
      // A failed request aborts the transaction; its own error (e.g. QuotaExceededError)
      // names the cause better than the AbortError the other requests report.
      throw storeError(tx.error ?? err, `committing to ${this.name}`);
    }
  }

  async clear(partition?: string): Promise<void> {
    const stores = partition === undefined ? ALL_STORES : COMMIT_STORES;
    const tx = this.usable('clearing').transaction(stores, 'readwrite');
    try {
      const revisions = tx.objectStore('revisions');
      const bumped = partition === undefined ? await revisions.getAllKeys() : [partition];
      const requests: Array<Promise<unknown>> = [tx.done];
      if (partition === undefined) {
        for (const name of ALL_STORES) if (name !== 'revisions') requests.push(tx.objectStore(name).clear());
      } else {
        for (const name of RECORD_STORES) requests.push(tx.objectStore(name).delete(partitionRange(partition)));
        requests.push(tx.objectStore('meta').delete(partition));
      }
      for (const name of bumped) requests.push(revisions.put(((await revisions.get(name)) ?? 0) + 1, name));
      await Promise.all(requests);
    } catch (err) {
      abortQuietly(tx);
      throw storeError(tx.error ?? err, `clearing ${this.name}`);
    }
  }

  async getCached(key: string): Promise<string | undefined> {
    try {
      return (await this.usable('reading the cache').get('cache', key))?.value;
    } catch (err) {
      throw storeError(err, `reading the cache of ${this.name}`);
    }
  }

  async putCached(key: string, value: string, tags: readonly string[] = []): Promise<void> {
    try {
      await this.usable('writing the cache').put('cache', { value, tags: [...tags] }, key);
    } catch (err) {
      throw storeError(err, `writing the cache of ${this.name}`);
    }
  }

  async deleteCached(tags: readonly string[]): Promise<void> {
    const tx = this.usable('deleting from the cache').transaction('cache', 'readwrite');
    try {
      const index = tx.store.index('tags');
      const keys = (await Promise.all(tags.map((tag) => index.getAllKeys(tag)))).flat();
      await Promise.all([...new Set(keys)].map((key) => tx.store.delete(key)));
      await tx.done;
    } catch (err) {
      tx.done.catch(() => undefined);
      throw storeError(tx.error ?? err, `deleting from the cache of ${this.name}`);
    }
  }

  async close(): Promise<void> {
    this.db.close();
  }
}

/** Aborts a transaction that may already have finished or aborted on its own. */
function abortQuietly(tx: IDBPTransaction<PrismDb, StoreName[], 'readwrite'>): void {
  // The caller reports the failure; `done` rejecting too must not surface as unhandled.
  tx.done.catch(() => undefined);
  try {
    tx.abort();
  } catch {
    // InvalidStateError: the transaction is already done — nothing left to undo.
  }
}
