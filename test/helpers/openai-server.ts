/**
 * A real OpenAI-compatible HTTP server for tests: `POST /v1/chat/completions` and
 * `POST /v1/embeddings` on 127.0.0.1, an ephemeral port, answers scripted per request. Replies
 * come from a queue first (`enqueue`), then from a handler (`setHandler`, default `echoHandler`;
 * embeddings: the `embed` option). Every request is
 * recorded so tests can assert on prompts, models, temperature and headers. A request with
 * `stream: true` gets the reply as server-sent chunks. CORS preflights
 * are answered (and not recorded) so browser tests can use it too.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ChatRequestBody {
  model: string;
  messages: Array<{ role: string; content: string }>;
  temperature?: number;
  response_format?: { type: string };
  [parameter: string]: unknown;
}

export interface EmbeddingsRequestBody {
  model: string;
  input: string[];
  [parameter: string]: unknown;
}

export interface RecordedRequest {
  method: string;
  path: string;
  /** Lower-cased header names, repeated values joined with ", ". */
  headers: Record<string, string>;
  /** The parsed JSON body; `undefined` when the body was not a chat request. */
  body: ChatRequestBody | undefined;
  /** The parsed body of an embeddings request. */
  embeddings?: EmbeddingsRequestBody;
}

export type ScriptedReply =
  /** HTTP 200 with one assistant message holding `content` (an embeddings request gets `content` as the whole body). */
  | { kind: 'content'; content: string; delayMs?: number; usage?: { promptTokens: number; completionTokens: number } }
  /** Any status with an OpenAI-style error body (or `body` verbatim). */
  | { kind: 'status'; status: number; headers?: Record<string, string>; body?: string; delayMs?: number }
  /** The socket is destroyed without a response: a network error for the client. */
  | { kind: 'drop' };

export const reply = {
  content(content: string, options: { delayMs?: number; usage?: { promptTokens: number; completionTokens: number } } = {}): ScriptedReply {
    return { kind: 'content', content, ...options };
  },
  json(value: unknown, options: { delayMs?: number } = {}): ScriptedReply {
    return { kind: 'content', content: JSON.stringify(value), ...options };
  },
  status(status: number, options: { headers?: Record<string, string>; body?: string; delayMs?: number } = {}): ScriptedReply {
    return { kind: 'status', status, ...options };
  },
  rateLimited(retryAfterSeconds?: number): ScriptedReply {
    return { kind: 'status', status: 429, ...(retryAfterSeconds === undefined ? {} : { headers: { 'Retry-After': String(retryAfterSeconds) } }) };
  },
  drop(): ScriptedReply {
    return { kind: 'drop' };
  },
};

export type ReplyHandler = (request: RecordedRequest, server: OpenAiTestServer) => ScriptedReply | Promise<ScriptedReply>;

/** A handler replying with `toJson(request)` serialised as the assistant's content. */
export function jsonHandler(toJson: (request: RecordedRequest) => unknown): ReplyHandler {
  return (request) => reply.json(toJson(request));
}

/** The default: echoes the model and the last user message back as JSON `{ model, echo }`. */
export const echoHandler: ReplyHandler = jsonHandler((request) => ({
  model: request.body?.model,
  echo: request.body?.messages.filter((message) => message.role === 'user').at(-1)?.content ?? '',
}));

export interface OpenAiTestServer {
  /** Base URL including `/v1`, ready for an OpenAI client. */
  readonly baseURL: string;
  readonly requests: readonly RecordedRequest[];
  /** Requests received and not yet answered. */
  readonly inFlight: number;
  /** The highest `inFlight` seen. */
  readonly maxInFlight: number;
  enqueue(...replies: ScriptedReply[]): void;
  setHandler(handler: ReplyHandler): void;
  close(): Promise<void>;
}

/** Vectors for an embeddings request's texts. */
export type EmbeddingsHandler = (body: EmbeddingsRequestBody) => number[][] | Promise<number[][]>;

