/**
 * The edge scenario in workerd (Cloudflare's runtime; spawned by test/edge.test.ts). The usearch
 * index loads from a precompiled `WebAssembly.Module` import, as Workers require: workerd refuses
 * to compile WASM from bytes at run time. onnxruntime-web can only load its WASM from a URL or
 * bytes, so MiniLM itself cannot run here; the worker embeds with the real MiniLM vectors that
 * Node computed for the same texts (POSTed as a table) and everything else — extraction, graph
 * building, the WASM index, retrieval, packing, the checkpoint — runs in workerd.
 */
import usearchModule from './usearch.wasm';
import { loadUsearchWasm } from '../../src/vector/usearch-wasm.ts';
import { runEdgeScenario } from './scenario.ts';
import { tableEmbedder, type VectorTable } from './vector-table.ts';

interface ScenarioRequest {
  embedderId: string;
  dim: number;
  vectors: VectorTable;
}

export default {
  async fetch(request: Request): Promise<Response> {
    try {
      const { embedderId, dim, vectors } = (await request.json()) as ScenarioRequest;
      const usearch = await loadUsearchWasm(usearchModule);
      const result = await runEdgeScenario('workerd', tableEmbedder(embedderId, dim, vectors), (d) => usearch.createIndex({ dim: d }));
      return Response.json(result);
    } catch (error) {
      return new Response(error instanceof Error ? `${error.name}: ${error.message}\n${error.stack ?? ''}` : String(error), { status: 500 });
    }
  },
};
