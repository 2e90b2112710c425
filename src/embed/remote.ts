import { PrismError, throwIfAborted } from '../errors.ts';
import { Semaphore } from '../llm/concurrency.ts';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from '../llm/retry.ts';
import type { OpenAiEndpoint } from '../llm/endpoint.ts';
import { attemptOnce, DEFAULT_CONCURRENCY, DEFAULT_TIMEOUT_MS, openAiConnector, withRetries } from '../llm/transport.ts';
import type { EmbedOptions, Embedder } from './types.ts';

export interface RemoteEmbedderOptions extends Omit<OpenAiEndpoint, 'baseURL'> {
  /**
   * The OpenAI-compatible endpoint including `/v1`; texts go to `<url>/embeddings`. OpenAI, Workers
   * AI (`https://api.cloudflare.com/client/v4/accounts/<account id>/ai/v1`), vLLM, Ollama and
   * LiteLLM serve this route.
   */
  url: string;
  /** The model the endpoint embeds with, e.g. `text-embedding-3-small` or `@cf/baai/bge-small-en-v1.5`. */
  model: string;
  /** The vectors' dimension; a reply of another size is `DIMENSION_MISMATCH`. */
  dim: number;
  /**
   * Names the vector space in every memory this embedder writes, so a memory is never searched
   * with another model's vectors (`EMBEDDER_MISMATCH`). Default: `model`. Set it when two names
   * mean the same model, e.g. MiniLM served remotely beside `createMiniLmEmbedder`'s id.
   */
  id?: string;
  /** Send `dimensions: dim`, for models that shorten their vectors on request (OpenAI's text-embedding-3). Default false. */
  sendDimensions?: boolean;
  /** Texts per request. Default 64. */
  batchSize?: number;
  /** Limit on each attempt (default 60 s); an attempt that runs over is retried, then `LLM_TIMEOUT`. */
  timeoutMs?: number;
  /** Requests in flight at once (default 4). */
  concurrency?: number;
  /** Retries of rate-limited, failed and timed-out requests. Default: 4 retries, 0.5 s backoff doubling up to 30 s. */
  retry?: Partial<RetryPolicy>;
}

const DEFAULT_BATCH_SIZE = 64;

/**
 * An `Embedder` calling an OpenAI-compatible `/embeddings` endpoint: texts in batches, batches
 * concurrently, each request under the LLM adapter's transport — its timeout, its retries of 429,
 * 5xx, dropped connections and timeouts (honouring Retry-After), and its typed errors (`LLM_AUTH`
 * for a refused key, `LLM_CONFIG` for a wrong URL or model, then `LLM_RATE_LIMITED`, `LLM_HTTP`,
 * `LLM_TIMEOUT` once retries run out). A reply is checked before any vector is used: one vector
 * per text (else `LLM_SCHEMA`), each of `dim` finite numbers (else `DIMENSION_MISMATCH` or
 * `NON_FINITE_VECTOR`); vectors are L2-normalised, as PRISM's inner-product search expects.
 * Nothing is cached: every call is a request.
 */
export function remoteEmbedder(options: RemoteEmbedderOptions): Embedder {
  const { url, model, dim } = options;
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
  if (typeof url !== 'string' || !URL.canParse(url)) throw new PrismError('INVALID_INPUT', `url must be an absolute URL, got ${JSON.stringify(url)}`);
  if (typeof model !== 'string' || model === '') throw new PrismError('INVALID_INPUT', 'model must name the embedding model');
  if (!Number.isInteger(dim) || dim < 1) throw new PrismError('INVALID_INPUT', `dim must be a positive integer, got ${dim}`);
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new PrismError('INVALID_INPUT', `batchSize must be a positive integer, got ${batchSize}`);
  if (!(timeoutMs > 0)) throw new PrismError('INVALID_INPUT', `timeoutMs must be positive, got ${timeoutMs}`);
  if (!Number.isInteger(policy.maxRetries) || policy.maxRetries < 0) throw new PrismError('INVALID_INPUT', 'retry.maxRetries must be a non-negative integer');
  const slots = new Semaphore(options.concurrency ?? DEFAULT_CONCURRENCY);
  const connect = openAiConnector({ ...options, baseURL: url }, timeoutMs);

  async function embedBatch(texts: readonly string[], signal: AbortSignal | undefined): Promise<Float32Array[]> {
    const body = { model, input: [...texts], encoding_format: 'float' as const, ...(options.sendDimensions ? { dimensions: dim } : {}) };
    const reply = await withRetries(
      async () => attemptOnce(await connect(), (client, attemptSignal) => client.embeddings.create(body, { signal: attemptSignal, maxRetries: 0 }), { timeoutMs, signal, what: 'embedding' }),
      { policy, slots, signal, attempts: { count: 0 } },
    );
    return vectorsOf(reply, texts.length, dim);
  }

  return {
    id: options.id ?? model,
    dim,
    async embed(texts: readonly string[], embedOptions: EmbedOptions = {}): Promise<Float32Array[]> {
      if (!Array.isArray(texts)) throw new PrismError('INVALID_INPUT', 'embed() takes an array of strings');
      texts.forEach((text, i) => {
        if (typeof text !== 'string') throw new PrismError('INVALID_INPUT', `texts[${i}] is ${typeof text}, not a string`);
      });
      const { signal, onProgress } = embedOptions;
      throwIfAborted(signal);
      const batches: string[][] = [];
      for (let start = 0; start < texts.length; start += batchSize) batches.push(texts.slice(start, start + batchSize));
      let done = 0;
      const vectors = await Promise.all(
        batches.map(async (batch) => {
          const batchVectors = await embedBatch(batch, signal);
          done += batch.length;
          onProgress?.(done, texts.length);
          return batchVectors;
        }),
      );
      return vectors.flat();
    },
  };
}

/** The reply's vectors in input order, checked and L2-normalised. */
function vectorsOf(reply: unknown, count: number, dim: number): Float32Array[] {
  const data = typeof reply === 'object' && reply !== null && 'data' in reply ? reply.data : undefined;
  if (!Array.isArray(data) || data.length !== count) {
    throw new PrismError('LLM_SCHEMA', `the embedding endpoint sent ${Array.isArray(data) ? data.length : 'no'} vectors for ${count} texts`);
  }
  const vectors = new Array<Float32Array>(count);
  data.forEach((item: unknown, position) => {
    const record = typeof item === 'object' && item !== null ? (item as { index?: unknown; embedding?: unknown }) : {};
    // Replies carry each vector's input position; a server that leaves it out keeps the order.
    const index = record.index ?? position;
    const embedding = record.embedding;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= count || vectors[index] || !Array.isArray(embedding)) {
      throw new PrismError('LLM_SCHEMA', `the embedding endpoint's vector ${position} has no valid index and embedding`);
    }
    if (embedding.length !== dim) throw new PrismError('DIMENSION_MISMATCH', `the embedding endpoint sent a ${embedding.length}-dimensional vector; the embedder is set to ${dim}`);
    vectors[index] = normalised(embedding, index);
  });
  return vectors;
}

function normalised(values: readonly unknown[], index: number): Float32Array {
  const vector = new Float32Array(values.length);
  let squares = 0;
  values.forEach((value, d) => {
    if (typeof value !== 'number' || !Number.isFinite(value)) throw new PrismError('NON_FINITE_VECTOR', `the embedding endpoint's vector ${index} holds ${String(value)} at ${d}`);
    vector[d] = value;
    squares += value * value;
  });
  const norm = Math.sqrt(squares);
  if (norm > 0) for (let d = 0; d < vector.length; d++) vector[d]! /= norm;
  return vector;
}
