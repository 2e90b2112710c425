import { expect, test } from './support/fixtures.ts';

// WebGPU is an opt-in (`device: 'webgpu'`). Headless Chromium offers an adapter only with a
// software Vulkan (SwiftShader); where it offers none, the test is skipped and says so.
test.use({
  launchOptions: {
    executablePath: process.env.PRISM_CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--headless', '--enable-unsafe-webgpu', '--enable-features=Vulkan', '--use-vulkan=swiftshader', '--use-webgpu-adapter=swiftshader', '--disable-quic'],
  },
});

test('WebGPU embeddings match the WASM build where an adapter exists', async ({ page }) => {
  test.setTimeout(180_000);
  const warnings: string[] = [];
  page.on('console', (message) => warnings.push(message.text()));
  await page.goto('/model-cache.html');
  const result = await page.evaluate(() => window.modelCacheHarness.webgpu(['A man is eating food.', 'The girl is carrying a baby.']));
  console.log(result.adapter ? `WebGPU: min cos to WASM ${result.minCosine?.toFixed(6)}` : 'WebGPU: no adapter in this Chromium; untested');
  test.skip(!result.adapter, 'no WebGPU adapter in headless Chromium here');
  expect(result.minCosine).toBeGreaterThan(0.999);
  // onnxruntime drops an execution provider it cannot start with a console warning; WebGPU must have run.
  expect(warnings.filter((text) => /execution provider|webgpu/i.test(text) && /remov|fail|not available/i.test(text))).toEqual([]);
  console.log(`console: ${warnings.length} messages${warnings.length ? `, e.g. ${warnings.slice(0, 3).join(' | ')}` : ''}`);
});
