import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from '@playwright/test';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './support/chromium.ts';
import { demoE2eUrl } from './support/demo-site.ts';
import { sitePreviewServer } from './support/site-server.ts';

// Browser tests run in Debian's Chromium (/usr/bin/chromium); Playwright never downloads a
// browser. The pages under e2e/pages are built by Vite and served by `vite preview`.

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const port = Number(process.env.PRISM_E2E_PORT ?? 4317);
const baseURL = `http://127.0.0.1:${port}`;

export default defineConfig({
  testDir: '.',
  testMatch: '*.spec.ts',
  outputDir: 'out/test-results',
  // Two shared cores: one worker keeps timings sane and the machine usable.
  workers: 1,
  fullyParallel: false,
  forbidOnly: Boolean(process.env.CI),
  timeout: 120_000,
  reporter: [['list'], ['html', { outputFolder: 'out/report', open: 'never' }]],
  use: {
    baseURL,
    browserName: 'chromium',
    headless: true,
    screenshot: 'only-on-failure',
    trace: 'retain-on-failure',
    launchOptions: { executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS] },
  },
  webServer: [
    sitePreviewServer(repoRoot, port),
    // The demo page (demo/), built and previewed as a user would run it; e2e/demo.spec.ts drives it.
    {
      command: `node node_modules/vite/bin/vite.js build demo && node node_modules/vite/bin/vite.js preview demo --host 127.0.0.1 --port ${new URL(demoE2eUrl()).port} --strictPort`,
      cwd: repoRoot,
      url: demoE2eUrl(),
      reuseExistingServer: false,
      timeout: 180_000,
      stdout: 'pipe',
      stderr: 'pipe',
    },
  ],
});
