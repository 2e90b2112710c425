import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PrismError } from '../src/errors.ts';
import type { PrismErrorCode } from '../src/errors.ts';
import type { EntityNode, FacetPointNode, MemorySnapshot } from '../src/graph/types.ts';
import { CHECKPOINT_FORMAT_VERSION, decodeCheckpoint, encodeCheckpoint, exportCheckpoint, importCheckpoint } from '../src/store/checkpoint.ts';
import Database from 'better-sqlite3';
import { DEFAULT_PARTITION } from '../src/scope.ts';
import { LEGACY_FILES, MIGRATED_SUFFIX, migrateFileStore } from '../src/store/file.node.ts';
import { decodeChunkRow, decodeEdge, decodeNode, encodeEdge, encodeNode } from '../src/store/record-codec.ts';
import { derivedEdgesOf } from '../src/graph/derived-edges.ts';
import { MIGRATIONS, SQL_SCHEMA_VERSION, type MigrationStep } from '../src/store/sql.ts';
import { encodeVectorGroup, vectorGroupOf } from '../src/store/vector-groups.ts';
import { mulberry32 } from '../src/eval/stats.ts';
import { appended } from '../src/util/appended.ts';
import { checkMemoryStructure } from '../src/store/validate-snapshot.ts';
import { openSqliteStore } from '../src/store/sqlite.node.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { applyBatch, snapshotAsBatch } from '../src/store/snapshot.ts';
import type { GraphStore, WriteBatch } from '../src/store/types.ts';
import { encodedBytes, encodeVector, roundVector } from '../src/store/vector-codec.ts';
import { foldingBatches, ingestShapedSample, pagedChunkIds, pagingBatches, sampleFollowUp, sampleMemory, sampleVector, vectorGroupBatches } from '../e2e/support/sample-memory.ts';

async function rejection(promise: Promise<unknown>): Promise<PrismError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PrismError);
  return err as PrismError;
}

function thrown(run: () => unknown): PrismError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(PrismError);
    return err as PrismError;
  }
  throw new Error('expected a PrismError, nothing was thrown');
}

async function expectCode(promise: Promise<unknown>, code: PrismErrorCode): Promise<PrismError> {
  const err = await rejection(promise);
  expect(err.code).toBe(code);
  return err;
}

/** The canonical form of a snapshot (id order), which is what every store loads. */
const canonical = (snapshot: MemorySnapshot): MemorySnapshot => applyBatch(null, snapshotAsBatch(snapshot));

/** A migration step of the early schemas, which are statements alone. */
function statementOf(step: MigrationStep): string {
  if (typeof step !== 'string') throw new Error('expected a statement, got a step in JavaScript');
  return step;
}

function shuffled<T>(items: T[]): T[] {
  return [...items].reverse();
}

describe('checkpoint format', () => {
  const sample = sampleMemory();

  it('round-trips a snapshot exactly', () => {
    const bytes = encodeCheckpoint(sample);
    const decoded = decodeCheckpoint(bytes);
    expect(decoded).toEqual(canonical(sample));
    expect(decoded.vectors.size).toBe(sample.vectors.size);
    expect(decoded.vectors.get('ep:2')).toEqual(sample.vectors.get('ep:2'));
    expect(encodeCheckpoint(decoded)).toEqual(bytes);
  });

  it('gives the same bytes whatever the record order', () => {
    const reordered: MemorySnapshot = {
      ...sample,
      nodes: shuffled(sample.nodes),
      edges: shuffled(sample.edges),
      chunks: shuffled(sample.chunks),
      vectors: new Map(shuffled([...sample.vectors])),
      hashes: new Set(shuffled([...sample.hashes])),
    };
    expect(encodeCheckpoint(reordered)).toEqual(encodeCheckpoint(sample));
  });

  it('decodes from an unaligned view into a larger buffer', () => {
    const bytes = encodeCheckpoint(sample);
    const padded = new Uint8Array(bytes.length + 3);
    padded.set(bytes, 1);
    expect(decodeCheckpoint(padded.subarray(1, 1 + bytes.length))).toEqual(canonical(sample));
  });

  it('refuses to encode an invalid snapshot', () => {
    const bad = { ...sample, vectors: new Map([['ep:0', new Float32Array(3)]]) };
    expect(thrown(() => encodeCheckpoint(bad)).code).toBe('DIMENSION_MISMATCH');
  });

  describe('detects damage and names the cause', () => {
    const bytes = encodeCheckpoint(sample);
    const damaged = (change: (copy: Uint8Array) => Uint8Array | void): PrismError => {
      const copy = bytes.slice();
      const result = change(copy) ?? copy;
      const err = thrown(() => decodeCheckpoint(result));
      expect(err.code).toBe('CORRUPT_CHECKPOINT');
      return err;
    };

    it('a flipped byte in the JSON section', () => {
      expect(damaged((b) => void (b[40] = (b[40] as number) ^ 0x01)).message).toMatch(/checksum mismatch/);
    });
    it('a flipped byte in the vector section', () => {
      expect(damaged((b) => void (b[b.length - 100] = (b[b.length - 100] as number) ^ 0x80)).message).toMatch(/checksum mismatch/);
    });
    it('a flipped checksum', () => {
      expect(damaged((b) => void (b[b.length - 1] = (b[b.length - 1] as number) ^ 0xff)).message).toMatch(/checksum mismatch/);
    });
    it('truncation', () => {
      expect(damaged((b) => b.subarray(0, b.length - 1)).message).toMatch(/truncated: \d+ bytes, the header promises/);
      expect(damaged((b) => b.subarray(0, 10)).message).toMatch(/truncated/);
      expect(damaged((b) => b.subarray(0, 3)).message).toMatch(/truncated: 3 bytes/);
      expect(damaged(() => new Uint8Array(0)).message).toMatch(/truncated: 0 bytes/);
    });
    it('trailing bytes', () => {
      expect(damaged(() => Uint8Array.of(...bytes, 0)).message).toMatch(/1 unexpected bytes after the end/);
    });
    it('wrong magic', () => {
      expect(damaged((b) => void (b[1] = 0x51)).message).toMatch(/wrong magic/);
      expect(damaged(() => new TextEncoder().encode('{"meta":{}}')).message).toMatch(/wrong magic/);
    });
    it('an unknown format version', () => {
      const err = damaged((b) => new DataView(b.buffer).setUint32(8, CHECKPOINT_FORMAT_VERSION + 1, true));
      expect(err.message).toMatch(new RegExp(`unsupported format version ${CHECKPOINT_FORMAT_VERSION + 1}`));
    });
  });
});

