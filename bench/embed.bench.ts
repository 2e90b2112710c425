/**
 * MiniLM embedding in Node: throughput on conversational turns (batches of 32) and single-query
 * latency. PRISM's Node embedder (onnxruntime-node, length-bucketed batches) against
 * onnxruntime-node used directly on the same model file (the same tokenizer, batches of 32 in
 * input order, mean pooling), and PRISM's browser engine (onnxruntime-web WASM) run in Node.
 * Ratios are against the direct onnxruntime-node run, so > 1 means more texts/s (or more ms).
 * For int8 the direct run executes the file as it is (activations quantised to int8 per batch),
 * PRISM with float activations (`weightOnlyInt8`, so Node and browsers give the same vectors):
 * the int8 ratio includes that cost.
 *
 * Standalone: `npx tsx bench/embed.bench.ts`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import ortNode from 'onnxruntime-node';
import { createNodeMiniLmEmbedder } from '../src/embed/minilm.node.ts';
import type { MiniLmEmbedder, MiniLmPrecision } from '../src/embed/minilm.ts';
import { defaultModelDir } from '../src/embed/model-source.node.ts';
import { onnxWebEngine, type OrtWeb } from '../src/embed/ort-web.ts';
import { parseLocomo } from '../src/ingest/locomo.ts';
import { defaultLocomoPath } from '../src/node.ts';
import type { Row } from './table.ts';

const TURNS = 512;
const BATCH = 32;
const LATENCY_QUERIES = 64;
const PRECISIONS: readonly MiniLmPrecision[] = ['int8', 'fp32'];
const MODEL_FILES: Record<MiniLmPrecision, string> = { int8: 'onnx/model_quantized.onnx', fp32: 'onnx/model.onnx' };

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

function embedderContender(embedder: MiniLmEmbedder): Contender {
  return { embedBatch: (texts) => embedder.embed(texts), dispose: () => embedder.dispose() };
}

/**
 * onnxruntime-node used directly: one session on the model file, each batch padded to its
 * longest text, mean-pooled and normalised in plain JS. Token ids come from PRISM's tokenizer
 * (`tokenizer`), so the model work is identical and only the wrapping differs.
 */
async function directOnnxNode(precision: MiniLmPrecision, tokenize: (text: string) => number[]): Promise<Contender> {
  const session = await ortNode.InferenceSession.create(join(defaultModelDir(), MODEL_FILES[precision]), {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    intraOpNumThreads: availableParallelism(),
  });
  return {
    async embedBatch(texts) {
      const ids = texts.map(tokenize);
      const rows = ids.length;
      const width = Math.max(...ids.map((s) => s.length));
      const input = new BigInt64Array(rows * width);
      const mask = new BigInt64Array(rows * width);
      ids.forEach((s, r) => s.forEach((id, t) => ((input[r * width + t] = BigInt(id)), (mask[r * width + t] = 1n))));
      const dims = [rows, width];
      const out = await session.run({
        input_ids: new ortNode.Tensor('int64', input, dims),
        attention_mask: new ortNode.Tensor('int64', mask, dims),
        token_type_ids: new ortNode.Tensor('int64', new BigInt64Array(rows * width), dims),
      });
      const hidden = out['last_hidden_state']!.data as Float32Array;
      return ids.map((s, r) => {
        const v = new Float32Array(384);
        for (let t = 0; t < s.length; t++) for (let d = 0; d < 384; d++) v[d]! += hidden[(r * width + t) * 384 + d]!;
        const norm = Math.hypot(...v);
        return v.map((x) => x / norm);
      });
    },
    // onnxruntime-node 1.14 sessions have no release(); the garbage collector frees them.
    dispose: async () => undefined,
  };
}

export async function benchEmbed(): Promise<Row[]> {
  const turns = conversationalTurns();
  const rows: Row[] = [];
  for (const precision of PRECISIONS) {
    // Cache off: the repeated turns must be computed again, as they are for the baseline.
    const ours = await createNodeMiniLmEmbedder({ precision, batchSize: BATCH, cacheSize: 0 });
    const baselineName = `onnxruntime-node 1.14 direct, ${precision}`;
    const direct = await directOnnxNode(precision, (text) => ours.tokenize(text));
    const base = await measure(direct, turns).finally(() => direct.dispose());
    const mine = await measure(embedderContender(ours), turns).finally(() => ours.dispose());
    const versus = (value: number, baseValue: number) => ({ baseline: baselineName, ratio: value / baseValue });
    rows.push(
      { name: `${baselineName}, ${TURNS} turns`, metric: 'texts/s', value: base.textsPerSecond },
      { name: `PRISM Node embedder ${precision}${precision === 'int8' ? ' weights, float activations' : ''} (onnxruntime-node), ${TURNS} turns`, metric: 'texts/s', value: mine.textsPerSecond, ...versus(mine.textsPerSecond, base.textsPerSecond) },
      { name: `${baselineName}, single query`, metric: 'p50 ms', value: base.p50Ms },
      { name: `PRISM Node embedder ${precision}, single query`, metric: 'p50 ms', value: mine.p50Ms, ...versus(mine.p50Ms, base.p50Ms) },
    );
    if (precision === 'int8') {
      // The browser engine, in Node for comparison (Node cannot run the WASM-only browser bundle, so the package's Node build).
      const threads = Math.min(4, availableParallelism());
      const web = await createNodeMiniLmEmbedder({
        precision,
        batchSize: BATCH,
        cacheSize: 0,
        engine: onnxWebEngine({ numThreads: threads, load: () => import('onnxruntime-web') as Promise<OrtWeb> }),
      });
      const webMeasured = await measure(embedderContender(web), turns).finally(() => web.dispose());
      rows.push({
        name: `PRISM browser engine ${precision} (onnxruntime-web WASM, ${threads} threads), ${TURNS} turns`,
        metric: 'texts/s',
        value: webMeasured.textsPerSecond,
        ...versus(webMeasured.textsPerSecond, base.textsPerSecond),
      });
    }
  }
  return rows;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.table(await benchEmbed());
}