export interface OpenAiTestServerOptions {
  handler?: ReplyHandler;
  /** Answers `POST /v1/embeddings` when no scripted reply is queued. Default: every text gets the vector [1, 0, 0, 0]. */
  embed?: EmbeddingsHandler;
  /** Requests beyond this many get HTTP 400, so a runaway retry loop ends (default 1000). */
  maxRequests?: number;
  /** Larger bodies get HTTP 413 (default 1 MiB). */
  maxBodyBytes?: number;
}

/** Rough token count for the `usage` block: whitespace-separated words. */
function wordCount(text: string): number {
  return text.split(/\s+/).filter((word) => word !== '').length;
}

function readBody(request: IncomingMessage, maxBytes: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) chunks.push(chunk);
    });
    request.on('end', () => resolve(size <= maxBytes ? Buffer.concat(chunks).toString('utf8') : undefined));
    request.on('error', reject);
  });
}

function parseEmbeddingsBody(text: string): EmbeddingsRequestBody | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value === 'object' && value !== null && 'model' in value && 'input' in value && Array.isArray(value.input)) return value as EmbeddingsRequestBody;
  } catch {
    // Not JSON: recorded with no embeddings body, answered 400 below.
  }
  return undefined;
}

function parseChatBody(text: string): ChatRequestBody | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value === 'object' && value !== null && 'model' in value && 'messages' in value && Array.isArray(value.messages)) {
      return value as ChatRequestBody;
    }
  } catch {
    // Not JSON: recorded with an undefined body, answered 400 below.
  }
  return undefined;
}

function errorBody(status: number, message: string): string {
  return JSON.stringify({ error: { message, type: status === 429 ? 'rate_limit_exceeded' : 'server_error', code: null } });
}

