import { createReadStream, readdirSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, extname, isAbsolute, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import type { Plugin } from 'vite';
import { MODELS_URL_PATH } from './support/site.ts';

// The browser tests' site: every e2e/pages/*.html is one page, built by Vite and served
// by `vite preview` (see playwright.config.ts). Model files are never bundled or fetched
// from the internet: /models/* is served straight from PRISM_MODEL_DIR.

const here = dirname(fileURLToPath(import.meta.url));
const pagesDir = resolve(here, 'pages');
const modelDir = resolve(process.env.PRISM_MODEL_DIR ?? resolve(here, '../../shared/models/all-MiniLM-L6-v2'));


const CONTENT_TYPES: Record<string, string> = {
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.onnx': 'application/octet-stream',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
};

function serveModelFile(req: IncomingMessage, res: ServerResponse, next: () => void): void {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (!url.pathname.startsWith(MODELS_URL_PATH) || (req.method !== 'GET' && req.method !== 'HEAD')) return next();
  const file = resolve(modelDir, decodeURIComponent(url.pathname.slice(MODELS_URL_PATH.length)));
  const inside = relative(modelDir, file);
  const stat = inside.startsWith('..') || isAbsolute(inside) ? undefined : statSync(file, { throwIfNoEntry: false });
  if (!stat?.isFile()) {
    res.statusCode = 404;
    res.end();
    return;
  }
  res.setHeader('Content-Type', CONTENT_TYPES[extname(file)] ?? 'application/octet-stream');
  res.setHeader('Content-Length', stat.size);
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  createReadStream(file).pipe(res);
}

function serveModels(): Plugin {
  return {
    name: 'prism-e2e-models',
    configureServer: (server) => void server.middlewares.use(serveModelFile),
    configurePreviewServer: (server) => void server.middlewares.use(serveModelFile),
  };
}

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
  plugins: [serveModels()],
});
