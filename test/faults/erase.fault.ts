/**
 * Delete on disk: after `delete({ sessionId })` and `delete({ userId })` on a real SQLite
 * store, every file of the store's directory is searched for the deleted text and the deleted
 * user's name (test/faults/erase-scenarios.ts), with the store open and after close. The
 * vectors come from the hashing embedder: this is about bytes on disk, not semantics.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeUsearch } from '../../src/node.ts';
import { hashEmbedder } from '../helpers/hash-embedder.ts';
import { bytesOf, deleteOnDisk, KEPT_FOUND_SHARE } from './erase-scenarios.ts';
import type { Fault } from './fault.ts';

export const faults: Fault[] = [
  {
    name: 'delete on disk (SQLite)',
    runs: 3,
    run: async (i) => {
      const dir = await mkdtemp(join(tmpdir(), 'prism-fault-'));
      try {
        const usearch = await nodeUsearch();
        const runtime = { embedder: hashEmbedder(), createIndex: (dim: number) => usearch.createIndex({ dim }) };
        const outcome = await deleteOnDisk(dir, runtime, { sessions: 4 + i, messages: 20 + 15 * i });
        process.stderr.write(`  delete on disk: session delete ${outcome.sessionDeleteMs.toFixed(0)} ms, user delete ${outcome.userDeleteMs.toFixed(0)} ms\n`);
        return {
          survived: outcome.keptOnDisk >= KEPT_FOUND_SHARE * outcome.kept && outcome.keptSearchable === outcome.kept,
          recordsLost: outcome.kept - outcome.keptSearchable,
          deletedBytesFound: bytesOf([...outcome.afterSessionDelete, ...outcome.afterUserDelete, ...outcome.afterClose]),
        };
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  },
];