export async function startOpenAiServer(options: OpenAiTestServerOptions = {}): Promise<OpenAiTestServer> {
  const maxRequests = options.maxRequests ?? 1000;
  const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;
  const queue: ScriptedReply[] = [];
  const requests: RecordedRequest[] = [];
  const pendingDelays = new Set<() => void>();
  let handler = options.handler ?? echoHandler;
  const embed = options.embed ?? ((body: EmbeddingsRequestBody) => body.input.map(() => [1, 0, 0, 0]));
  let inFlight = 0;
  let maxInFlight = 0;

  /** Waits `ms`, or less if the client goes away or the server closes; resolves false then. */
  function delay(ms: number, response: ServerResponse): Promise<boolean> {
    return new Promise((resolve) => {
      const finish = (completed: boolean): void => {
        clearTimeout(timer);
        response.off('close', cancel);
        pendingDelays.delete(cancel);
        resolve(completed);
      };
      const cancel = (): void => finish(false);
      const timer = setTimeout(() => finish(true), ms);
      response.on('close', cancel);
      pendingDelays.add(cancel);
    });
  }

  async function answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    // Cross-origin headers let a browser page (e2e tests) call the server directly.
    // Retry-After is not a CORS-safelisted response header: exposed so a page can honour it.
    response.setHeader('Access-Control-Allow-Origin', '*');
    response.setHeader('Access-Control-Expose-Headers', '*');
    if (request.method === 'OPTIONS') {
      response.writeHead(204, {
        'Access-Control-Allow-Methods': 'POST',
        'Access-Control-Allow-Headers': request.headers['access-control-request-headers'] ?? '*',
      });
      response.end();
      return;
    }
    let answered = false;
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    // Counted down before the response is written, so the client can never see it while it still counts.
    const settle = (): void => {
      if (answered) return;
      answered = true;
      inFlight--;
    };
    response.on('close', settle);
    const send = (status: number, body: string, headers: Record<string, string> = {}): void => {
      settle();
      response.writeHead(status, { 'Content-Type': 'application/json', ...headers });
      response.end(body);
    };

    const text = await readBody(request, maxBodyBytes);
    const path = request.url ?? '';
    const embeddings = path === '/v1/embeddings';
    if (request.method !== 'POST' || (path !== '/v1/chat/completions' && !embeddings)) {
      send(404, errorBody(404, `no route for ${request.method} ${path}`));
      return;
    }
    if (text === undefined) {
      send(413, errorBody(413, 'request body too large'));
      return;
    }
    const headers = Object.fromEntries(
      Object.entries(request.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : (value ?? '')]),
    );
    const recorded: RecordedRequest = embeddings
      ? { method: request.method, path, headers, body: undefined, embeddings: parseEmbeddingsBody(text) }
      : { method: request.method, path, headers, body: parseChatBody(text) };
    if (requests.length >= maxRequests) {
      send(400, errorBody(400, `test server request budget of ${maxRequests} exhausted`));
      return;
    }
    requests.push(recorded);
    const embeddingsBody = recorded.embeddings;
    if (embeddings ? embeddingsBody === undefined : recorded.body === undefined) {
      send(400, errorBody(400, embeddings ? 'body is not an embeddings request' : 'body is not a chat completion request'));
      return;
    }

    const scripted = queue.shift() ?? (embeddingsBody ? embeddingsReply(embeddingsBody, await embed(embeddingsBody)) : await handler(recorded, server));
    if (scripted.kind === 'drop') {
      settle();
      request.socket.destroy();
      return;
    }
    if (scripted.delayMs !== undefined && !(await delay(scripted.delayMs, response))) return;
    if (scripted.kind === 'status') {
      send(scripted.status, scripted.body ?? errorBody(scripted.status, `scripted HTTP ${scripted.status}`), scripted.headers);
      return;
    }
    if (embeddings || !recorded.body) {
      send(200, scripted.content);
      return;
    }
    const promptTokens = scripted.usage?.promptTokens ?? recorded.body.messages.reduce((sum, message) => sum + wordCount(message.content), 0);
    const completionTokens = scripted.usage?.completionTokens ?? wordCount(scripted.content);
    const usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
    if (recorded.body.stream === true) {
      // `stream: true`: the same reply as server-sent chunks, one word each, then the finish reason, usage and [DONE].
      settle();
      response.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
      const chunk = (choice: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
        `data: ${JSON.stringify({ id: `chatcmpl-test-${requests.length}`, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: recorded.body?.model, choices: [{ index: 0, ...choice }], ...extra })}\n\n`;
      const words = scripted.content.match(/\S+\s*/g) ?? [];
      response.write(chunk({ delta: { role: 'assistant', content: '' }, finish_reason: null }));
      for (const word of words) response.write(chunk({ delta: { content: word }, finish_reason: null }));
      response.write(chunk({ delta: {}, finish_reason: 'stop' }, { usage }));
      response.end('data: [DONE]\n\n');
      return;
    }
    send(
      200,
      JSON.stringify({
        id: `chatcmpl-test-${requests.length}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: recorded.body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: scripted.content, refusal: null }, finish_reason: 'stop', logprobs: null }],
        usage,
      }),
    );
  }

  const http = createServer((request, response) => {
    answer(request, response).catch((error: unknown) => {
      if (!response.headersSent) {
        response.writeHead(500, { 'Content-Type': 'application/json' });
        response.end(errorBody(500, `test server handler failed: ${String(error)}`));
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = http.address() as AddressInfo;

  const server: OpenAiTestServer = {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    get inFlight() {
      return inFlight;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    enqueue(...replies) {
      queue.push(...replies);
    },
    setHandler(next) {
      handler = next;
    },
    close() {
      for (const cancel of [...pendingDelays]) cancel();
      return new Promise((resolve, reject) => {
        http.close((error) => (error ? reject(error) : resolve()));
        http.closeAllConnections();
      });
    },
  };
  return server;
}

/** An OpenAI embeddings response holding `vectors`, one per input, in order. */
function embeddingsReply(body: EmbeddingsRequestBody, vectors: number[][]): ScriptedReply {
  const tokens = body.input.reduce((sum, text) => sum + wordCount(text), 0);
  const data = vectors.map((embedding, index) => ({ object: 'embedding', index, embedding }));
  return reply.content(JSON.stringify({ object: 'list', data, model: body.model, usage: { prompt_tokens: tokens, total_tokens: tokens } }));
}
