/**
 * PRISM behind a `Deno.serve` handler: one memory per user (a scope of one store), MiniLM on
 * onnxruntime-web, the model read from `PRISM_MODEL_URL` (a folder in the Hugging Face layout;
 * default the Hugging Face hub) through the Cache API, so a restart reads it from disk.
 *
 *   POST   /users/:user/messages            { messages, sessionId?, date? }  → what was added
 *   POST   /users/:user/search              { query, budget? }              → context and units
 *   GET    /users/:user/sessions                                             → the user's sessions
 *   DELETE /users/:user/sessions/:session                                    → forgets one session
 *   DELETE /users/:user                                                      → forgets the user
 *
 * The store is in memory (`MemoryStore`): memories last as long as the process. Keep them with
 * `memory.export({ userId })` / `memory.import(bytes, { userId })`, e.g. in Deno KV.
 *
 * Run: `deno task start` (deno run --allow-net --allow-read --allow-env main.ts).
 */
import { Memory, PrismError, type InputMessage, type PrismErrorCode } from 'prism-memory';
import { createMiniLmEmbedder, huggingFaceModelSource, loadUsearchWasm, MemoryStore, urlModelSource } from 'prism-memory/advanced';

const modelUrl = Deno.env.get('PRISM_MODEL_URL');
const [embedder, usearch] = await Promise.all([
  createMiniLmEmbedder({ source: modelUrl ? urlModelSource(modelUrl) : huggingFaceModelSource(), precision: 'int8' }),
  loadUsearchWasm(import.meta.resolve('prism-memory/wasm/usearch.wasm')),
]);
const memory = await Memory.open({ store: new MemoryStore(), embedder, createIndex: (dim) => usearch.createIndex({ dim }), llm: null });

/** HTTP statuses of the errors a caller can do something about; every other code is a 500. */
const STATUS: Partial<Record<PrismErrorCode, number>> = { INVALID_INPUT: 400, INPUT_TOO_LARGE: 413, NOT_FOUND: 404 };

async function handle(request: Request): Promise<Response> {
  const [users, user, resource, session, ...extra] = new URL(request.url).pathname.split('/').slice(1).map(decodeURIComponent);
  if (users !== 'users' || !user || extra.length > 0) return Response.json({ error: { code: 'NOT_FOUND', message: 'routes start with /users/:user' } }, { status: 404 });
  const scope = { userId: user };
  switch (`${request.method} /${resource ?? ''}${session === undefined ? '' : '/:session'}`) {
    case 'POST /messages': {
      const { messages, sessionId, date } = await request.json();
      const { chunksAdded, nodesAdded, edgesAdded, skipped } = await memory.add(messages as InputMessage[], { ...scope, sessionId, date });
      return Response.json({ chunksAdded, nodesAdded, edgesAdded, skipped });
    }
    case 'POST /search': {
      const { query, budget = 512 } = await request.json();
      const { context, tokens, dialogIds, units } = await memory.search(query, { ...scope, budget });
      return Response.json({ context, tokens, dialogIds, units: units.map(({ id, score, turns }) => ({ id, score, turns: turns.map(({ id, speaker, text, date, sessionId }) => ({ id, speaker, text, date, sessionId })) })) });
    }
    case 'GET /sessions':
      return Response.json(await memory.list(scope));
    case 'DELETE /sessions/:session':
      return Response.json(await memory.delete({ ...scope, sessionId: session }));
    case 'DELETE /':
      return Response.json(await memory.delete(scope));
    default:
      return Response.json({ error: { code: 'NOT_FOUND', message: `no route ${request.method} ${new URL(request.url).pathname}` } }, { status: 404 });
  }
}

Deno.serve({ port: Number(Deno.env.get('PORT') ?? 8000), hostname: Deno.env.get('HOSTNAME') ?? '0.0.0.0' }, async (request) => {
  try {
    return await handle(request);
  } catch (error) {
    if (error instanceof PrismError) return Response.json({ error: { code: error.code, message: error.message } }, { status: STATUS[error.code] ?? 500 });
    if (error instanceof SyntaxError || error instanceof URIError) return Response.json({ error: { code: 'INVALID_INPUT', message: error.message } }, { status: 400 });
    throw error;
  }
});