describe('applyBatch', () => {
  it('is pure and applies deletions before puts', () => {
    const before = sampleMemory({ episodes: 2 });
    const frozen = encodeCheckpoint(before);
    const replacement = { ...before.chunks[0]!, text: 'replaced' };
    const after = applyBatch(before, { deleteChunks: [replacement.id], putChunks: [replacement], deleteNodes: ['ep:1'] });
    expect(after.chunks.find((c) => c.id === replacement.id)?.text).toBe('replaced');
    expect(after.nodes.some((n) => n.id === 'ep:1')).toBe(false);
    expect(encodeCheckpoint(before)).toEqual(frozen);
  });
});

interface Backend {
  name: string;
  open(): Promise<GraphStore>;
}

let dir = '';
const opened: GraphStore[] = [];
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'prism-store-'));
});
afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
  await rm(dir, { recursive: true, force: true });
});

const sqlitePath = (): string => join(dir, 'memory.sqlite');
async function openSqlite(options?: Parameters<typeof openSqliteStore>[1]): Promise<GraphStore> {
  const store = await openSqliteStore(sqlitePath(), options);
  opened.push(store);
  return store;
}

const backends: Backend[] = [
  { name: 'MemoryStore', open: async () => new MemoryStore() },
  { name: 'SqlStore (SQLite)', open: () => openSqlite() },
];

const P = DEFAULT_PARTITION;
const OTHER = 'bob\u001fagent-1\u001f';

