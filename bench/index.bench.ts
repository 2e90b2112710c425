/**
 * Exact top-10 inner-product search over random L2-normalised 384-d vectors: the usearch WASM
 * index (flat) vs a plain JS loop vs the native `usearch` Node addon (single-threaded, so the
 * three do the same work on one core). Ratios are against the JS loop. Then the same vectors
 * rounded as a SQL or IndexedDB store rounds them (i8, and i4, the stores' default): the flat
 * index keeps them as rows of that form, and its query rate, bytes a row and answers are set
 * against f32 rows of the same floats (the answers must be identical). Beside them, what would
 * take over from the flat index in a larger memory: usearch's HNSW in the same WASM build
 * (its default graph: connectivity 16, expansion 128 adding and 64 searching), its add rate,
 * its query rate against the flat index's and its recall of the exact top 10. Random vectors
 * in 384 dimensions have no clusters, the hardest case for a graph index, so its recall here is
 * a floor. Every flat index here has its prefilter off (`prefilter: false`), so that it is exact
 * at 100K too; bench/prefilter.bench.ts measures the prefilter.
 *
 * Standalone: `npx tsx bench/index.bench.ts` (or `node --experimental-strip-types` on Node ≥ 22.6).
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { DEFAULT_CONFIG } from '../src/config.ts';
import { roundVector } from '../src/store/vector-codec.ts';
import { mulberry32 } from '../src/eval/stats.ts';
import { bruteForceSearch } from '../src/vector/brute-force.ts';
import type { RecordForm, SearchHit } from '../src/vector/types.ts';
import { loadUsearchWasm } from '../src/vector/usearch-wasm.ts';
import { readUsearchWasm } from '../src/vector/wasm-bytes.node.ts';
import type { Row } from './table.ts';


const DIM = 384;
const K = 10;
/** Store sizes and how many queries each is timed on (bounded so the JS loop stays short at 100K). */
const RUNS = [
  { size: 10_000, queries: 500 },
  { size: 100_000, queries: 200 },
] as const;
const WARM_UP_QUERIES = 5;
const JS_LOOP = 'plain JS loop';

/** `count` random unit vectors of `dim` floats, packed row-major; the same seed gives the same rows. */
export function randomUnitVectors(count: number, dim: number, seed: number): Float32Array {
  const random = mulberry32(seed);
  const out = new Float32Array(count * dim);
  for (let row = 0; row < count; row++) {
    const base = row * dim;
    let norm = 0;
    for (let d = 0; d < dim; d++) {
      const value = random() * 2 - 1;
      out[base + d] = value;
      norm += value * value;
    }
    const scale = 1 / Math.sqrt(norm);
    for (let d = 0; d < dim; d++) out[base + d]! *= scale;
  }
  return out;
}

/** The slice of the native addon's CJS API this bench calls (its ESM entry does not load in Node). */
interface NativeUsearch {
  MetricKind: { IP: string };
  exactSearch(
    dataset: Float32Array,
    queries: Float32Array,
    dimensions: number,
    count: number,
    metric: string,
    threads: number,
  ): { keys: BigUint64Array };
}

/** Times one batched call of `search` over all `queries`, after a small untimed warm-up call. */
function queriesPerSecond(queries: Float32Array, search: (batch: Float32Array) => void): number {
  search(queries.subarray(0, WARM_UP_QUERIES * DIM));
  const start = performance.now();
  search(queries);
  return queries.length / DIM / ((performance.now() - start) / 1000);
}

/** Share of the reference top-k keys that `keys` also returns (1 = identical sets). */
function agreement(reference: SearchHit[][], keys: (query: number) => number[]): number {
  let shared = 0;
  let total = 0;
  reference.forEach((hits, q) => {
    const found = new Set(keys(q));
    for (const hit of hits) if (found.has(hit.key)) shared++;
    total += hits.length;
  });
  return shared / total;
}

