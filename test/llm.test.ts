import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { PrismError } from '../src/errors.ts';
import type { LlmResponseCache } from '../src/llm/cache.ts';
import { createLlmClient, type LlmConfig, type LlmRetryEvent } from '../src/llm/client.ts';
import { llmConfigFromEnv } from '../src/llm/env.ts';
import { LlmError } from '../src/llm/errors.ts';
import { ENDPOINT_COOLDOWN_MS, withZeroLlmFallback } from '../src/llm/fallback.ts';
import { extractJson } from '../src/llm/json.ts';
import { backoffDelay, retryAfterMs } from '../src/llm/retry.ts';
import type { ChatMessage } from '../src/llm/types.ts';
import { echoHandler, reply, startOpenAiServer, type OpenAiTestServer } from './helpers/openai-server.ts';

const Fact = z.object({ subject: z.string(), year: z.number().int() });
const question: ChatMessage[] = [
  { role: 'system', content: 'Reply in JSON with subject and year.' },
  { role: 'user', content: 'When did Caroline move to Sweden?' },
];

/** A cache backed by a Map: the real interface, kept in memory. */
function mapCache(): LlmResponseCache & { entries: Map<string, string> } {
  const entries = new Map<string, string>();
  return {
    entries,
    getCached: (key) => Promise.resolve(entries.get(key)),
    putCached: (key, value) => {
      entries.set(key, value);
      return Promise.resolve();
    },
  };
}

