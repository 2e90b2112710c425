import { inTempDir, type Fault } from './fault.ts';
import { corruptFile, diskFull, killDuringCommit, missing, twoProcesses, type Damage } from './store-scenarios.ts';


const DAMAGES: readonly Damage[] = ['garbage', 'truncated', 'scribbled'];

export const faults: Fault[] = [
  {
    name: 'kill -9 during a commit loop (SQLite)',
    runs: 5,
    run: (i) =>
      inTempDir(async (dir) => {
        const { exit, after } = await killDuringCommit(dir, 20 + 37 * i);
        const census = after.census['k']!;
        return {
          survived: exit.signal === 'SIGKILL' && census.torn === 0 && after.lockFree,
          recordsLost: missing(census, exit.acknowledged),
        };
      }),
  },
  {
    name: 'two processes writing one SQLite file',
    runs: 3,
    run: () =>
      inTempDir(async (dir) => {
        const batches = 60;
        const { exits, after } = await twoProcesses(dir, batches);
        const lost = Object.values(after.census).reduce((sum, census) => sum + missing(census, batches), 0);
        return {
          survived: exits.every((e) => e.code === 0) && after.revision === 2 * batches && after.lockFree,
          recordsLost: lost,
        };
      }),
  },
  {
    name: 'disk full (SQLITE_FULL)',
    runs: 3,
    run: (i) =>
      inTempDir(async (dir) => {
        const { failure, acknowledged, after, writableAfter } = await diskFull(dir, (256 + 128 * i) * 1024);
        const census = after.census['f']!;
        return {
          survived: failure?.code === 'STORE_QUOTA_EXCEEDED' && census.torn === 0 && census.whole.size === acknowledged && writableAfter,
          recordsLost: missing(census, acknowledged),
        };
      }),
  },
  {
    name: 'corrupt SQLite file (garbage, truncated, scribbled)',
    runs: DAMAGES.length,
    run: (i) =>
      inTempDir(async (dir) => {
        const batches = 300;
        const { error, path, census } = await corruptFile(dir, DAMAGES[i]!, batches);
        if (error) return { survived: error.code === 'CORRUPT_CHECKPOINT' && error.message.includes(path), recordsLost: 0 };
        // Opened without complaint: then nothing may be silently missing or torn.
        return { survived: census!.torn === 0, recordsLost: missing(census!, batches) };
      }),
  },
];
