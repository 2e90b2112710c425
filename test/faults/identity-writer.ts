/**
 * A writer process for the message-identity scenarios (test/faults/identity-scenarios.ts):
 * `identity-writer.ts <sqlite path> <writer name> <messages> <shared|generated>` adds
 * `messages` messages one add at a time to one session of the default scope. `shared`:
 * every writer adds the ids `msg-0` … (each message may be stored once in all); `generated`:
 * no ids, so the store generates them (each of every writer's messages must be stored).
 */
import { Memory } from '../../src/memory.ts';
import { nodeUsearch } from '../../src/node.ts';
import { openSqliteStore } from '../../src/store/sqlite.node.ts';
import { hashEmbedder } from '../helpers/hash-embedder.ts';

const [path, writer, count, mode] = process.argv.slice(2);
if (!path || !writer || !count || (mode !== 'shared' && mode !== 'generated')) {
  throw new Error('usage: identity-writer.ts <sqlite path> <writer name> <messages> <shared|generated>');
}
const usearch = await nodeUsearch();
const memory = await Memory.open({ store: await openSqliteStore(path), embedder: hashEmbedder(), createIndex: (dim) => usearch.createIndex({ dim }) });
for (let i = 0; i < Number(count); i++) {
  const text = `${writer} wrote note ${i}`;
  const message = mode === 'shared' ? { speaker: writer, text, id: `msg-${i}` } : { speaker: writer, text };
  const report = await memory.add([message], { sessionId: mode === 'shared' ? 'chat' : 'common' });
  console.log(`${report.skipped.length > 0 ? 'skipped' : 'added'} ${i}`);
}
await memory.close();
