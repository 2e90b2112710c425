import { defineConfig } from 'vite';

// Bundles one workerd entry of test/edge (PRISM_WORKERD_ENTRY, default workerd-main.ts) into
// PRISM_WORKERD_OUT as worker.js plus lazily imported chunks: the `workerd` export condition
// first, ES modules, the usearch `.wasm` left as an import workerd resolves.
const outDir = process.env.PRISM_WORKERD_OUT;
if (!outDir) throw new Error('set PRISM_WORKERD_OUT');
const entry = process.env.PRISM_WORKERD_ENTRY ?? 'workerd-main.ts';

export default defineConfig({
  logLevel: 'warn',
  resolve: { conditions: ['workerd', 'worker', 'browser'] },
  build: {
    outDir,
    emptyOutDir: true,
    target: 'esnext',
    minify: false,
    lib: { entry: new URL(`./${entry}`, import.meta.url).pathname, formats: ['es'], fileName: 'worker' },
    rollupOptions: { external: [/usearch\.wasm$/] },
  },
});
