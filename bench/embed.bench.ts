/**
 * MiniLM embedding in Node: throughput on short conversational turns (batch 32) and single-query
 * latency, for PRISM's embedder (onnxruntime-web WASM) at int8 and fp32, against
 * @xenova/transformers' own feature-extraction pipeline (onnxruntime-node) on the same model files.
 * Ratios are PRISM / transformers.js, so > 1 means more texts/s but also more ms.
 *
 * Standalone: `npx tsx bench/embed.bench.ts` (or `node --experimental-strip-types` on Node ≥ 22.6).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { env as transformersEnv, pipeline } from '@xenova/transformers';
import { createNodeMiniLmEmbedder } from '../src/embed/minilm.node.ts';
import type { MiniLmPrecision } from '../src/embed/minilm.ts';
import { MINILM_HUB_ID } from '../src/embed/model-source.ts';
import { defaultModelDir } from '../src/embed/model-source.node.ts';
import { parseLocomo } from '../src/ingest/locomo.ts';
import { defaultLocomoPath } from '../src/node.ts';
import type { Row } from './table.ts';


const TURNS = 512;
const BATCH = 32;
const LATENCY_QUERIES = 64;
const PRECISIONS: readonly MiniLmPrecision[] = ['int8', 'fp32'];

/** The first `TURNS` LoCoMo turns, or generated chat lines of similar length when the file is absent. */
function conversationalTurns(): string[] {
  const path = defaultLocomoPath();
  if (existsSync(path)) {
    const turns = parseLocomo(JSON.parse(readFileSync(path, 'utf8'))).flatMap((sample) =>
      sample.conversation.sessions.flatMap((session) => session.turns.map((turn) => turn.text)),
    );
    if (turns.length >= TURNS) return turns.slice(0, TURNS);
  }
  const subjects = ['I', 'My sister', 'Our team', 'Caroline', 'The kids', 'My neighbour', 'Mel', 'We'];
  const verbs = ['went to', 'talked about', 'finally finished', 'started planning', 'loved', 'signed up for'];
  const objects = ['a pottery class', 'the camping trip', 'that new book', 'a charity run', 'the LGBTQ support group', 'dinner at the lake'];
  const tails = ['last weekend!', 'yesterday, it was great.', 'and it made me so happy.', 'with some friends from work.', '— what about you?'];
  return Array.from({ length: TURNS }, (_, i) => {
    const pick = <T>(list: readonly T[], salt: number): T => list[(i * salt + salt) % list.length]!;
    return `${pick(subjects, 3)} ${pick(verbs, 5)} ${pick(objects, 7)} ${pick(tails, 11)}`;
  });
}

interface Contender {
  embedBatch(texts: string[]): Promise<unknown>;
  dispose(): Promise<void>;
}

interface Measured {
  textsPerSecond: number;
  p50Ms: number;
}

async function measure(contender: Contender, turns: string[]): Promise<Measured> {
  await contender.embedBatch(turns.slice(0, BATCH)); // warm-up: first runs allocate and JIT
  const start = performance.now();
  for (let i = 0; i < turns.length; i += BATCH) await contender.embedBatch(turns.slice(i, i + BATCH));
  const textsPerSecond = turns.length / ((performance.now() - start) / 1000);
  const latencies: number[] = [];
  for (const query of turns.slice(0, LATENCY_QUERIES)) {
    const t0 = performance.now();
    await contender.embedBatch([query]);
    latencies.push(performance.now() - t0);
  }
  latencies.sort((a, b) => a - b);
  return { textsPerSecond, p50Ms: latencies[Math.floor(latencies.length / 2)] ?? Number.NaN };
}

async function prismContender(precision: MiniLmPrecision): Promise<Contender> {
  // Cache off: the repeated turns must be computed again, as they are for the baseline.
  const embedder = await createNodeMiniLmEmbedder({ precision, batchSize: BATCH, cacheSize: 0 });
  return { embedBatch: (texts) => embedder.embed(texts), dispose: () => embedder.dispose() };
}

/** transformers.js reads `<localModelPath>/Xenova/all-MiniLM-L6-v2/…`; a symlink points that at the model folder. */
async function transformersContender(precision: MiniLmPrecision, modelRoot: string): Promise<Contender> {
  transformersEnv.allowRemoteModels = false;
  transformersEnv.localModelPath = `${modelRoot}/`;
  const extractor = await pipeline('feature-extraction', MINILM_HUB_ID, { quantized: precision === 'int8' });
  return {
    embedBatch: (texts) => extractor(texts, { pooling: 'mean', normalize: true }),
    dispose: () => extractor.dispose(),
  };
}

export async function benchEmbed(): Promise<Row[]> {
  const turns = conversationalTurns();
  const modelRoot = mkdtempSync(join(tmpdir(), 'prism-bench-models-'));
  mkdirSync(join(modelRoot, 'Xenova'));
  symlinkSync(defaultModelDir(), join(modelRoot, MINILM_HUB_ID));
  const threads = Math.min(4, availableParallelism());
  const rows: Row[] = [];
  try {
    for (const precision of PRECISIONS) {
      const baselineName = `transformers.js 2.17 pipeline, ${precision} (onnxruntime-node)`;
      const reference = await transformersContender(precision, modelRoot);
      const base = await measure(reference, turns).finally(() => reference.dispose());
      const ours = await prismContender(precision);
      const mine = await measure(ours, turns).finally(() => ours.dispose());
      const name = `PRISM MiniLM ${precision} (onnxruntime-web WASM, ${threads} threads)`;
      rows.push(
        { name: `${baselineName}, ${TURNS} turns`, metric: 'texts/s', value: base.textsPerSecond },
        {
          name: `${name}, ${TURNS} turns`,
          metric: 'texts/s',
          value: mine.textsPerSecond,
          baseline: baselineName,
          ratio: mine.textsPerSecond / base.textsPerSecond,
        },
        { name: `${baselineName}, single query`, metric: 'p50 ms', value: base.p50Ms },
        { name: `${name}, single query`, metric: 'p50 ms', value: mine.p50Ms, baseline: baselineName, ratio: mine.p50Ms / base.p50Ms },
      );
    }
  } finally {
    rmSync(modelRoot, { recursive: true, force: true });
  }
  return rows;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.table(await benchEmbed());
}
