/**
 * PRISM in a Cloudflare Worker. Each user's memory lives in a SQLite-backed Durable Object of its
 * own (`idFromName(userId)`); MiniLM embeds inside the object, on onnxruntime-web's WASM compiled
 * ahead of time by the runtime. The model files are static assets, read through `ASSETS` once per
 * object and then kept in the object's storage.
 *
 *   POST   /users/:user/messages            { messages, sessionId?, date? }  → what was added
 *   POST   /users/:user/search              { query, budget? }              → context and units
 *   GET    /users/:user/sessions                                             → the user's sessions
 *   DELETE /users/:user/sessions/:session                                    → forgets one session
 *   DELETE /users/:user                                                      → forgets the user
 *
 * Set the secret `API_TOKEN` (`wrangler secret put API_TOKEN`) to require `Authorization: Bearer <token>`.
 */
import { Memory, PrismError, type InputMessage, type PrismErrorCode } from 'prism-memory';
import { createMiniLmEmbedder, durableObjectModelSource, flatIndex, openDurableObjectStore, urlModelSource, type DurableObjectStorageLike, type MiniLmEmbedder } from 'prism-memory/advanced';
import ortWasm from 'onnxruntime-web/ort-wasm-simd-threaded.wasm';

/** The bindings wrangler.jsonc declares, typed as far as this Worker uses them. */
export interface Env {
  USER_MEMORY: { idFromName(name: string): unknown; get(id: unknown): { fetch(request: Request): Promise<Response> } };
  ASSETS: { fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> };
  API_TOKEN?: string;
}

interface ObjectState {
  storage: DurableObjectStorageLike & { deleteAll(): Promise<void> };
}

/** Where the Worker's static assets hold the model (the host is never looked at). */
const MODEL_URL = 'https://assets.local/models/all-MiniLM-L6-v2/';
const DEFAULT_BUDGET = 512;

/**
 * The embedder, loaded by the first object that needs it and shared by every object the isolate
 * runs: Cloudflare may place several users' objects in one isolate, and its 128 MB are the
 * isolate's, so the model is held once.
 */
let embedder: Promise<MiniLmEmbedder> | undefined;

function loadEmbedder(storage: DurableObjectStorageLike, env: Env): Promise<MiniLmEmbedder> {
  embedder ??= createMiniLmEmbedder({
    source: durableObjectModelSource(storage, urlModelSource(MODEL_URL, { fetch: (url, init) => env.ASSETS.fetch(url, init), cache: false })),
    precision: 'int8',
    // The int8 weights stay int8 in memory and become float per run: 77 MB of WASM instead of 134 MB.
    dequantize: 'per-run',
    // onnxruntime's WASM memory grows to its largest call and never shrinks: 512 padded tokens a
    // call (two texts of 256 tokens, eight of 64) fit in what loading the model left free (77 MB
    // in all); larger calls add 15 MB and more. Each call also dequantizes the weights once, so
    // short texts share one.
    batchTokens: 512,
    // Fewer vectors kept for repeated texts (default 4,096, 6 MB): memory counts more than the odd repeat.
    cacheSize: 256,
    // Workers compile no WebAssembly at run time: onnxruntime gets the module the runtime compiled.
    wasmModule: ortWasm,
  });
  // A failed load (the assets missing, say) is tried again by the next request.
  embedder.catch(() => (embedder = undefined));
  return embedder;
}

export class UserMemory {
  #memory: Promise<Memory> | undefined;

  constructor(
    private readonly state: ObjectState,
    private readonly env: Env,
  ) {}

