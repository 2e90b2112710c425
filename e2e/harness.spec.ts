import { MODELS_URL_PATH } from './support/site.ts';
import { expect, test } from './support/fixtures.ts';

test('the test site serves WASM as application/wasm and model files under /models/', async ({ page }) => {
  await page.goto('/');
  const wasm = await page.evaluate(async () => {
    const response = await fetch('/probe.wasm');
    const type = response.headers.get('content-type');
    // compileStreaming rejects unless the server says application/wasm.
    await WebAssembly.compileStreaming(response);
    return type;
  });
  expect(wasm).toBe('application/wasm');

  const config = await page.evaluate(async (prefix) => {
    const response = await fetch(`${prefix}config.json`);
    return { status: response.status, type: response.headers.get('content-type'), body: response.ok ? await response.json() : null };
  }, MODELS_URL_PATH);
  expect(config.status).toBe(200);
  expect(config.type).toBe('application/json');
  expect(config.body).toMatchObject({ hidden_size: 384 });

  const escape = await page.evaluate(async (prefix) => (await fetch(`${prefix}..%2f..%2fREADME.md`)).status, MODELS_URL_PATH);
  expect(escape).toBe(404);
});
