import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VectorTable } from '../src/graph/vector-table.ts';
import type { MemoryState } from '../src/ingest/pipeline.ts';
import { parseLocomo } from '../src/ingest/locomo.ts';
import { Memory } from '../src/memory.ts';
import { indexKeyedVectors } from '../src/memory/keyed-vectors.ts';
import { stateAsRead, stateFrom, type PartitionHost } from '../src/memory/partition.ts';
import { defaultLocomoPath, nodeUsearch } from '../src/node.ts';
import { PrismError } from '../src/errors.ts';
import { DEFAULT_PARTITION } from '../src/scope.ts';
import { openSqliteStore } from '../src/store/sqlite.node.ts';
import type { GraphStore, LaterVectors, ListedVectorGroup, StemVectorGroup, WorkingSnapshot } from '../src/store/types.ts';
import { addKeyedGroups, decodeGroupKeys, encodeGroupKeys, memberId, vectorGroupMembers } from '../src/store/vector-groups.ts';
import type { IndexSpace } from '../src/vector/index-set.ts';
import { graphView } from '../e2e/support/graph-view.ts';
import { hashEmbedder } from './helpers/hash-embedder.ts';

/**
 * A SQL store keeps each vector group's index keys beside it, and an open hands the vectors to
 * their indexes by key (memory/keyed-vectors.ts). What it builds must be what the vectors found
 * by id build; keys that do not name the member's node leave the open to the vectors found by id.
 */

const SPACES: IndexSpace[] = ['episode', 'facet', 'facetPoint', 'entity', 'edge_relation', 'edge_semantic'];

let dir = '';
let grown = '';
const opened: GraphStore[] = [];
const usearch = await nodeUsearch();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'prism-keyed-vectors-'));
  grown = join(dir, 'grown.sqlite');
  const [sample] = parseLocomo(JSON.parse(await readFile(defaultLocomoPath(), 'utf8')));
  if (!sample) throw new Error('no LoCoMo sample');
  const memory = await Memory.open({ store: await openSqliteStore(grown), embedder: hashEmbedder(), createIndex: (dim) => usearch.createIndex({ dim }) });
  await memory.addConversation({ ...sample.conversation, sessions: sample.conversation.sessions.slice(0, 4) });
  await memory.close();
});
afterAll(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
  await rm(dir, { recursive: true, force: true });
});

/** A copy of the grown memory, changed by `edit` (raw SQL) first. */
async function copyOf(name: string, edit?: (db: Database.Database) => void): Promise<GraphStore> {
  const path = join(dir, `${name}.sqlite`);
  await copyFile(grown, path);
  if (edit) {
    const db = new Database(path);
    edit(db);
    db.close();
  }
  const store = await openSqliteStore(path);
  opened.push(store);
  return store;
}

function hostOf(store: GraphStore): PartitionHost {
  return { store, embedder: hashEmbedder(), createIndex: (dim) => usearch.createIndex({ dim }) };
}

async function workingSet(store: GraphStore): Promise<WorkingSnapshot> {
  return (await store.loadWorkingSet?.(DEFAULT_PARTITION)) as WorkingSnapshot;
}

function build(working: WorkingSnapshot, store: GraphStore, kind: 'flat' | 'hnsw' = 'flat'): MemoryState {
  const host = { ...hostOf(store), createIndex: (dim: number) => usearch.createIndex({ dim, kind }) };
  return stateFrom(working, host, { name: DEFAULT_PARTITION, revision: () => 0, meta: () => working.meta });
}

/** A SQL working set's keyed groups, as that store hands them over. */
function stemGroups(working: WorkingSnapshot): StemVectorGroup[] {
  return (working.keyedVectors ?? []).map((group) => {
    if ('ids' in group) throw new Error('a SQL store handed over a listed group');
    return group;
  });
}

/** The working set as IndexedDB hands it over: each group as its members' ids, their keys not stored. */
function listed(working: WorkingSnapshot, edit: (groups: ListedVectorGroup[]) => ListedVectorGroup[] = (groups) => groups): WorkingSnapshot {
  const groups = stemGroups(working).map(({ stem, members, data }) => ({ name: `vector group ${stem}`, ids: vectorGroupMembers(stem, members).map((member) => memberId(stem, member)), data }));
  return { ...working, keyedVectors: edit(groups) };
}

/** The working set as a store that keeps no keys hands it over: its vectors found by id. */
function byId(working: WorkingSnapshot): WorkingSnapshot {
  const vectors = new VectorTable();
  addKeyedGroups(vectors, working.keyedVectors ?? [], working.meta.dim);
  const { keyedVectors: _keys, ...rest } = working;
  return { ...rest, vectors };
}