  #open(): Promise<Memory> {
    // Exact search in plain JS (flatIndex): the usearch WASM index reserves 4 MB arenas per index space.
    this.#memory ??= loadEmbedder(this.state.storage, this.env).then((loaded) =>
      Memory.open({ store: openDurableObjectStore(this.state.storage), embedder: loaded, createIndex: flatIndex, llm: null }),
    );
    this.#memory.catch(() => (this.#memory = undefined));
    return this.#memory;
  }

  fetch(request: Request): Promise<Response> {
    return answering(async () => {
      const [, user = '', resource, session] = pathSegments(request);
      const scope = { userId: user };
      switch (`${request.method} /${resource ?? ''}${session === undefined ? '' : '/:session'}`) {
        case 'POST /messages': {
          const body = await jsonBody(request);
          // PRISM checks every message and field, and answers INVALID_INPUT naming what is wrong.
          const report = await (await this.#open()).add(body['messages'] as InputMessage[], { ...scope, ...optionalString(body, 'sessionId'), ...optionalString(body, 'date') });
          const { chunksAdded, nodesAdded, edgesAdded, skipped } = report;
          return Response.json({ chunksAdded, nodesAdded, edgesAdded, skipped });
        }
        case 'POST /search': {
          const body = await jsonBody(request);
          const result = await (await this.#open()).search(body['query'] as string, { ...scope, budget: (body['budget'] ?? DEFAULT_BUDGET) as number });
          const { context, tokens, dialogIds, units } = result;
          return Response.json({ context, tokens, dialogIds, units: units.map(({ id, score, turns }) => ({ id, score, turns: turns.map(({ id, speaker, text, date, sessionId }) => ({ id, speaker, text, date, sessionId })) })) });
        }
        case 'GET /sessions':
          return Response.json(await (await this.#open()).list(scope));
        case 'DELETE /sessions/:session':
          return Response.json(await (await this.#open()).delete({ ...scope, sessionId: session ?? '' }));
        case 'DELETE /': {
          // The whole database: the memory, the rows SQLite has only marked free, and the kept model.
          await this.#memory?.then((memory) => memory.close()).catch(() => undefined);
          this.#memory = undefined;
          await this.state.storage.deleteAll();
          return Response.json({ deleted: user });
        }
        default:
          return errorResponse(404, 'NOT_FOUND', `no route ${request.method} ${new URL(request.url).pathname}`);
      }
    });
  }
}

export default {
  fetch(request: Request, env: Env): Promise<Response> {
    return answering(async () => {
      if (env.API_TOKEN && request.headers.get('authorization') !== `Bearer ${env.API_TOKEN}`) return errorResponse(401, 'UNAUTHORIZED', 'missing or wrong bearer token');
      const [users, user, , , ...extra] = pathSegments(request);
      if (users !== 'users' || !user || extra.length > 0) return errorResponse(404, 'NOT_FOUND', 'routes are /users/:user[/messages|/search|/sessions[/:session]]');
      return env.USER_MEMORY.get(env.USER_MEMORY.idFromName(user)).fetch(request);
    });
  },
};

/** HTTP statuses of the errors a caller can do something about; every other code is a 500. */
const STATUS: Partial<Record<PrismErrorCode, number>> = { INVALID_INPUT: 400, INPUT_TOO_LARGE: 413, NOT_FOUND: 404, STORE_QUOTA_EXCEEDED: 507 };

/** `run`'s response, or a PrismError as a JSON error with its status. */
async function answering(run: () => Promise<Response>): Promise<Response> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof PrismError) return errorResponse(STATUS[error.code] ?? 500, error.code, error.message);
    throw error;
  }
}

function errorResponse(status: number, code: string, message: string): Response {
  return Response.json({ error: { code, message } }, { status });
}

/** The URL path's segments, decoded. */
function pathSegments(request: Request): string[] {
  try {
    return new URL(request.url).pathname.split('/').slice(1).map(decodeURIComponent);
  } catch (cause) {
    throw new PrismError('INVALID_INPUT', 'the path is not valid percent-encoding', { cause });
  }
}

async function jsonBody(request: Request): Promise<Record<string, unknown>> {
  const body: unknown = await request.json().catch(() => undefined);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new PrismError('INVALID_INPUT', 'the body must be a JSON object');
  return body as Record<string, unknown>;
}

function optionalString(body: Record<string, unknown>, key: string): Record<string, string> {
  const value = body[key];
  if (value === undefined) return {};
  if (typeof value !== 'string') throw new PrismError('INVALID_INPUT', `${key} must be a string`);
  return { [key]: value };
}
