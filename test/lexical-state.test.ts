import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryGraph } from '../src/graph/memory-graph.ts';
import { Memory } from '../src/memory.ts';
import { LexicalIndex } from '../src/retrieve/lexical.ts';
import { openSqliteStore } from '../src/store/sqlite.node.ts';
import type { GraphStore } from '../src/store/types.ts';
import { hashEmbedder } from './helpers/hash-embedder.ts';
import { testRuntime, type TestRuntime } from './helpers/runtime.ts';

let runtime: TestRuntime;
beforeAll(async () => {
  runtime = await testRuntime();
});

let dir = '';
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'prism-lexical-'));
});
afterEach(async () => {
  vi.restoreAllMocks();
  await rm(dir, { recursive: true, force: true });
});

/** The store as one without derived state: every open builds the lexical index from the records. */
function withoutDerived(store: GraphStore): GraphStore {
  return new Proxy(store, {
    get(target, property) {
      if (property === 'loadDerived' || property === 'saveDerived') return undefined;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const TOPICS = ['the harbour lantern', 'a violin lesson', 'the orchard harvest', 'my sister Odile', 'the pottery kiln', 'a trip to Lisbon'];
const session = (s: number) =>
  Array.from({ length: 6 }, (_, m) => ({ speaker: m % 2 === 0 ? 'Ana' : 'Ben', text: `Session ${s} talk ${m}: about ${TOPICS[(s + m) % TOPICS.length]}, and the word marker${s}x${m}.` }));
const QUERIES = ['What did Ana say about the violin?', 'Lisbon trip', 'marker3x2', 'Who is Odile?', 'pottery kiln harbour'];

describe('the lexical index kept beside a memory', () => {
  it('is saved after a search, read back at the next open instead of built, caught up with adds since; searches match a store that keeps none', async () => {
    const path = join(dir, 'memory.sqlite');
    const open = async (store: GraphStore) => Memory.open({ store, embedder: hashEmbedder(), createIndex: runtime.createIndex, llm: null });
    const contexts = async (memory: Memory) => Promise.all(QUERIES.map(async (query) => (await memory.search(query, { budget: 512 })).context));
    const savedRows = () => {
      const db = new Database(path, { readonly: true });
      const rows = db.prepare("SELECT revision, length(data) AS bytes FROM derived WHERE name = 'lexical'").all() as Array<{ revision: number; bytes: number }>;
      db.close();
      return rows;
    };

    let memory = await open(await openSqliteStore(path));
    for (let s = 0; s < 6; s++) await memory.add(session(s), { sessionId: `s${s}` });
    expect(savedRows()).toEqual([]);
    await memory.search(QUERIES[0]!);
    // Saved once the search has its answer; close waits for the save.
    await memory.close();
    const store = await openSqliteStore(path);
    const revision = await store.revision('default');
    await store.close();
    expect(savedRows()).toEqual([{ revision, bytes: expect.any(Number) }]);

    const built = vi.spyOn(LexicalIndex, 'fromGraph');
    memory = await open(await openSqliteStore(path));
    const read = await contexts(memory);
    expect(built).not.toHaveBeenCalled();
    // Adds after the save: the next open reads the saved index and indexes only what it lacks.
    await memory.add(session(6), { sessionId: 's6' });
    await memory.close();
    memory = await open(await openSqliteStore(path));
    const caughtUp = await contexts(memory);
    expect(built).not.toHaveBeenCalled();
    await memory.close();

    // The same contexts as a memory that builds its index from the records at every open.
    memory = await open(withoutDerived(await openSqliteStore(path)));
    const rebuilt = await contexts(memory);
    expect(built).toHaveBeenCalledTimes(1);
    await memory.close();
    expect(caughtUp).toEqual(rebuilt);
    expect(read).not.toEqual(caughtUp);
    // The session added after the save is found too.
    expect(caughtUp.some((context) => context.includes('marker6x'))).toBe(true);
    expect(rebuilt[2]).toContain('marker3x2');
  });

  it('is dropped by a delete, then saved again without the deleted words; a damaged copy is rebuilt, not trusted', async () => {
    const path = join(dir, 'memory.sqlite');
    const open = async () => Memory.open({ store: await openSqliteStore(path), embedder: hashEmbedder(), createIndex: runtime.createIndex, llm: null });
    const savedBytes = (): Buffer | undefined => {
      const db = new Database(path, { readonly: true });
      const row = db.prepare("SELECT data FROM derived WHERE name = 'lexical' ORDER BY page").get() as { data: Buffer } | undefined;
      db.close();
      return row?.data;
    };
    let memory = await open();
    // Thirty sessions: the one deleted below is a thirtieth of the index, which alone would not make it saved again.
    for (let s = 0; s < 30; s++) await memory.add(session(s), { sessionId: `s${s}` });
    await memory.search('harbour');
    await memory.close();
    // The saved index holds each message's marker word as a term.
    expect(savedBytes()?.includes('marker1x3')).toBe(true);

    memory = await open();
    // The index read back before the delete: this handle must save it again after the delete.
    await memory.search('violin');
    await memory.delete({ sessionId: 's1' });
    expect(savedBytes()).toBeUndefined();
    const found = await memory.search('marker1x3 marker2x3', { budget: 512 });
    expect(found.context).not.toContain('marker1x3');
    await memory.close();
    expect(savedBytes()?.includes('marker2x3')).toBe(true);
    expect(savedBytes()?.includes('marker1x')).toBe(false);

    // Damaged on disk: read as no copy, built from the records, saved anew.
    const db = new Database(path);
    db.prepare("UPDATE derived SET data = ? WHERE name = 'lexical'").run(Buffer.from('not an index'));
    db.close();
    const built = vi.spyOn(LexicalIndex, 'fromGraph');
    memory = await open();
    expect((await memory.search('marker2x3', { budget: 512 })).context).toContain('marker2x3');
    expect(built).toHaveBeenCalledTimes(1);
    await memory.close();
    expect(savedBytes()?.includes('marker2x3')).toBe(true);

    // Closed after a delete with no search since: saved as it closes, without the deleted words,
    // and the next open reads it rather than building the index again.
    memory = await open();
    await memory.search('violin');
    await memory.delete({ sessionId: 's2' });
    expect(savedBytes()).toBeUndefined();
    await memory.close();
    expect(savedBytes()?.includes('marker3x3')).toBe(true);
    expect(savedBytes()?.includes('marker2x')).toBe(false);
    memory = await open();
    expect((await memory.search('marker3x3', { budget: 512 })).context).toContain('marker3x3');
    expect(built).toHaveBeenCalledTimes(1);
    await memory.close();
  });

  it('catches up with each write from what it changed, to the same index as a walk of the whole graph', async () => {
    // The same writes and searches twice: as shipped, and with the graph's changes withheld, so
    // that every search after a write walks every node. The index after each step must be the same, byte for byte.
    const run = async (told: boolean) => {
      const update = vi.spyOn(LexicalIndex.prototype, 'update');
      const walk = vi.spyOn(LexicalIndex.prototype as unknown as { catchUp: () => number }, 'catchUp');
      if (!told) vi.spyOn(MemoryGraph.prototype, 'takeChanges').mockReturnValue(null);
      const memory = await Memory.open({ store: await openSqliteStore(join(dir, `${String(told)}.sqlite`)), embedder: hashEmbedder(), createIndex: runtime.createIndex, llm: null });
      const steps: Array<{ bytes: string; changed: unknown; context: string }> = [];
      const search = async (query: string) => {
        const { context } = await memory.search(query, { budget: 512 });
        const index = update.mock.contexts.at(-1) as LexicalIndex;
        steps.push({ bytes: Buffer.from(index.toBytes()).toString('base64'), changed: update.mock.results.at(-1)?.value, context });
      };
      for (let s = 0; s < 4; s++) await memory.add(session(s), { sessionId: `s${s}`, date: `2024-03-${10 + s}` });
      await search(QUERIES[0]!);
      const walksAtOpen = walk.mock.calls.length;
      await memory.add(session(4), { sessionId: 's4', date: '2024-03-20' });
      await search('marker4x1 violin');
      // Messages added to a session it holds, then a session deleted, then added again.
      await memory.add(session(7).slice(0, 2), { sessionId: 's2', date: '2024-03-21' });
      await search('marker7x1 Lisbon');
      await memory.delete({ sessionId: 's1' });
      await search('marker1x2 marker3x2');
      await memory.add(session(1), { sessionId: 's1', date: '2024-03-22' });
      await search('marker1x2 orchard');
      for (let s = 8; s < 11; s++) await memory.add(session(s), { sessionId: `s${s}`, date: `2024-03-${10 + s}` });
      await search('Who is Odile?');
      const walksAfterOpen = walk.mock.calls.length - walksAtOpen;
      await memory.close();
      vi.restoreAllMocks();
      return { steps, walksAfterOpen };
    };
    const told = await run(true);
    const walked = await run(false);
    expect(told.steps).toEqual(walked.steps);
    // Five searches after writes: the shipped index caught up with each from the changes alone.
    expect(told.walksAfterOpen).toBe(0);
    expect(walked.walksAfterOpen).toBe(5);
    expect(told.steps.at(-2)?.context).toContain('marker1x2');
  });
});
