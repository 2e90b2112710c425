/**
 * The edge scenario in workerd (Cloudflare's runtime; spawned by test/edge.test.ts), MiniLM
 * included: onnxruntime-web runs on its `.wasm` imported as a module, which workerd compiles ahead
 * of time (Workers compile no WebAssembly at run time), as does the usearch index. The model files
 * come from the `MODELS` service, a workerd disk service over the model folder. The request names
 * texts to embed besides, so the test can hold their vectors against Node's.
 */
import ortWasm from 'onnxruntime-web/ort-wasm-simd-threaded.wasm';
import usearchModule from '../../wasm/usearch.wasm';
import { createMiniLmEmbedder } from '../../src/embed/minilm.ts';
import { urlModelSource } from '../../src/embed/model-source.ts';
import { loadUsearchWasm } from '../../src/vector/usearch-wasm.ts';
import { runEdgeScenario, type ScenarioResult } from './scenario.ts';

interface Env {
  MODELS: { fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> };
}

/** The scenario's result, and the vectors of the texts the request named. */
export interface WorkerdScenarioResult extends ScenarioResult {
  vectors: number[][];
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    try {
      const { texts } = (await request.json()) as { texts: string[] };
      const [embedder, usearch] = await Promise.all([
        createMiniLmEmbedder({
          source: urlModelSource('http://models/', { fetch: (url, init) => env.MODELS.fetch(url, init), cache: false }),
          precision: 'int8',
          dequantize: 'per-run',
          wasmModule: ortWasm,
        }),
        loadUsearchWasm(usearchModule),
      ]);
      const result = await runEdgeScenario('workerd', embedder, (dim) => usearch.createIndex({ dim }));
      const vectors = (await embedder.embed(texts)).map((vector) => Array.from(vector));
      return Response.json({ ...result, vectors } satisfies WorkerdScenarioResult);
    } catch (error) {
      return new Response(error instanceof Error ? `${error.name}: ${error.message}\n${error.stack ?? ''}` : String(error), { status: 500 });
    }
  },
};
