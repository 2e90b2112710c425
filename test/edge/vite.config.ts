import { defineConfig } from 'vite';

// Bundles test/edge/workerd-main.ts for workerd into PRISM_WORKERD_OUT: the `workerd` export
// condition first, one ES module, the usearch `.wasm` left as an import workerd resolves.
const outDir = process.env.PRISM_WORKERD_OUT;
if (!outDir) throw new Error('set PRISM_WORKERD_OUT');

export default defineConfig({
  logLevel: 'warn',
  resolve: { conditions: ['workerd', 'worker', 'browser'] },
  build: {
    outDir,
    emptyOutDir: true,
    target: 'esnext',
    minify: false,
    lib: { entry: new URL('./workerd-main.ts', import.meta.url).pathname, formats: ['es'], fileName: 'worker' },
    rollupOptions: { external: [/usearch\.wasm$/] },
  },
});
