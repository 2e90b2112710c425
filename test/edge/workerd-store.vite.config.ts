import { defineConfig } from 'vite';

// Bundles test/edge/workerd-store.ts (a worker with a SQLite-backed Durable Object) for workerd
// into PRISM_WORKERD_OUT: the `workerd` export condition first, one ES module.
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
    lib: { entry: new URL('./workerd-store.ts', import.meta.url).pathname, formats: ['es'], fileName: 'worker' },
  },
});
