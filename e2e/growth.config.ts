import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from '@playwright/test';
import { sitePreviewServer } from './support/site-server.ts';

// The Chromium growth bench (e2e/growth.bench.ts), kept out of the CI run (playwright.config.ts
// matches *.spec.ts only). It builds the same e2e site, into a folder and on a port of its own,
// so an e2e run during the bench's hour does not rebuild the pages under it.

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const port = Number(process.env.PRISM_GROWTH_PORT ?? 4327);
const baseURL = `http://127.0.0.1:${port}`;
const outDir = resolve(repoRoot, `e2e/out/growth-site-${port}`);

export default defineConfig({
  testDir: '.',
  testMatch: 'growth.bench.ts',
  outputDir: 'out/growth-results',
  workers: 1,
  // The bench sets no timeout of its own: 30K messages take a long while in a browser.
  timeout: 0,
  reporter: [['list']],
  use: { baseURL },
  webServer: sitePreviewServer(repoRoot, port, outDir),
});