/** Everything a reader sees of the vectors: each id's floats, and each index's hits for the first vectors of the memory as queries. */
function vectorView(state: MemoryState): unknown {
  const ids = [...state.graph.vectors.keys()].sort();
  const queries = ids.slice(0, 5).map((id) => state.graph.vectors.get(id) as Float32Array);
  return {
    vectors: ids.map((id) => [id, Array.from(state.graph.vectors.get(id) ?? [])]),
    hits: SPACES.map((space) => queries.map((query) => state.indexes.search(space, query, 50).map((hit) => [state.graph.idForKey(hit.key), hit.score]))),
  };
}

/**
 * What `keyed` (a working set with keyed groups) builds against what `working`'s vectors found by
 * id build: the graph, the vectors and every index, on the flat index and on HNSW.
 */
function expectBuiltAsFoundById(keyed: WorkingSnapshot, working: WorkingSnapshot, store: GraphStore): void {
  const [byKey, found] = [build(keyed, store), build(byId(working), store)];
  expect(graphView(byKey)).toEqual(graphView(found));
  expect(vectorView(byKey)).toEqual(vectorView(found));
  expect(SPACES.reduce((sum, space) => sum + byKey.indexes.size(space), 0)).toBe(byKey.graph.vectors.size);
  // An index that reads no vector back (usearch's HNSW) is lent none: the table keeps them, as it keeps those found by id.
  const [byKeyHnsw, foundHnsw] = [build(keyed, store, 'hnsw'), build(byId(working), store, 'hnsw')];
  expect(vectorView(byKeyHnsw)).toEqual(vectorView(foundHnsw));
  expect(byKeyHnsw.graph.vectors.size).toBe(byKey.graph.vectors.size);
}

/** The `member_keys` of every group, by stem. */
function keyRows(db: Database.Database): Array<{ stem: string; members: string; member_keys: Uint8Array | null }> {
  return db.prepare('SELECT stem, members, member_keys FROM vector_groups ORDER BY stem').all() as Array<{ stem: string; members: string; member_keys: Uint8Array | null }>;
}

