/** `npm run bench`: every speed figure from one run, each against a baseline measured in the same run. */
import { benchEmbed } from './embed.bench.ts';
import { benchIndex } from './index.bench.ts';
import { benchRetrieval } from './retrieval.bench.ts';
import { benchStore } from './store.bench.ts';
import { formatTable } from './table.ts';

const sections = [
  ['Embedding (MiniLM, Node): PRISM embedder vs @xenova/transformers pipeline', benchEmbed],
  ['Exact top-10 search: usearch WASM vs plain JS loop vs native usearch addon', benchIndex],
  ['Retrieval latency incl. query embedding (zero-LLM)', benchRetrieval],
  ['Store (≈19K-node memory): cold open and one-chunk commit, SQLite vs the v0.2 file checkpoint', benchStore],
] as const;

for (const [title, run] of sections) {
  console.log(formatTable(title, await run()));
}
