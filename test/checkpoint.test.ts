import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Memory } from '../src/memory.ts';
import type { Scope } from '../src/scope.ts';
import { openSqliteStore } from '../src/store/sqlite.node.ts';
import {
  CRAFTED_KINDS,
  STORED_DAMAGE,
  damageStoredScope,
  importCrafted,
  messageIds,
  readCheckpoint,
  writeCheckpoint,
} from './helpers/crafted-checkpoints.ts';
import { testRuntime, type TestRuntime } from './helpers/runtime.ts';

/**
 * Import checks everything before it commits: no checkpoint, however crafted, leaves a scope on
 * which add, list, search or delete fails. One memory on real SQLite with the real MiniLM for
 * the file; every case leaves it as it found it.
 */

const VICTIM: Scope = { userId: 'victim' };
const BYSTANDER: Scope = { userId: 'bystander' };

let runtime: TestRuntime;
let dir: string;
let path: string;
let memory: Memory;
let valid: Uint8Array;
let restore: Array<[Scope, Uint8Array]>;
let victimMessages: string[];
const opened: Memory[] = [];

async function open(): Promise<Memory> {
  const handle = await Memory.open({ store: await openSqliteStore(path), embedder: runtime.embedder, createIndex: runtime.createIndex });
  opened.push(handle);
  return handle;
}

beforeAll(async () => {
  runtime = await testRuntime();
  dir = await mkdtemp(join(tmpdir(), 'prism-checkpoint-'));
  path = join(dir, 'memory.sqlite');
  memory = await open();
  await memory.add({
    ...VICTIM,
    sessionId: 'garden',
    date: '8 May, 2023',
    messages: [
      { speaker: 'Mia', text: 'My brother Tom planted tomatoes in the garden yesterday.', dialogId: 'g1' },
      { speaker: 'Lee', text: 'Tom says the tomatoes will be ready in August.', dialogId: 'g2' },
    ],
  });
  await memory.add({
    ...VICTIM,
    sessionId: 'trip',
    date: '20 May, 2023',
    messages: [
      { speaker: 'Mia', text: 'Tom and I are driving to Lisbon next week to see the old tram.', dialogId: 't1' },
      { speaker: 'Lee', text: 'Bring me a pastel de nata from Lisbon, please.', dialogId: 't2' },
    ],
  });
  await memory.add({ ...BYSTANDER, sessionId: 'notes', messages: [{ speaker: 'Bo', text: 'My cat Pixel sleeps on the piano every afternoon.', dialogId: 'b1' }] });
  valid = await memory.export(VICTIM);
  restore = [
    [VICTIM, valid],
    [BYSTANDER, await memory.export(BYSTANDER)],
  ];
  victimMessages = await messageIds(memory, VICTIM);
});

afterAll(async () => {
  for (const handle of opened) await handle.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('crafted checkpoints with valid CRCs', () => {
  it('start from a valid export holding every kind of record they edit, which re-encodes byte for byte', () => {
    const raw = readCheckpoint(valid);
    const layers = new Set(raw.section.nodes.map((n) => n.layer));
    expect([...layers].sort()).toEqual(['entity', 'episode', 'facet', 'facetPoint']);
    expect(raw.section.chunks.length).toBe(2);
    expect(raw.section.edges.length).toBeGreaterThan(0);
    expect(raw.vectors.length).toBeGreaterThan(1);
    expect(victimMessages.sort()).toEqual(['g1', 'g2', 't1', 't2']);
    expect(writeCheckpoint(raw)).toEqual(valid);
    expect(CRAFTED_KINDS.length).toBeGreaterThanOrEqual(20);
  });

  it.each(CRAFTED_KINDS)('$name: $expect, nothing committed, the scope fully usable after', async (kind) => {
    const bystanderBefore = await memory.export(BYSTANDER);
    const outcome = await importCrafted(memory, VICTIM, valid, kind, restore);
    if (kind.expect === 'accepted') {
      expect(outcome.error).toBeNull();
    } else {
      expect(outcome.error).toMatchObject({ name: 'PrismError', code: kind.expect, message: expect.stringContaining(kind.mentions ?? '') });
      expect(outcome.unchanged).toBe(true);
    }
    expect(outcome.lost).toEqual([]);
    expect(outcome.failed).toEqual([]);
    expect(await memory.export(VICTIM)).toEqual(valid);
    expect(await memory.export(BYSTANDER)).toEqual(bystanderBefore);
  });

  it('records in any order import to the same memory as the canonical export', async () => {
    const reversed = CRAFTED_KINDS.find((kind) => kind.name === 'records in reverse order');
    expect(reversed).toBeDefined();
    await memory.import(reversed?.craft(readCheckpoint(valid)) ?? new Uint8Array(), VICTIM);
    expect(await memory.export(VICTIM)).toEqual(valid);
  });
});

describe('a scope damaged in the store by an older version', () => {
  it.each(STORED_DAMAGE)('$name: reads fail typed; import, delete({ userId }) and delete(all) still work', async (damage) => {
    const sessions = await memory.list(VICTIM);
    const bystander = await messageIds(memory, BYSTANDER);

    damageStoredScope(path, VICTIM, damage);
    const fresh = await open();
    // Both a handle that held the scope before the damage and one that never loaded it.
    for (const handle of [memory, fresh]) {
      await expect(handle.list(VICTIM)).rejects.toMatchObject({ code: damage.code ?? 'CORRUPT_CHECKPOINT', message: expect.stringContaining('memory "victim"') });
    }
    await fresh.import(valid, VICTIM);
    expect(await fresh.list(VICTIM)).toEqual(sessions);
    expect(await memory.list(VICTIM)).toEqual(sessions);

    damageStoredScope(path, VICTIM, damage);
    expect(await fresh.delete(VICTIM)).toEqual({ chunksDeleted: sessions.length });
    expect(await memory.list(VICTIM)).toEqual([]);
    expect(await messageIds(memory, BYSTANDER)).toEqual(bystander);
    await memory.import(valid, VICTIM);

    damageStoredScope(path, VICTIM, damage);
    const third = await open();
    expect(await third.delete('all')).toEqual({ chunksDeleted: sessions.length + 1 });
    expect(await memory.scopes()).toEqual([]);
    for (const [scope, bytes] of restore) await memory.import(bytes, scope);
    expect(await memory.export(VICTIM)).toEqual(valid);
  });

  it('a damaged meta with no chunks left goes with delete({ userId }) too', async () => {
    for (const session of await memory.list(VICTIM)) await memory.delete({ ...VICTIM, sessionId: session.sessionId });
    const wrongDim = STORED_DAMAGE.find((damage) => damage.name.startsWith('meta.dim 383'));
    if (!wrongDim) throw new Error('no meta.dim damage to apply');
    damageStoredScope(path, VICTIM, wrongDim);
    await expect(memory.list(VICTIM)).rejects.toMatchObject({ code: 'EMBEDDER_MISMATCH' });
    expect(await memory.delete(VICTIM)).toEqual({ chunksDeleted: 0 });
    expect(await (await open()).list(VICTIM)).toEqual([]);
    expect((await memory.scopes()).map((s) => s.userId)).toEqual(['bystander']);
    await memory.import(valid, VICTIM);
    expect(await memory.export(VICTIM)).toEqual(valid);
  });
});
