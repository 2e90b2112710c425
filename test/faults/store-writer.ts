/**
 * A writer process for the store fault scenarios (test/faults/store-scenarios.ts):
 * `store-writer.ts <sqlite path> <writer name> <batches>` commits `batches` batches to the
 * default partition, each under the writer lock after a revision check, and prints
 * `committed <i>` once batch i is durable. Exit 2 means another writer's commit slipped
 * between its revision check and its commit, i.e. the lock failed.
 */
import { DEFAULT_PARTITION } from '../../src/scope.ts';
import { openSqliteStore } from '../../src/store/sqlite.node.ts';
import { writerBatch } from './store-records.ts';

const [path, writer, batches] = process.argv.slice(2);
if (!path || !writer || !batches) throw new Error('usage: store-writer.ts <sqlite path> <writer name> <batches>');

const store = await openSqliteStore(path);
for (let i = 0; i < Number(batches); i++) {
  await store.withWriteLock(DEFAULT_PARTITION, async () => {
    const seen = await store.revision(DEFAULT_PARTITION);
    const revision = await store.commit(DEFAULT_PARTITION, writerBatch(writer, i, seen === 0));
    if (revision !== seen + 1) {
      console.error(`revision ${seen} → ${revision}: another commit slipped in under the lock`);
      process.exit(2);
    }
  });
  console.log(`committed ${i}`);
}
await store.close();
