/**
 * A process of the open scenarios (test/faults/open-scenarios.ts), run as another user where
 * the test runs as root: `open-reader.ts <store dir>` opens the Memory at
 * `<dir>/memory.sqlite`, reads it (list, get, search), tries an add and a delete, and prints
 * one JSON line (`ReaderReport`).
 */
import { join } from 'node:path';
import { PrismError } from '../../src/errors.ts';
import { Memory } from '../../src/memory.ts';
import { nodeUsearch } from '../../src/node.ts';
import { openSqliteStore } from '../../src/store/sqlite.node.ts';
import { hashEmbedder } from '../helpers/hash-embedder.ts';

export interface ReaderReport {
  sessions: string[];
  /** Texts of the messages `get` returned for the first session. */
  got: string[];
  /** Whether a search found the first session's marker word. */
  found: boolean;
  /** Error codes of the refused add and delete, or `null` when they succeeded. */
  addError: string | null;
  deleteError: string | null;
}

const [dir, marker] = process.argv.slice(2);
if (!dir || !marker) throw new Error('usage: open-reader.ts <store dir> <marker word>');

const usearch = await nodeUsearch();
const memory = await Memory.open({ store: await openSqliteStore(join(dir, 'memory.sqlite')), embedder: hashEmbedder(), createIndex: (dim) => usearch.createIndex({ dim }), llm: null });
const codeOf = (promise: Promise<unknown>): Promise<string | null> =>
  promise.then(
    () => null,
    (err: unknown) => (err instanceof PrismError ? err.code : String(err)),
  );
const sessions = (await memory.list()).map((s) => s.sessionId);
const record = await memory.get(sessions[0] ?? '');
const report: ReaderReport = {
  sessions,
  got: record?.kind === 'session' ? record.messages.map((m) => m.text) : [],
  found: (await memory.search(`Where is ${marker}?`, { budget: 256 })).context.includes(marker),
  addError: await codeOf(memory.add([{ speaker: 'Ana', text: 'A note written later.' }], { sessionId: 'later' })),
  deleteError: await codeOf(memory.delete({ sessionId: sessions[0] ?? '' })),
};
await memory.close();
console.log(JSON.stringify(report));
