import { expect, test } from './support/fixtures.ts';
import { MODELS_URL_PATH } from './support/site.ts';

// Issue 13: a returning page opens without downloading the model or onnxruntime's WASM again,
// and the demo sample ingests in the page within 8 s.

const isModelOrOrt = (url: string) => new URL(url).pathname.startsWith(MODELS_URL_PATH) || /ort-wasm[^/]*\.wasm$/.test(new URL(url).pathname);

test('model files and the ORT wasm come from the Cache API on reload, with progress events on the first download', async ({ page }) => {
  const requested: string[] = [];
  page.on('request', (request) => requested.push(request.url()));
  await page.goto('/model-cache.html');
  const first = await page.evaluate(() => window.modelCacheHarness.open());
  expect(first.dim).toBe(384);
  const firstFetches = requested.filter(isModelOrOrt);
  console.log(`first visit: ${firstFetches.length} model/ORT requests`);
  expect(firstFetches.some((url) => url.endsWith('onnx/model_quantized.onnx'))).toBe(true);
  expect(firstFetches.some((url) => /ort-wasm[^/]*\.wasm$/.test(url))).toBe(true);
  const model = first.events.filter((e) => e.file.endsWith('onnx/model_quantized.onnx'));
  expect(model.map((e) => e.status)).toContain('initiate');
  expect(model.some((e) => e.status === 'progress' && e.loaded > 0)).toBe(true);
  const done = model.find((e) => e.status === 'done');
  expect(done && done.status === 'done' && !done.fromCache && done.loaded > 1_000_000 && done.total === done.loaded).toBe(true);

  requested.length = 0;
  await page.reload();
  const second = await page.evaluate(() => window.modelCacheHarness.open());
  expect(second.dim).toBe(384);
  console.log(`reload: ${requested.filter(isModelOrOrt).length} model/ORT requests`);
  expect(requested.filter(isModelOrOrt)).toEqual([]);
  expect(second.events.length).toBeGreaterThan(0);
  expect(second.events.every((e) => e.status === 'done' && e.fromCache)).toBe(true);
});

test('the demo sample ingests in Chromium within 8 s', async ({ page }) => {
  test.setTimeout(180_000);
  await page.goto('/model-cache.html');
  await page.evaluate(() => window.modelCacheHarness.open());
  const run = await page.evaluate(() => window.modelCacheHarness.ingestSample('e2e-ingest-speed'));
  const ratio = run.ingestMs / run.embedMs;
  console.log(
    `demo sample: ${run.turns} turns, ${run.nodes} nodes; ingest ${(run.ingestMs / 1000).toFixed(2)} s, ` +
      `turns embedded once ${(run.embedMs / 1000).toFixed(2)} s, ratio ${ratio.toFixed(2)}×`,
  );
  test.info().annotations.push({ type: 'ingest', description: `${run.ingestMs.toFixed(0)} ms, ${ratio.toFixed(2)}× embedding the turns once` });
  expect(run.nodes).toBeGreaterThan(run.turns);
  expect(run.ingestMs).toBeLessThan(8_000);
});
