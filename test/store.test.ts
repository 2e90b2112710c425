import { mkdir, mkdtemp, readFile, rm, rmdir, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PrismError } from '../src/errors.ts';
import type { PrismErrorCode } from '../src/errors.ts';
import type { MemorySnapshot } from '../src/graph/types.ts';
import { CHECKPOINT_FORMAT_VERSION, decodeCheckpoint, encodeCheckpoint, exportCheckpoint, importCheckpoint } from '../src/store/checkpoint.ts';
import { FILE_STORE_FILES, FileStore } from '../src/store/file.node.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { applyBatch, snapshotAsBatch } from '../src/store/snapshot.ts';
import type { GraphStore, WriteBatch } from '../src/store/types.ts';
import { sampleMemory, sampleVector } from '../e2e/support/sample-memory.ts';

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
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'prism-store-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const backends: Backend[] = [
  { name: 'MemoryStore', open: async () => new MemoryStore() },
  { name: 'FileStore', open: () => FileStore.open(dir) },
];

describe.each(backends)('$name', (backend) => {
  const sample = sampleMemory();

  it('loads null when empty, then exactly what was committed', async () => {
    const store = await backend.open();
    expect(await store.load()).toBeNull();
    await store.commit(snapshotAsBatch(sample));
    expect(await store.load()).toEqual(canonical(sample));
    expect(encodeCheckpoint((await store.load())!)).toEqual(encodeCheckpoint(sample));
  });

  it('hands out copies: changing a loaded snapshot does not change the store', async () => {
    const store = await backend.open();
    await store.commit(snapshotAsBatch(sample));
    const loaded = (await store.load())!;
    loaded.nodes.pop();
    loaded.vectors.get('ep:0')!.fill(0);
    loaded.hashes.clear();
    expect(await store.load()).toEqual(canonical(sample));
  });

  it('rejects an invalid batch whole and keeps the state', async () => {
    const store = await backend.open();
    await expectCode(store.commit({ putNodes: sample.nodes }), 'INVALID_INPUT');
    expect(await store.load()).toBeNull();
    await store.commit(snapshotAsBatch(sample));
    const before = await exportCheckpoint(store);
    const valid: WriteBatch = { deleteNodes: ['ep:0'], putHashes: ['new-hash'], deleteHashes: [...sample.hashes] };
    const random = () => 0.5;
    await expectCode(store.commit({ ...valid, putVectors: [['ep:1', new Float32Array(sample.meta.dim - 1)]] }), 'DIMENSION_MISMATCH');
    const nan = sampleVector(random, sample.meta.dim);
    nan[5] = Number.NaN;
    await expectCode(store.commit({ ...valid, putVectors: [['ep:1', nan]] }), 'NON_FINITE_VECTOR');
    const badLayer = { ...sample.nodes[1]!, layer: 'paragraph' } as unknown as MemorySnapshot['nodes'][number];
    expect((await expectCode(store.commit({ ...valid, putNodes: [badLayer] }), 'INVALID_INPUT')).message).toMatch(/unknown layer paragraph/);
    await expectCode(store.commit({ ...valid, meta: { ...sample.meta, dim: 8 } }), 'DIMENSION_MISMATCH');
    expect(await exportCheckpoint(store)).toEqual(before);
  });

  it('applies deletions of every kind', async () => {
    const store = await backend.open();
    await store.commit(snapshotAsBatch(sample));
    const edge = sample.edges.find((e) => e.type === 'temporal')!;
    const chunk = sample.chunks[1]!;
    await store.commit({
      deleteNodes: ['ep:1', 'missing-node'],
      deleteEdges: [edge.id],
      deleteChunks: [chunk.id],
      deleteVectors: ['ep:1', edge.id],
      deleteHashes: [chunk.id],
      meta: { ...sample.meta, chunkCount: sample.meta.chunkCount - 1 },
    });
    const loaded = (await store.load())!;
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
    await store.commit(snapshotAsBatch(sample));
    const small = sampleVector(() => 0.25, 8);
    await store.commit({ meta: { ...sample.meta, dim: 8 }, deleteVectors: [...sample.vectors.keys()], putVectors: [['ep:0', small]] });
    const loaded = (await store.load())!;
    expect(loaded.meta.dim).toBe(8);
    expect([...loaded.vectors.keys()]).toEqual(['ep:0']);
  });

  it('keeps a cache and clears everything', async () => {
    const store = await backend.open();
    await store.commit(snapshotAsBatch(sample));
    expect(await store.getCached('prompt#1')).toBeUndefined();
    await store.putCached('prompt#1', '{"answer":"Rex"}');
    await store.putCached('prompt#1', '{"answer":"Rex!"}');
    await store.putCached('multi\nline', 'ü\n✓');
    expect(await store.getCached('prompt#1')).toBe('{"answer":"Rex!"}');
    expect(await store.getCached('multi\nline')).toBe('ü\n✓');
    await store.clear();
    expect(await store.load()).toBeNull();
    expect(await store.getCached('prompt#1')).toBeUndefined();
  });

  it('imports a checkpoint in place of what it holds', async () => {
    const store = await backend.open();
    await store.commit(snapshotAsBatch(sampleMemory({ episodes: 5, seed: 1 })));
    const other = sampleMemory({ episodes: 2, seed: 2 });
    await importCheckpoint(store, encodeCheckpoint(other));
    expect(await store.load()).toEqual(canonical(other));
    expect(await exportCheckpoint(store)).toEqual(encodeCheckpoint(other));
  });

  it('refuses to export an empty store', async () => {
    await expectCode(exportCheckpoint(await backend.open()), 'INVALID_INPUT');
  });
});

