import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { WholeFactsBuilder, type FactColumns } from '../src/graph/fact-columns.ts';
import type { MemorySnapshot } from '../src/graph/types.ts';
import type { Conversation } from '../src/ingest/conversation.ts';
import { Memory } from '../src/memory.ts';
import { stateFrom } from '../src/memory/partition.ts';
import { DEFAULT_PARTITION } from '../src/scope.ts';
import { FACT_IMAGE, factImageBytes, readFactImage } from '../src/store/fact-image.ts';
import { openSqliteStore } from '../src/store/sqlite.node.ts';
import type { GraphStore, WorkingSnapshot } from '../src/store/types.ts';
import { graphView } from '../e2e/support/graph-view.ts';
import { longTurnSession } from './helpers/conversation.ts';
import { sqliteFolder } from './helpers/sqlite-folder.ts';

/**
 * A SQL store keeps a memory's facts as one value of derived state (store/fact-image.ts), saved by
 * the memory after the first search of an open that found none and as it closes after a write;
 * an open at the revision it was saved at reads it in place of the fact rows. What it reads must
 * be what the rows read, fact by fact; an image of another revision, or a damaged one, is not read.
 */

const { runtime, path, sqlite } = sqliteFolder('prism-fact-image-');

const chat: Conversation = { id: 'chat', sessions: [0, 1, 2].map(longTurnSession) };

async function open(): Promise<Memory> {
  return Memory.open({ store: await openSqliteStore(path()), embedder: runtime().embedder, createIndex: runtime().createIndex });
}

/** Every fact of `facts` as its fields, by id. */
function factsOf(facts: FactColumns | undefined) {
  const out: unknown[] = [];
  for (let at = 0; at < (facts?.size ?? 0); at++) {
    const f = facts as FactColumns;
    out.push([f.ids[at], f.keys[at], f.chunkIds[at], f.facetIds[at], f.entityIds[at], f.turns[at], f.starts[at], f.ends[at], f.belongsKeys[at], f.involvesKeys[at], ...f.timesOf(at)]);
  }
  return out.sort((a, b) => String((a as string[])[0]).localeCompare(String((b as string[])[0])));
}

/** The working set a store reads now, with its image, and as its rows read (the image deleted, in a copy's stead: the revision stays). */
async function readBothWays(): Promise<{ image: WorkingSnapshot; rows: WorkingSnapshot }> {
  const image = (await (await sqlite()).loadWorkingSet?.(DEFAULT_PARTITION)) as WorkingSnapshot;
  const db = new Database(path());
  const saved = db.prepare('SELECT * FROM derived WHERE name = ?').all(FACT_IMAGE);
  db.prepare('DELETE FROM derived WHERE name = ?').run(FACT_IMAGE);
  db.close();
  const rows = (await (await sqlite()).loadWorkingSet?.(DEFAULT_PARTITION)) as WorkingSnapshot;
  const back = new Database(path());
  const insert = back.prepare('INSERT INTO derived (partition, name, page, revision, data) VALUES (@partition, @name, @page, @revision, @data)');
  for (const row of saved) insert.run(row);
  back.close();
  return { image, rows };
}

function seen(snapshot: MemorySnapshot | WorkingSnapshot, store: GraphStore) {
  const now = { name: DEFAULT_PARTITION, revision: () => 0, meta: () => snapshot.meta };
  const state = stateFrom(snapshot, { store, embedder: runtime().embedder, createIndex: runtime().createIndex }, now);
  return { view: graphView(state), nodes: [...state.graph.nodes.values()].map((node) => JSON.stringify(node)) };
}

async function searches(memory: Memory): Promise<unknown[]> {
  const out = [];
  for (const query of ['What is the name of my cat?', 'Who brings plums?', 'How far did I run by the river?', 'When did I swim?']) {
    const result = await memory.search(query, { budget: 300 });
    out.push({ context: result.context, units: result.units.map((unit) => unit.id) });
  }
  return out;
}

