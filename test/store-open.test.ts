import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fullDiskOpen, isRoot, readOnlyOpen } from './faults/open-scenarios.ts';

let dir = '';
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'prism-open-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('opening a store that cannot be written', () => {
  it('a read-only file opens for reads, refuses writes with STORE_READONLY, leaves no file behind, and opens writable later', async () => {
    const { readOnly, leftBehind, writable, stored } = await readOnlyOpen(dir, 'zq-readonly-11');
    expect(readOnly).toEqual({ sessions: ['keys'], got: [stored], found: true, addError: 'STORE_READONLY', deleteError: 'STORE_READONLY' });
    expect(leftBehind).toEqual([]);
    expect(writable).toEqual({ sessions: ['keys'], got: [stored], found: true, addError: null, deleteError: null });
  }, 60_000);

  // Mounting the small filesystem needs root, which is how CI runs.
  it.skipIf(!isRoot)('on a full disk the store opens for reads, refuses writes with STORE_QUOTA_EXCEEDED, leaves no file behind, and writes once space is free', async () => {
    const { readOnly, leftBehind, writable, stored } = await fullDiskOpen(dir, 'zq-fulldisk-22');
    expect(readOnly).toEqual({ sessions: ['keys'], got: [stored], found: true, addError: 'STORE_QUOTA_EXCEEDED', deleteError: 'STORE_QUOTA_EXCEEDED' });
    expect(leftBehind).toEqual([]);
    expect(writable).toEqual({ sessions: ['keys'], got: [stored], found: true, addError: null, deleteError: null });
  }, 60_000);
});
