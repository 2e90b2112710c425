/** `npm run bench`: every speed figure from one run, each against a baseline measured in the same run. */
import { benchEmbed } from './embed.bench.ts';
import { benchIndex } from './index.bench.ts';
import { benchRetrieval } from './retrieval.bench.ts';
import { formatTable } from './table.ts';

const sections = [
  ['Embedding (MiniLM, Node): PRISM embedder vs @xenova/transformers pipeline', benchEmbed],
  ['Exact top-10 search: usearch WASM vs plain JS loop vs native usearch addon', benchIndex],
  ['Retrieval latency incl. query embedding (zero-LLM)', benchRetrieval],
] as const;

for (const [title, run] of sections) {
  console.log(formatTable(title, await run()));
}