describe('the fact image', () => {
  it('is saved as a memory closes after a write, and an open reads it fact for fact as the rows read', async () => {
    const memory = await open();
    await memory.addConversation(chat);
    await memory.close();
    const { image, rows } = await readBothWays();
    expect(image.factImage).toBe('read');
    expect(rows.factImage).toBe('missing');
    expect(rows.facts?.size).toBeGreaterThan(20);
    expect(image.nodes.some((node) => node.layer === 'facetPoint')).toBe(false);
    expect(factsOf(image.facts)).toEqual(factsOf(rows.facts));
    expect(factsOf(image.facts).some((fact) => (fact as unknown[])[10] !== null || (fact as unknown[])[11] !== null)).toBe(true);
    const store = await sqlite();
    const whole = (await store.load(DEFAULT_PARTITION)) as MemorySnapshot;
    expect(seen(image, store)).toEqual(seen(whole, store));
  });

  it('holds the facts later writes put, woke and left, and searches read the same with it and without', async () => {
    const first = await open();
    await first.addConversation({ id: 'chat', sessions: [longTurnSession(0)] });
    await first.close();
    // An open that reads the image, then adds: its image holds facts read as columns and facts put as nodes.
    const second = await open();
    await second.addConversation({ id: 'chat', sessions: [longTurnSession(1), longTurnSession(2)] });
    await second.add([{ role: 'user', content: 'My cat Biscuit turned three today and got a new red collar.' }], { sessionId: 'chat/s3', date: '2024-05-20' });
    await second.close();
    const { image, rows } = await readBothWays();
    expect(image.factImage).toBe('read');
    expect(factsOf(image.facts)).toEqual(factsOf(rows.facts));
    const withImage = await open();
    const withIt = await searches(withImage);
    await withImage.close();
    const db = new Database(path());
    db.prepare('DELETE FROM derived WHERE name = ?').run(FACT_IMAGE);
    db.close();
    const withoutImage = await open();
    expect(await searches(withoutImage)).toEqual(withIt);
    await withoutImage.close();
  });

  it('is not saved after a delete until an open reads the rows; then its first search saves it', async () => {
    const memory = await open();
    await memory.addConversation(chat);
    await memory.delete({ sessionId: 'chat/s1' });
    await memory.close();
    expect(((await (await sqlite()).loadWorkingSet?.(DEFAULT_PARTITION)) as WorkingSnapshot).factImage).toBe('missing');
    const again = await open();
    await again.search('Who brings plums?');
    await again.close();
    const { image, rows } = await readBothWays();
    expect(image.factImage).toBe('read');
    expect(factsOf(image.facts)).toEqual(factsOf(rows.facts));
  });

  it('is not read at another revision: another writer added since', async () => {
    const memory = await open();
    await memory.addConversation({ id: 'chat', sessions: [longTurnSession(0)] });
    await memory.close();
    const reader = await open();
    const writer = await open();
    await writer.add([{ role: 'user', content: 'Ana moved to Lisbon last month.' }], { sessionId: 'chat/s9', date: '2024-06-01' });
    const working = (await (await sqlite()).loadWorkingSet?.(DEFAULT_PARTITION)) as WorkingSnapshot;
    expect(working.factImage).toBe('missing');
    // The reader catches up and finds what the writer added; its save, of the revision it reads, is the store's.
    expect((await reader.search('Where did Ana move?')).context).toContain('Lisbon');
    await reader.close();
    await writer.close();
    const { image, rows } = await readBothWays();
    expect(factsOf(image.facts)).toEqual(factsOf(rows.facts));
  });

  it('keeps every number whatever the width its column needs: edge keys before and far after their node, keys past 2^16', async () => {
    const memory = await open();
    await memory.addConversation(chat);
    await memory.close();
    const { rows } = await readBothWays();
    const facts = rows.facts as FactColumns;
    const builder = new WholeFactsBuilder();
    for (let at = 0; at < facts.size; at++) builder.copy(facts, at, facts.belongsKeys[at] as number, facts.involvesKeys[at] as number);
    const whole = builder.finish();
    const chunks = new Map(rows.chunks.map((chunk) => [chunk.id, chunk]));
    whole.belongsKeys[0] = (whole.keys[0] as number) - 7;
    whole.keys[1] = 3_000_000_000;
    whole.belongsKeys[1] = 3_000_070_000;
    whole.involvesKeys[1] = 2_999_999_990;
    whole.involvesKeys[2] = -1;
    const read = readFactImage(factImageBytes(whole) as Uint8Array, chunks) as FactColumns;
    expect(Array.from(read.keys)).toEqual(Array.from(whole.keys));
    expect(Array.from(read.belongsKeys)).toEqual(Array.from(whole.belongsKeys));
    expect(Array.from(read.involvesKeys)).toEqual(Array.from(whole.involvesKeys));
    expect([...read.ids]).toEqual(whole.ids);
    // A key a u32 cannot hold: no image.
    whole.keys[3] = 2 ** 32;
    expect(factImageBytes(whole)).toBeNull();
  });

  it('a damaged image is not read: the open reads the rows and builds the same graph', async () => {
    const memory = await open();
    await memory.addConversation(chat);
    await memory.close();
    const db = new Database(path());
    const row = db.prepare('SELECT page, data FROM derived WHERE name = ? ORDER BY page').get(FACT_IMAGE) as { page: number; data: Buffer };
    const good = new Uint8Array(row.data);
    const { rows } = await readBothWays();
    const chunks = new Map(rows.chunks.map((chunk) => [chunk.id, chunk]));
    expect(factsOf(readFactImage(good, chunks) ?? undefined)).toEqual(factsOf(rows.facts));
    expect(readFactImage(good.subarray(0, good.length - 9), chunks)).toBeNull();
    expect(readFactImage(new Uint8Array(0), chunks)).toBeNull();
    // A fact of a chunk the memory lacks.
    expect(readFactImage(good, new Map([...chunks].slice(1)))).toBeNull();
    // A stretch past its turn's end: its first fact's end, in the last column (its width the head's last), set to its width's largest value.
    const endWidth = good[12 + 8] as number;
    const endsAt = good.length - Math.ceil(((rows.facts as FactColumns).size * endWidth) / 4) * 4;
    const past = good.slice();
    past.fill(0xff, endsAt, endsAt + endWidth);
    expect(readFactImage(past, chunks)).toBeNull();
    // Written into the store at its revision: the open reads the rows, and is the same.
    db.prepare('UPDATE derived SET data = ? WHERE name = ? AND page = ?').run(past, FACT_IMAGE, row.page);
    db.close();
    const store = await sqlite();
    const working = (await store.loadWorkingSet?.(DEFAULT_PARTITION)) as WorkingSnapshot;
    expect(working.factImage).toBe('missing');
    expect(seen(working, store)).toEqual(seen((await store.load(DEFAULT_PARTITION)) as MemorySnapshot, store));
  });
});
