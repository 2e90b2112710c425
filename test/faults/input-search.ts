/**
 * A later process's first search, for the odd-input faults (input.fault.ts):
 * `input-search.ts <sqlite path> <query>` opens the memory with the real MiniLM and prints
 * `{ "ms": … }`, the time of its first search alone. Token counts are remembered per process,
 * so only a new process pays for counting every stored line again.
 */
import { Memory } from '../../src/memory.ts';
import { nodeEmbedder, nodeUsearch } from '../../src/node.ts';
import { openSqliteStore } from '../../src/store/sqlite.node.ts';

const [path, query] = process.argv.slice(2);
if (!path || !query) throw new Error('usage: input-search.ts <sqlite path> <query>');

const [embedder, usearch] = await Promise.all([nodeEmbedder('int8'), nodeUsearch()]);
const memory = await Memory.open({ store: await openSqliteStore(path), embedder, createIndex: (dim) => usearch.createIndex({ dim }) });
const started = performance.now();
const result = await memory.search(query, { budget: 2048 });
const ms = performance.now() - started;
await memory.close();
console.log(JSON.stringify({ ms, units: result.units.length }));
