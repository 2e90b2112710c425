import { readdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import { serveLocalFiles } from '../demo/local-files.ts';
import { MODELS_URL_PATH } from './support/site.ts';

// The browser tests' site: every e2e/pages/*.html is one page, built by Vite and served
// by `vite preview` (see playwright.config.ts). Model files are never bundled or fetched
// from the internet: /models/* is served straight from PRISM_MODEL_DIR.

const here = dirname(fileURLToPath(import.meta.url));
const pagesDir = resolve(here, 'pages');
const modelDir = resolve(process.env.PRISM_MODEL_DIR ?? resolve(here, '../../shared/models/all-MiniLM-L6-v2'));

const input = Object.fromEntries(
  readdirSync(pagesDir)
    .filter((name) => name.endsWith('.html'))
    .map((name) => [name.slice(0, -'.html'.length), resolve(pagesDir, name)]),
);

export default defineConfig({
  root: pagesDir,
  publicDir: resolve(pagesDir, 'public'),
  logLevel: 'warn',
  build: {
    outDir: resolve(here, 'out/site'),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: true,
    rolldownOptions: { input },
  },
  server: { fs: { allow: [resolve(here, '..')] } },
  plugins: [serveLocalFiles('prism-e2e-models', [{ urlPath: MODELS_URL_PATH, dir: modelDir }])],
});
