import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from '@playwright/test';

// The Chromium growth bench (e2e/growth.bench.ts), kept out of the CI run (playwright.config.ts
// matches *.spec.ts only). It builds the same e2e site, into a folder and on a port of its own,
// so an e2e run during the bench's hour does not rebuild the pages under it.

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const port = Number(process.env.PRISM_GROWTH_PORT ?? 4327);
const baseURL = `http://127.0.0.1:${port}`;
const viteConfig = 'e2e/vite.config.ts';
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
  webServer: {
    command: `node node_modules/vite/bin/vite.js build -c ${viteConfig} --outDir ${outDir} && node node_modules/vite/bin/vite.js preview -c ${viteConfig} --outDir ${outDir} --host 127.0.0.1 --port ${port} --strictPort`,
    cwd: repoRoot,
    url: `${baseURL}/`,
    reuseExistingServer: false,
    timeout: 180_000,
    stdout: 'pipe',
    stderr: 'pipe',
  },
});
