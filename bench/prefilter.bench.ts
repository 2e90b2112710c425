/**
 * The flat index's sketch prefilter (`IndexOptions.prefilter`), which takes over from the full scan
 * in indexes of more than `DEFAULT_PREFILTER.exactUpTo` rows: how many of the exact top k it
 * returns, and how fast, against the exact scan of the same rows. On real MiniLM vectors, the
 * sentences of LongMemEval S chat (`longMemEvalPath()`; a memory's facts are such sentences),
 * `PRISM_BENCH_PREFILTER_VECTORS` of them (default 100,000), rounded to i4 as the stores keep
 * them, searched with the file's questions; then on as many random unit vectors as the facts of
 * 100K messages of chat (317K), where nothing is near anything and recall is a floor. Both
 * indexes prefilter at every size (`exactUpTo: 0`), with the default candidates.
 *
 * Standalone: `npx tsx bench/prefilter.bench.ts`.
 */
import { pathToFileURL } from 'node:url';
import { DEFAULT_CONFIG } from '../src/config.ts';
import { nodeEmbedder } from '../src/node.ts';
import { roundVector } from '../src/store/vector-codec.ts';
import { splitSentences } from '../src/util/sentences.ts';
import type { SearchHit } from '../src/vector/types.ts';
import { DEFAULT_PREFILTER, loadUsearchWasm, type UsearchWasm } from '../src/vector/usearch-wasm.ts';
import { readUsearchWasm } from '../src/vector/wasm-bytes.node.ts';
import { randomUnitVectors } from './index.bench.ts';
import { longMemEvalChat } from './longmemeval-chat.ts';
import type { Row } from './table.ts';

const DIM = 384;
/** Hits asked of one layer: the anchors of a search (`anchorsPerLayer`), and the most a search reads of the Facets (8× overfetch). */
const KS = [10, DEFAULT_CONFIG.retrieval.anchorsPerLayer, 240] as const;
/** The facts of 100K messages of chat (the growth bench's largest memory). */
const RANDOM_ROWS = 317_000;
const RANDOM_QUERIES = 100;
const EMBED_BATCH = 128;
/** Sentences shorter than this are skipped: a fact is rarely one. */
const SHORTEST_SENTENCE = 12;

/** The first `count` sentences of the chat's messages, in order. */
async function chatSentences(count: number): Promise<{ sentences: string[]; questions: string[] }> {
  const { sessions, questions } = await longMemEvalChat();
  const sentences: string[] = [];
  for (const session of sessions) {
    for (const message of session.messages) {
      for (const sentence of splitSentences(message.content)) {
        if (sentence.trim().length >= SHORTEST_SENTENCE) sentences.push(sentence.trim());
        if (sentences.length === count) return { sentences, questions };
      }
    }
  }
  return { sentences, questions };
}

/** Row-major i4-rounded vectors of `texts`, embedded in batches. */
async function embedRounded(texts: readonly string[]): Promise<Float32Array> {
  const embedder = await nodeEmbedder();
  const out = new Float32Array(texts.length * DIM);
  for (let start = 0; start < texts.length; start += EMBED_BATCH) {
    const vectors = await embedder.embed(texts.slice(start, start + EMBED_BATCH));
    vectors.forEach((vector, i) => out.set(roundVector(vector, 'i4'), (start + i) * DIM));
  }
  return out;
}

/** Each query searched one at a time (as a memory does): the mean ms a query, after one call untimed, and the hits. */
function timed(search: (query: Float32Array) => SearchHit[], queries: Float32Array): { ms: number; hits: SearchHit[][] } {
  const count = queries.length / DIM;
  const hits: SearchHit[][] = [];
  search(queries.subarray(0, DIM)); // the function's first call runs at V8's baseline tier
  const start = performance.now();
  for (let q = 0; q < count; q++) hits.push(search(queries.subarray(q * DIM, (q + 1) * DIM)));
  return { ms: (performance.now() - start) / count, hits };
}

/** Mean share of each query's exact hits that `found` holds. */
function recall(exact: readonly SearchHit[][], found: readonly SearchHit[][]): number {
  let sum = 0;
  exact.forEach((hits, q) => {
    const keys = new Set(found[q]!.map((hit) => hit.key));
    sum += hits.filter((hit) => keys.has(hit.key)).length / Math.max(1, hits.length);
  });
  return sum / exact.length;
}

function compare(wasm: UsearchWasm, label: string, vectors: Float32Array, queries: Float32Array): Row[] {
  const keys = Array.from({ length: vectors.length / DIM }, (_, i) => i);
  const exact = wasm.createIndex({ dim: DIM, prefilter: false });
  const prefiltered = wasm.createIndex({ dim: DIM, prefilter: { exactUpTo: 0 } });
  exact.add(keys, vectors);
  prefiltered.add(keys, vectors);
  const rows: Row[] = [];
  for (const k of KS) {
    const full = timed((query) => exact.search(query, k)[0] ?? [], queries);
    const fast = timed((query) => prefiltered.search(query, k)[0] ?? [], queries);
    rows.push(
      { name: `exact top-${k}, ${label}, full scan`, metric: 'ms a query', value: full.ms },
      { name: `top-${k}, ${label}, sketch prefilter`, metric: 'ms a query', value: fast.ms, baseline: 'full scan', ratio: fast.ms / full.ms },
      { name: `recall of the exact top ${k}, ${label}, sketch prefilter`, metric: 'fraction', value: recall(full.hits, fast.hits) },
    );
  }
  exact.dispose();
  prefiltered.dispose();
  return rows;
}

export async function benchPrefilter(): Promise<Row[]> {
  const wasm = await loadUsearchWasm(await readUsearchWasm());
  const count = Number(process.env['PRISM_BENCH_PREFILTER_VECTORS'] ?? 100_000);
  const { sentences, questions } = await chatSentences(count);
  const real = await embedRounded(sentences);
  const questionVectors = await embedRounded(questions);
  const random = randomUnitVectors(RANDOM_ROWS, DIM, DEFAULT_CONFIG.seed);
  for (let i = 0; i < RANDOM_ROWS; i++) random.set(roundVector(random.subarray(i * DIM, (i + 1) * DIM), 'i4'), i * DIM);
  const randomQueries = randomUnitVectors(RANDOM_QUERIES, DIM, DEFAULT_CONFIG.seed + 1);
  const { perHit, least } = DEFAULT_PREFILTER;
  return [
    { name: `candidates scored: max(${least}, ${perHit} × k); full scan up to ${DEFAULT_PREFILTER.exactUpTo} rows by default`, metric: 'rows', value: least },
    // A sketch is a bit a dimension; an i4 row is a 4-byte scale and half a byte a dimension.
    { name: 'sketch bytes a row', metric: 'bytes', value: DIM / 8, baseline: 'its i4 row', ratio: DIM / 8 / (4 + DIM / 2) },
    ...compare(wasm, `${(sentences.length / 1000).toFixed(0)}K real MiniLM sentence vectors (i4), ${questions.length} questions`, real, questionVectors),
    ...compare(wasm, `${RANDOM_ROWS / 1000}K random vectors (i4), ${RANDOM_QUERIES} random queries`, random, randomQueries),
  ];
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.table(await benchPrefilter());
}