describe('vector groups kept with their index keys', () => {
  it('an open hands the vectors to their indexes by key and builds what the vectors found by id build', async () => {
    const store = await copyOf('intact');
    const working = await workingSet(store);
    // The control: the keyed path is the one taken, over groups of several members.
    expect(working.keyedVectors?.length).toBeGreaterThan(0);
    expect(stemGroups(working).some((group) => JSON.parse(group.members).length > 1)).toBe(true);
    expect(working.vectors.size).toBe(0);
    expectBuiltAsFoundById(working, working, store);
  });

  it('hands groups listed by member id (as IndexedDB reads them) to their indexes by their records\' keys, as the vectors found by id', async () => {
    const store = await copyOf('listed');
    const working = await workingSet(store);
    expectBuiltAsFoundById(listed(working), working, store);
    // The control: the listed groups are handed over by key, not left to the vectors found by id.
    const takenByKey = (snapshot: WorkingSnapshot): boolean => {
      const state = build({ ...snapshot, keyedVectors: [], vectors: new VectorTable() }, store);
      return indexKeyedVectors(state, snapshot.keyedVectors ?? [], state.graph.vectors as VectorTable);
    };
    expect(takenByKey(listed(working))).toBe(true);
    // Ids that name no record, twice one id, a derived edge's id: the vectors are found by id instead, and build the same.
    const renamed = (groups: ListedVectorGroup[], rename: (ids: readonly string[]) => string[]) => groups.map((group, i) => (i === 0 ? { ...group, ids: rename(group.ids) } : group));
    const edits: Record<string, (groups: ListedVectorGroup[]) => ListedVectorGroup[]> = {
      'an id of no record': (groups) => renamed(groups, (ids) => ids.map((id, i) => (i === 0 ? `${id}x` : id))),
      'one id twice': (groups) => groups.map((group) => (group.ids.length > 1 ? { ...group, ids: group.ids.map((id, i) => (i === 1 ? (group.ids[0] as string) : id)) } : group)),
      'a derived edge\'s id': (groups) => renamed(groups, (ids) => ids.map((id, i) => (i === 0 ? `belongs_to:${id}` : id))),
    };
    // Each open as the one that finds the same vectors by id: the same graph and vectors, or the same error.
    const outcome = (snapshot: () => WorkingSnapshot): unknown => {
      try {
        const state = build(snapshot(), store);
        return { graph: graphView(state), vectors: vectorView(state) };
      } catch (error) {
        return error instanceof PrismError ? { error: error.code, message: error.message } : error;
      }
    };
    for (const [what, edit] of Object.entries(edits)) {
      const damaged = listed(working, edit);
      expect({ what, byKey: takenByKey(damaged) }).toEqual({ what, byKey: false });
      expect({ what, opened: outcome(() => damaged) }).toEqual({ what, opened: outcome(() => byId(damaged)) });
    }
    // The control: the edits change what is built.
    expect(outcome(() => listed(working, edits['an id of no record']))).not.toEqual(outcome(() => byId(working)));
  });

  it('a memory opened on its keys searches as one opened on a copy without them, and its writes keep keys', async () => {
    const open = async (store: GraphStore) => Memory.open({ store, embedder: hashEmbedder(), createIndex: (dim) => usearch.createIndex({ dim }) });
    const withKeys = await open(await copyOf('searched'));
    const without = await open(await copyOf('unkeyed', (db) => db.prepare('UPDATE vector_groups SET member_keys = NULL').run()));
    for (const query of ['What did Caroline research?', 'When did Melanie paint a sunrise?', 'support group']) {
      const [a, b] = [await withKeys.search(query, { budget: 512 }), await without.search(query, { budget: 512 })];
      expect(a.context).toEqual(b.context);
      expect(a.units.map((unit) => [unit.episodeId, unit.score])).toEqual(b.units.map((unit) => [unit.episodeId, unit.score]));
    }
    // Writes after the open reach vectors lent by key as they reach those found by id: an add, a session deleted, searches after.
    for (const memory of [withKeys, without]) {
      await memory.add([{ speaker: 'Caroline', text: 'I adopted a second dog, a beagle named Rex.' }], { sessionId: 'later', date: '2023-09-01' });
      await memory.delete({ sessionId: (await memory.list())[1]?.sessionId ?? '' });
    }
    expect(await withKeys.stats()).toEqual(await without.stats());
    for (const query of ['a beagle named Rex', 'What did Caroline research?', 'painting']) {
      const [a, b] = [await withKeys.search(query, { budget: 512 }), await without.search(query, { budget: 512 })];
      expect(a.context).toEqual(b.context);
    }
    const vectorsOf = async (memory: Memory) => [...(await memory.inspect()).snapshot().vectors].map(([id, vector]) => [id, Array.from(vector)] as const).sort((a, b) => (a[0] < b[0] ? -1 : 1));
    const [keptByKey, keptById] = [await vectorsOf(withKeys), await vectorsOf(without)];
    expect(keptByKey.length).toBeGreaterThan(0);
    expect(keptByKey).toEqual(keptById);
    expect((await withKeys.inspect()).graph.vectors.size).toBe(keptByKey.length);
    await withKeys.close();
    await without.close();
    const db = new Database(join(dir, 'searched.sqlite'), { readonly: true });
    const rows = keyRows(db);
    db.close();
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((row) => row.member_keys !== null)).toBe(true);
  });

  it('leaves keys that do not name the member\'s node to the vectors found by id', async () => {
    const intact = new Database(grown, { readonly: true });
    const rows = keyRows(intact);
    intact.close();
    const keysOf = (row: (typeof rows)[number]) => decodeGroupKeys(row.member_keys as Uint8Array, JSON.parse(row.members).length) as number[];
    const [first, second] = rows;
    const several = rows.find((row) => keysOf(row).length > 1);
    if (!first || !second || !several) throw new Error('the grown memory has too few groups');
    const setKeys = (db: Database.Database, stem: string, keys: number[]) => db.prepare('UPDATE vector_groups SET member_keys = ? WHERE stem = ?').run(encodeGroupKeys(keys), stem);
    const damages: Record<string, (db: Database.Database) => void> = {
      'another group\'s keys': (db) => setKeys(db, first.stem, keysOf(second).slice(0, keysOf(first).length).concat(keysOf(first)).slice(0, keysOf(first).length)),
      'a key past the memory\'s next key': (db) => setKeys(db, first.stem, keysOf(first).map(() => 10_000_000)),
      'a group\'s keys in another order': (db) => setKeys(db, several.stem, [...keysOf(several)].reverse()),
      'keys that do not read as one a member': (db) => {
        db.prepare('UPDATE vector_groups SET member_keys = ? WHERE stem = ?').run(Buffer.from([0x80]), first.stem);
        setKeys(db, several.stem, keysOf(several).slice(1));
      },
    };
    for (const [what, damage] of Object.entries(damages)) {
      const store = await copyOf(`damaged-${Object.keys(damages).indexOf(what)}`, damage);
      const working = await workingSet(store);
      expect({ what, keyed: working.keyedVectors !== undefined }).toEqual({ what, keyed: true });
      const state = build(working, store);
      expect({ what, graph: graphView(state), vectors: vectorView(state) }).toEqual({ what, graph: graphView(build(byId(working), store)), vectors: vectorView(build(byId(working), store)) });
      // Each damaged group's first vector is found under its own node's key, which the damaged keys do not name.
      for (const stem of [first.stem, several.stem]) {
        const [member] = JSON.parse(rows.find((row) => row.stem === stem)?.members ?? '[]') as Array<string | null>;
        const ownId = member === null ? stem : `${stem}:${member}`;
        const [hit] = state.indexes.search(state.graph.nodes.get(ownId)?.layer ?? 'episode', state.graph.vectors.get(ownId) as Float32Array, 1);
        expect({ what, hit: hit && state.graph.idForKey(hit.key) }).toEqual({ what, hit: ownId });
      }
    }
    // A group without keys (written by an older version): the store hands every vector over by id.
    const store = await copyOf('unkeyed-group', (db) => db.prepare('UPDATE vector_groups SET member_keys = NULL WHERE stem = ?').run(several.stem));
    const working = await workingSet(store);
    expect(working.keyedVectors).toBeUndefined();
    expect(vectorView(build(working, store))).toEqual(vectorView(build(await workingSet(await copyOf('keyed-again')), store)));
  });

  it('fails a damaged vector value as the open that finds vectors by id fails it (CORRUPT_CHECKPOINT)', async () => {
    const cut = (db: Database.Database) => db.prepare('UPDATE vector_groups SET data = substr(data, 1, 10) WHERE stem = (SELECT min(stem) FROM vector_groups)').run();
    const keyedStore = await copyOf('cut-keyed', cut);
    const keyedFailure = await (async () => build(await workingSet(keyedStore), keyedStore))().catch((error: unknown) => error);
    const unkeyedStore = await copyOf('cut-unkeyed', (db) => {
      cut(db);
      db.prepare('UPDATE vector_groups SET member_keys = NULL').run();
    });
    const unkeyedFailure = await (async () => build(await workingSet(unkeyedStore), unkeyedStore))().catch((error: unknown) => error);
    expect(keyedFailure).toBeInstanceOf(PrismError);
    expect((keyedFailure as PrismError).code).toBe('CORRUPT_CHECKPOINT');
    expect((keyedFailure as PrismError).message).toBe((unkeyedFailure as PrismError).message);
  });

  it('gives the groups of a file written before the keys theirs on first open, but where a member\'s record does not read', async () => {
    const intact = new Database(grown, { readonly: true });
    const rows = keyRows(intact);
    intact.close();
    const [damaged] = rows;
    if (!damaged) throw new Error('no group');
    const [member] = JSON.parse(damaged.members) as Array<string | null>;
    await copyOf('schema-9', (db) => {
      db.prepare('UPDATE vector_groups SET member_keys = NULL').run();
      db.prepare('UPDATE nodes SET json = ? WHERE id = ?').run('[1, "cut', member === null ? damaged.stem : `${damaged.stem}:${member}`);
      db.prepare('UPDATE prism_schema SET version = 9').run();
    });
    const db = new Database(join(dir, 'schema-9.sqlite'), { readonly: true });
    const upgraded = keyRows(db);
    db.close();
    expect(upgraded.map((row) => [row.stem, row.member_keys === null ? null : Buffer.from(row.member_keys).toString('hex')])).toEqual(
      rows.map((row) => [row.stem, row.stem === damaged.stem ? null : Buffer.from(row.member_keys as Uint8Array).toString('hex')]),
    );
  });

  it('writes no keys for a group whose vector comes without its node or edge, and then opens by id', async () => {
    const store = await copyOf('vector-alone');
    const working = await workingSet(store);
    const [group] = stemGroups(working);
    if (!group) throw new Error('no keyed group');
    const [member] = JSON.parse(group.members) as Array<string | null>;
    const id = member === null ? group.stem : `${group.stem}:${member}`;
    const vector = build(working, store).graph.vectors.get(id) as Float32Array;
    await store.commit(DEFAULT_PARTITION, { putVectors: [[id, vector]] });
    const after = await workingSet(store);
    expect(after.keyedVectors).toBeUndefined();
    expect(after.vectors.has(id)).toBe(true);
  });

  it('builds from vectors read after the records (as IndexedDB hands them over) what the vectors handed over with them build', async () => {
    const store = await copyOf('later');
    // The records handed over first, `take` moving what the vectors complete into their promise.
    type Taken = { records: WorkingSnapshot; later: Promise<LaterVectors> };
    const later = (snapshot: WorkingSnapshot, take: (records: WorkingSnapshot, whole: WorkingSnapshot) => Taken = (records, whole) => ({ records, later: Promise.resolve(vectorsOf(whole)) })): WorkingSnapshot => {
      const { keyedVectors: _keyed, vectors: _vectors, ...records } = snapshot;
      const taken = take({ ...records, vectors: new VectorTable() }, snapshot);
      return { ...taken.records, vectorsLater: taken.later };
    };
    const vectorsOf = (snapshot: WorkingSnapshot, edges: WorkingSnapshot['edges'] = []): LaterVectors => ({ vectors: snapshot.vectors, edges, ...(snapshot.keyedVectors ? { keyedVectors: snapshot.keyedVectors } : {}) });
    const checked: WorkingSnapshot[] = [];
    const asRead = (snapshot: WorkingSnapshot, host = hostOf(store)) => stateAsRead(snapshot, host, { name: DEFAULT_PARTITION, revision: () => 0, meta: () => snapshot.meta }, (complete) => void checked.push(complete));
    // Each side from a working set of its own (a graph takes over the table it is built with).
    const expectSame = async (form: (working: WorkingSnapshot) => WorkingSnapshot, deferred: (snapshot: WorkingSnapshot) => WorkingSnapshot, checkedWhole: boolean) => {
      checked.length = 0;
      const read = await asRead(deferred(form(await workingSet(store))));
      const built = build(form(await workingSet(store)), store);
      expect(graphView(read)).toEqual(graphView(built));
      expect(vectorView(read)).toEqual(vectorView(built));
      // Keyed vectors alone go to the graph built meanwhile; anything else is checked whole and built again.
      expect(checked.length).toBe(checkedWhole ? 1 : 0);
    };
    const same = (working: WorkingSnapshot) => working;
    // Keyed as a SQL store keeps them, listed as IndexedDB does, or found by id (a store of singles).
    await expectSame(same, (snapshot) => later(snapshot), false);
    await expectSame((working) => listed(working), (snapshot) => later(snapshot), false);
    await expectSame(byId, (snapshot) => later(snapshot), true);
    // Keys not to trust: found by id, as at any open.
    const damaged = (working: WorkingSnapshot) => listed(working, (groups) => groups.map((group, i) => (i === 0 ? { ...group, ids: group.ids.map((id, j) => (j === 0 ? `${id}x` : id)) } : group)));
    await expectSame(damaged, (snapshot) => later(snapshot), true);
    // A relation edge with a vector comes with the vectors: held as `edges` holds it (here one left in the store, held as well).
    const holding = (working: WorkingSnapshot) => {
      const [relation] = working.relations?.all().edges ?? [];
      if (!relation) throw new Error('the grown memory holds no relation edge');
      return { ...working, edges: [...working.edges, relation] };
    };
    const withRelation = (records: WorkingSnapshot, whole: WorkingSnapshot) => ({ records: { ...records, edges: records.edges.slice(0, -1) }, later: Promise.resolve(vectorsOf(whole, records.edges.slice(-1))) });
    await expectSame(holding, (snapshot) => later(snapshot, withRelation), true);
    // A working set with its vectors still to come is not one stateFrom builds.
    const unread = later(await workingSet(store));
    expect(() => build(unread, store)).toThrow(/vectors read/);
    await unread.vectorsLater;
    // A read that fails once the records were handed over fails the open, leaving no index undisposed.
    const made: string[] = [];
    const counting: PartitionHost = {
      ...hostOf(store),
      createIndex: (dim) => {
        const index = usearch.createIndex({ dim });
        const dispose = index.dispose.bind(index);
        made.push('made');
        index.dispose = () => {
          made.push('disposed');
          dispose();
        };
        return index;
      },
    };
    const failure = new PrismError('STORE_IO', 'the read failed');
    const failing = later(await workingSet(store), (records) => ({ records, later: Promise.reject(failure) }));
    await expect(asRead(failing, counting)).rejects.toBe(failure);
    expect(made.filter((step) => step === 'disposed').length).toBe(made.filter((step) => step === 'made').length);
  });
});
