import { IndexedDbStore } from '../../src/store/idb.ts';

/** Opens the IndexedDB store `name`, runs `run`, and closes it whatever happens. */
export async function withStore<T>(name: string, run: (store: IndexedDbStore) => Promise<T>): Promise<T> {
  const store = await IndexedDbStore.open({ name });
  try {
    return await run(store);
  } finally {
    await store.close();
  }
}
