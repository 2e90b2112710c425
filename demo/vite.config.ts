import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import { serveLocalFiles } from './local-files.ts';
import { DEV_LOCOMO_URL, MODELS_PATH } from './paths.ts';

// The demo page (`npm run demo` serves it; `vite build demo` builds it into demo/dist).
// Model files are never bundled or fetched from a hub: /models/* is served from
// PRISM_MODEL_DIR (default ../shared/models/all-MiniLM-L6-v2 beside the repository), by the
// dev server and by `vite preview`. The dev server alone also serves the LoCoMo file at
// DEV_LOCOMO_URL for the developer setting; LoCoMo is never part of a build.

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '..');
const modelDir = resolve(process.env.PRISM_MODEL_DIR ?? resolve(repoRoot, '../shared/models/all-MiniLM-L6-v2'));
const locomoFile = resolve(process.env.PRISM_LOCOMO ?? resolve(repoRoot, '../shared/data/locomo/locomo10-dev.json'));

export default defineConfig({
  root: here,
  build: {
    outDir: resolve(here, 'dist'),
    emptyOutDir: true,
    target: 'es2022',
    // The ONNX runtime's WASM is large by nature; Vite's 500 kB warning says nothing useful here.
    chunkSizeWarningLimit: 4096,
  },
  worker: { format: 'es' },
  cacheDir: resolve(repoRoot, 'node_modules/.vite/demo'),
  // The dev server pre-bundles dependencies it finds from these entries (the worker is not
  // found from the page on its own), including the WASM-only ONNX runtime PRISM imports.
  optimizeDeps: { entries: ['index.html', 'memory.worker.ts'], include: ['onnxruntime-web/wasm'] },
  server: { fs: { allow: [repoRoot] } },
  plugins: [
    serveLocalFiles('prism-demo-local-files', [
      { urlPath: MODELS_PATH, dir: modelDir },
      { urlPath: DEV_LOCOMO_URL, file: locomoFile, devOnly: true },
    ]),
  ],
});
