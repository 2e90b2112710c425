import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { renderFrontier, renderReport } from './report.ts';
import type { EvalResults } from './runner.ts';

/** Writes `results.json`, `report.md` (with `sections` appended) and `frontier.svg` into `dir`; returns their paths. */
export async function writeEvalOutputs(
  dir: string,
  results: EvalResults,
  sections: readonly string[] = [],
): Promise<{ results: string; report: string; frontier: string }> {
  await mkdir(dir, { recursive: true });
  const paths = { results: join(dir, 'results.json'), report: join(dir, 'report.md'), frontier: join(dir, 'frontier.svg') };
  await writeFile(paths.results, `${JSON.stringify(results, null, 2)}\n`, 'utf8');
  await writeFile(paths.report, [renderReport(results), ...sections].join('\n'), 'utf8');
  await writeFile(paths.frontier, await renderFrontier(results), 'utf8');
  return paths;
}
