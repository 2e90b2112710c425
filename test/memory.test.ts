import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Embedder } from '../src/embed/types.ts';
import type { GraphEdge } from '../src/graph/types.ts';
import { parseSessionDate } from '../src/ingest/conversation.ts';
import { parseLocomo } from '../src/ingest/locomo.ts';
import { resolveTimeExpression } from '../src/ingest/time.ts';
import { Memory, type MemoryOptions } from '../src/memory.ts';
import { defaultLocomoPath, nodeUsearch, openNodeMemory } from '../src/node.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { openSqliteStore } from '../src/store/sqlite.node.ts';
import type { GraphStore } from '../src/store/types.ts';
import { hashEmbedder } from './helpers/hash-embedder.ts';
import { testRuntime, type TestRuntime } from './helpers/runtime.ts';

let runtime: TestRuntime;
const dirs: string[] = [];
beforeAll(async () => {
  runtime = await testRuntime();
});
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'prism-memory-'));
  dirs.push(dir);
  return dir;
}

function options(store: GraphStore, extra: Partial<MemoryOptions> = {}): MemoryOptions {
  return { store, embedder: runtime.embedder, createIndex: runtime.createIndex, ...extra };
}

describe('scopes', () => {
  it('two users with the same names and words never see each other', async () => {
    const memory = await Memory.open(options(new MemoryStore()));
    const day = { sessionId: 's1', date: '2024-03-01' };
    await memory.add([{ speaker: 'Sam', text: 'My sister Lena moved to Porto last spring.' }], { ...day, userId: 'alice' });
    await memory.add([{ speaker: 'Sam', text: 'My sister Lena moved to Berlin last winter.' }], { ...day, userId: 'bob' });
    await memory.add([{ speaker: 'Sam', text: 'My sister Lena moved to Oslo in autumn.' }], { ...day, userId: 'alice', agentId: 'travel-bot' });

    const where = async (scope: object) => (await memory.search('Where did Lena move?', { budget: 256, ...scope })).context;
    expect(await where({ userId: 'alice' })).toMatch(/Porto/);
    expect(await where({ userId: 'alice' })).not.toMatch(/Berlin|Oslo/);
    expect(await where({ userId: 'bob' })).toMatch(/Berlin/);
    expect(await where({ userId: 'bob' })).not.toMatch(/Porto|Oslo/);
    // A scope is exact: the agent's memory is apart from the user's own.
    expect(await where({ userId: 'alice', agentId: 'travel-bot' })).toMatch(/Oslo/);
    expect(await where({ userId: 'alice', agentId: 'travel-bot' })).not.toMatch(/Porto|Berlin/);
    // The default scope holds nothing of theirs.
    expect(await memory.list()).toEqual([]);
    expect((await memory.search('Where did Lena move?')).units).toEqual([]);
    expect((await memory.scopes()).map((s) => `${s.userId}/${s.agentId ?? ''}`).sort()).toEqual(['alice/', 'alice/travel-bot', 'bob/']);

    const aliceBytes = await memory.export({ userId: 'alice' });
    await memory.delete({ userId: 'alice', sessionId: 's1' });
    expect(await memory.list({ userId: 'alice' })).toEqual([]);
    expect(await memory.list({ userId: 'bob' })).toMatchObject([{ sessionId: 's1', userId: 'bob', messages: 1 }]);
    await expect(memory.delete({ userId: 'alice', sessionId: 's1' })).rejects.toMatchObject({ code: 'NOT_FOUND' });

    await memory.import(aliceBytes, { userId: 'carol' });
    expect(await where({ userId: 'carol' })).toMatch(/Porto/);
    expect(await where({ userId: 'bob' })).not.toMatch(/Porto/);
    // Deleting a whole scope leaves the others.
    expect(await memory.delete({ userId: 'carol' })).toEqual({ chunksDeleted: 1 });
    expect(await memory.list({ userId: 'carol' })).toEqual([]);
    expect(await where({ userId: 'bob' })).toMatch(/Berlin/);
  });
});