async function until(condition: () => boolean): Promise<void> {
  for (let waited = 0; !condition(); waited += 5) {
    if (waited > 10_000) throw new Error('condition not reached');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function rejection(promise: Promise<unknown>): Promise<LlmError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(LlmError);
  return error as LlmError;
}

let server: OpenAiTestServer;

beforeAll(async () => {
  server = await startOpenAiServer();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  server.setHandler(echoHandler);
});

/** A client against the test server with fast retries, overridable per test. */
function client(overrides: Partial<LlmConfig> = {}) {
  return createLlmClient({
    baseURL: server.baseURL,
    models: { default: 'model-default', judge: 'model-judge' },
    retry: { maxRetries: 2, baseDelayMs: 5, maxDelayMs: 2_000 },
    ...overrides,
  });
}

function requestsSince(start: number) {
  return server.requests.slice(start);
}

describe('chatJson over real HTTP', () => {
  it('parses and validates a JSON reply, sending the role model at temperature 0 in JSON mode', async () => {
    const start = server.requests.length;
    server.enqueue(reply.content('{"subject":"Caroline","year":2019}', { usage: { promptTokens: 40, completionTokens: 9 } }));
    const llm = client();
    await expect(llm.chatJson('judge', question, Fact)).resolves.toEqual({ subject: 'Caroline', year: 2019 });

    const [sent] = requestsSince(start);
    expect(sent?.body?.model).toBe('model-judge');
    expect(sent?.body?.temperature).toBe(0);
    expect(sent?.body?.response_format).toEqual({ type: 'json_object' });
    expect(sent?.body?.messages).toEqual(question);
    expect(llm.usage().judge).toEqual({ calls: 1, promptTokens: 40, completionTokens: 9, cacheHits: 0, retries: 0, failures: 0 });
    expect(llm.usage().extract.calls).toBe(0);
  });

  it('uses the default model for roles without their own', async () => {
    const start = server.requests.length;
    const echoed = await client().chatJson('extract', question, z.object({ model: z.string(), echo: z.string() }));
    expect(echoed).toEqual({ model: 'model-default', echo: 'When did Caroline move to Sweden?' });
    expect(requestsSince(start)[0]?.body?.model).toBe('model-default');
  });

  it('tolerates a code fence and leading prose around the JSON', async () => {
    server.enqueue(
      reply.content('```json\n{"subject":"Melanie","year":2022}\n```'),
      reply.content('Sure! Here it is: {"subject":"Jon","year":2020} Hope that helps.'),
    );
    const llm = client();
    await expect(llm.chatJson('extract', question, Fact)).resolves.toEqual({ subject: 'Melanie', year: 2022 });
    await expect(llm.chatJson('extract', question, Fact)).resolves.toEqual({ subject: 'Jon', year: 2020 });
  });

  it('re-asks once after malformed JSON, then fails with LLM_BAD_JSON carrying the raw reply', async () => {
    const start = server.requests.length;
    server.enqueue(reply.content('{"subject": "Caroline", "year": '), reply.content('not json at all'));
    const llm = client();
    const error = await rejection(llm.chatJson('extract', question, Fact));
    expect(error.code).toBe('LLM_BAD_JSON');
    expect(error.raw).toBe('not json at all');
    expect(error.attempts).toBe(2);
    expect(requestsSince(start)).toHaveLength(2);
    expect(llm.usage().extract).toMatchObject({ calls: 1, retries: 1, failures: 1 });
  });

  it('succeeds when the re-ask after malformed JSON returns valid JSON', async () => {
    server.enqueue(reply.content('{oops'), reply.json({ subject: 'Caroline', year: 2019 }));
    const retries: LlmRetryEvent[] = [];
    const llm = client({ onRetry: (event) => retries.push(event) });
    await expect(llm.chatJson('extract', question, Fact)).resolves.toEqual({ subject: 'Caroline', year: 2019 });
    expect(retries).toEqual([{ role: 'extract', reason: 'bad_json', retry: 1, delayMs: 0 }]);
  });

  it('fails with LLM_SCHEMA when the JSON does not match the schema', async () => {
    const wrong = JSON.stringify({ subject: 'Caroline', year: 'two thousand nineteen' });
    server.enqueue(reply.content(wrong), reply.content(wrong));
    const error = await rejection(client().chatJson('extract', question, Fact));
    expect(error.code).toBe('LLM_SCHEMA');
    expect(error.raw).toBe(wrong);
    expect(error.message).toContain('year');
  });

  it('does not re-ask when invalidJsonRetries is 0', async () => {
    const start = server.requests.length;
    server.enqueue(reply.content('nope'));
    const error = await rejection(client({ invalidJsonRetries: 0 }).chatJson('extract', question, Fact));
    expect(error.code).toBe('LLM_BAD_JSON');
    expect(requestsSince(start)).toHaveLength(1);
  });
});

describe('retries and failures', () => {
  it('retries a 429, honouring Retry-After, and counts the retry', async () => {
    const start = server.requests.length;
    server.enqueue(reply.rateLimited(1), reply.json({ subject: 'Caroline', year: 2019 }));
    const retries: LlmRetryEvent[] = [];
    const llm = client({ onRetry: (event) => retries.push(event) });
    await expect(llm.chatJson('answer', question, Fact)).resolves.toEqual({ subject: 'Caroline', year: 2019 });
    expect(requestsSince(start)).toHaveLength(2);
    expect(retries).toEqual([{ role: 'answer', reason: 'rate_limited', retry: 1, status: 429, delayMs: 1000 }]);
    expect(llm.usage().answer).toMatchObject({ calls: 1, retries: 1, failures: 0 });
  });

  it('gives up on repeated 500s with LLM_HTTP and the status', async () => {
    const start = server.requests.length;
    server.enqueue(reply.status(500), reply.status(502), reply.status(500));
    const llm = client();
    const error = await rejection(llm.chatText('answer', question));
    expect(error.code).toBe('LLM_HTTP');
    expect(error.status).toBe(500);
    expect(error.attempts).toBe(3);
    expect(requestsSince(start)).toHaveLength(3);
    expect(llm.usage().answer).toMatchObject({ calls: 1, retries: 2, failures: 1 });
  });

  it('gives up on repeated 429s with LLM_RATE_LIMITED', async () => {
    server.enqueue(reply.rateLimited(), reply.rateLimited(), reply.rateLimited());
    const error = await rejection(client().chatText('answer', question));
    expect(error.code).toBe('LLM_RATE_LIMITED');
    expect(error.status).toBe(429);
  });

  it('does not retry a 400', async () => {
    const start = server.requests.length;
    server.enqueue(reply.status(400));
    const error = await rejection(client().chatText('answer', question));
    expect(error.code).toBe('LLM_HTTP');
    expect(error.status).toBe(400);
    expect(requestsSince(start)).toHaveLength(1);
  });

  const callerFaults: Array<[string, ReturnType<typeof reply.status>, 'LLM_AUTH' | 'LLM_CONFIG', number]> = [
    ['401', reply.status(401), 'LLM_AUTH', 401],
    ['403', reply.status(403), 'LLM_AUTH', 403],
    ['404 (wrong URL or model)', reply.status(404), 'LLM_CONFIG', 404],
    ['400 "model_not_found" (code)', reply.status(400, { body: JSON.stringify({ error: { message: 'nope', code: 'model_not_found' } }) }), 'LLM_CONFIG', 400],
    ['400 "is not a valid model ID"', reply.status(400, { body: JSON.stringify({ error: { message: 'gpt-9 is not a valid model ID' } }) }), 'LLM_CONFIG', 400],
  ];
  it.each(callerFaults)('%s is the caller\'s fault: typed, not retried', async (_name, fault, code, status) => {
    const start = server.requests.length;
    const retries: LlmRetryEvent[] = [];
    server.enqueue(fault);
    const error = await rejection(client({ onRetry: (event) => retries.push(event) }).chatText('answer', question));
    expect(error).toMatchObject({ code, status, attempts: 1 });
    expect(requestsSince(start)).toHaveLength(1);
    expect(retries).toEqual([]);
  });

  it('a 400 about something else than the model stays LLM_HTTP', async () => {
    server.enqueue(reply.status(400, { body: JSON.stringify({ error: { message: "This model's maximum context length is 8192 tokens" } }) }));
    expect(await rejection(client().chatText('answer', question))).toMatchObject({ code: 'LLM_HTTP', status: 400 });
  });

  it('retries a dropped connection as a network error', async () => {
    server.enqueue(reply.drop(), reply.content('fine'));
    const retries: LlmRetryEvent[] = [];
    const text = await client({ onRetry: (event) => retries.push(event) }).chatText('answer', question);
    expect(text).toBe('fine');
    expect(retries.map((event) => event.reason)).toEqual(['network']);
  });

  it('times a slow attempt out, retries it, then fails with LLM_TIMEOUT', async () => {
    const start = server.requests.length;
    server.enqueue(reply.content('late', { delayMs: 5_000 }), reply.content('late', { delayMs: 5_000 }));
    const error = await rejection(client({ timeoutMs: 200, retry: { maxRetries: 1, baseDelayMs: 5 } }).chatText('answer', question));
    expect(error.code).toBe('LLM_TIMEOUT');
    expect(requestsSince(start)).toHaveLength(2);
    await until(() => server.inFlight === 0);
  });
});

describe('cancellation and concurrency', () => {
  it('rejects with ABORTED when the caller aborts mid-request', async () => {
    const start = server.requests.length;
    server.enqueue(reply.content('late', { delayMs: 5_000 }));
    const controller = new AbortController();
    const llm = client();
    const pending = llm.chatText('answer', question, { signal: controller.signal });
    await until(() => server.requests.length > start);
    controller.abort();
    const error = await pending.then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(PrismError);
    expect((error as PrismError).code).toBe('ABORTED');
    expect(llm.usage().answer).toMatchObject({ calls: 1, retries: 0, failures: 1 });
    await until(() => server.inFlight === 0);
  });

  it('rejects with ABORTED when aborted during a Retry-After wait, without another request', async () => {
    const start = server.requests.length;
    server.enqueue(reply.rateLimited(30));
    const controller = new AbortController();
    const pending = client({ onRetry: () => controller.abort() }).chatText('answer', question, { signal: controller.signal });
    await expect(pending).rejects.toMatchObject({ code: 'ABORTED' });
    expect(requestsSince(start)).toHaveLength(1);
  });

  it('sends nothing when the signal is already aborted', async () => {
    const start = server.requests.length;
    await expect(client().chatText('answer', question, { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'ABORTED' });
    expect(requestsSince(start)).toHaveLength(0);
  });

  it('keeps at most `concurrency` requests in flight', async () => {
    const concurrent = await startOpenAiServer({ handler: () => reply.content('ok', { delayMs: 200 }) });
    try {
      const llm = createLlmClient({ baseURL: concurrent.baseURL, models: { default: 'm' }, concurrency: 2 });
      const replies = await Promise.all(Array.from({ length: 6 }, (_, i) => llm.chatText('rerank', [{ role: 'user', content: `q${i}` }])));
      expect(replies).toEqual(Array(6).fill('ok'));
      expect(concurrent.requests).toHaveLength(6);
      expect(concurrent.maxInFlight).toBe(2);
    } finally {
      await concurrent.close();
    }
  });
});

describe('response cache', () => {
  it('answers a repeated call from the cache without an HTTP request and counts the hit', async () => {
    const cache = mapCache();
    const start = server.requests.length;
    server.enqueue(reply.json({ subject: 'Caroline', year: 2019 }));
    const first = client({ cache });
    await first.chatJson('extract', question, Fact);
    expect(cache.entries.size).toBe(1);
    expect([...cache.entries.keys()][0]).toMatch(/^llm:[0-9a-f]{64}$/);

    // A fresh client sharing the store stands for a resumed evaluation.
    const resumed = client({ cache });
    await expect(resumed.chatJson('extract', question, Fact)).resolves.toEqual({ subject: 'Caroline', year: 2019 });
    expect(requestsSince(start)).toHaveLength(1);
    expect(resumed.usage().extract).toMatchObject({ calls: 0, cacheHits: 1, promptTokens: 0 });
  });

  it('keys on model, messages and parameters', async () => {
    const cache = mapCache();
    const llm = client({ cache });
    await llm.chatText('answer', question);
    await llm.chatText('judge', question); // another model
    await llm.chatText('answer', [...question, { role: 'user', content: 'And then?' }]);
    await llm.chatJson('answer', question, z.object({ echo: z.string() })); // JSON mode is a parameter
    expect(cache.entries.size).toBe(4);
    expect(llm.usage().answer.cacheHits + llm.usage().judge.cacheHits).toBe(0);
  });

  it('does not cache invalid replies', async () => {
    const cache = mapCache();
    server.enqueue(reply.content('broken'), reply.content('broken'));
    await expect(client({ cache }).chatJson('extract', question, Fact)).rejects.toMatchObject({ code: 'LLM_BAD_JSON' });
    expect(cache.entries.size).toBe(0);
  });

  it('asks again when a cached reply fails the current schema', async () => {
    const cache = mapCache();
    const start = server.requests.length;
    server.enqueue(reply.json({ subject: 'Caroline' }), reply.json({ subject: 'Caroline', year: 2019 }));
    const llm = client({ cache });
    await llm.chatJson('extract', question, z.object({ subject: z.string() }));
    await expect(llm.chatJson('extract', question, Fact)).resolves.toEqual({ subject: 'Caroline', year: 2019 });
    expect(requestsSince(start)).toHaveLength(2);
    expect(llm.usage().extract.cacheHits).toBe(0);
  });

  it('returns usage as a copy', async () => {
    const llm = client();
    const snapshot = llm.usage();
    snapshot.answer.calls = 99;
    expect(llm.usage().answer.calls).toBe(0);
  });
});

describe('transport configuration', () => {
  it('routes through a custom fetch with extra headers and no key (proxy mode)', async () => {
    const start = server.requests.length;
    const seen: string[] = [];
    const proxyFetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      seen.push(input instanceof Request ? input.url : String(input));
      return fetch(input, init);
    };
    const llm = client({ fetch: proxyFetch, headers: { 'X-Prism-Proxy': 'tab-7' } });
    await llm.chatText('answer', question);
    expect(seen).toEqual([`${server.baseURL}/chat/completions`]);
    const [sent] = requestsSince(start);
    expect(sent?.headers['x-prism-proxy']).toBe('tab-7');
    expect(sent?.headers.authorization).toBeUndefined();
    expect(sent?.headers['x-stainless-retry-count']).toBe('0');
  });

  it('sends the API key as a bearer token when one is given', async () => {
    const start = server.requests.length;
    await client({ apiKey: 'sk-test-123' }).chatText('answer', question);
    expect(requestsSince(start)[0]?.headers.authorization).toBe('Bearer sk-test-123');
  });
});

describe('withZeroLlmFallback', () => {
  it('falls back on an endpoint failure, skips the endpoint for the cooldown, then asks again', async () => {
    let clock = 0;
    const llm = client();
    const modes: string[] = [];
    let down = true;
    const search = async (mode: 'llm' | 'zero-llm') => {
      modes.push(mode);
      if (mode === 'llm' && down) throw new LlmError('LLM_HTTP', 'LLM endpoint answered HTTP 503', { status: 503 });
      return { mode, warnings: [] as string[] };
    };
    const now = () => clock;
    await expect(withZeroLlmFallback(llm, search, now)).resolves.toMatchObject({ mode: 'zero-llm', warnings: [expect.stringMatching(/^LLM unavailable, ranked without it: LLM_HTTP: /)] });
    clock = ENDPOINT_COOLDOWN_MS - 1;
    await expect(withZeroLlmFallback(llm, search, now)).resolves.toMatchObject({ mode: 'zero-llm', warnings: [expect.stringMatching(/not asked/)] });
    expect(modes).toEqual(['llm', 'zero-llm', 'zero-llm']);
    down = false;
    clock = ENDPOINT_COOLDOWN_MS;
    await expect(withZeroLlmFallback(llm, search, now)).resolves.toEqual({ mode: 'llm', warnings: [] });
    // Another client is not affected by this one's failures; other errors are not fallen back on.
    await expect(withZeroLlmFallback(client(), () => Promise.reject(new LlmError('LLM_BAD_JSON', 'bad')), now)).rejects.toMatchObject({ code: 'LLM_BAD_JSON' });
  });
});

describe('llmConfigFromEnv', () => {
  it('returns null when nothing is configured', () => {
    expect(llmConfigFromEnv({ PATH: '/usr/bin', PRISM_LLM_MODEL: '  ' })).toBeNull();
  });

  it('reads endpoint, key, default and per-role models', () => {
    expect(
      llmConfigFromEnv({
        PRISM_LLM_BASE_URL: 'http://localhost:8080/v1',
        PRISM_LLM_API_KEY: 'sk-x',
        PRISM_LLM_MODEL: 'gpt-4o-mini',
        PRISM_LLM_MODEL_EXTRACT: 'gpt-4.1-mini',
      }),
    ).toEqual({ baseURL: 'http://localhost:8080/v1', apiKey: 'sk-x', models: { default: 'gpt-4o-mini', extract: 'gpt-4.1-mini' } });
  });

  it('refuses a configuration without a default model', () => {
    expect(() => llmConfigFromEnv({ PRISM_LLM_BASE_URL: 'http://localhost:8080/v1' })).toThrowError(
      expect.objectContaining({ code: 'LLM_NOT_CONFIGURED' }),
    );
  });
});

describe('helpers', () => {
  it('extracts the first JSON value from noisy text', () => {
    expect(extractJson('[1, 2]')).toEqual({ found: true, value: [1, 2] });
    expect(extractJson('Result:\n```\n{"a": "has } and { inside", "b": [1]}\n```')).toEqual({
      found: true,
      value: { a: 'has } and { inside', b: [1] },
    });
    expect(extractJson('{broken} then {"ok": true}')).toEqual({ found: true, value: { ok: true } });
    expect(extractJson('no json here')).toEqual({ found: false });
    expect(extractJson('{"unterminated": [1, 2}')).toEqual({ found: false });
  });

  it('reads Retry-After as seconds, an HTTP date, or retry-after-ms', () => {
    const now = Date.parse('2024-05-01T12:00:00Z');
    expect(retryAfterMs(new Headers({ 'Retry-After': '3' }), now)).toBe(3000);
    expect(retryAfterMs(new Headers({ 'Retry-After': 'Wed, 01 May 2024 12:00:10 GMT' }), now)).toBe(10_000);
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '250', 'Retry-After': '3' }), now)).toBe(250);
    expect(retryAfterMs(new Headers({ 'Retry-After': 'soon' }), now)).toBeUndefined();
    expect(retryAfterMs(new Headers(), now)).toBeUndefined();
  });

  it('backs off exponentially within the jitter window and the cap', () => {
    const policy = { maxRetries: 5, baseDelayMs: 100, maxDelayMs: 1_000 };
    expect([0, 1, 2, 3, 4].map((retry) => backoffDelay(retry, policy, () => 0))).toEqual([50, 100, 200, 400, 500]);
    expect([0, 1, 2, 3, 4].map((retry) => backoffDelay(retry, policy, () => 1))).toEqual([100, 200, 400, 800, 1000]);
  });
});
