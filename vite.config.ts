/// <reference types="vitest/config" />
import { defineConfig } from 'vite';

// The library itself is built by tsc (`npm run build`): a file-for-file ESM tree keeps the
// committed WASM at a fixed relative path. Vite builds the demo and the e2e pages, and
// configures vitest.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup.ts'],
    testTimeout: 300_000,
    hookTimeout: 300_000,
    pool: 'forks',
  },
});