describe('input as people have it, read back as data', () => {
  it('takes OpenAI chat messages, lists sessions, gets records, and returns units with their turns', async () => {
    const memory = await Memory.open(options(new MemoryStore()));
    const report = await memory.add(
      [
        { role: 'system', content: 'You are a helpful assistant.' },
        { role: 'user', name: 'Ann', content: 'I adopted a puppy named Max yesterday.', metadata: { channel: 'web' } },
        { role: 'assistant', content: [{ type: 'text', text: 'Congratulations on Max! What breed is he?' }] },
        { role: 'user', name: 'Ann', content: 'A border collie, very energetic.' },
      ],
      { sessionId: 'chat-1', date: '2024-05-08T10:00:00Z' },
    );
    expect(report.chunksAdded).toBe(1);
    expect(report.warnings).toEqual(['1 system/developer/tool message not remembered']);

    expect(await memory.list()).toEqual([{ sessionId: 'chat-1', userId: 'default', agentId: null, runId: null, date: '2024-05-08T10:00:00', messages: 3, facts: expect.any(Number) }]);
    const session = await memory.get('chat-1');
    expect(session?.kind).toBe('session');
    if (session?.kind !== 'session') throw new Error('unreachable');
    expect(session.messages.map((m) => [m.id, m.speaker])).toEqual([['chat-1:1', 'Ann'], ['chat-1:2', 'Assistant'], ['chat-1:3', 'Ann']]);
    expect(session.messages[0]?.metadata).toEqual({ channel: 'web' });
    expect(session.facts.length).toBeGreaterThan(0);
    expect(await memory.get('chat-1:2')).toMatchObject({ kind: 'message', message: { text: 'Congratulations on Max! What breed is he?' } });
    expect(await memory.get(session.facts[0]!.id)).toMatchObject({ kind: 'fact', fact: { sessionId: 'chat-1' } });
    expect(await memory.get('nothing-here')).toBeNull();

    const result = await memory.search('What breed is the dog?', { budget: 256 });
    const turns = result.units.flatMap((u) => u.turns);
    expect(turns).toContainEqual({ id: 'chat-1:3', speaker: 'Ann', text: 'A border collie, very energetic.', date: '2024-05-08T10:00:00', sessionId: 'chat-1', userId: 'default', agentId: null, runId: null });
    // Every unit's turns are the ones its text cites.
    for (const unit of result.units) expect(unit.turns.map((t) => t.id)).toEqual(unit.dialogIds.filter((id) => unit.turns.some((t) => t.id === id)));

    // No session id: the session is the message's UTC day.
    await memory.add([{ speaker: 'Ann', text: 'Max chewed my shoe.', date: '2024-06-01T23:30:00-02:00' }]);
    expect((await memory.list()).map((s) => s.sessionId)).toEqual(['chat-1', '2024-06-02']);
  });

  it('reads session dates the same in every time zone', () => {
    const zone = process.env['TZ'];
    const read = () => [
      parseSessionDate('2023-05-08'),
      parseSessionDate('May 8, 2023'),
      parseSessionDate('1:56 pm on 8 May, 2023'),
      parseSessionDate('2023-05-08T10:00:00+09:00'),
      resolveTimeExpression('I went there yesterday', '2023-05-08T00:30:00')?.iso,
      resolveTimeExpression('last Saturday', '2023-05-08T23:30:00')?.iso,
    ];
    try {
      const seen = ['America/New_York', 'Asia/Tokyo', 'UTC'].map((tz) => {
        process.env['TZ'] = tz;
        return read();
      });
      expect(seen[0]).toEqual(['2023-05-08T00:00:00', '2023-05-08T00:00:00', '2023-05-08T13:56:00', '2023-05-08T01:00:00', '2023-05-07', '2023-05-06']);
      expect(seen[1]).toEqual(seen[0]);
      expect(seen[2]).toEqual(seen[0]);
    } finally {
      if (zone === undefined) delete process.env['TZ'];
      else process.env['TZ'] = zone;
    }
  });

  it('stores a long message as bounded passages and refuses an add over the hard cap', async () => {
    const memory = await Memory.open(options(new MemoryStore(), { config: { limits: { maxAddChars: 20_000 } } }));
    const filler = ['The weather was mild.', 'We cooked pasta for dinner.', 'The train was late again.', 'I read a novel about sailors.'];
    const sentences = Array.from({ length: 400 }, (_, i) => `Day ${i + 1}: ${filler[i % filler.length]}`);
    sentences.splice(230, 0, 'My cousin Ines opened a bakery in Lisbon.');
    const text = sentences.join(' ');
    expect(text.length).toBeGreaterThan(12_000);
    await memory.add([{ speaker: 'Ana', text, id: 'diary' }], { sessionId: 'd', date: '2024-03-03' });
    const [session] = await memory.list();
    const record = await memory.get('d');
    if (record?.kind !== 'session') throw new Error('expected the session');
    expect(record.messages.length).toBeGreaterThanOrEqual(Math.ceil(text.length / 2000));
    expect(session?.messages).toBe(record.messages.length);
    expect(record.messages.every((m) => m.text.length <= 2000 && /^diary#\d+$/.test(m.id))).toBe(true);
    expect(record.messages.map((m) => m.text).join(' ')).toBe(text);
    const result = await memory.search('Where did Ines open a bakery?', { budget: 512 });
    expect(result.context).toMatch(/Ines opened a bakery in Lisbon/);

    await expect(memory.add([{ speaker: 'Ana', text: 'x '.repeat(10_001) }])).rejects.toMatchObject({ code: 'INPUT_TOO_LARGE' });
    expect(await memory.list()).toHaveLength(1);
  });
});

describe('consistency', () => {
  it('a search during an add sees every chunk committed so far', async () => {
    const memory = await Memory.open(options(new MemoryStore()));
    const words = ['quenvarite', 'zolbrintic', 'maxtrelian', 'purvostane'];
    const sessions = words.map((word, i) => ({
      id: `s${i + 1}`,
      dateText: `${i + 1} June, 2024`,
      time: `2024-06-0${i + 1}T00:00:00`,
      turns: [{ dialogId: `D${i + 1}:1`, speaker: 'Kim', text: `Today I found a stone called ${word} in the garden.` }],
    }));
    const checks: Array<Promise<void>> = [];
    await memory.addConversation(
      { id: 'c', sessions },
      {
        onProgress: (p) => {
          if (p.stage !== 'extract' || p.chunksDone === 0) return;
          const committed = p.chunksDone;
          checks.push(
            (async () => {
              for (const word of words.slice(0, committed)) {
                const result = await memory.search(`What is ${word}?`, { budget: 128 });
                expect(result.context).toContain(word);
              }
            })(),
          );
        },
      },
    );
    expect(checks.length).toBe(words.length);
    await Promise.all(checks);
  });

  it('closing and reopening mid-conversation builds the same graph as one uninterrupted ingest', async () => {
    const [sample] = parseLocomo(JSON.parse(await readFile(defaultLocomoPath(), 'utf8')));
    if (!sample) throw new Error('no LoCoMo sample');
    const conversation = { ...sample.conversation, sessions: sample.conversation.sessions.slice(0, 8) };
    const usearch = await nodeUsearch();
    const open = (store: GraphStore) => Memory.open({ store, embedder: hashEmbedder(), createIndex: (dim) => usearch.createIndex({ dim }) });
    const fingerprint = async (memory: Memory) => {
      const s = (await memory.inspect()).snapshot();
      return { meta: s.meta, nodes: s.nodes, edges: s.edges, chunks: s.chunks, hashes: [...s.hashes].sort(), vectors: [...s.vectors.keys()].sort() };
    };

    const straight = await open(new MemoryStore());
    await straight.addConversation(conversation);

    const path = join(await tempDir(), 'memory.sqlite');
    const first = await open(await openSqliteStore(path));
    await first.addConversation({ ...conversation, sessions: conversation.sessions.slice(0, 4) });
    await first.close();
    const reopened = await open(await openSqliteStore(path));
    const report = await reopened.addConversation(conversation);
    expect(report).toMatchObject({ chunksAdded: 4, chunksSkipped: 4 });
    const byId = <T extends { id: string }>(xs: T[]) => [...xs].sort((a, b) => a.id.localeCompare(b.id));
    const [a, b] = [await fingerprint(reopened), await fingerprint(straight)];
    expect(byId(a.nodes)).toEqual(byId(b.nodes));
    expect(byId(a.edges)).toEqual(byId(b.edges));
    expect(a.hashes).toEqual(b.hashes);
    expect(a.meta).toEqual(b.meta);
    await reopened.close();
  });

  it('two Memory objects on one SQLite file (as two processes would be) both land every add', async () => {
    const path = join(await tempDir(), 'memory.sqlite');
    const usearch = await nodeUsearch();
    const open = async () => Memory.open({ store: await openSqliteStore(path), embedder: hashEmbedder(), createIndex: (dim) => usearch.createIndex({ dim }) });
    const [one, two] = await Promise.all([open(), open()]);
    const adds = (memory: Memory, who: string) =>
      Array.from({ length: 6 }, (_, i) => memory.add([{ speaker: who, text: `${who} note ${i}: I planted ${i + 2} tulips today.` }], { sessionId: `${who}-${i}`, date: '2024-04-01' }));
    await Promise.all([...adds(one, 'ann'), ...adds(two, 'bob')]);
    for (const memory of [one, two]) {
      const sessions = (await memory.list()).map((s) => s.sessionId).sort();
      expect(sessions).toHaveLength(12);
      const { snapshot } = await memory.inspect();
      const keys = [...snapshot().nodes, ...snapshot().edges].map((x) => x.key);
      expect(new Set(keys).size).toBe(keys.length);
    }
    await Promise.all([one.close(), two.close()]);
    expect((await stat(path)).size).toBeGreaterThan(0);
  });

  it('a search in flight while another writer\'s commit reloads the scope reads the graph it began with to the end', async () => {
    const path = join(await tempDir(), 'memory.sqlite');
    const usearch = await nodeUsearch();
    const words = hashEmbedder();
    // The reader's query embedding waits for the test's word: meanwhile the other handle commits and the reader reloads.
    let embedded: () => void = () => undefined;
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    let holdNext = false;
    const held: Embedder = {
      ...words,
      embed: async (texts, options) => {
        if (holdNext) {
          holdNext = false;
          embedded();
          await released;
        }
        return words.embed(texts, options);
      },
    };
    const open = async (embedder: Embedder) => Memory.open({ store: await openSqliteStore(path), embedder, createIndex: (dim) => usearch.createIndex({ dim }) });
    const [reader, writer] = [await open(held), await open(words)];
    await reader.add([{ speaker: 'Ann', text: 'I planted twelve tulips by the garden fence.' }], { sessionId: 'tulips', date: '2024-04-01' });
    const before = await reader.search('tulips by the fence', { budget: 256 });
    holdNext = true;
    const waiting = new Promise<void>((resolve) => (embedded = resolve));
    const inFlight = reader.search('tulips by the fence ', { budget: 256 });
    await waiting;
    await writer.add([{ speaker: 'Bob', text: 'I repaired the garden fence on Sunday.' }], { sessionId: 'fence', date: '2024-04-02' });
    // The reader catches up: its working set and indexes are replaced while the search waits.
    expect((await reader.list()).map((s) => s.sessionId)).toEqual(['tulips', 'fence']);
    release();
    const during = await inFlight;
    expect(during.units.map((u) => u.turns.map((t) => t.text))).toEqual(before.units.map((u) => u.turns.map((t) => t.text)));
    expect((await reader.search('repaired fence', { budget: 256 })).context).toContain('repaired the garden fence');
    await Promise.all([reader.close(), writer.close()]);
  });

  it('a handle reading relation edges its SQL store holds after another writer committed leaves that writer\'s out, and catches up at its next call', async () => {
    const path = join(await tempDir(), 'memory.sqlite');
    const usearch = await nodeUsearch();
    const open = async () => Memory.open({ store: await openSqliteStore(path), embedder: hashEmbedder(), createIndex: (dim) => usearch.createIndex({ dim }) });
    const note = (who: string, day: number) => [{ speaker: who, text: `${who} planted ${day + 2} tulips by the garden fence today.` }];
    const relations = (edges: Iterable<GraphEdge>) => [...edges].filter((e) => e.type === 'temporal' || e.type === 'evolution').map((e) => e.id).sort();
    const first = await open();
    for (const day of [1, 2, 3]) await first.add(note('Ann', day), { sessionId: `ann-${day}`, date: `2024-04-0${day}` });
    const before = relations((await first.inspect()).snapshot().edges);
    await first.close();
    // Opened again, each handle leaves the relation edges in the store until something reads them.
    const [reader, writer] = [await open(), await open()];
    const view = await reader.inspect();
    await writer.add(note('Ann', 4), { sessionId: 'ann-4', date: '2024-04-04' });
    const all = relations((await writer.inspect()).snapshot().edges);
    const added = all.filter((id) => !before.includes(id));
    expect(added.length).toBeGreaterThan(0);
    // The reader's graph is the one it opened: the writer's new edges are not its own, one by one or all at once.
    expect(added.map((id) => [view.graph.edges.has(id), view.graph.edges.get(id) ?? null])).toStrictEqual(added.map(() => [false, null]));
    expect(relations(view.graph.edges.values())).toStrictEqual(before);
    // Its next call catches up.
    expect(relations((await reader.inspect()).snapshot().edges)).toStrictEqual(all);
    await Promise.all([reader.close(), writer.close()]);
  });

  it('openNodeMemory waits lockTimeoutMs for another writer, then fails with STORE_BUSY and loses nothing', async () => {
    const dir = await tempDir();
    const holder = await openSqliteStore(join(dir, 'memory.sqlite'));
    const memory = await openNodeMemory({ dir, lockTimeoutMs: 300 });
    await memory.add([{ speaker: 'Ann', text: 'The first note is safe.' }], { sessionId: 'one' });
    let release: () => void = () => undefined;
    let acquired: () => void = () => undefined;
    const locked = new Promise<void>((resolve) => (acquired = resolve));
    const held = holder.withWriteLock('default', () => {
      acquired();
      return new Promise<void>((resolve) => (release = resolve));
    });
    await locked;
    const started = Date.now();
    await expect(memory.add([{ speaker: 'Ann', text: 'This one waits for the lock.' }], { sessionId: 'two' })).rejects.toMatchObject({ code: 'STORE_BUSY' });
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(250);
    expect(waited).toBeLessThan(10_000); // the option, not the 30 s default
    release();
    await held;
    await memory.add([{ speaker: 'Ann', text: 'This one waits for the lock.' }], { sessionId: 'two' });
    expect((await memory.list()).map((s) => s.sessionId)).toEqual(['one', 'two']);
    await Promise.all([memory.close(), holder.close()]);
  });
});
