/**
 * Faults at the Memory level: huge and over-cap input, and searches racing an add. The
 * vectors come from a deterministic hashing embedder (test/helpers/hash-embedder.ts): these
 * faults are about bounded work, storage and consistency, not semantics, and the real MiniLM
 * would spend minutes on a 1 MB message without changing what is checked.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrismError } from '../../src/errors.ts';
import { Memory } from '../../src/memory.ts';
import { nodeUsearch } from '../../src/node.ts';
import { openSqliteStore } from '../../src/store/sqlite.node.ts';
import { hashEmbedder } from '../helpers/hash-embedder.ts';
import type { Fault, FaultOutcome } from './fault.ts';

async function withMemory(run: (open: () => Promise<Memory>, path: string) => Promise<FaultOutcome>): Promise<FaultOutcome> {
  const dir = await mkdtemp(join(tmpdir(), 'prism-fault-'));
  const path = join(dir, 'memory.sqlite');
  const usearch = await nodeUsearch();
  try {
    return await run(async () => Memory.open({ store: await openSqliteStore(path), embedder: hashEmbedder(), createIndex: (dim) => usearch.createIndex({ dim }) }), path);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const WORDS = ['garden', 'harbour', 'violin', 'lantern', 'meadow', 'orchard', 'pebble', 'quarry', 'saddle', 'thistle'];

/** A diary of `chars` characters: plain sentences, one marked sentence every `markEvery`. */
function diary(chars: number, markEvery: number): { text: string; marks: string[] } {
  const sentences: string[] = [];
  const marks: string[] = [];
  let length = 0;
  for (let i = 0; length < chars; i++) {
    const sentence =
      i % markEvery === markEvery - 1
        ? `Marker ${marks.push(`mark${marks.length}x`) - 1}: I hid the key mark${marks.length - 1}x under the ${WORDS[i % WORDS.length]}.`
        : `On day ${i} the ${WORDS[i % WORDS.length]} looked ${WORDS[(i * 7) % WORDS.length]}-like again.`;
    sentences.push(sentence);
    length += sentence.length + 1;
  }
  return { text: sentences.join(' '), marks };
}

export const faults: Fault[] = [
  {
    name: '1 MB message in one add (SQLite)',
    runs: 1,
    run: () =>
      withMemory(async (open, path) => {
        const { text, marks } = diary(1_000_000, 2_000);
        let memory = await open();
        const started = Date.now();
        await memory.add([{ speaker: 'Ana', text, id: 'diary' }], { sessionId: 'big', date: '2024-01-01' });
        const addMs = Date.now() - started;
        await memory.close();
        memory = await open();
        const record = await memory.get('big');
        const stored = record?.kind === 'session' ? record.messages.map((m) => m.text).join(' ') : '';
        const bounded = record?.kind === 'session' && record.messages.every((m) => m.text.length <= memory.config.limits.passageChars);
        let found = 0;
        for (const mark of marks) if ((await memory.search(`Where did I hide the key ${mark}?`, { budget: 256 })).context.includes(mark)) found++;
        const bytes = (await stat(path)).size;
        process.stderr.write(`  1 MB message: add ${addMs} ms, store ${(bytes / 1e6).toFixed(1)} MB = ${(bytes / text.length).toFixed(1)}× the text, ${found}/${marks.length} marked sentences found\n`);
        await memory.close();
        return { survived: bounded && found === marks.length, recordsLost: stored === text ? 0 : 1 };
      }),
  },
  {
    name: 'add above the hard cap',
    runs: 1,
    run: () =>
      withMemory(async (open) => {
        const memory = await open();
        await memory.add([{ speaker: 'Ana', text: 'A small note that must survive.' }], { sessionId: 'small' });
        const error = await memory.add([{ speaker: 'Ana', text: 'x'.repeat(memory.config.limits.maxAddChars + 1) }]).catch((err: unknown) => err);
        const sessions = await memory.list();
        await memory.close();
        return {
          survived: error instanceof PrismError && error.code === 'INPUT_TOO_LARGE' && sessions.length === 1,
          recordsLost: sessions.some((s) => s.sessionId === 'small') ? 0 : 1,
        };
      }),
  },
  {
    name: 'search during add (every committed chunk visible)',
    runs: 3,
    run: (i) =>
      withMemory(async (open) => {
        const memory = await open();
        const sessions = Array.from({ length: 8 }, (_, s) => ({
          id: `s${s}`,
          dateText: null,
          time: null,
          turns: [{ dialogId: `D${s}:1`, speaker: 'Kim', text: `Today the word of the day was zq${i}w${s}x, said the ${WORDS[s]}.` }],
        }));
        const misses: Array<Promise<number>> = [];
        await memory.addConversation(
          { id: 'c', sessions },
          {
            onProgress: (p) => {
              if (p.stage !== 'extract' || p.chunksDone === 0) return;
              const committed = sessions.slice(0, p.chunksDone);
              misses.push(
                Promise.all(committed.map(async (s): Promise<number> => ((await memory.search(`What was zq${i}w${s.id.slice(1)}x?`, { budget: 128 })).context.includes(`zq${i}w${s.id.slice(1)}x`) ? 0 : 1))).then((m) =>
                  m.reduce((a, b) => a + b, 0),
                ),
              );
            },
          },
        );
        const missed = (await Promise.all(misses)).reduce((a, b) => a + b, 0);
        await memory.close();
        return { survived: misses.length === sessions.length && missed === 0, recordsLost: missed };
      }),
  },
];
