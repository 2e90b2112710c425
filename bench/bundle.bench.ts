/**
 * JS a zero-LLM browser page downloads: bench/fixtures/zero-llm-page.ts bundled by esbuild
 * (minified, ESM, code-split), gzip sizes of the eager part (the entry chunk and every chunk it
 * imports statically) and of the lazy part (chunks behind dynamic imports: the embedder's
 * tokenizer and onnxruntime, compromise, o200k, the LLM client).
 *
 * Standalone: `npx tsx bench/bundle.bench.ts`.
 */
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build, type Metafile } from 'esbuild';
import type { Row } from './table.ts';

const ENTRY = fileURLToPath(new URL('./fixtures/zero-llm-page.ts', import.meta.url));
export const EAGER_BUDGET_KB = 150;

/** Output files reachable from the entry through static imports. */
function eagerOutputs(metafile: Metafile, entryOut: string): Set<string> {
  const eager = new Set<string>();
  const visit = (path: string) => {
    if (eager.has(path)) return;
    eager.add(path);
    for (const imported of metafile.outputs[path]?.imports ?? []) if (imported.kind === 'import-statement' && !imported.external) visit(imported.path);
  };
  visit(entryOut);
  return eager;
}

export async function benchBundle(): Promise<Row[]> {
  const result = await build({
    entryPoints: [ENTRY],
    bundle: true,
    splitting: true,
    format: 'esm',
    minify: true,
    platform: 'browser',
    target: 'es2022',
    outdir: 'out',
    write: false,
    metafile: true,
    logLevel: 'silent',
    // Assets the page serves itself (WASM, model files) are not JS.
    loader: { '.wasm': 'file' },
  });
  const entryOut = Object.keys(result.metafile.outputs).find((path) => result.metafile.outputs[path]?.entryPoint?.endsWith('zero-llm-page.ts'));
  if (!entryOut) throw new Error('esbuild produced no entry chunk');
  const eager = eagerOutputs(result.metafile, entryOut);
  let eagerBytes = 0;
  let lazyBytes = 0;
  for (const file of result.outputFiles) {
    if (!file.path.endsWith('.js')) continue;
    const gz = gzipSync(file.contents, { level: 9 }).length;
    const relative = file.path.slice(file.path.indexOf('/out/') + 1);
    if (eager.has(relative)) eagerBytes += gz;
    else lazyBytes += gz;
  }
  return [
    { name: 'zero-LLM browser page, eager JS (esbuild, minified, code-split)', metric: 'KB gzip', value: eagerBytes / 1024, baseline: `budget ${EAGER_BUDGET_KB} KB`, ratio: eagerBytes / 1024 / EAGER_BUDGET_KB },
    { name: 'zero-LLM browser page, lazy JS (loaded on first embed/extract/count)', metric: 'KB gzip', value: lazyBytes / 1024 },
  ];
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.table(await benchBundle());
}
