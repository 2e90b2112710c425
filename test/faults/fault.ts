import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** One injected fault of `npm run test:faults` (test/faults/run.ts), repeated `runs` times. */
export interface Fault {
  name: string;
  runs: number;
  run(i: number): Promise<FaultOutcome>;
}

export interface FaultOutcome {
  /** The system stayed usable and reported the fault as documented. */
  survived: boolean;
  /** Records acknowledged as written that are gone afterwards. Must be 0. */
  recordsLost: number;
  /** Records stored more than once (the same message id twice, two messages under one id). Must be 0. Default 0. */
  recordsDuplicated?: number;
  /** Bytes of deleted text still found in the store's files after the delete returned. Must be 0. Default 0. */
  deletedBytesFound?: number;
}

/** Runs `run` in a fresh temporary directory, removed afterwards whatever happened. */
export async function inTempDir<T>(run: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'prism-fault-'));
  try {
    return await run(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
