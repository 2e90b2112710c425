import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { Conversation } from '../src/ingest/conversation.ts';
import { Memory } from '../src/memory.ts';
import { stateFrom, type PartitionHost } from '../src/memory/partition.ts';
import { DEFAULT_PARTITION } from '../src/scope.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { openSqliteStore } from '../src/store/sqlite.node.ts';
import type { GraphStore, WorkingSnapshot } from '../src/store/types.ts';
import type { MemorySnapshot } from '../src/graph/types.ts';
import { graphView } from '../e2e/support/graph-view.ts';
import { longTurnSession } from './helpers/conversation.ts';
import { sqliteFolder } from './helpers/sqlite-folder.ts';
import { FactColumns } from '../src/graph/fact-columns.ts';
import { checkMemoryStructure } from '../src/store/validate-snapshot.ts';

/**
 * An open of a SQL store reads a partition's FacetPoints as columns (graph/fact-columns.ts) and
 * makes a fact's node when something reads it. Whatever reads the graph must see what it sees
 * when every fact is a node: the same nodes in the same order, the same edges, searches, deletes
 * and adds, and the same refusals of a damaged store.
 */

const { runtime, path, sqlite } = sqliteFolder('prism-fact-columns-');

/** A conversation of long turns, so that several of them are cut into many facts. */
const chat: Conversation = { id: 'chat', sessions: [0, 1, 2, 3].map(longTurnSession) };


/**
 * `chat` added to a SQLite file of its own, closed (a memory closes its store), and its revision
 * moved on: the opens here read the fact rows, not the fact image the close saved (which
 * test/fact-image.test.ts reads).
 */
async function ingested(): Promise<void> {
  const memory = await Memory.open({ store: await openSqliteStore(path()), embedder: runtime().embedder, createIndex: runtime().createIndex });
  await memory.addConversation(chat);
  await memory.close();
  const db = new Database(path());
  bumpRevision(db);
  db.close();
}

/** Moves the revision on, as any writer's commit does: the fact image saved at the last one (store/fact-image.ts) is not read then. */
function bumpRevision(db: Database.Database): void {
  db.prepare('UPDATE revisions SET revision = revision + 1').run();
}

function host(store: GraphStore): PartitionHost {
  return { store, embedder: runtime().embedder, createIndex: runtime().createIndex };
}

/** The graph as a reader sees it, and every node in `nodes` order as JSON (key order included). */
function seen(snapshot: MemorySnapshot | WorkingSnapshot, store: GraphStore) {
  const now = { name: DEFAULT_PARTITION, revision: () => 0, meta: () => snapshot.meta };
  const state = stateFrom(snapshot, host(store), now);
  return { view: graphView(state), nodes: [...state.graph.nodes.values()].map((node) => JSON.stringify(node)), size: state.graph.nodes.size };
}

