import { openDB } from 'idb';
import type { DBSchema, IDBPDatabase, IDBPTransaction, StoreNames } from 'idb';
import { PrismError } from '../errors.ts';
import type { Chunk, GraphEdge, GraphNode, Layer, EdgeType, MemoryMeta, MemorySnapshot } from '../graph/types.ts';
import { changesDimension, ownVector, validateBatch } from './snapshot.ts';
import type { GraphStore, WriteBatch } from './types.ts';

interface PrismDb extends DBSchema {
  nodes: { key: string; value: GraphNode; indexes: { layer: Layer } };
  edges: { key: string; value: GraphEdge; indexes: { type: EdgeType } };
  chunks: { key: string; value: Chunk };
  /** Out-of-line keys: node/edge id → vector. */
  vectors: { key: string; value: Float32Array };
  /** Out-of-line keys: the hash itself; the value carries nothing. */
  hashes: { key: string; value: true };
  meta: { key: typeof META_KEY; value: MemoryMeta };
  cache: { key: string; value: string };
}

type StoreName = StoreNames<PrismDb>;
type UpgradeTransaction = IDBPTransaction<PrismDb, StoreName[], 'versionchange'>;

const META_KEY = 'meta';
const MEMORY_STORES = ['nodes', 'edges', 'chunks', 'vectors', 'hashes', 'meta'] as const satisfies readonly StoreName[];
const ALL_STORES = [...MEMORY_STORES, 'cache'] as const satisfies readonly StoreName[];

/**
 * Schema migrations: entry i upgrades a database from version i to i + 1, so a database
 * at any older version walks the chain up to `IDB_SCHEMA_VERSION`. Append, never edit.
 */
const MIGRATIONS: ReadonlyArray<(db: IDBPDatabase<PrismDb>, tx: UpgradeTransaction) => void> = [
  (db) => {
    db.createObjectStore('nodes', { keyPath: 'id' }).createIndex('layer', 'layer');
    db.createObjectStore('edges', { keyPath: 'id' }).createIndex('type', 'type');
    db.createObjectStore('chunks', { keyPath: 'id' });
    db.createObjectStore('vectors');
    db.createObjectStore('hashes');
    db.createObjectStore('meta');
    db.createObjectStore('cache');
  },
];

export const IDB_SCHEMA_VERSION = MIGRATIONS.length;
export const DEFAULT_IDB_NAME = 'prism-memory';

export interface IndexedDbStoreOptions {
  /** Database name; one name per memory. Default `prism-memory`. */
  name?: string;
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
 * The browser backend: the memory in IndexedDB, one object store per record kind.
 * `commit` is one readwrite transaction over every store, so a batch lands whole or not
 * at all — a crash, a quota error or an invalid batch leaves the last committed batch.
 */
export class IndexedDbStore implements GraphStore {
  /** Set when another connection needs a newer schema: this one closes to let it upgrade. */
  private displacedBy: number | null = null;

  private constructor(
    private readonly db: IDBPDatabase<PrismDb>,
    readonly name: string,
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
        for (let version = oldVersion; version < IDB_SCHEMA_VERSION; version++) MIGRATIONS[version]?.(db, tx);
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
      store = new IndexedDbStore(db, name);
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

  async load(): Promise<MemorySnapshot | null> {
    const tx = this.usable('loading').transaction(MEMORY_STORES, 'readonly');
    try {
      const [meta, nodes, edges, chunks, vectorIds, vectors, hashes] = await Promise.all([
        tx.objectStore('meta').get(META_KEY),
        tx.objectStore('nodes').getAll(),
        tx.objectStore('edges').getAll(),
        tx.objectStore('chunks').getAll(),
        tx.objectStore('vectors').getAllKeys(),
        tx.objectStore('vectors').getAll(),
        tx.objectStore('hashes').getAllKeys(),
        tx.done,
      ]);
      if (meta === undefined) return null;
      return {
        meta,
        nodes,
        edges,
        chunks,
        vectors: new Map(vectorIds.map((id, i) => [id, vectors[i] as Float32Array])),
        hashes: new Set(hashes),
      };
    } catch (err) {
      throw storeError(err, `loading ${this.name}`);
    }
  }

  async commit(batch: WriteBatch): Promise<void> {
    const tx = this.usable('committing').transaction(MEMORY_STORES, 'readwrite');
    try {
      // Validation reads the stored meta inside the same transaction, so it judges the
      // batch against exactly the state it will be applied to.
      const current = (await tx.objectStore('meta').get(META_KEY)) ?? null;
      const storedVectorIds = changesDimension(current, batch) ? await tx.objectStore('vectors').getAllKeys() : [];
      const meta = validateBatch(batch, current, storedVectorIds);
      const requests: Array<Promise<unknown>> = [tx.done];
      const write = (request: Promise<unknown>): void => {
        requests.push(request);
      };
      for (const id of batch.deleteNodes ?? []) write(tx.objectStore('nodes').delete(id));
      for (const id of batch.deleteEdges ?? []) write(tx.objectStore('edges').delete(id));
      for (const id of batch.deleteChunks ?? []) write(tx.objectStore('chunks').delete(id));
      for (const id of batch.deleteVectors ?? []) write(tx.objectStore('vectors').delete(id));
      for (const hash of batch.deleteHashes ?? []) write(tx.objectStore('hashes').delete(hash));
      for (const node of batch.putNodes ?? []) write(tx.objectStore('nodes').put(node));
      for (const edge of batch.putEdges ?? []) write(tx.objectStore('edges').put(edge));
      for (const chunk of batch.putChunks ?? []) write(tx.objectStore('chunks').put(chunk));
      for (const [id, vector] of batch.putVectors ?? []) write(tx.objectStore('vectors').put(ownVector(vector), id));
      for (const hash of batch.putHashes ?? []) write(tx.objectStore('hashes').put(true, hash));
      if (batch.meta !== undefined || current === null) write(tx.objectStore('meta').put(meta, META_KEY));
      await Promise.all(requests);
    } catch (err) {
      abortQuietly(tx);
      // A failed request aborts the transaction; its own error (e.g. QuotaExceededError)
      // names the cause better than the AbortError the other requests report.
      throw storeError(tx.error ?? err, `committing to ${this.name}`);
    }
  }

  async clear(): Promise<void> {
    const tx = this.usable('clearing').transaction(ALL_STORES, 'readwrite');
    try {
      await Promise.all([...ALL_STORES.map((name) => tx.objectStore(name).clear()), tx.done]);
    } catch (err) {
      abortQuietly(tx);
      throw storeError(tx.error ?? err, `clearing ${this.name}`);
    }
  }

  async getCached(key: string): Promise<string | undefined> {
    try {
      return await this.usable('reading the cache').get('cache', key);
    } catch (err) {
      throw storeError(err, `reading the cache of ${this.name}`);
    }
  }

  async putCached(key: string, value: string): Promise<void> {
    try {
      await this.usable('writing the cache').put('cache', value, key);
    } catch (err) {
      throw storeError(err, `writing the cache of ${this.name}`);
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
