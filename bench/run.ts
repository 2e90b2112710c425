/** `npm run bench`: every speed figure from one run, each against a baseline measured in the same run. */
import { benchBundle } from './bundle.bench.ts';
import { benchEmbed } from './embed.bench.ts';
import { benchGrowth } from './growth.bench.ts';
import { benchGrowthChromium } from './growth-chromium.bench.ts';
import { benchIndex } from './index.bench.ts';
import { benchIngest } from './ingest.bench.ts';
import { benchPrefilter } from './prefilter.bench.ts';
import { benchRetrieval } from './retrieval.bench.ts';
import { benchStore } from './store.bench.ts';
import { formatTable } from './table.ts';

const sections = [
  ['Embedding (MiniLM, Node): PRISM Node embedder vs onnxruntime-node used directly', benchEmbed],
  ['Writes (Node, zero-LLM): ingest vs dense-turns, add() per message at 1K and 20K nodes', benchIngest],
  ['Zero-LLM browser page: JS shipped (gzip)', benchBundle],
  ['Exact top-10 search: usearch WASM vs plain JS loop vs native usearch addon', benchIndex],
  ['Sketch prefilter of large flat indexes: recall of the exact top k and speed, real MiniLM vectors (LongMemEval sentences) and random ones', benchPrefilter],
  ['Retrieval latency incl. query embedding (zero-LLM)', benchRetrieval],
  ['Store (≈19K-node memory): cold open and one-chunk commit, SQLite vs the v0.2 file checkpoint', benchStore],
  ['Growth: one scope of real assistant chat (LongMemEval S sessions) at 1K–100K messages, SQLite', benchGrowth],
  ['Growth in Chromium: the same chat at 1K and 30K messages, IndexedDB (e2e/growth.bench.ts)', benchGrowthChromium],
] as const;

const only = process.env['PRISM_BENCH_ONLY']?.split(',');
for (const [title, run] of sections) {
  if (only && !only.some((word) => title.toLowerCase().includes(word.toLowerCase()))) continue;
  // One failing section must not hide the others' figures.
  try {
    console.log(formatTable(title, await run()));
  } catch (err) {
    console.log(`\n### ${title}\nfailed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  }
}
