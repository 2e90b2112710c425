/**
 * The edge scenario in Deno (spawned by test/edge.test.ts): MiniLM on onnxruntime-web, model
 * files and the usearch WASM read through `fetch` of file: URLs — the same universal code a
 * Deno Deploy function would run with https: URLs. Prints the ScenarioResult as JSON.
 */
import { createMiniLmEmbedder } from '../../src/embed/minilm.ts';
import { urlModelSource } from '../../src/embed/model-source.ts';
import { loadUsearchWasm } from '../../src/vector/usearch-wasm.ts';
import { runEdgeScenario } from './scenario.ts';

declare const Deno: { args: string[] };

const [modelDirUrl] = Deno.args;
if (!modelDirUrl) throw new Error('usage: deno run deno-main.ts <model folder URL>');
const [embedder, usearch] = await Promise.all([
  createMiniLmEmbedder({ source: urlModelSource(modelDirUrl), precision: 'int8' }),
  loadUsearchWasm(new URL('../../wasm/usearch.wasm', import.meta.url)),
]);
const result = await runEdgeScenario('deno', embedder, (dim) => usearch.createIndex({ dim }));
console.log(JSON.stringify(result));
