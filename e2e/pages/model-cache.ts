/// <reference types="vite/client" />
import ortWasmUrl from 'onnxruntime-web/ort-wasm-simd-threaded.wasm?url';
import { loadBrowserRuntime, openBrowserMemory, type BrowserRuntime } from '../../src/browser.ts';
import { createMiniLmEmbedder } from '../../src/embed/minilm.ts';
import { urlModelSource, type DownloadProgress } from '../../src/embed/model-source.ts';
import { turnLine } from '../../src/graph/chunk-text.ts';
import usearchWasmUrl from '../../wasm/usearch.wasm?url';
import { parseConversationInput } from '../../demo/conversation-input.ts';
import { SAMPLE } from '../../demo/samples/index.ts';
import { MODELS_URL_PATH } from '../support/site.ts';

/**
 * The browser runtime as a page loads it: model files and onnxruntime's WASM through the Cache
 * API (so a reload fetches none of them), and the demo sample ingested into IndexedDB.
 */
let runtime: BrowserRuntime | null = null;
const events: DownloadProgress[] = [];

async function load(): Promise<BrowserRuntime> {
  runtime ??= await loadBrowserRuntime({
    modelBaseUrl: MODELS_URL_PATH,
    usearchWasm: usearchWasmUrl,
    ortWasmUrl,
    onProgress: (event) => events.push(event),
  });
  return runtime;
}

const modelCacheHarness = {
  /**
   * WebGPU where the browser offers an adapter: fp32 vectors from onnxruntime's WebGPU build
   * against its WASM build. `adapter: false` when there is none (nothing was run).
   */
  async webgpu(texts: string[]): Promise<{ adapter: boolean; minCosine: number | null }> {
    // TypeScript's DOM library has no WebGPU types yet.
    const webGpu = (navigator as Navigator & { gpu?: { requestAdapter(): Promise<object | null> } }).gpu;
    const adapter = await webGpu?.requestAdapter();
    if (!adapter) return { adapter: false, minCosine: null };
    const source = urlModelSource(new URL(MODELS_URL_PATH, location.href));
    const [gpu, wasm] = await Promise.all([
      createMiniLmEmbedder({ source, precision: 'fp32', device: 'webgpu' }),
      createMiniLmEmbedder({ source, precision: 'fp32' }),
    ]);
    const [a, b] = [await gpu.embed(texts), await wasm.embed(texts)];
    const cosines = a.map((v, i) => v.reduce((sum, x, d) => sum + x * (b[i]?.[d] ?? Number.NaN), 0));
    return { adapter: true, minCosine: Math.min(...cosines) };
  },

  /** Loads the runtime, embeds one text, and reports the download events. */
  async open(): Promise<{ events: DownloadProgress[]; dim: number }> {
    const [vector] = await (await load()).embedder.embed(['Is the model here?']);
    return { events, dim: vector?.length ?? 0 };
  },

  /**
   * Times embedding the sample's turns once (the dense-turns baseline) and PRISM's zero-LLM
   * ingest of the same sample, with the runtime already loaded.
   */
  async ingestSample(dbName: string): Promise<{ turns: number; embedMs: number; ingestMs: number; nodes: number }> {
    const loaded = await load();
    const [conversation] = parseConversationInput(SAMPLE.text, SAMPLE.name);
    if (!conversation) throw new Error('the demo sample did not parse');
    const turns = conversation.sessions.flatMap((s) => s.turns);
    const t0 = performance.now();
    await loaded.embedder.embed(turns.map(turnLine));
    const embedMs = performance.now() - t0;
    const memory = await openBrowserMemory({ runtime: loaded, dbName });
    try {
      const t1 = performance.now();
      await memory.addConversation(conversation);
      const ingestMs = performance.now() - t1;
      const { nodes } = await memory.stats();
      return { turns: turns.length, embedMs, ingestMs, nodes: Object.values(nodes).reduce((sum, n) => sum + n, 0) };
    } finally {
      await memory.close();
    }
  },
};

declare global {
  interface Window {
    modelCacheHarness: typeof modelCacheHarness;
  }
}

window.modelCacheHarness = modelCacheHarness;