describe('facts held as columns', () => {
  it('an open of a SQL store reads every fact as columns and lists every node as the whole load does', async () => {
    await ingested();
    const store = await sqlite();
    const working = (await store.loadWorkingSet?.(DEFAULT_PARTITION)) as WorkingSnapshot;
    const whole = (await store.load(DEFAULT_PARTITION)) as MemorySnapshot;
    const facts = whole.nodes.filter((node) => node.layer === 'facetPoint');
    expect(facts.length).toBeGreaterThan(10);
    expect(working.facts?.size).toBe(facts.length);
    expect(working.nodes.some((node) => node.layer === 'facetPoint')).toBe(false);
    expect(seen(working, store)).toEqual(seen(whole, store));
  });

  it('searches as a memory of nodes does, and after a delete and an add as a fresh open of what they wrote', async () => {
    await ingested();
    const columns = await Memory.open({ store: await sqlite(), embedder: runtime().embedder, createIndex: runtime().createIndex });
    const nodes = await Memory.open({ store: new MemoryStore(), embedder: runtime().embedder, createIndex: runtime().createIndex });
    await nodes.import(await columns.export());
    const asSeen = async (memory: Memory) => {
      const searches = [];
      for (const query of ['What is the name of my cat?', 'Who brings plums?', 'How far did I run by the river?']) {
        const result = await memory.search(query, { budget: 300 });
        searches.push({ context: result.context, units: result.units.map((unit) => unit.id) });
      }
      const { graph } = await memory.inspect();
      // The Episodes listed apart (kept as they come) are those the nodes list, in that order.
      expect(graph.nodesOfLayer('episode').map((node) => node.id)).toEqual([...graph.nodes.values()].filter((node) => node.layer === 'episode').map((node) => node.id));
      return { searches, nodes: [...graph.nodes.values()].map((node) => JSON.stringify(node)), edges: [...graph.edges.keys()].sort() };
    };
    expect(await asSeen(columns)).toEqual(await asSeen(nodes));
    await nodes.close();
    const reopened = async () => {
      const fresh = await Memory.open({ store: await sqlite(), embedder: runtime().embedder, createIndex: runtime().createIndex });
      const seenThere = await asSeen(fresh);
      await fresh.close();
      return seenThere;
    };
    // A delete wakes the facts it takes (their nodes made, then deleted); an add puts its facts as nodes.
    await columns.delete({ sessionId: 'chat/s1' });
    expect(await asSeen(columns)).toEqual(await reopened());
    await columns.addConversation({ id: 'chat', sessions: [chat.sessions[1] as Conversation['sessions'][number]] });
    expect(await asSeen(columns)).toEqual(await reopened());
    await columns.close();
  });

  it('reads every fact as a node where one is not in the plain form, and the graph is the same', async () => {
    await ingested();
    const db = new Database(path());
    const row = db.prepare("SELECT id, json FROM nodes WHERE id LIKE 'fp:%' LIMIT 1").get() as { id: string; json: string };
    // Its content written out rather than as a stretch of its turn: a form graph building does not write.
    const values = JSON.parse(row.json) as unknown[];
    values[6] = 'User: written out';
    db.prepare('UPDATE nodes SET json = ? WHERE id = ?').run(JSON.stringify(values), row.id);
    db.close();
    const reopened = await sqlite();
    const working = (await reopened.loadWorkingSet?.(DEFAULT_PARTITION)) as WorkingSnapshot;
    expect(working.facts).toBeUndefined();
    expect(working.nodes.find((node) => node.id === row.id)).toMatchObject({ layer: 'facetPoint', content: 'User: written out' });
    const whole = (await reopened.load(DEFAULT_PARTITION)) as MemorySnapshot;
    expect(seen(working, reopened)).toEqual(seen(whole, reopened));
  });

  it('holds each fact id once, and refuses a node or edge whose id is a fact held as columns', () => {
    const chunkId = 'ab'.repeat(32);
    const factId = `fp:${chunkId.slice(0, 12)}:3`;
    const columns = FactColumns.empty();
    expect(columns.add(factId, 5, chunkId, 'fc:x', null, 0, 0, 1, null, null, -1, -1)).toBe(0);
    expect(columns.add(factId, 6, chunkId, 'fc:x', null, 0, 0, 1, null, null, -1, -1)).toBe(-1);
    expect(columns.size).toBe(1);
    const meta = { schemaVersion: 1, embedderId: 'test', dim: 4, nextKey: 10, chunkCount: 0, settings: {} };
    const entity = { id: factId, key: 1, layer: 'entity', name: 'Ana', entityType: 'person', chunkIds: [] };
    const edge = { id: factId, key: 2, type: 'temporal', from: 'a', to: 'b', chunkId, description: null, confidence: null };
    const checked = (memory: { nodes: unknown[]; edges: unknown[] }) => () => checkMemoryStructure({ meta, chunks: [], vectors: [], hashes: [], facts: columns, ...memory }, (message) => { throw new Error(message); });
    expect(checked({ nodes: [entity], edges: [] })).toThrow(`node id ${factId} occurs twice`);
    expect(checked({ nodes: [], edges: [edge] })).toThrow(`node or edge id ${factId} occurs twice`);
    expect(checked({ nodes: [{ ...entity, id: 'entity:ana' }], edges: [] })).not.toThrow();
  });

  it('refuses a fact held as columns whose key another node holds, as it refuses a node', async () => {
    await ingested();
    const db = new Database(path());
    const episode = JSON.parse((db.prepare("SELECT json FROM nodes WHERE id LIKE 'ep:%' LIMIT 1").get() as { json: string }).json) as unknown[];
    const row = db.prepare("SELECT id, json FROM nodes WHERE id LIKE 'fp:%' LIMIT 1").get() as { id: string; json: string };
    const values = JSON.parse(row.json) as unknown[];
    values[2] = episode[2];
    db.prepare('UPDATE nodes SET json = ? WHERE id = ?').run(JSON.stringify(values), row.id);
    db.close();
    const reopened = await sqlite();
    expect((await reopened.loadWorkingSet?.(DEFAULT_PARTITION))?.facts).toBeDefined();
    await expect(Memory.open({ store: reopened, embedder: runtime().embedder, createIndex: runtime().createIndex })).rejects.toMatchObject({ code: 'CORRUPT_CHECKPOINT', message: expect.stringMatching(/node ep:\S+ and node fp:\S+ share key/) });
  });
});
