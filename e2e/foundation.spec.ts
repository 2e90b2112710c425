import { createNodeMiniLmEmbedder } from '../src/embed/minilm.node.ts';
import type { MiniLmPrecision } from '../src/embed/minilm.ts';
import { onnxWebEngine, type OrtWeb } from '../src/embed/ort-web.ts';
import { expect, test } from './support/fixtures.ts';
import { MODELS_URL_PATH } from './support/site.ts';

// Issue 2's browser check: real MiniLM weights (served at /models/), IndexedDB and the
// usearch WASM index in Chromium, compared against the same embedder running in Node.

const FOOD = 'A man is eating food.';
const BREAD = 'A man is eating a piece of bread.';
const BABY = 'The girl is carrying a baby.';

/** What the page remembers: each recall query below has one clear nearest sentence. */
const MEMORY = [
  FOOD,
  BABY,
  'A man is riding a horse.',
  'A woman is playing violin.',
  'Two men pushed carts through the woods.',
  'A monkey is playing drums.',
  'A cheetah is running behind its prey.',
];
const RECALL: ReadonlyArray<[query: string, nearest: string]> = [
  ['Someone is eating a meal.', FOOD],
  ['A jockey rides his horse.', 'A man is riding a horse.'],
  ['A big cat chases an animal.', 'A cheetah is running behind its prey.'],
];
/** Texts embedded on both sides. */
const COMPARED = [...MEMORY, BREAD, ...RECALL.map(([query]) => query)];
const PRECISIONS: readonly MiniLmPrecision[] = ['int8', 'fp32'];
/**
 * Least cosine between Chromium's vectors (onnxruntime-web) and Node's (onnxruntime-node), for
 * both precisions: int8 weights run on float activations, so both agree to float rounding.
 */
const NODE_ENGINE_MIN_COSINE = 0.9999;

const dot = (a: readonly number[], b: readonly number[]): number => a.reduce((sum, x, i) => sum + x * (b[i] ?? Number.NaN), 0);

function maxAbsDiff(a: readonly (readonly number[])[], b: readonly Float32Array[]): number {
  expect(a.length).toBe(b.length);
  let max = 0;
  a.forEach((row, i) => {
    expect(row.length).toBe(b[i]?.length);
    row.forEach((x, d) => (max = Math.max(max, Math.abs(x - (b[i]?.[d] ?? Number.NaN)))));
  });
  return max;
}

test.beforeEach(async ({ page }) => {
  await page.goto('/foundation.html');
});

for (const precision of PRECISIONS) {
  test(`${precision}: memory embedded, stored in IndexedDB and indexed is recalled after a reload`, async ({ page }) => {
    const db = `e2e-foundation-${precision}`;
    const remembered = await page.evaluate(({ db, texts, precision }) => window.foundationHarness.remember(db, texts, precision), {
      db,
      texts: MEMORY,
      precision,
    });
    expect(remembered.indexed).toBe(MEMORY.length);

    await page.reload();
    for (const [query, nearest] of RECALL) {
      const recalled = await page.evaluate(({ db, query, precision }) => window.foundationHarness.recall(db, query, precision), {
        db,
        query,
        precision,
      });
      expect(recalled.stored).toBe(MEMORY.length);
      expect(recalled.embedderId).toBe(`Xenova/all-MiniLM-L6-v2/${precision}`);
      expect(recalled.nearest, query).toBe(nearest);
      expect(recalled.score).toBeGreaterThan(0.4);
    }
  });

  test(`${precision}: Chromium and Node produce the same vectors`, async ({ page }) => {
    const requested: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    await page.reload();
    const browser = await page.evaluate(({ texts, precision }) => window.foundationHarness.embed(texts, precision), {
      texts: COMPARED,
      precision,
    });
    const vector = (text: string): number[] => browser[COMPARED.indexOf(text)] ?? [];
    const [bread, baby] = [dot(vector(FOOD), vector(BREAD)), dot(vector(FOOD), vector(BABY))];
    console.log(`${precision}: cos(food, bread) = ${bread.toFixed(3)}, cos(food, baby) = ${baby.toFixed(3)}`);
    expect(bread).toBeGreaterThan(0.6);
    expect(baby).toBeLessThan(0.3);
    // The weights came from the local /models/ route, onnxruntime's WASM from the site's own
    // assets (Vite emits it from onnxruntime-web's `new URL(…, import.meta.url)`), nothing from elsewhere.
    const modelFile = precision === 'int8' ? 'onnx/model_quantized.onnx' : 'onnx/model.onnx';
    expect(requested).toContain(new URL(`${MODELS_URL_PATH}${modelFile}`, page.url()).href);
    expect(requested.some((url) => /\/assets\/ort-wasm-simd-threaded[^/]*\.wasm$/.test(url))).toBe(true);
    expect(requested.filter((url) => new URL(url).hostname !== '127.0.0.1')).toEqual([]);

    // The browser's engine run in Node (its Node build) must give the same numbers…
    const sameEngine = await createNodeMiniLmEmbedder({ precision, engine: onnxWebEngine({ load: () => import('onnxruntime-web') as Promise<OrtWeb> }) });
    try {
      const diff = maxAbsDiff(browser, await sameEngine.embed(COMPARED));
      test.info().annotations.push({ type: 'max abs diff', description: `${precision}: ${diff.toExponential(2)}` });
      console.log(`${precision}: max |browser − node (onnxruntime-web)| = ${diff.toExponential(2)}`);
      expect(diff).toBeLessThan(1e-4);
    } finally {
      await sameEngine.dispose();
    }
    // …and Node's own engine (onnxruntime-node) the same directions.
    const node = await createNodeMiniLmEmbedder({ precision });
    try {
      const nodeVectors = await node.embed(COMPARED);
      const worst = Math.min(...browser.map((row, i) => dot(row, Array.from(nodeVectors[i] ?? []))));
      console.log(`${precision}: min cos(browser, node onnxruntime-node) = ${worst.toFixed(6)}`);
      expect(worst).toBeGreaterThanOrEqual(NODE_ENGINE_MIN_COSINE);
    } finally {
      await node.dispose();
    }
  });
}
