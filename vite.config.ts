import { defineConfig } from 'vite';

// Library build: one universal ESM entry (browser, workerd, Deno, Node) plus a Node-only
// entry that adds file storage and disk loading. `node:*` imports live only behind `./node`.
export default defineConfig({
  build: {
    target: 'es2022',
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: true,
    lib: {
      entry: { index: 'src/index.ts', node: 'src/node.ts' },
      formats: ['es'],
    },
    rollupOptions: {
      external: [/^node:/, 'onnxruntime-web', '@xenova/transformers', 'idb', 'openai', 'zod', 'compromise', 'chrono-node', 'minisearch', 'gpt-tokenizer'],
    },
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