describe('FileStore on disk', () => {
  const sample = sampleMemory();
  const checkpointPath = () => join(dir, FILE_STORE_FILES.checkpoint);
  const tempPath = () => join(dir, FILE_STORE_FILES.checkpointTemp);

  it('persists commits and the cache across reopen', async () => {
    const store = await FileStore.open(dir);
    await store.commit(snapshotAsBatch(sample));
    await store.commit({ deleteNodes: ['ep:3'] });
    await store.putCached('k', 'v');
    await store.close();
    const reopened = await FileStore.open(dir);
    expect(await reopened.load()).toEqual(applyBatch(sample, { deleteNodes: ['ep:3'] }));
    expect(await reopened.getCached('k')).toBe('v');
    expect(await readFile(checkpointPath())).toEqual(Buffer.from(encodeCheckpoint(applyBatch(sample, { deleteNodes: ['ep:3'] }))));
  });

  it('ignores a temp file left by a crash mid-write and keeps the last checkpoint', async () => {
    const store = await FileStore.open(dir);
    await store.commit(snapshotAsBatch(sample));
    const committed = encodeCheckpoint(sample);
    // A crash after writing half of the next checkpoint's temp file, before the rename.
    await writeFile(tempPath(), encodeCheckpoint(sampleMemory({ seed: 9 })).subarray(0, 500));
    const reopened = await FileStore.open(dir);
    expect(await exportCheckpoint(reopened)).toEqual(committed);
    await reopened.commit({ deleteHashes: [...sample.hashes] });
    expect((await FileStore.open(dir).then((s) => s.load()))!.hashes.size).toBe(0);
  });

  it('rolls back a commit whose write fails and stays usable', async () => {
    const store = await FileStore.open(dir);
    await store.commit(snapshotAsBatch(sample));
    // A directory where the temp file must go makes the write fail for real.
    await mkdir(tempPath());
    await expectCode(store.commit({ deleteNodes: ['ep:0'] }), 'STORE_IO');
    expect(await store.load()).toEqual(canonical(sample));
    await rmdir(tempPath());
    await store.commit({ deleteNodes: ['ep:0'] });
    expect((await (await FileStore.open(dir)).load())!.nodes.some((n) => n.id === 'ep:0')).toBe(false);
  });

  it('reports a corrupt checkpoint by path and cause, leaving the file as it was', async () => {
    const store = await FileStore.open(dir);
    await store.commit(snapshotAsBatch(sample));
    const bytes = await readFile(checkpointPath());
    bytes[100] = (bytes[100] as number) ^ 0x10;
    await writeFile(checkpointPath(), bytes);
    const err = await expectCode(FileStore.open(dir), 'CORRUPT_CHECKPOINT');
    expect(err.message).toContain(checkpointPath());
    expect(err.message).toMatch(/checksum mismatch/);
    expect(await readFile(checkpointPath())).toEqual(bytes);

    await writeFile(checkpointPath(), bytes.subarray(0, 1000));
    expect((await expectCode(FileStore.open(dir), 'CORRUPT_CHECKPOINT')).message).toMatch(/truncated/);
    expect((await readFile(checkpointPath())).length).toBe(1000);
  });

  it('drops a cache line torn by a crash, and reports a damaged one', async () => {
    const store = await FileStore.open(dir);
    await store.putCached('a', '1');
    const cachePath = join(dir, FILE_STORE_FILES.cache);
    await appendFile(cachePath, '["b","tor');
    const reopened = await FileStore.open(dir);
    expect(await reopened.getCached('a')).toBe('1');
    expect(await reopened.getCached('b')).toBeUndefined();
    await reopened.putCached('c', '3');
    expect(await (await FileStore.open(dir)).getCached('c')).toBe('3');
    await writeFile(cachePath, 'garbage\n["a","1"]\n');
    expect((await expectCode(FileStore.open(dir), 'CORRUPT_CHECKPOINT')).message).toMatch(/line 1 does not parse/);
  });

  it('exports bytes that a MemoryStore imports to an equal memory', async () => {
    const file = await FileStore.open(dir);
    await file.commit(snapshotAsBatch(sample));
    await file.commit({ deleteEdges: [sample.edges[0]!.id] });
    const bytes = await exportCheckpoint(file);
    expect(await readFile(checkpointPath())).toEqual(Buffer.from(bytes));
    const memory = new MemoryStore();
    await importCheckpoint(memory, bytes);
    expect(await memory.load()).toEqual(await file.load());
    expect(await exportCheckpoint(memory)).toEqual(bytes);
  });
});
