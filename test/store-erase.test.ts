import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PrismError } from '../src/errors.ts';
import { Memory } from '../src/memory.ts';
import { SQL_SCHEMA_VERSION } from '../src/store/sql.ts';
import { openSqliteStore } from '../src/store/sqlite.node.ts';
import { snapshotAsBatch } from '../src/store/snapshot.ts';
import { sampleMemory } from '../e2e/support/sample-memory.ts';
import { bytesOf, deleteOnDisk, findOnDisk, KEPT_FOUND_SHARE } from './faults/erase-scenarios.ts';
import { hashEmbedder } from './helpers/hash-embedder.ts';
import { testRuntime, type TestRuntime } from './helpers/runtime.ts';

let runtime: TestRuntime;
beforeAll(async () => {
  runtime = await testRuntime();
});

let dir = '';
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'prism-erase-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('delete on disk (SQLite)', () => {
  it('leaves none of a deleted session or user, text or name, in any file of the store, open or closed; the rest stays searchable', async () => {
    const outcome = await deleteOnDisk(dir, runtime, { sessions: 4, messages: 25 });
    // Both users' lexical indexes were saved with their words before the deletes.
    expect(outcome.savedIndexBytes).toBeGreaterThan(0);
    expect(outcome.afterSessionDelete).toEqual([]);
    expect(outcome.afterUserDelete).toEqual([]);
    expect(outcome.afterClose).toEqual([]);
    // The search reads the same files and finds every kept message, and a search still answers.
    expect(outcome.keptOnDisk).toBeGreaterThanOrEqual(KEPT_FOUND_SHARE * outcome.kept);
    expect(outcome.keptSearchable).toBe(outcome.kept);
  }, 120_000);

  it("a delete waits for another connection's read of an older snapshot, then erases", async () => {
    const path = join(dir, 'memory.sqlite');
    const memory = await Memory.open({ store: await openSqliteStore(path), embedder: hashEmbedder(), createIndex: runtime.createIndex, llm: null });
    const secret = 'The locker code is zq-erase-7731.';
    await memory.add([{ speaker: 'Ana', text: secret }], { sessionId: 'secret' });
    await memory.add([{ speaker: 'Ana', text: 'The weather was mild.' }], { sessionId: 'kept' });
    const reader = new Database(path);
    reader.exec('BEGIN');
    reader.prepare('SELECT count(*) FROM chunks').get();
    const started = Date.now();
    setTimeout(() => reader.exec('COMMIT'), 300);
    await memory.delete({ sessionId: 'secret' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(await findOnDisk(dir, [secret])).toEqual([]);
    reader.close();
    await memory.close();
  });

  it('fails a delete with STORE_BUSY when the reader outlasts the lock timeout; the delete is committed and the next one erases', async () => {
    const path = join(dir, 'memory.sqlite');
    const memory = await Memory.open({ store: await openSqliteStore(path, { lockTimeoutMs: 200 }), embedder: hashEmbedder(), createIndex: runtime.createIndex, llm: null });
    const secrets = ['The locker code is zq-erase-4410.', 'The safe code is zq-erase-5521.'];
    for (const [i, text] of secrets.entries()) await memory.add([{ speaker: 'Ana', text }], { sessionId: `secret-${i}` });
    const reader = new Database(path);
    reader.exec('BEGIN');
    reader.prepare('SELECT count(*) FROM chunks').get();
    const error = await memory.delete({ sessionId: 'secret-0' }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(PrismError);
    expect(error).toMatchObject({ code: 'STORE_BUSY', message: expect.stringMatching(/the delete is committed/) });
    expect((await memory.list()).map((s) => s.sessionId)).toEqual(['secret-1']);
    expect(bytesOf(await findOnDisk(dir, [secrets[0]!]))).toBeGreaterThan(0);
    reader.exec('COMMIT');
    reader.close();
    await memory.delete({ sessionId: 'secret-1' });
    expect(await findOnDisk(dir, secrets)).toEqual([]);
    await memory.close();
  });
});

describe('delete on disk: the LLM cache', () => {
  it('erases the cached replies deleted with their chunks, keeps the others', async () => {
    const store = await openSqliteStore(join(dir, 'memory.sqlite'));
    const reply = '{"facts":["Zoe keeps the spare key zq-cache-8812 in her left boot"]}';
    await store.commit('zoe', snapshotAsBatch(sampleMemory({ episodes: 2 })));
    await store.putCached('prompt-1', reply, ['chunk-x']);
    await store.putCached('prompt-2', 'the kept reply zq-cache-0990', ['chunk-y']);
    // As Memory.delete does: the replies tagged with the deleted chunks, then the records.
    await store.deleteCached(['chunk-x']);
    await store.clear('zoe');
    expect(await findOnDisk(dir, [reply])).toEqual([]);
    expect(bytesOf(await findOnDisk(dir, ['zq-cache-0990']))).toBeGreaterThan(0);
    expect(await store.getCached('prompt-2')).toBe('the kept reply zq-cache-0990');
    await store.close();
  });
});

describe('revisions without partition names', () => {
  const P = 'zoe-private';
  const sample = sampleMemory({ episodes: 2 });

  it('a cleared partition leaves no row naming it, and its revision never returns to one seen before', async () => {
    const path = join(dir, 'memory.sqlite');
    const store = await openSqliteStore(path);
    const seen = [await store.revision(P)];
    seen.push(await store.commit(P, snapshotAsBatch(sample)));
    await store.commit('other', snapshotAsBatch(sample));
    await store.clear(P);
    seen.push(await store.revision(P));
    seen.push(await store.commit(P, snapshotAsBatch(sample)));
    await store.clear();
    seen.push(await store.revision(P));
    // Strictly growing: a handle holding any earlier revision reloads.
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(new Set(seen).size).toBe(seen.length);
    await store.close();
    const raw = new Database(path, { readonly: true });
    expect(raw.prepare('SELECT partition FROM revisions').all()).toEqual([]);
    raw.close();
    expect(await findOnDisk(dir, [P, 'other'])).toEqual([]);
  });

  it('upgrades a schema-1 database: rows of cleared partitions go, every revision stays or grows', async () => {
    const path = join(dir, 'memory.sqlite');
    const store = await openSqliteStore(path);
    for (let i = 0; i < 3; i++) await store.commit(P, { ...snapshotAsBatch(sample), putHashes: [`h${i}`] });
    await store.close();
    // Back to schema 1, with the row schema 1 left behind for a partition it had cleared.
    const raw = new Database(path);
    raw.exec(
      `DROP TABLE clear_revision; DROP TABLE entity_pages; DROP TABLE vector_groups; DROP TABLE derived; CREATE TABLE vectors (partition TEXT NOT NULL, id TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (partition, id)); ` +
        `UPDATE prism_schema SET version = 1; INSERT INTO revisions (partition, revision) VALUES ('gone-user', 7)`,
    );
    raw.close();
    const upgraded = await openSqliteStore(path);
    expect(await upgraded.revision(P)).toBe(3);
    expect(await upgraded.revision('gone-user')).toBe(7);
    expect(await upgraded.commit('gone-user', snapshotAsBatch(sample))).toBe(8);
    await upgraded.clear('gone-user');
    expect(await upgraded.revision('gone-user')).toBe(9);
    await upgraded.close();
    const check = new Database(path, { readonly: true });
    expect(check.prepare('SELECT version FROM prism_schema').get()).toEqual({ version: SQL_SCHEMA_VERSION });
    expect(check.prepare('SELECT partition FROM revisions').all()).toEqual([{ partition: P }]);
    check.close();
  });
});
