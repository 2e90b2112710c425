import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { remoteEmbedder, type RemoteEmbedderOptions } from '../src/embed/remote.ts';
import { reply, startOpenAiServer, type EmbeddingsRequestBody, type OpenAiTestServer } from './helpers/openai-server.ts';

// remoteEmbedder against a real HTTP server on loopback speaking OpenAI's /v1/embeddings.

/** Text i's vector: [length, i-th position in its batch + 1, 0, 0], not normalised. */
const byLength = (body: EmbeddingsRequestBody): number[][] => body.input.map((text, i) => [text.length, i + 1, 0, 0]);

let server: OpenAiTestServer;
beforeEach(async () => {
  server = await startOpenAiServer({ embed: byLength });
});
afterEach(async () => {
  await server.close();
});

const embedder = (options: Partial<RemoteEmbedderOptions> = {}) =>
  remoteEmbedder({ url: server.baseURL, model: 'test-embed', dim: 4, retry: { baseDelayMs: 1, maxDelayMs: 5 }, ...options });

describe('remoteEmbedder', () => {
  it('sends batches of batchSize with the model and float encoding, and returns normalised vectors in input order', async () => {
    const texts = ['a', 'bbbb', 'cc', 'dddddd', 'eee'];
    const progress: number[] = [];
    const vectors = await embedder({ batchSize: 2 }).embed(texts, { onProgress: (done) => progress.push(done) });
    expect(server.requests.map((r) => r.embeddings?.input)).toEqual([['a', 'bbbb'], ['cc', 'dddddd'], ['eee']]);
    expect(server.requests.every((r) => r.embeddings?.model === 'test-embed' && r.embeddings.encoding_format === 'float' && !('dimensions' in r.embeddings))).toBe(true);
    vectors.forEach((vector, i) => {
      const raw = [texts[i]!.length, (i % 2) + 1, 0, 0];
      const norm = Math.hypot(...raw);
      expect(Array.from(vector)).toEqual(raw.map((x) => Math.fround(x / norm)));
    });
    expect(progress.sort((a, b) => a - b).at(-1)).toBe(texts.length);
    expect(await embedder().embed([])).toEqual([]);
  });

  it('names its vector space by model (or id), asks for dim dimensions when told to, and reads replies in index order', async () => {
    expect(embedder().id).toBe('test-embed');
    expect(embedder({ id: 'Xenova/all-MiniLM-L6-v2/int8' }).id).toBe('Xenova/all-MiniLM-L6-v2/int8');
    server.enqueue(reply.content(JSON.stringify({ data: [{ index: 1, embedding: [0, 2, 0, 0] }, { index: 0, embedding: [3, 0, 0, 0] }] })));
    const [first, second] = await embedder({ sendDimensions: true }).embed(['x', 'y']);
    expect(server.requests[0]?.embeddings?.['dimensions']).toBe(4);
    expect(Array.from(first!)).toEqual([1, 0, 0, 0]);
    expect(Array.from(second!)).toEqual([0, 1, 0, 0]);
  });

  it('retries rate limits, server errors and dropped connections, then fails with the adapter\'s typed errors', async () => {
    server.enqueue(reply.rateLimited(0), reply.status(503), reply.drop());
    expect(await embedder().embed(['again'])).toHaveLength(1);
    expect(server.requests).toHaveLength(4);

    server.enqueue(reply.status(500), reply.status(500));
    await expect(embedder({ retry: { maxRetries: 1, baseDelayMs: 1 } }).embed(['x'])).rejects.toMatchObject({ code: 'LLM_HTTP', status: 500, attempts: 2 });
    server.enqueue(reply.rateLimited(0), reply.rateLimited(0));
    await expect(embedder({ retry: { maxRetries: 1, baseDelayMs: 1 } }).embed(['x'])).rejects.toMatchObject({ code: 'LLM_RATE_LIMITED' });
  });

  it('does not retry what the caller must fix: a refused key, a wrong URL or model', async () => {
    server.enqueue(reply.status(401));
    await expect(embedder({ apiKey: 'wrong' }).embed(['x'])).rejects.toMatchObject({ code: 'LLM_AUTH', attempts: 1 });
    expect(server.requests.at(-1)?.headers['authorization']).toBe('Bearer wrong');
    server.enqueue(reply.status(404));
    await expect(embedder().embed(['x'])).rejects.toMatchObject({ code: 'LLM_CONFIG', attempts: 1 });
    await expect(remoteEmbedder({ url: `${server.baseURL}/nowhere`, model: 'm', dim: 4 }).embed(['x'])).rejects.toMatchObject({ code: 'LLM_CONFIG' });
  });

  it('times a slow request out, retries it, then fails with LLM_TIMEOUT', async () => {
    server.enqueue(reply.content('{}', { delayMs: 2_000 }), reply.content('{}', { delayMs: 2_000 }));
    await expect(embedder({ timeoutMs: 100, retry: { maxRetries: 1, baseDelayMs: 1 } }).embed(['slow'])).rejects.toMatchObject({ code: 'LLM_TIMEOUT', attempts: 2 });
  });

  it('checks every reply before using it: one vector per text, of dim finite numbers', async () => {
    server.enqueue(reply.content(JSON.stringify({ data: [{ index: 0, embedding: [1, 0, 0, 0] }] })));
    await expect(embedder().embed(['one', 'two'])).rejects.toMatchObject({ code: 'LLM_SCHEMA' });
    server.enqueue(reply.content(JSON.stringify({ data: [{ index: 0, embedding: [1, 0, 0] }] })));
    await expect(embedder().embed(['short'])).rejects.toMatchObject({ code: 'DIMENSION_MISMATCH' });
    server.enqueue(reply.content(JSON.stringify({ data: [{ index: 0, embedding: [1, null, 0, 0] }] })));
    await expect(embedder().embed(['hole'])).rejects.toMatchObject({ code: 'NON_FINITE_VECTOR' });
    server.enqueue(reply.content(JSON.stringify({ data: [{ index: 0, embedding: [1, 0, 0, 0] }, { index: 0, embedding: [1, 0, 0, 0] }] })));
    await expect(embedder().embed(['a', 'b'])).rejects.toMatchObject({ code: 'LLM_SCHEMA' });
  });

  it('keeps at most `concurrency` requests in flight', async () => {
    const slow = await startOpenAiServer({ embed: async (body) => (await new Promise((r) => setTimeout(r, 50)), byLength(body)) });
    try {
      const vectors = await remoteEmbedder({ url: slow.baseURL, model: 'm', dim: 4, batchSize: 1, concurrency: 2 }).embed(['a', 'b', 'c', 'd', 'e']);
      expect(vectors).toHaveLength(5);
      expect(slow.maxInFlight).toBe(2);
    } finally {
      await slow.close();
    }
  });

  it('refuses bad settings and bad input with INVALID_INPUT, and an aborted call with ABORTED, sending nothing', async () => {
    expect(() => remoteEmbedder({ url: 'not a url', model: 'm', dim: 4 })).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    expect(() => remoteEmbedder({ url: server.baseURL, model: '', dim: 4 })).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    expect(() => remoteEmbedder({ url: server.baseURL, model: 'm', dim: 0 })).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    expect(() => embedder({ batchSize: 0 })).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    await expect(embedder().embed('text' as unknown as string[])).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(embedder().embed(['ok', 3 as unknown as string])).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    const controller = new AbortController();
    controller.abort();
    await expect(embedder().embed(['x'], { signal: controller.signal })).rejects.toMatchObject({ code: 'ABORTED' });
    expect(server.requests).toEqual([]);
  });
});