export async function benchIndex(): Promise<Row[]> {
  const wasm = await loadUsearchWasm(await readUsearchWasm());
  const native = createRequire(import.meta.url)('usearch') as NativeUsearch;
  const rows: Row[] = [];
  for (const { size, queries: queryCount } of RUNS) {
    const label = `${size / 1000}K×${DIM}`;
    const vectors = randomUnitVectors(size, DIM, DEFAULT_CONFIG.seed);
    const queries = randomUnitVectors(queryCount, DIM, DEFAULT_CONFIG.seed + 1);
    const keys = Array.from({ length: size }, (_, i) => i);

    const index = wasm.createIndex({ dim: DIM, kind: 'flat', prefilter: false });
    const addStart = performance.now();
    index.add(keys, vectors);
    const addPerSecond = size / ((performance.now() - addStart) / 1000);

    let reference: SearchHit[][] = [];
    let wasmHits: SearchHit[][] = [];
    let nativeKeys: BigUint64Array = new BigUint64Array();
    const jsRate = queriesPerSecond(queries, (batch) => (reference = bruteForceSearch(vectors, DIM, keys, batch, K)));
    const wasmRate = queriesPerSecond(queries, (batch) => (wasmHits = index.search(batch, K)));
    const nativeRate = queriesPerSecond(queries, (batch) => {
      nativeKeys = native.exactSearch(vectors, batch, DIM, K, native.MetricKind.IP, 1).keys;
    });
    const f32Bytes = index.bytesPerVector;
    index.dispose();

    // The same vectors as a SQL or IndexedDB store rounds them: the flat index keeps them as rows
    // of that form and must answer exactly as f32 rows of the same floats do.
    const storeRounded = (form: RecordForm): Row[] => {
      const rounded = new Float32Array(size * DIM);
      for (let i = 0; i < size; i++) rounded.set(roundVector(vectors.subarray(i * DIM, (i + 1) * DIM), form), i * DIM);
      const narrow = wasm.createIndex({ dim: DIM, kind: 'flat', prefilter: false });
      const narrowAddStart = performance.now();
      narrow.add(keys, rounded);
      const narrowAddPerSecond = size / ((performance.now() - narrowAddStart) / 1000);
      const wide = wasm.createIndex({ dim: DIM, kind: 'flat', prefilter: false });
      wide.add([size], vectors.subarray(0, DIM)); // a vector no i8 record rebuilds: every row stays f32
      wide.add(keys, rounded);
      wide.remove([size]);
      let narrowHits: SearchHit[][] = [];
      let wideHits: SearchHit[][] = [];
      const wideRate = queriesPerSecond(queries, (batch) => (wideHits = wide.search(batch, K)));
      const narrowRate = queriesPerSecond(queries, (batch) => (narrowHits = narrow.search(batch, K)));
      const rowBytes = narrow.bytesPerVector;
      const identical = narrow.rowForm === form && JSON.stringify(narrowHits) === JSON.stringify(wideHits);
      narrow.dispose();
      wide.dispose();
      return [
        { name: `exact top-${K}, ${label} store-rounded (${form}), usearch WASM (flat, ${form} rows)`, metric: 'queries/s', value: narrowRate, baseline: 'f32 rows of the same floats', ratio: narrowRate / wideRate },
        { name: `add, ${label} store-rounded (${form}), usearch WASM (flat, ${form} rows)`, metric: 'vectors/s', value: narrowAddPerSecond },
        { name: `bytes a vector's row takes, ${label}, ${form} rows`, metric: 'bytes', value: rowBytes, baseline: 'f32 rows', ratio: rowBytes / f32Bytes },
        { name: `${form} rows' top-${K} (keys and scores) identical to f32 rows', ${label}`, metric: 'yes = 1', value: identical ? 1 : 0 },
      ];
    };
    const roundedRows = [...storeRounded('i8'), ...storeRounded('i4')];

    const hnsw = wasm.createIndex({ dim: DIM, kind: 'hnsw' });
    const hnswAddStart = performance.now();
    hnsw.add(keys, vectors);
    const hnswAddPerSecond = size / ((performance.now() - hnswAddStart) / 1000);
    let hnswHits: SearchHit[][] = [];
    const hnswRate = queriesPerSecond(queries, (batch) => (hnswHits = hnsw.search(batch, K)));
    hnsw.dispose();

    const versus = (value: number): Pick<Row, 'baseline' | 'ratio'> => ({ baseline: JS_LOOP, ratio: value / jsRate });
    rows.push(
      { name: `exact top-${K}, ${label}, ${JS_LOOP}`, metric: 'queries/s', value: jsRate },
      { name: `exact top-${K}, ${label}, usearch WASM (flat)`, metric: 'queries/s', value: wasmRate, ...versus(wasmRate) },
      { name: `exact top-${K}, ${label}, usearch native addon (1 thread)`, metric: 'queries/s', value: nativeRate, ...versus(nativeRate) },
      { name: `add, ${label}, usearch WASM (flat)`, metric: 'vectors/s', value: addPerSecond },
      {
        name: `top-${K} agreement with ${JS_LOOP}, ${label}, usearch WASM`,
        metric: 'fraction',
        value: agreement(reference, (q) => wasmHits[q]!.map((hit) => hit.key)),
      },
      {
        name: `top-${K} agreement with ${JS_LOOP}, ${label}, native addon`,
        metric: 'fraction',
        value: agreement(reference, (q) => Array.from(nativeKeys.subarray(q * K, (q + 1) * K), Number)),
      },
      ...roundedRows,
      { name: `add, ${label}, usearch WASM (HNSW)`, metric: 'vectors/s', value: hnswAddPerSecond },
      { name: `approximate top-${K}, ${label}, usearch WASM (HNSW)`, metric: 'queries/s', value: hnswRate, baseline: 'usearch WASM (flat)', ratio: hnswRate / wasmRate },
      { name: `recall@${K} of the exact top ${K}, ${label}, usearch WASM (HNSW)`, metric: 'fraction', value: agreement(reference, (q) => hnswHits[q]!.map((hit) => hit.key)) },
    );
  }
  return rows;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.table(await benchIndex());
}
