/**
 * `npm run test:faults`: runs every fault of every `test/faults/*.fault.ts` and prints one row
 * per fault (fault injected | runs | survived | records lost | records duplicated | bytes of
 * deleted text found). Exits 1 when any run did not survive, lost or duplicated records, left
 * deleted text on disk, or threw.
 */
import { readdir } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import type { Fault } from './fault.ts';

interface Row {
  name: string;
  runs: number;
  survived: number;
  lost: number;
  duplicated: number;
  deletedBytes: number;
  errors: string[];
}

const files = (await readdir(import.meta.dirname)).filter((file) => file.endsWith('.fault.ts')).sort();
const rows: Row[] = [];
for (const file of files) {
  const module = (await import(pathToFileURL(`${import.meta.dirname}/${file}`).href)) as { faults: Fault[] };
  for (const fault of module.faults) {
    const row: Row = { name: fault.name, runs: fault.runs, survived: 0, lost: 0, duplicated: 0, deletedBytes: 0, errors: [] };
    for (let i = 0; i < fault.runs; i++) {
      try {
        const outcome = await fault.run(i);
        if (outcome.survived) row.survived++;
        row.lost += outcome.recordsLost;
        row.duplicated += outcome.recordsDuplicated ?? 0;
        row.deletedBytes += outcome.deletedBytesFound ?? 0;
      } catch (err) {
        row.errors.push(`run ${i}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      }
    }
    rows.push(row);
    process.stderr.write(`${file}: ${fault.name}: ${row.survived}/${row.runs} survived, ${row.lost} lost, ${row.duplicated} duplicated, ${row.deletedBytes} deleted bytes found\n`);
  }
}

const cells = rows.map((r) => [r.name, String(r.runs), String(r.survived), String(r.lost), String(r.duplicated), String(r.deletedBytes)]);
const header = ['fault injected', 'runs', 'survived', 'records lost', 'records duplicated', 'deleted text bytes found'];
const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] ?? '').length)));
const line = (c: readonly string[]) => `| ${c.map((x, i) => x.padEnd(widths[i] ?? 0)).join(' | ')} |`;
console.log([line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...cells.map(line)].join('\n'));
for (const row of rows) for (const error of row.errors) console.error(`${row.name}: ${error}`);

const failed = rows.filter((r) => r.survived < r.runs || r.lost > 0 || r.duplicated > 0 || r.deletedBytes > 0);
if (failed.length > 0) {
  console.error(`\n${failed.length} fault(s) not survived, losing or duplicating records, or leaving deleted text: ${failed.map((r) => r.name).join('; ')}`);
  process.exitCode = 1;
}
