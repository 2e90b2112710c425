import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { killDuringCommit, missing, twoProcesses } from './faults/store-scenarios.ts';

// Real processes (tsx running test/faults/store-writer.ts) on one real SQLite file.

let dir = '';
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'prism-processes-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('SQLite store shared by processes', () => {
  it('two processes committing under the writer lock keep every batch, and each sees the other', async () => {
    const batches = 80;
    const { exits, after } = await twoProcesses(dir, batches);
    // Exit 2 would mean a commit slipped between a writer's revision check and its commit.
    expect(exits.map((e) => [e.code, e.acknowledged, e.stderr])).toEqual([
      [0, batches, ''],
      [0, batches, ''],
    ]);
    expect(after.revision).toBe(2 * batches);
    for (const census of Object.values(after.census)) {
      expect(census.torn).toBe(0);
      expect(missing(census, batches)).toBe(0);
    }
    expect(after.lockFree).toBe(true);
  }, 60_000);

  it('after kill -9 mid commit loop: the file opens, holds whole batches only, every acknowledged one, and the lock is free', async () => {
    const { exit, after } = await killDuringCommit(dir, 40);
    expect(exit.signal).toBe('SIGKILL');
    const census = after.census['k']!;
    expect(census.torn).toBe(0);
    expect(missing(census, exit.acknowledged)).toBe(0);
    // At most the batch in flight was durable but not yet acknowledged.
    expect(census.whole.size - exit.acknowledged).toBeLessThanOrEqual(1);
    expect(after.revision).toBe(census.whole.size);
    expect(after.lockFree).toBe(true);
  }, 60_000);
});
