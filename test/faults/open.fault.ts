/**
 * Opening a store that cannot be written (test/faults/open-scenarios.ts): a store file at mode
 * 0444 read by another user, and a store on a full filesystem. Survived: reads work, writes
 * fail typed, the open leaves no file behind, and the store takes writes once writable again.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PrismErrorCode } from '../../src/errors.ts';
import type { Fault, FaultOutcome } from './fault.ts';
import { fullDiskOpen, readOnlyOpen, type OpenOutcome } from './open-scenarios.ts';

async function judged(scenario: (dir: string, marker: string) => Promise<OpenOutcome>, refusal: PrismErrorCode, i: number): Promise<FaultOutcome> {
  const dir = await mkdtemp(join(tmpdir(), 'prism-fault-'));
  try {
    const { readOnly, leftBehind, writable, stored } = await scenario(dir, `zq-open-${i}`);
    const refused = readOnly.addError === refusal && readOnly.deleteError === refusal;
    const wrote = writable.addError === null && writable.deleteError === null;
    return {
      survived: readOnly.found && refused && leftBehind.length === 0 && wrote,
      recordsLost: [readOnly.got, writable.got].filter((got) => !got.includes(stored)).length,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export const faults: Fault[] = [
  { name: 'read-only open (file 0444, another user)', runs: 3, run: (i) => judged(readOnlyOpen, 'STORE_READONLY', i) },
  { name: 'full disk at open (tmpfs)', runs: 3, run: (i) => judged(fullDiskOpen, 'STORE_QUOTA_EXCEEDED', i) },
];
