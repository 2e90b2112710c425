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
