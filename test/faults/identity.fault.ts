import { join } from 'node:path';
import { inTempDir, type Fault, type FaultOutcome } from './fault.ts';
import { handlesAdding, processesAdding, staleHandleAfterDelete, type IdentityCensus } from './identity-scenarios.ts';


const outcome = (census: IdentityCensus): FaultOutcome => ({
  survived: census.clean && census.lost === 0 && census.duplicated === 0,
  recordsLost: census.lost,
  recordsDuplicated: census.duplicated,
});

export const faults: Fault[] = [
  {
    name: '3–4 processes adding the same message ids (SQLite)',
    runs: 3,
    run: (i) => inTempDir(async (dir) => outcome(await processesAdding(dir, 3 + (i % 2), 12, 'shared'))),
  },
  {
    name: '3 processes adding without ids (generated ids, SQLite)',
    runs: 3,
    run: () => inTempDir(async (dir) => outcome(await processesAdding(dir, 3, 12, 'generated'))),
  },
  {
    name: '4 in-process handles adding the same ids, then without ids',
    runs: 3,
    run: () =>
      inTempDir(async (dir) => {
        const shared = await handlesAdding(join(dir, 'a'), 4, 15, 'shared');
        const generated = await handlesAdding(join(dir, 'b'), 4, 15, 'generated');
        return {
          survived: outcome(shared).survived && outcome(generated).survived,
          recordsLost: shared.lost + generated.lost,
          recordsDuplicated: shared.duplicated + generated.duplicated,
        };
      }),
  },
  {
    name: 'a stale handle adds an id another handle deleted',
    runs: 3,
    run: () =>
      inTempDir(async (dir) => {
        const { lost, reportedSkip } = await staleHandleAfterDelete(dir);
        return { survived: lost === 0 && !reportedSkip, recordsLost: lost };
      }),
  },
];
