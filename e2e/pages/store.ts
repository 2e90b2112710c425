import { openDB } from 'idb';
import { PrismError } from '../../src/errors.ts';
import { exportCheckpoint, importCheckpoint } from '../../src/store/checkpoint.ts';
import { IDB_SCHEMA_VERSION, IndexedDbStore } from '../../src/store/idb.ts';
import { MemoryStore } from '../../src/store/memory.ts';
import { snapshotAsBatch } from '../../src/store/snapshot.ts';
import { sampleFollowUp, sampleMemory, sampleVector } from '../support/sample-memory.ts';
import { sha256Hex } from '../support/site.ts';
import { withStore } from './with-store.ts';

/** A PrismError as plain data, to cross from the page to the test. */
export interface Failure {
  code: string;
  message: string;
}

async function failureOf(run: () => Promise<unknown>): Promise<Failure | null> {
  try {
    await run();
    return null;
  } catch (err) {
    if (err instanceof PrismError) return { code: err.code, message: err.message };
    throw err;
  }
}

const digestOf = async (store: IndexedDbStore | MemoryStore): Promise<string> => sha256Hex(await exportCheckpoint(store));

const storeHarness = {
  /** Writes the sample memory, its follow-up batch and a cache entry. */
  async write(name: string): Promise<void> {
    await withStore(name, async (store) => {
      await store.clear();
      await store.commit(snapshotAsBatch(sampleMemory()));
      await store.commit(sampleFollowUp());
      await store.putCached('greeting', 'hello ✓');
    });
  },

  /** What the database holds, read through the store and through the raw indexes. */
  async read(name: string): Promise<{ digest: string; cached: string | undefined; episodesByIndex: number; temporalByIndex: number }> {
    const { digest, cached } = await withStore(name, async (store) => ({
      digest: await digestOf(store),
      cached: await store.getCached('greeting'),
    }));
    const raw = await openDB(name);
    try {
      return {
        digest,
        cached,
        episodesByIndex: await raw.countFromIndex('nodes', 'layer', 'episode'),
        temporalByIndex: await raw.countFromIndex('edges', 'type', 'temporal'),
      };
    } finally {
      raw.close();
    }
  },

  /** Exports the IndexedDB memory and imports the bytes into a MemoryStore. */
  async exportToMemory(name: string): Promise<{ idbDigest: string; memoryDigest: string; bytes: number }> {
    return withStore(name, async (store) => {
      const bytes = await exportCheckpoint(store);
      const memory = new MemoryStore();
      await importCheckpoint(memory, bytes);
      return { idbDigest: await sha256Hex(bytes), memoryDigest: await digestOf(memory), bytes: bytes.length };
    });
  },

  /** Commits the sample, then a batch of `megabytes` of vectors; reports what happened. */
  async overfill(name: string, megabytes: number): Promise<{ before: string; after: string; failure: Failure | null }> {
    return withStore(name, async (store) => {
      await store.clear();
      const sample = sampleMemory();
      await store.commit(snapshotAsBatch(sample));
      const before = await digestOf(store);
      const count = Math.ceil((megabytes * 1024 * 1024) / (sample.meta.dim * 4));
      const failure = await failureOf(() =>
        store.commit({
          putVectors: Array.from({ length: count }, (_, i) => [`bulk:${i}`, sampleVector(Math.random, sample.meta.dim)]),
          deleteNodes: ['ep:0'],
        }),
      );
      return { before, after: await digestOf(store), failure };
    });
  },

  /**
   * Another tab opens the database at a newer schema: this connection steps aside (and
   * reports STORE_BLOCKED when used), and this build then refuses the newer database.
   */
  async displace(name: string): Promise<{ displaced: Failure | null; reopened: Failure | null }> {
    const store = await IndexedDbStore.open({ name });
    await store.commit(snapshotAsBatch(sampleMemory({ episodes: 1 })));
    const newer = await openDB(name, IDB_SCHEMA_VERSION + 1);
    newer.close();
    const displaced = await failureOf(() => store.load());
    const reopened = await failureOf(() => IndexedDbStore.open({ name }));
    return { displaced, reopened };
  },
};

declare global {
  interface Window {
    storeHarness: typeof storeHarness;
  }
}

window.storeHarness = storeHarness;
