/**
 * Message identity across handles, shared by the fault suite (identity.fault.ts) and the vitest
 * tests (test/identity.test.ts): several processes or in-process handles add messages to one
 * SQLite store, with shared ids or none, and a census counts what was lost or stored twice.
 * Vectors come from the hashing stand-in embedder: identity does not depend on semantics.
 */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { Memory } from '../../src/memory.ts';
import { nodeUsearch } from '../../src/node.ts';
import { openSqliteStore } from '../../src/store/sqlite.node.ts';
import { hashEmbedder } from '../helpers/hash-embedder.ts';

const repoRoot = resolve(import.meta.dirname, '..', '..');
const writerScript = join(repoRoot, 'test', 'faults', 'identity-writer.ts');

export type IdMode = 'shared' | 'generated';

/** What a store holds after the writers: messages missing, and messages stored more than once. */
export interface IdentityCensus {
  lost: number;
  duplicated: number;
  /** Every writer process exited 0 (in-process handles: every add resolved). */
  clean: boolean;
}

/** Opens a Memory on the SQLite file at `path` with the stand-in embedder. */
export async function openHandle(path: string): Promise<Memory> {
  const usearch = await nodeUsearch();
  return Memory.open({ store: await openSqliteStore(path), embedder: hashEmbedder(), createIndex: (dim) => usearch.createIndex({ dim }) });
}

/**
 * Counts the turns of the default scope. `shared`: each of `messages` ids must be held exactly
 * once. `generated`: each writer's each message must be held, every id once.
 */
async function census(path: string, writers: number, messages: number, mode: IdMode): Promise<Omit<IdentityCensus, 'clean'>> {
  const memory = await openHandle(path);
  try {
    const { graph } = await memory.inspect();
    const turns = [...graph.chunks.values()].flatMap((chunk) => chunk.turns);
    const ids = new Set(turns.map((t) => t.dialogId));
    const duplicated = turns.length - ids.size;
    if (mode === 'shared') {
      let lost = 0;
      for (let i = 0; i < messages; i++) if (!ids.has(`msg-${i}`)) lost++;
      // Two turns under two ids for one shared message would also be a duplicate.
      return { lost, duplicated: duplicated + Math.max(0, ids.size - messages) };
    }
    const texts = new Set(turns.map((t) => t.text));
    let lost = 0;
    for (let w = 0; w < writers; w++) for (let i = 0; i < messages; i++) if (!texts.has(`w${w} wrote note ${i}`)) lost++;
    return { lost, duplicated: duplicated + (turns.length - texts.size) };
  } finally {
    await memory.close();
  }
}

/** `writers` processes add `messages` messages each to one store at once. */
export async function processesAdding(dir: string, writers: number, messages: number, mode: IdMode): Promise<IdentityCensus> {
  const path = join(dir, 'memory.sqlite');
  // The file and schema exist before the writers race to open it.
  await (await openHandle(path)).close();
  const exits = await Promise.all(
    Array.from({ length: writers }, (_, w) =>
      new Promise<number | null>((done) => {
        const child = spawn(process.execPath, ['--import', 'tsx', writerScript, path, `w${w}`, String(messages), mode], { cwd: repoRoot, stdio: ['ignore', 'ignore', 'inherit'] });
        child.on('exit', (code) => done(code));
      }),
    ),
  );
  return { ...(await census(path, writers, messages, mode)), clean: exits.every((code) => code === 0) };
}

/** `writers` handles (each its own connection) in this process add `messages` messages each at once. */
export async function handlesAdding(dir: string, writers: number, messages: number, mode: IdMode): Promise<IdentityCensus> {
  const path = join(dir, 'memory.sqlite');
  const handles = await Promise.all(Array.from({ length: writers }, () => openHandle(path)));
  let clean = true;
  try {
    await Promise.all(
      handles.map(async (memory, w) => {
        for (let i = 0; i < messages; i++) {
          const text = `w${w} wrote note ${i}`;
          const message = mode === 'shared' ? { speaker: `w${w}`, text, id: `msg-${i}` } : { speaker: `w${w}`, text };
          await memory.add([message], { sessionId: mode === 'shared' ? 'chat' : 'common' }).catch(() => {
            clean = false;
          });
        }
      }),
    );
  } finally {
    await Promise.all(handles.map((memory) => memory.close()));
  }
  return { ...(await census(path, writers, messages, mode)), clean };
}

/**
 * A stale handle after a delete: A deletes session `draft` holding `note-1`; B, loaded before
 * the delete, then adds a new message `note-1` to another session. It must be stored.
 * Returns the messages lost (0 or 1) and whether B's report named no skip.
 */
export async function staleHandleAfterDelete(dir: string): Promise<{ lost: number; reportedSkip: boolean }> {
  const path = join(dir, 'memory.sqlite');
  const a = await openHandle(path);
  const b = await openHandle(path);
  try {
    await a.add([{ speaker: 'Ann', text: 'A draft note about the harbour.', id: 'note-1' }], { sessionId: 'draft' });
    // B sees the note, so its working set holds note-1 …
    await b.list();
    await a.delete({ sessionId: 'draft' });
    // … and adds a new message with the same id, without having looked since the delete.
    const report = await b.add([{ speaker: 'Ann', text: 'The real note about the orchard.', id: 'note-1' }], { sessionId: 'final' });
    const held = await a.get('note-1');
    return { lost: held?.kind === 'message' && held.message.text.includes('orchard') ? 0 : 1, reportedSkip: report.skipped.length > 0 };
  } finally {
    await a.close();
    await b.close();
  }
}