describe.each(backends)('$name', (backend) => {
  const sample = sampleMemory();

  it('loads null when empty, then exactly what was committed', async () => {
    const store = await backend.open();
    expect(await store.load(P)).toBeNull();
    expect(await store.revision(P)).toBe(0);
    expect(await store.partitions()).toEqual([]);
    expect(await store.commit(P, snapshotAsBatch(sample))).toBe(1);
    expect(await store.load(P)).toEqual(canonical(sample));
    expect(encodeCheckpoint((await store.load(P))!)).toEqual(encodeCheckpoint(sample));
  });

  it('hands out copies: changing a loaded snapshot does not change the store', async () => {
    const store = await backend.open();
    await store.commit(P, snapshotAsBatch(sample));
    const loaded = (await store.load(P))!;
    loaded.nodes.pop();
    loaded.vectors.get('ep:0')!.fill(0);
    loaded.hashes.clear();
    expect(await store.load(P)).toEqual(canonical(sample));
  });

  it('keeps partitions apart and bumps only the written one', async () => {
    const store = await backend.open();
    const other = sampleMemory({ episodes: 2, seed: 3 });
    await store.commit(P, snapshotAsBatch(sample));
    expect(await store.commit(OTHER, snapshotAsBatch(other))).toBe(1);
    expect(await store.commit(P, { deleteNodes: ['ep:0'] })).toBe(2);
    expect((await store.partitions()).sort()).toEqual([OTHER, P].sort());
    expect(await store.load(OTHER)).toEqual(canonical(other));
    expect((await store.load(P))!.nodes.some((n) => n.id === 'ep:0')).toBe(false);
    expect(await store.revision(OTHER)).toBe(1);
    expect(await store.revision(P)).toBe(2);
    expect(await store.load('nobody')).toBeNull();
  });

  it('rejects an invalid batch whole and keeps the state and revision', async () => {
    const store = await backend.open();
    await expectCode(store.commit(P, { putNodes: sample.nodes }), 'INVALID_INPUT');
    expect(await store.load(P)).toBeNull();
    expect(await store.revision(P)).toBe(0);
    await store.commit(P, snapshotAsBatch(sample));
    const before = await exportCheckpoint(store, P);
    const valid: WriteBatch = { deleteNodes: ['ep:0'], putHashes: ['new-hash'], deleteHashes: [...sample.hashes] };
    const random = () => 0.5;
    await expectCode(store.commit(P, { ...valid, putVectors: [['ep:1', new Float32Array(sample.meta.dim - 1)]] }), 'DIMENSION_MISMATCH');
    const nan = sampleVector(random, sample.meta.dim);
    nan[5] = Number.NaN;
    await expectCode(store.commit(P, { ...valid, putVectors: [['ep:1', nan]] }), 'NON_FINITE_VECTOR');
    const badLayer = { ...sample.nodes[1]!, layer: 'paragraph' } as unknown as MemorySnapshot['nodes'][number];
    expect((await expectCode(store.commit(P, { ...valid, putNodes: [badLayer] }), 'INVALID_INPUT')).message).toMatch(/unknown layer paragraph/);
    await expectCode(store.commit(P, { ...valid, meta: { ...sample.meta, dim: 8 } }), 'DIMENSION_MISMATCH');
    expect(await exportCheckpoint(store, P)).toEqual(before);
    expect(await store.revision(P)).toBe(1);
  });

  it('applies deletions of every kind', async () => {
    const store = await backend.open();
    await store.commit(P, snapshotAsBatch(sample));
    const edge = sample.edges.find((e) => e.type === 'temporal')!;
    const chunk = sample.chunks[1]!;
    await store.commit(P, {
      deleteNodes: ['ep:1', 'missing-node'],
      deleteEdges: [edge.id],
      deleteChunks: [chunk.id],
      deleteVectors: ['ep:1', edge.id],
      deleteHashes: [chunk.id],
      meta: { ...sample.meta, chunkCount: sample.meta.chunkCount - 1 },
    });
    const loaded = (await store.load(P))!;
    expect(loaded.nodes.map((n) => n.id)).not.toContain('ep:1');
    expect(loaded.nodes).toHaveLength(sample.nodes.length - 1);
    expect(loaded.edges.map((e) => e.id)).not.toContain(edge.id);
    expect(loaded.edges).toHaveLength(sample.edges.length - 1);
    expect(loaded.chunks.map((c) => c.id)).toEqual(sample.chunks.filter((c) => c !== chunk).map((c) => c.id).sort());
    expect(loaded.vectors.has('ep:1') || loaded.vectors.has(edge.id)).toBe(false);
    expect(loaded.vectors.size).toBe(sample.vectors.size - 2);
    expect(loaded.hashes.has(chunk.id)).toBe(false);
    expect(loaded.meta.chunkCount).toBe(sample.meta.chunkCount - 1);
  });

  it('allows a new dimension only when every old vector goes in the same batch', async () => {
    const store = await backend.open();
    await store.commit(P, snapshotAsBatch(sample));
    const small = sampleVector(() => 0.25, 8);
    await store.commit(P, { meta: { ...sample.meta, dim: 8 }, deleteVectors: [...sample.vectors.keys()], putVectors: [['ep:0', small]] });
    const loaded = (await store.load(P))!;
    expect(loaded.meta.dim).toBe(8);
    expect([...loaded.vectors.keys()]).toEqual(['ep:0']);
  });

  it('clear(partition) empties one partition and bumps its revision; clear() empties everything', async () => {
    const store = await backend.open();
    await store.commit(P, snapshotAsBatch(sample));
    await store.commit(OTHER, snapshotAsBatch(sample));
    await store.putCached('k', 'v');
    await store.clear(OTHER);
    expect(await store.load(OTHER)).toBeNull();
    expect(await store.revision(OTHER)).toBe(2);
    expect(await store.partitions()).toEqual([P]);
    expect(await store.load(P)).toEqual(canonical(sample));
    expect(await store.getCached('k')).toBe('v');
    // The cleared partition starts over like a new one: the first batch must carry meta.
    await expectCode(store.commit(OTHER, { putHashes: ['h'] }), 'INVALID_INPUT');
    await store.clear();
    expect(await store.partitions()).toEqual([]);
    expect(await store.load(P)).toBeNull();
    // Revisions only grow: SQLite takes a cleared partition's from one store-wide counter.
    expect(await store.revision(P)).toBeGreaterThan(1);
    expect(await store.revision(OTHER)).toBeGreaterThan(2);
    expect(await store.getCached('k')).toBeUndefined();
  });

  it('keeps a cache whose tagged entries can be deleted by tag', async () => {
    const store = await backend.open();
    expect(await store.getCached('prompt#1')).toBeUndefined();
    await store.putCached('prompt#1', '{"answer":"Rex"}', ['chunk-a']);
    await store.putCached('prompt#1', '{"answer":"Rex!"}', ['chunk-a', 'chunk-b']);
    await store.putCached('multi\nline', 'ü\n✓', ['chunk-c']);
    await store.putCached('untagged', 'u');
    await store.putCached('retagged', 'r', ['chunk-b']);
    await store.putCached('retagged', 'r2', ['chunk-d']);
    expect(await store.getCached('prompt#1')).toBe('{"answer":"Rex!"}');
    expect(await store.getCached('multi\nline')).toBe('ü\n✓');
    await store.deleteCached(['chunk-b', 'no-such-tag']);
    expect(await store.getCached('prompt#1')).toBeUndefined();
    expect(await store.getCached('retagged')).toBe('r2');
    expect(await store.getCached('multi\nline')).toBe('ü\n✓');
    expect(await store.getCached('untagged')).toBe('u');
    await store.deleteCached(['chunk-d', 'chunk-c']);
    expect(await store.getCached('retagged')).toBeUndefined();
    expect(await store.getCached('multi\nline')).toBeUndefined();
    expect(await store.getCached('untagged')).toBe('u');
  });

  it('runs writer-lock sections of one partition one at a time, other partitions alongside', async () => {
    const store = await backend.open();
    const events: string[] = [];
    const section = (partition: string, name: string, ms: number) =>
      store.withWriteLock(partition, async () => {
        events.push(`${name}+`);
        await new Promise((r) => setTimeout(r, ms));
        events.push(`${name}-`);
        return name;
      });
    const results = await Promise.all([section(P, 'a', 40), section(P, 'b', 1), section(OTHER, 'c', 1)]);
    expect(results).toEqual(['a', 'b', 'c']);
    expect(events.indexOf('b+')).toBeGreaterThan(events.indexOf('a-'));
    expect(events.indexOf('c-')).toBeLessThan(events.indexOf('a-'));
    // A failing section releases the lock.
    await expect(store.withWriteLock(P, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await store.withWriteLock(P, async () => 'after')).toBe('after');
  });

  it('imports a checkpoint in place of what one partition holds', async () => {
    const store = await backend.open();
    await store.commit(P, snapshotAsBatch(sampleMemory({ episodes: 5, seed: 1 })));
    await store.commit(OTHER, snapshotAsBatch(sample));
    const other = sampleMemory({ episodes: 2, seed: 2 });
    expect(await importCheckpoint(store, P, encodeCheckpoint(other))).toBe(2);
    expect(await store.load(P)).toEqual(canonical(other));
    expect(await exportCheckpoint(store, P)).toEqual(encodeCheckpoint(other));
    expect(await store.load(OTHER)).toEqual(canonical(sample));
  });

  it('refuses to export an empty partition', async () => {
    await expectCode(exportCheckpoint(await backend.open(), P), 'INVALID_INPUT');
  });
});

describe('SqlStore keeps what it can rebuild once', () => {
  const sample = ingestShapedSample();
  const table = (name: string) => new Database(sqlitePath(), { readonly: true }).prepare(`SELECT id, json FROM ${name}`).all() as Array<{ id: string; json: string }>;

  it('writes no row for an edge its node rebuilds, no chunk text or fact text twice, and reads back every record as committed', async () => {
    const store = await openSqlite();
    await store.commit(P, snapshotAsBatch(sample));
    const loaded = (await store.load(P))!;
    expect(loaded).toEqual(canonical(sample));
    // Key order too: checkpoints are the records' JSON.
    expect(loaded.nodes.map((n) => JSON.stringify(n))).toEqual(canonical(sample).nodes.map((n) => JSON.stringify(n)));
    expect(loaded.chunks.map((c) => JSON.stringify(c))).toEqual(canonical(sample).chunks.map((c) => JSON.stringify(c)));
    expect(table('edges').map((row) => decodeEdge(row.json, row.id).type).sort()).toEqual(['causal', 'causal', 'causal', 'temporal', 'temporal', 'temporal']);
    for (const row of table('chunks')) expect(JSON.parse(row.json).text).toBeNull();
    // A chunk's turns' texts once, in a column of their own, one after another; its record holds each turn's length.
    const chunkRows = new Database(sqlitePath(), { readonly: true }).prepare('SELECT id, json, text FROM chunks').all() as Array<{ id: string; json: string; text: string }>;
    for (const row of chunkRows) {
      const committed = sample.chunks.find((c) => c.id === row.id)!;
      expect(row.text).toBe(committed.turns.map((turn) => turn.text).join(''));
      expect((JSON.parse(row.json) as { turns: Array<{ text: unknown }> }).turns.map((turn) => turn.text)).toEqual(committed.turns.map((turn) => turn.text.length));
    }
    expect(chunkRows.some((row) => row.text.includes('adopted a puppy'))).toBe(true);
    for (const row of [...table('nodes'), ...table('chunks')]) expect(row.json).not.toContain('adopted a puppy');
    // A row's key is its record's id: a node array leaves it out, an edge array its type and ends.
    for (const row of table('nodes')) expect(JSON.parse(row.json)[1]).toBeNull();
    for (const row of table('edges')) expect(JSON.parse(row.json)[1]).toBeNull();
    for (const row of table('edges')) expect(decodeEdge(row.json).id).not.toBe(row.id);
  });

  it('applies later batches exactly as the reference store does: a node put again alone, folded edges deleted alone, a node deleted alone, a chunk deleted whole', async () => {
    const sql = await openSqlite();
    const reference = new MemoryStore();
    const batches = foldingBatches(sample);
    for (const [i, batch] of batches.entries()) {
      await sql.commit(P, batch);
      await reference.commit(P, batch);
      expect({ i, loaded: await sql.load(P) }).toEqual({ i, loaded: await reference.load(P) });
      // Put again alone, the node still folds its edges in.
      if (i === 1) expect(table('edges').map((row) => row.id)).not.toContain('belongs_to:point:1>facet:1');
    }
    const final = (await sql.load(P))!;
    expect(final.edges.some((e) => e.chunkId === 'chunk-7-3')).toBe(false);
    // The node deleted alone left its edges behind as rows, as any store keeps them.
    expect(final.edges.map((e) => e.id)).toContain('belongs_to:point:0>facet:0');
    // Every node put again as it is: an edge put on its own after its node folded it in (point:2's
    // involves_entity, key 900) keeps its key, not the one the node folded in before.
    const again = { putNodes: final.nodes };
    await sql.commit(P, again);
    await reference.commit(P, again);
    expect(await sql.load(P)).toEqual(await reference.load(P));
  });
});

describe('SqlStore reads rows written before they were keyed', () => {
  it('reads a schema-7 file (ids in every row), upgrades it without rewriting a row, and applies later batches as the reference store does', async () => {
    const sample = ingestShapedSample();
    const first = await openSqlite();
    await first.commit(P, snapshotAsBatch(sample));
    await first.close();
    // Every row as schema 7 wrote it: a node array with its id, an edge array with its type and ends.
    const raw = new Database(sqlitePath());
    const chunks = new Map((raw.prepare('SELECT json, text FROM chunks').all() as Array<{ json: string; text: string | null }>).map((row) => decodeChunkRow(row.json, row.text)).map((c) => [c.id, c]));
    for (const row of raw.prepare('SELECT id, json FROM nodes').all() as Array<{ id: string; json: string }>) {
      const { node, edgeKeys } = decodeNode(row.json, chunks, undefined, row.id);
      const json = encodeNode(node, derivedEdgesOf(node, edgeKeys), 'chunkId' in node ? chunks.get(node.chunkId) : undefined).json;
      raw.prepare('UPDATE nodes SET json = ? WHERE id = ?').run(json, row.id);
    }
    for (const row of raw.prepare('SELECT id, json FROM edges').all() as Array<{ id: string; json: string }>) {
      raw.prepare('UPDATE edges SET json = ? WHERE id = ?').run(encodeEdge(decodeEdge(row.json, row.id)), row.id);
    }
    raw.prepare('UPDATE prism_schema SET version = 7').run();
    const unkeyed = raw.prepare('SELECT id, json FROM nodes UNION ALL SELECT id, json FROM edges').all() as Array<{ id: string; json: string }>;
    raw.close();
    expect(unkeyed.every((row) => JSON.parse(row.json)[1] !== null)).toBe(true);

    const sql = await openSqlite();
    expect(await sql.load(P)).toEqual(canonical(sample));
    const db = new Database(sqlitePath(), { readonly: true });
    expect(db.prepare('SELECT version FROM prism_schema').get()).toEqual({ version: SQL_SCHEMA_VERSION });
    expect(db.prepare('SELECT id, json FROM nodes UNION ALL SELECT id, json FROM edges').all()).toEqual(unkeyed);
    db.close();
    // Folded edges deleted out of old rows, nodes put again, a chunk deleted: as the reference store.
    const reference = new MemoryStore();
    await reference.commit(P, snapshotAsBatch(sample));
    for (const [i, batch] of foldingBatches(sample).slice(1).entries()) {
      await sql.commit(P, batch);
      await reference.commit(P, batch);
      expect({ i, loaded: await sql.load(P) }).toEqual({ i, loaded: await reference.load(P) });
    }
  });
});

describe('SqlStore keeps a long Entity chunk list in pages', () => {
  it('rewrites only the pages a batch changes, drops the pages a shorter list or a delete leaves, and reads back what the reference store holds', async () => {
    const sql = await openSqlite();
    const reference = new MemoryStore();
    const batches = pagingBatches();
    // Every page row the store writes, logged by a trigger on the store's own file.
    await sql.commit(P, batches[0]!);
    await reference.commit(P, batches[0]!);
    const db = new Database(sqlitePath());
    // The record keeps a count and a digest, not the 600 ids.
    const record = (db.prepare("SELECT json FROM nodes WHERE id = 'entity:speaker'").get() as { json: string }).json;
    expect(record).not.toContain('chunk-paged');
    expect(record.length).toBeLessThan(120);
    db.exec('CREATE TABLE page_log (page INTEGER); CREATE TRIGGER log_pages AFTER INSERT ON entity_pages BEGIN INSERT INTO page_log VALUES (new.page); END');
    const written: number[][] = [];
    const stored: number[] = [];
    for (const batch of batches.slice(1)) {
      await sql.commit(P, batch);
      await reference.commit(P, batch);
      expect(await sql.load(P)).toEqual(await reference.load(P));
      written.push((db.prepare('SELECT page FROM page_log').all() as Array<{ page: number }>).map((row) => row.page));
      db.exec('DELETE FROM page_log');
      stored.push((db.prepare('SELECT count(*) AS n FROM entity_pages').get() as { n: number }).n);
    }
    db.close();
    // 601 ids: page 2 alone; 768: page 2; 769: page 3 begun; the first id gone: pages 0–2 (the
    // fourth goes); 300: two pages (the rest go); 100: in the record; 700: three pages; deleted: none.
    expect(written).toEqual([[2], [2], [3], [0, 1, 2], [0, 1], [], [0, 1, 2], []]);
    expect(stored).toEqual([3, 3, 4, 3, 2, 0, 3, 0]);
  });

  it('writes every page again when another writer changed the list since this one wrote it', async () => {
    const [first, second] = [await openSqlite(), await openSqlite()];
    const reference = new MemoryStore();
    const [base] = pagingBatches();
    const entity = base!.putNodes!.find((n): n is EntityNode => n.id === 'entity:speaker' && n.layer === 'entity')!;
    const other = pagedChunkIds(600).map((id) => `${id}-other`);
    // The first writer remembers the list it wrote; the second replaces it with a list of the same
    // length; the first then extends the list it remembers, which is no longer what is stored.
    const steps: Array<[GraphStore, WriteBatch]> = [
      [first, base!],
      [second, { putNodes: [{ ...entity, chunkIds: other }] }],
      [first, { putNodes: [{ ...entity, chunkIds: [...pagedChunkIds(600), 'chunk-paged-new'] }] }],
    ];
    for (const [store, batch] of steps) {
      await store.commit(P, batch);
      await reference.commit(P, batch);
    }
    expect(await first.load(P)).toEqual(await reference.load(P));
    expect(await second.load(P)).toEqual(await reference.load(P));
  });

  it('takes a list appended to the one it wrote as starting with it, and any other list only as its ids say', async () => {
    const sql = await openSqlite();
    const reference = new MemoryStore();
    const [base] = pagingBatches();
    const entity = base!.putNodes!.find((n): n is EntityNode => n.id === 'entity:speaker' && n.layer === 'entity')!;
    await sql.commit(P, base!);
    await reference.commit(P, base!);
    const db = new Database(sqlitePath());
    db.exec('CREATE TABLE page_log (page INTEGER); CREATE TRIGGER log_pages AFTER INSERT ON entity_pages BEGIN INSERT INTO page_log VALUES (new.page); END');
    const pagesWritten = async (chunkIds: string[]) => {
      const batch: WriteBatch = { putNodes: [{ ...entity, chunkIds }] };
      await sql.commit(P, batch);
      await reference.commit(P, batch);
      expect(await sql.load(P)).toEqual(await reference.load(P));
      const pages = (db.prepare('SELECT page FROM page_log').all() as Array<{ page: number }>).map((row) => row.page);
      db.exec('DELETE FROM page_log');
      return pages;
    };
    // Appended to the list written: only the last page again, as for an equal copy.
    const appendedOnce = appended(entity.chunkIds, 'chunk-appended-1');
    expect(await pagesWritten(appendedOnce)).toEqual([2]);
    // Appended to another list as long as the one written, whose ids differ from the first on:
    // its ids, not what it was made from, say what is stored, so every page is written again.
    const other = appendedOnce.map((id) => `${id}-other`);
    expect(await pagesWritten(appended(other, 'chunk-appended-2'))).toEqual([0, 1, 2]);
    db.close();
  });

  it('leaves a paged Entity whose pages do not add up to its record for validation to reject', async () => {
    const sql = await openSqlite();
    await sql.commit(P, pagingBatches()[0]!);
    const db = new Database(sqlitePath());
    db.prepare('DELETE FROM entity_pages WHERE page = 1').run();
    db.close();
    const loaded = (await sql.load(P))!;
    const entity = loaded.nodes.find((n) => n.id === 'entity:speaker')!;
    expect(Array.isArray((entity as { chunkIds: unknown }).chunkIds)).toBe(false);
    expect(() => checkMemoryStructure(loaded, (message) => { throw new PrismError('CORRUPT_CHECKPOINT', message); })).toThrow('entity:speaker chunkIds must be an array');
  });
});

describe('SqlStore on SQLite', () => {
  const sample = sampleMemory();

  it('keeps derived state at the revision it was made from, in pages; refuses it for a revision gone by; drops it with a delete or a clear', async () => {
    const store = await openSqlite();
    // Both are optional in GraphStore; the SQL stores keep derived state.
    const saveDerived = store.saveDerived!.bind(store);
    const loadDerived = store.loadDerived!.bind(store);
    expect(await saveDerived(P, 'lexical', 0, new Uint8Array([1]))).toBe(false);
    const revision = await store.commit(P, snapshotAsBatch(sample));
    // 2.5 MB: three rows (a Durable Object takes at most 2 MB a value).
    const bytes = new Uint8Array(2.5 * 2 ** 20);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7919) % 251;
    expect(await saveDerived(P, 'lexical', revision, bytes)).toBe(true);
    const rows = () => new Database(sqlitePath(), { readonly: true }).prepare('SELECT partition, name, page, revision FROM derived ORDER BY page').all();
    expect(rows()).toEqual([0, 1, 2].map((page) => ({ partition: P, name: 'lexical', page, revision })));
    const loaded = await loadDerived(P, 'lexical');
    expect(loaded?.revision).toBe(revision);
    expect(Buffer.from(loaded!.bytes).equals(Buffer.from(bytes))).toBe(true);
    expect(await loadDerived(P, 'other')).toBeNull();
    expect(await loadDerived('another', 'lexical')).toBeNull();

    // A commit that only adds keeps it (as a base to catch up from); a save for the older revision is refused.
    const added = await store.commit(P, { putHashes: ['one-more'] });
    expect((await loadDerived(P, 'lexical'))?.revision).toBe(revision);
    expect(await saveDerived(P, 'lexical', revision, new Uint8Array([9]))).toBe(false);
    expect(await saveDerived(P, 'lexical', added, new Uint8Array([2]))).toBe(true);
    expect(await loadDerived(P, 'lexical')).toEqual({ revision: added, bytes: new Uint8Array([2]) });

    // A page missing or from another save is not one save whole.
    const db = new Database(sqlitePath());
    db.prepare('INSERT INTO derived (partition, name, page, revision, data) VALUES (?, ?, ?, ?, ?)').run(P, 'lexical', 2, added, Buffer.from([3]));
    expect(await loadDerived(P, 'lexical')).toBeNull();
    db.prepare('DELETE FROM derived WHERE page = 2').run();
    db.prepare('INSERT INTO derived (partition, name, page, revision, data) VALUES (?, ?, ?, ?, ?)').run(P, 'lexical', 1, added - 1, Buffer.from([3]));
    expect(await loadDerived(P, 'lexical')).toBeNull();
    db.close();

    // Deleting a node (its text) drops it in the same commit.
    expect(await saveDerived(P, 'lexical', added, new Uint8Array([4]))).toBe(true);
    await store.commit(P, sampleFollowUp());
    expect(rows()).toEqual([]);
    // So does a clear of the partition, and of everything.
    expect(await saveDerived(P, 'lexical', await store.revision(P), new Uint8Array([5]))).toBe(true);
    await store.clear(P);
    expect(rows()).toEqual([]);
    const again = await store.commit(P, snapshotAsBatch(sample));
    expect(await saveDerived(P, 'lexical', again, new Uint8Array([6]))).toBe(true);
    await store.clear();
    expect(rows()).toEqual([]);
    await store.close();
  });

  it('keeps vectors as i4 with a scale, and reads the i8, f16 and f32 blobs of older files as they were', async () => {
    const store = await openSqlite();
    expect(store.vectorPrecision).toBe('i4');
    const exact = Float32Array.from({ length: sample.meta.dim }, (_, i) => Math.sin(i + 0.5) / 10);
    const batch = snapshotAsBatch(sample);
    batch.putVectors = [...(batch.putVectors ?? []).filter(([id]) => id !== 'ep:0'), ['ep:0', exact]];
    await store.commit(P, batch);
    expect((await store.load(P))!.vectors.get('ep:0')).toEqual(roundVector(exact, 'i4'));
    const db = new Database(sqlitePath());
    const stored = db.prepare('SELECT data FROM vector_groups WHERE stem = ?').get('ep:0') as { data: Uint8Array };
    expect(stored.data.length).toBe(4 + encodedBytes(sample.meta.dim, 'i4'));
    // `ep:0` is a group of one (see vector-groups.ts), its member named by the stem itself.
    const setGroup = (bytes: Uint8Array) => {
      const { members, data } = encodeVectorGroup(new Map([[null, bytes]]));
      db.prepare('UPDATE vector_groups SET members = ?, data = ? WHERE stem = ?').run(members, data, 'ep:0');
    };
    setGroup(encodeVector(exact, 'i8'));
    expect((await store.load(P))!.vectors.get('ep:0')).toEqual(roundVector(exact, 'i8'));
    setGroup(encodeVector(exact, 'f16'));
    expect((await store.load(P))!.vectors.get('ep:0')).toEqual(roundVector(exact, 'f16'));
    setGroup(encodeVector(exact, 'f32'));
    db.close();
    expect((await store.load(P))!.vectors.get('ep:0')).toEqual(exact);
  });

  it('reads a partition of more nodes than a page of rows holds: every node once, as the reference store holds them, also as a working set', async () => {
    const sql = await openSqlite();
    const reference = new MemoryStore();
    const chunkId = sample.chunks[0]!.id;
    let key = sample.meta.nextKey;
    // Ids out of key order, some differing only past a page's last id (`en:p:1` < `en:p:10` < `en:p:2`).
    const many: EntityNode[] = Array.from({ length: 5000 }, (_, i) => ({ id: `en:p:${(i * 7919) % 5000}`, key: key++, layer: 'entity', name: `Name ${i}`, entityType: 'other', chunkIds: [chunkId] }));
    const batch: WriteBatch = { ...snapshotAsBatch(sample), putNodes: [...sample.nodes, ...many], meta: { ...sample.meta, nextKey: key } };
    await sql.commit(P, batch);
    await reference.commit(P, batch);
    const loaded = (await sql.load(P))!;
    expect(loaded.nodes.length).toBe(sample.nodes.length + many.length);
    expect(loaded).toEqual(await reference.load(P));
    const working = (await sql.loadWorkingSet!(P))!;
    expect(working.nodes.map((node) => node.id)).toEqual([...loaded.nodes.map((node) => node.id)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
  });

  it("keeps a chunk's vectors of one layer in one row, and applies puts and deletes of single members exactly as the reference store does", async () => {
    const sql = await openSqlite();
    const reference = new MemoryStore();
    const chunk = 'aaaaaaaaaaaa';
    const ids = [...Array.from({ length: 12 }, (_, i) => `fp:${chunk}:${i}`), `fc:${chunk}:rest`, `en:${chunk}:1`, `ep:${chunk}bbbb`, 'n:1', 'x:y', 'x:y:z', 'a:b:'];
    const vector = (seed: number) => sampleVector(mulberry32(seed), sample.meta.dim);
    const batches: WriteBatch[] = [
      { ...snapshotAsBatch(sample), putVectors: [...(snapshotAsBatch(sample).putVectors ?? []), ...ids.map((id, i): [string, Float32Array] => [id, vector(100 + i)])] },
      { deleteVectors: [`fp:${chunk}:3`, 'x:y'], putVectors: [[`fp:${chunk}:12`, vector(200)], [`fp:${chunk}:0`, vector(201)]] },
      // Deleted and put again in one batch: the put wins, as in every store.
      { deleteVectors: ['x:y:z'], putVectors: [['x:y:z', vector(202)]] },
      { deleteVectors: ids.filter((id) => id.startsWith('fp:')).concat(`fp:${chunk}:12`) },
    ];
    const stems = () => (new Database(sqlitePath(), { readonly: true }).prepare('SELECT stem FROM vector_groups ORDER BY stem').all() as Array<{ stem: string }>).map((row) => row.stem);
    for (const [i, batch] of batches.entries()) {
      await sql.commit(P, batch);
      await reference.commit(P, batch);
      const loaded = (await sql.load(P))!;
      expect({ i, loaded }).toEqual({ i, loaded: await reference.load(P) });
      // A row a stem: every vector of the memory is in the row its id names, and no row is empty.
      expect(stems()).toEqual([...new Set([...loaded.vectors.keys()].map((id) => vectorGroupOf(id).stem))].sort());
    }
    expect(stems()).not.toContain(`fp:${chunk}`);
    expect(stems()).toContain(`en:${chunk}`);
  });

  it('moves vectors between groups as the reference store keeps them: put again alone, outliving the chunk that sealed them, deleted', async () => {
    const sql = await openSqlite();
    const reference = new MemoryStore();
    for (const [i, batch] of vectorGroupBatches().entries()) {
      await sql.commit(P, batch);
      await reference.commit(P, batch);
      expect({ i, loaded: await sql.load(P) }).toEqual({ i, loaded: await reference.load(P) });
    }
  });

  it('reads a damaged vector group as damage (CORRUPT_CHECKPOINT, naming the group)', async () => {
    const store = await openSqlite();
    await store.commit(P, snapshotAsBatch(sample));
    const db = new Database(sqlitePath());
    const { data } = db.prepare("SELECT data FROM vector_groups WHERE stem = 'ep:0'").get() as { data: Buffer };
    for (const [members, bytes] of [
      ['[null', data],
      ['[1]', data],
      ['[null]', data.subarray(0, data.length - 1)],
      ['[null, "x"]', data],
      ['[]', data],
    ] as const) {
      db.prepare("UPDATE vector_groups SET members = ?, data = ? WHERE stem = 'ep:0'").run(members, bytes);
      const err = await rejection(store.load(P));
      expect(err.code).toBe('CORRUPT_CHECKPOINT');
      expect(err.message).toContain('"ep:0"');
    }
    db.close();
  });

  it('persists commits, revisions and the cache across reopen; exports the same bytes', async () => {
    const store = await openSqlite();
    await store.commit(P, snapshotAsBatch(sample));
    await store.commit(P, sampleFollowUp());
    await store.putCached('k', 'v', ['t']);
    await store.close();
    opened.length = 0;
    const reopened = await openSqlite();
    expect(await reopened.load(P)).toEqual(applyBatch(sample, sampleFollowUp()));
    expect(await reopened.revision(P)).toBe(2);
    expect(await reopened.getCached('k')).toBe('v');
    const memory = new MemoryStore();
    await importCheckpoint(memory, P, await exportCheckpoint(reopened, P));
    expect(await exportCheckpoint(memory, P)).toEqual(await exportCheckpoint(reopened, P));
  });

  it('sees commits of another connection by revision', async () => {
    const writer = await openSqlite();
    const reader = await openSqlite();
    expect(await reader.revision(P)).toBe(0);
    await writer.commit(P, snapshotAsBatch(sample));
    expect(await reader.revision(P)).toBe(1);
    expect(await reader.load(P)).toEqual(canonical(sample));
  });

  it('writes in proportion to the batch: a one-node commit touches a few pages', async () => {
    const store = await openSqlite();
    await store.commit(P, snapshotAsBatch(sampleMemory({ episodes: 60 })));
    const walBytes = async () => (await readFile(`${sqlitePath()}-wal`)).length;
    const raw = new Database(sqlitePath());
    raw.pragma('wal_checkpoint(TRUNCATE)');
    raw.close();
    expect(await walBytes()).toBe(0);
    await store.commit(P, { putNodes: [{ ...sample.nodes[1]!, id: 'ep:new' } as MemorySnapshot['nodes'][number]] });
    const pageSize = 4096;
    // Node row, revision, and the b-tree pages above them: far below the ~1 MB the store holds.
    expect(await walBytes()).toBeLessThan(12 * (pageSize + 24));
  });

  it('fails a commit on a full disk with STORE_QUOTA_EXCEEDED and keeps every earlier batch', async () => {
    const store = await openSqlite({ maxBytes: 300_000 });
    await store.commit(P, snapshotAsBatch(sampleMemory({ episodes: 2 })));
    const before = await exportCheckpoint(store, P);
    const big = sampleMemory({ episodes: 60, seed: 5 });
    const err = await expectCode(store.commit(P, snapshotAsBatch(big)), 'STORE_QUOTA_EXCEEDED');
    expect(err.message).toContain(sqlitePath());
    expect(await exportCheckpoint(store, P)).toEqual(before);
    expect(await store.revision(P)).toBe(1);
    // Still writable with small batches afterwards.
    expect(await store.commit(P, { putHashes: ['after-full'] })).toBe(2);
  });

  it('reports a damaged file by path, as CORRUPT_CHECKPOINT', async () => {
    await writeFile(sqlitePath(), Buffer.alloc(8192, 0x5a));
    const err = await expectCode(openSqliteStore(sqlitePath()), 'CORRUPT_CHECKPOINT');
    expect(err.message).toContain(sqlitePath());
  });

  it('reports a page damaged after opening when it is read', async () => {
    const store = await openSqlite();
    await store.commit(P, snapshotAsBatch(sampleMemory({ episodes: 30 })));
    await store.close();
    opened.length = 0;
    const raw = new Database(sqlitePath());
    raw.pragma('wal_checkpoint(TRUNCATE)');
    raw.pragma('journal_mode = DELETE');
    raw.close();
    const bytes = await readFile(sqlitePath());
    // Scribble over every page but the first (the schema): the b-trees no longer parse.
    for (let i = 4096; i < bytes.length; i += 97) bytes[i] = 0xff;
    await writeFile(sqlitePath(), bytes);
    const err = await rejection(openSqliteStore(sqlitePath()).then((s) => (opened.push(s), s.load(P))));
    expect(err.code).toBe('CORRUPT_CHECKPOINT');
    expect(err.message).toContain(sqlitePath());
  });

  it('upgrades a schema-2 file (records with chunk id columns, one row per edge) and reads it exactly as written', async () => {
    const raw = new Database(sqlitePath());
    // The file as schema 2 left it: its migrations, and the version row.
    for (const statement of ['CREATE TABLE prism_schema (version INTEGER NOT NULL)', 'INSERT INTO prism_schema (version) VALUES (2)', ...MIGRATIONS.slice(0, 2).flat().map(statementOf)]) {
      raw.prepare(statement).run();
    }
    raw.prepare('INSERT INTO meta VALUES (?, ?)').run(P, JSON.stringify(sample.meta));
    raw.prepare('INSERT INTO revisions VALUES (?, 1)').run(P);
    for (const n of sample.nodes) raw.prepare('INSERT INTO nodes VALUES (?, ?, ?, ?)').run(P, n.id, 'chunkId' in n ? n.chunkId : null, JSON.stringify(n));
    for (const e of sample.edges) raw.prepare('INSERT INTO edges VALUES (?, ?, ?, ?)').run(P, e.id, e.chunkId, JSON.stringify(e));
    for (const c of sample.chunks) raw.prepare('INSERT INTO chunks VALUES (?, ?, ?)').run(P, c.id, JSON.stringify(c));
    for (const [id, v] of sample.vectors) raw.prepare('INSERT INTO vectors VALUES (?, ?, ?)').run(P, id, encodeVector(v, 'f32'));
    for (const h of sample.hashes) raw.prepare('INSERT INTO hashes VALUES (?, ?)').run(P, h);
    raw.close();

    const store = await openSqlite();
    expect(await store.load(P)).toEqual(canonical(sample));
    const db = new Database(sqlitePath(), { readonly: true });
    const columns = (table: string) => (db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((c) => c.name);
    expect([columns('nodes'), columns('edges')]).toEqual([
      ['partition', 'id', 'json'],
      ['partition', 'id', 'json'],
    ]);
    expect(db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE '%by_chunk'").all()).toEqual([]);
    expect(db.prepare('SELECT version FROM prism_schema').get()).toEqual({ version: SQL_SCHEMA_VERSION });
    db.close();
  });

  it('upgrades a schema-3 file (rowid tables, object records) to keyed tables, reads it exactly as written, and writes compact records after', async () => {
    const shaped = ingestShapedSample();
    const raw = new Database(sqlitePath());
    for (const statement of ['CREATE TABLE prism_schema (version INTEGER NOT NULL)', 'INSERT INTO prism_schema (version) VALUES (3)', ...MIGRATIONS.slice(0, 3).flat().map(statementOf)]) {
      raw.prepare(statement).run();
    }
    raw.prepare('INSERT INTO meta VALUES (?, ?)').run(P, JSON.stringify(shaped.meta));
    raw.prepare('INSERT INTO revisions VALUES (?, 1)').run(P);
    // Schema 3's forms: records as objects, a fact's belongs_to edge folded in by name and its content as offsets.
    const point = shaped.nodes.find((n): n is FacetPointNode => n.layer === 'facetPoint')!;
    const pointTurn = shaped.chunks.find((c) => c.id === point.chunkId)!.turns.find((t) => t.dialogId === point.dialogIds[0])!;
    const belongs = shaped.edges.find((e) => e.type === 'belongs_to' && e.from === point.id)!;
    for (const n of shaped.nodes) {
      const stored = n === point ? { ...point, content: [0, pointTurn.text.length], edgeKeys: { belongs_to: belongs.key } } : n;
      raw.prepare('INSERT INTO nodes VALUES (?, ?, ?)').run(P, n.id, JSON.stringify(stored));
    }
    for (const e of shaped.edges) if (e !== belongs) raw.prepare('INSERT INTO edges VALUES (?, ?, ?)').run(P, e.id, JSON.stringify(e));
    for (const c of shaped.chunks) raw.prepare('INSERT INTO chunks VALUES (?, ?, ?)').run(P, c.id, JSON.stringify({ ...c, text: null }));
    for (const [id, v] of shaped.vectors) raw.prepare('INSERT INTO vectors VALUES (?, ?, ?)').run(P, id, encodeVector(v, 'i8'));
    for (const h of shaped.hashes) raw.prepare('INSERT INTO hashes VALUES (?, ?)').run(P, h);
    raw.close();

    const store = await openSqlite();
    const expected = { ...canonical(shaped), vectors: new Map([...shaped.vectors].map(([id, v]) => [id, roundVector(v, 'i8')])) };
    const loaded = (await store.load(P))!;
    expect(loaded).toEqual(expected);
    expect(loaded.nodes.map((n) => JSON.stringify(n))).toEqual(expected.nodes.map((n) => JSON.stringify(n)));
    expect(loaded.edges.map((e) => JSON.stringify(e))).toEqual(expected.edges.map((e) => JSON.stringify(e)));
    const db = new Database(sqlitePath(), { readonly: true });
    const withoutRowid = (table: string) => (db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) as { sql: string }).sql.includes('WITHOUT ROWID');
    expect(['nodes', 'edges', 'chunks'].map(withoutRowid)).toEqual([true, true, false]);
    // No index repeats the keys of the keyed tables.
    expect(db.prepare("SELECT tbl_name FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('nodes', 'edges')").all()).toEqual([]);
    // Vectors moved into their groups, one row a chunk's layer.
    expect(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'vectors'").all()).toEqual([]);
    expect((db.prepare('SELECT stem FROM vector_groups ORDER BY stem').all() as Array<{ stem: string }>).map((row) => row.stem)).toEqual(
      [...new Set([...shaped.vectors.keys()].map((id) => vectorGroupOf(id).stem))].sort(),
    );
    expect(db.prepare('SELECT version FROM prism_schema').get()).toEqual({ version: SQL_SCHEMA_VERSION });

    // Put again, the records take the compact forms and still read back exactly.
    await store.commit(P, { putNodes: shaped.nodes, putEdges: shaped.edges });
    const again = (await store.load(P))!;
    expect(again.nodes.map((n) => JSON.stringify(n))).toEqual(expected.nodes.map((n) => JSON.stringify(n)));
    expect(again.edges.map((e) => JSON.stringify(e))).toEqual(expected.edges.map((e) => JSON.stringify(e)));
    const rows = (table: string) => (db.prepare(`SELECT json FROM ${table}`).all() as Array<{ json: string }>).map((row) => row.json);
    expect([...rows('nodes'), ...rows('edges')].every((json) => json.startsWith('['))).toBe(true);
    // Chunks as schema 3 wrote them (their text in the record) are left so, and read as they were;
    // put again, a chunk keeps its turns' texts in the column added for them.
    const chunkTexts = () => db.prepare('SELECT text FROM chunks ORDER BY id').all() as Array<{ text: string | null }>;
    expect(chunkTexts().every((row) => row.text === null)).toBe(true);
    await store.commit(P, { putChunks: shaped.chunks });
    expect(chunkTexts().every((row) => typeof row.text === 'string')).toBe(true);
    expect((await store.load(P))!.chunks.map((c) => JSON.stringify(c))).toEqual(expected.chunks.map((c) => JSON.stringify(c)));
    db.close();
  });

  it('refuses a database written by a newer schema with STORE_VERSION', async () => {
    (await openSqlite()).close();
    opened.length = 0;
    const raw = new Database(sqlitePath());
    raw.prepare('UPDATE prism_schema SET version = ?').run(SQL_SCHEMA_VERSION + 1);
    raw.close();
    const err = await expectCode(openSqliteStore(sqlitePath()), 'STORE_VERSION');
    expect(err.message).toMatch(new RegExp(`schema ${SQL_SCHEMA_VERSION + 1}`));
    expect(err.message).toContain(sqlitePath());
  });

  it('fails a writer with STORE_BUSY after lockTimeoutMs while another connection holds the lock', async () => {
    const holder = await openSqlite();
    const waiter = await openSqlite({ lockTimeoutMs: 200 });
    let ran = false;
    await holder.withWriteLock(P, async () => {
      const started = Date.now();
      await expectCode(waiter.withWriteLock(P, async () => (ran = true)), 'STORE_BUSY');
      expect(Date.now() - started).toBeGreaterThanOrEqual(190);
      // Another partition is not held.
      expect(await waiter.withWriteLock(OTHER, async () => 'free')).toBe('free');
    });
    expect(ran).toBe(false);
    expect(await waiter.withWriteLock(P, async () => 'now')).toBe('now');
  });
});

describe('migrating a v0.2 file store', () => {
  const sample = sampleMemory();

  it('moves memory.prism and the cache into the default partition once, then renames them', async () => {
    expect(await migrateFileStore(dir, await openSqlite())).toBe(false);
    await writeFile(join(dir, LEGACY_FILES.checkpoint), encodeCheckpoint(sample));
    await writeFile(join(dir, LEGACY_FILES.cache), '["a","1"]\n["b","2"]\n["a","3"]\n["torn');
    const store = await openSqlite();
    expect(await migrateFileStore(dir, store)).toBe(true);
    expect(await store.load(P)).toEqual(canonical(sample));
    expect(await store.getCached('a')).toBe('3');
    expect(await store.getCached('b')).toBe('2');
    expect((await readdir(dir)).sort()).toEqual(
      expect.arrayContaining([`${LEGACY_FILES.checkpoint}${MIGRATED_SUFFIX}`, `${LEGACY_FILES.cache}${MIGRATED_SUFFIX}`]),
    );
    expect(await readdir(dir)).not.toContain(LEGACY_FILES.checkpoint);
    expect(await migrateFileStore(dir, store)).toBe(false);
    expect(await store.revision(P)).toBe(1);
  });

  it('after a crash between import and rename, only renames', async () => {
    await writeFile(join(dir, LEGACY_FILES.checkpoint), encodeCheckpoint(sample));
    const store = await openSqlite();
    await store.commit(P, snapshotAsBatch(sample));
    await store.commit(P, { deleteNodes: ['ep:0'] });
    expect(await migrateFileStore(dir, store)).toBe(false);
    expect(await store.revision(P)).toBe(2);
    expect(await readdir(dir)).toContain(`${LEGACY_FILES.checkpoint}${MIGRATED_SUFFIX}`);
  });

  it('leaves a damaged checkpoint in place and names it', async () => {
    const bytes = encodeCheckpoint(sample);
    bytes[100] = (bytes[100] as number) ^ 0x10;
    await writeFile(join(dir, LEGACY_FILES.checkpoint), bytes);
    const store = await openSqlite();
    const err = await expectCode(migrateFileStore(dir, store), 'CORRUPT_CHECKPOINT');
    expect(err.message).toContain(join(dir, LEGACY_FILES.checkpoint));
    expect(err.message).toMatch(/checksum mismatch/);
    expect(await readdir(dir)).toContain(LEGACY_FILES.checkpoint);
    expect(await store.revision(P)).toBe(0);
  });
});
