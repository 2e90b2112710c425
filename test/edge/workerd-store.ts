/**
 * The SQL graph store inside a SQLite-backed Durable Object in workerd (spawned by
 * test/edge.test.ts). The worker forwards `POST /<action>` to the object named `user-1`; the
 * object holds one store opened in its constructor and answers with plain JSON.
 */
import { PrismError } from '../../src/errors.ts';
import { DEFAULT_PARTITION } from '../../src/scope.ts';
import { exportCheckpoint } from '../../src/store/checkpoint.ts';
import { openDurableObjectStore } from '../../src/store/durable-object.ts';
import type { Env, ObjectState } from './workerd-bindings.ts';
import { snapshotAsBatch } from '../../src/store/snapshot.ts';
import type { SqlStore } from '../../src/store/sql.ts';
import { sha256Hex } from '../../src/util/hash.ts';
import { sampleFollowUp, sampleMemory } from '../../e2e/support/sample-memory.ts';

const OTHER_PARTITION = 'bob\u001fagent\u001f';

/** The partition and text the `forget` action commits and clears; the test looks for them on disk. */
export const FORGOTTEN = { partition: 'eve-forgotten\u001f\u001f', text: 'Eve whispered the vault code zq-do-9431.' };

/** What `read` reports; the test compares the digests with checkpoints encoded in Node. */
export interface StoreReport {
  partitions: string[];
  revisions: Record<string, number>;
  digests: Record<string, string | null>;
  cached: Array<string | undefined>;
}


async function report(store: SqlStore): Promise<StoreReport> {
  const partitions = (await store.partitions()).sort();
  const names = [DEFAULT_PARTITION, OTHER_PARTITION];
  const revisions: Record<string, number> = {};
  const digests: Record<string, string | null> = {};
  for (const name of names) {
    revisions[name] = await store.revision(name);
    digests[name] = (await store.load(name)) ? await sha256Hex(await exportCheckpoint(store, name)) : null;
  }
  const cached = await Promise.all(['a', 'b', 'c'].map((key) => store.getCached(key)));
  return { partitions, revisions, digests, cached };
}

export class MemoryObject {
  private readonly store: SqlStore;

  constructor(state: ObjectState) {
    this.store = openDurableObjectStore(state.storage);
  }

  async fetch(request: Request): Promise<Response> {
    const action = new URL(request.url).pathname.slice(1);
    const store = this.store;
    try {
      if (action === 'write') {
        const revisions = [
          await store.commit(DEFAULT_PARTITION, snapshotAsBatch(sampleMemory())),
          await store.commit(OTHER_PARTITION, snapshotAsBatch(sampleMemory({ episodes: 2, seed: 3 }))),
          await store.commit(DEFAULT_PARTITION, sampleFollowUp()),
        ];
        let invalid: string | null = null;
        try {
          await store.commit(DEFAULT_PARTITION, { putNodes: [], putVectors: [['ep:0', new Float32Array(3)]] });
        } catch (err) {
          invalid = err instanceof PrismError ? err.code : String(err);
        }
        await store.putCached('a', '1', ['chunk-1']);
        await store.putCached('b', '2', ['chunk-2']);
        await store.putCached('c', '3');
        await store.deleteCached(['chunk-2']);
        // Two requests' writers on one partition: the second section starts after the first ends.
        const order: string[] = [];
        const section = (name: string, wait: number) =>
          store.withWriteLock(DEFAULT_PARTITION, async () => {
            order.push(`${name}+`);
            await new Promise((resolve) => setTimeout(resolve, wait));
            order.push(`${name}-`);
          });
        await Promise.all([section('first', 20), section('second', 0)]);
        return Response.json({ revisions, invalid, order, report: await report(store) });
      }
      if (action === 'read') return Response.json(await report(store));
      if (action === 'clear-other') {
        await store.clear(OTHER_PARTITION);
        return Response.json(await report(store));
      }
      if (action === 'forget') {
        const batch = snapshotAsBatch(sampleMemory({ episodes: 2, seed: 5 }));
        batch.putChunks = batch.putChunks?.map((chunk) => ({ ...chunk, text: `${FORGOTTEN.text} (${chunk.id})` }));
        await store.commit(FORGOTTEN.partition, batch);
        await store.clear(FORGOTTEN.partition);
        return Response.json(await report(store));
      }
      return new Response(`unknown action ${action}`, { status: 404 });
    } catch (error) {
      return new Response(error instanceof Error ? `${error.name}: ${error.message}\n${error.stack ?? ''}` : String(error), { status: 500 });
    }
  }
}

export default {
  fetch(request: Request, env: Env): Promise<Response> {
    return env.MEMORY.get(env.MEMORY.idFromName('user-1')).fetch(request);
  },
};
