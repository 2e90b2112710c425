import type { Tokenizer } from '@huggingface/tokenizers';
import { PrismError, throwIfAborted } from '../errors.ts';
import { lengthBuckets, type BatchLimits } from './batching.ts';
import type { EngineSession, InferenceEngine } from './engine.ts';
import { LruCache } from '../util/lru-cache.ts';
import { MINILM_HUB_ID, huggingFaceModelSource, type ModelSource } from './model-source.ts';
import { onnxWebEngine, type WebEngineOptions } from './ort-web.ts';
import { weightOnlyInt8, type Int8Dequantize } from './weight-only-int8.ts';
import type { EmbedOptions, Embedder } from './types.ts';

export type MiniLmPrecision = 'int8' | 'fp32';

/** all-MiniLM-L6-v2's hidden size, and so the embedding dimension. */
export const MINILM_DIM = 384;
/** sentence-transformers' `max_seq_length` for all-MiniLM-L6-v2, counting [CLS] and [SEP]. */
export const MINILM_MAX_TOKENS = 256;
/** BERT's position table has 512 rows; longer inputs cannot be encoded at all. */
const BERT_POSITION_LIMIT = 512;
const DEFAULT_BATCH_SIZE = 32;
/**
 * Padded tokens a call (`MiniLmOptions.batchTokens`). A call's activations (the attention scores
 * alone are rows × 12 heads × width² floats) set the runtime's peak memory, which it keeps:
 * onnxruntime-node's CPU arena never returns it, and onnxruntime-web's WASM memory never shrinks.
 * Batches of 32 replies of 256 tokens left a Node process ~400 MB larger for good (resident 606–665
 * against ~200 MB with the model alone); at 8 a call (2,048 tokens), ~90 MB larger, and no slower:
 * at 256 word pieces a text, 8 keep a call as busy as 32 did (README, *What the embedder keeps*).
 */
const DEFAULT_BATCH_TOKENS = 2048;
const DEFAULT_CACHE_SIZE = 4096;

/** Model file per precision, in the Xenova/Optimum layout. */
const MODEL_FILES: Record<MiniLmPrecision, string> = {
  int8: 'onnx/model_quantized.onnx',
  fp32: 'onnx/model.onnx',
};

export interface MiniLmOptions extends Omit<WebEngineOptions, 'load'> {
  /** Where the tokenizer and ONNX files come from. Default: the Hugging Face hub (needs network). */
  source?: ModelSource;
  /**
   * Default `int8`: a quarter of the download (int8 weights, run on float activations, see
   * createMiniLmEmbedder); cosine ≥ 0.999 to fp32 (all 778 golden texts). `fp32`: the full-precision file.
   */
  precision?: MiniLmPrecision;
  /** Word pieces per text including [CLS]/[SEP]; longer texts are cut. Default 256, at most 512. */
  maxTokens?: number;
  /** Most texts per inference call (batches also close where lengths drop, see `lengthBuckets`, and at `batchTokens`). Default 32. */
  batchSize?: number;
  /**
   * Most padded tokens per inference call: texts × the longest one's word pieces (a text longer
   * than this goes alone). Default 2,048 (32 texts of 64 word pieces, 8 of 256): a call's
   * activations set how much memory the runtime holds from then on.
   */
  batchTokens?: number;
  /** Vectors kept in the per-embedder LRU cache, keyed by text. Default 4096; 0 disables it. */
  cacheSize?: number;
  /**
   * The ONNX runtime. Default: onnxruntime-web's WASM build configured by `numThreads`,
   * `wasmPaths`, `wasmBinary` and `device`; the Node entry passes onnxruntime-node.
   */
  engine?: InferenceEngine;
  /**
   * With `int8`, when its weights become float: `at-load` (default) once, so the runtime holds
   * float weights (onnxruntime-web: 134 MB of WASM memory); `per-run` before each use, holding
   * the int8 weights only (77 MB) — for Cloudflare Workers, whose isolates have 128 MB. Same
   * vectors; inference is slower.
   */
  dequantize?: Int8Dequantize;
  /** Aborts model loading. */
  signal?: AbortSignal;
}

export interface MiniLmEmbedder extends Embedder {
  readonly precision: MiniLmPrecision;
  readonly maxTokens: number;
  /** The token ids fed to the model for `text`: [CLS], word pieces cut to `maxTokens − 2`, [SEP]. */
  tokenize(text: string): number[];
  /**
   * Embeds sequences that are already token ids (with [CLS]/[SEP] as the caller wants them), for
   * callers that must reproduce another tokenization. Not cached.
   */
  embedTokenIds(sequences: readonly (readonly number[])[], options?: EmbedOptions): Promise<Float32Array[]>;
  /** Releases the ONNX session; the embedder cannot be used afterwards. */
  dispose(): Promise<void>;
}

/** The id of the embedder `createMiniLmEmbedder` makes with these settings, known before any model file is read. */
export function miniLmEmbedderId(precision: MiniLmPrecision = 'int8', maxTokens: number = MINILM_MAX_TOKENS): string {
  return maxTokens === MINILM_MAX_TOKENS ? `${MINILM_HUB_ID}/${precision}` : `${MINILM_HUB_ID}/${precision}/max${maxTokens}`;
}

/**
 * Loads all-MiniLM-L6-v2 (tokenizer via @huggingface/tokenizers, inference via `options.engine`,
 * by default onnxruntime-web's WASM backend) and returns an embedder producing mean-pooled, L2-normalised 384-d vectors, i.e. what
 * sentence-transformers produces for this model.
 *
 * Any JS string is valid input: the empty string embeds as [CLS][SEP], characters the vocabulary
 * lacks (emoji, lone surrogates) become [UNK] or vanish in normalisation. A non-string, or a
 * non-array `texts`, is an `INVALID_INPUT` error.
 *
 * With `int8`, the int8 weights multiply float activations (`weightOnlyInt8`) instead of
 * activations quantised per batch: every engine then gives the same vectors (onnxruntime-node and
 * onnxruntime-web agree to cosine 1.000000, against 0.990 with quantised activations), a text's
 * vector does not depend on the texts it shares a batch with, and it is closer to fp32's; inference
 * costs what fp32's does.
 */
export async function createMiniLmEmbedder(options: MiniLmOptions = {}): Promise<MiniLmEmbedder> {
  const source = options.source ?? huggingFaceModelSource();
  const precision = options.precision ?? 'int8';
  const maxTokens = options.maxTokens ?? MINILM_MAX_TOKENS;
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const batchTokens = options.batchTokens ?? DEFAULT_BATCH_TOKENS;
  const cacheSize = options.cacheSize ?? DEFAULT_CACHE_SIZE;
  if (!Number.isInteger(maxTokens) || maxTokens < 2 || maxTokens > BERT_POSITION_LIMIT) {
    throw new PrismError('INVALID_INPUT', `maxTokens must be an integer in [2, ${BERT_POSITION_LIMIT}], got ${maxTokens}`);
  }
  if (!Number.isInteger(batchSize) || batchSize < 1) {
    throw new PrismError('INVALID_INPUT', `batchSize must be a positive integer, got ${batchSize}`);
  }
  if (!Number.isInteger(batchTokens) || batchTokens < 1) {
    throw new PrismError('INVALID_INPUT', `batchTokens must be a positive integer, got ${batchTokens}`);
  }
  if (!Number.isInteger(cacheSize) || cacheSize < 0) {
    throw new PrismError('INVALID_INPUT', `cacheSize must be a non-negative integer, got ${cacheSize}`);
  }

  const engine = options.engine ?? onnxWebEngine(options);
  // The tokenizer library is loaded lazily (as the engine is) so that importing PRISM costs nothing until an embedder is made.
  const [{ Tokenizer }, tokenizerJson, tokenizerConfig, modelBytes] = await Promise.all([
    import('@huggingface/tokenizers'),
    readJson(source, 'tokenizer.json', options.signal),
    readJson(source, 'tokenizer_config.json', options.signal),
    source.read(MODEL_FILES[precision], options.signal),
  ]);

  const tokenizer = buildTokenizer(Tokenizer, tokenizerJson, tokenizerConfig, source);
  throwIfAborted(options.signal);
  // Every engine runs the int8 weights on float activations, so Node and browsers give the same vectors.
  const graph = weightOnlyInt8(modelBytes, options.dequantize);
  let session: EngineSession;
  try {
    session = await engine.createSession(graph);
  } catch (cause) {
    throw new PrismError('MODEL_LOAD_FAILED', `${engine.label} cannot load ${MODEL_FILES[precision]} from ${source.location}`, { cause });
  }

  const model: Model = { ...tokenizer, session };
  return new MiniLm(model, {
    id: miniLmEmbedderId(precision, maxTokens),
    precision,
    maxTokens,
    batch: { texts: batchSize, tokens: batchTokens },
    cacheSize,
  });
}

/** The tokenizer with the ids of its special tokens, as `buildTokenizer` makes it. */
interface MiniLmTokenizer {
  tokenizer: Tokenizer;
  cls: number;
  sep: number;
  pad: number;
}

interface Model extends MiniLmTokenizer {
  session: EngineSession;
}

interface Settings {
  id: string;
  precision: MiniLmPrecision;
  maxTokens: number;
  batch: BatchLimits;
  cacheSize: number;
}

class MiniLm implements MiniLmEmbedder {
  readonly id: string;
  readonly dim = MINILM_DIM;
  readonly precision: MiniLmPrecision;
  readonly maxTokens: number;
  readonly #model: Model;
  readonly #batch: BatchLimits;
  readonly #cache: LruCache<string, Float32Array>;
  /** onnxruntime sessions must not run concurrently; each run waits for the previous one. */
  #lastRun: Promise<unknown> = Promise.resolve();

  constructor(model: Model, settings: Settings) {
    this.#model = model;
    this.id = settings.id;
    this.precision = settings.precision;
    this.maxTokens = settings.maxTokens;
    this.#batch = settings.batch;
    this.#cache = new LruCache(settings.cacheSize);
  }

  tokenize(text: string): number[] {
    // Truncation is done here rather than by the tokenizer: tokenizer.json carries a 128-token
    // setting that sentence-transformers does not use, and cutting must keep the final [SEP].
    const pieces = this.#model.tokenizer.encode(text, { add_special_tokens: false }).ids;
    const kept = pieces.length > this.maxTokens - 2 ? pieces.slice(0, this.maxTokens - 2) : pieces;
    return [this.#model.cls, ...kept, this.#model.sep];
  }

  async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    if (!Array.isArray(texts)) throw new PrismError('INVALID_INPUT', 'embed() takes an array of strings');
    texts.forEach((text, i) => {
      if (typeof text !== 'string') throw new PrismError('INVALID_INPUT', `texts[${i}] is ${typeof text}, not a string`);
    });
    throwIfAborted(options.signal);

    const out = new Array<Float32Array>(texts.length);
    // Distinct uncached texts, each with the output slots waiting for it.
    const slotsByText = new Map<string, number[]>();
    texts.forEach((text, i) => {
      const cached = this.#cache.get(text);
      if (cached) out[i] = cached.slice();
      else {
        const slots = slotsByText.get(text);
        if (slots) slots.push(i);
        else slotsByText.set(text, [i]);
      }
    });
    const pending = [...slotsByText];
    let done = texts.length - pending.reduce((n, [, slots]) => n + slots.length, 0);

    await this.#run(
      pending.map(([text]) => this.tokenize(text)),
      options.signal,
      (index, vector) => {
        const [text, slots] = pending[index] ?? [];
        if (text === undefined || !slots) return;
        this.#cache.set(text, vector);
        for (const slot of slots) out[slot] = vector.slice();
        done += slots.length;
      },
      () => options.onProgress?.(done, texts.length),
    );
    return out;
  }

  async embedTokenIds(sequences: readonly (readonly number[])[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    sequences.forEach((ids, i) => {
      if (ids.length < 1 || ids.length > BERT_POSITION_LIMIT || !ids.every(Number.isInteger)) {
        throw new PrismError('INVALID_INPUT', `sequence ${i} must hold 1..${BERT_POSITION_LIMIT} integer token ids`);
      }
    });
    throwIfAborted(options.signal);
    const out = new Array<Float32Array>(sequences.length);
    let done = 0;
    await this.#run(
      sequences,
      options.signal,
      (index, vector) => {
        out[index] = vector;
        done++;
      },
      () => options.onProgress?.(done, sequences.length),
    );
    return out;
  }

  /** Embeds `sequences` in length-bucketed batches, reporting each vector by its index in `sequences`. */
  async #run(
    sequences: readonly (readonly number[])[],
    signal: AbortSignal | undefined,
    onVector: (index: number, vector: Float32Array) => void,
    onBatch: () => void,
  ): Promise<void> {
    for (const indices of lengthBuckets(sequences.map((ids) => ids.length), this.#batch)) {
      throwIfAborted(signal);
      const vectors = await this.#infer(indices.map((i) => sequences[i] ?? []));
      indices.forEach((index, row) => {
        const vector = vectors[row];
        if (vector) onVector(index, vector);
      });
      onBatch();
    }
  }

  async dispose(): Promise<void> {
    this.#cache.clear();
    await this.#lastRun.catch(() => undefined);
    await this.#model.session.release();
  }

  /** Runs one padded batch and returns one pooled, normalised vector per sequence. */
  async #infer(batch: readonly (readonly number[])[]): Promise<Float32Array[]> {
    const rows = batch.length;
    const width = Math.max(...batch.map((ids) => ids.length));
    const inputIds = new BigInt64Array(rows * width).fill(BigInt(this.#model.pad));
    const attentionMask = new BigInt64Array(rows * width);
    batch.forEach((ids, r) => {
      ids.forEach((id, t) => {
        inputIds[r * width + t] = BigInt(id);
        attentionMask[r * width + t] = 1n;
      });
    });
    const available: Record<string, BigInt64Array> = {
      input_ids: inputIds,
      attention_mask: attentionMask,
      token_type_ids: new BigInt64Array(rows * width),
    };
    // Some exports drop token_type_ids; feed exactly what the graph declares.
    const feeds: Record<string, BigInt64Array> = {};
    for (const name of this.#model.session.inputNames) {
      const tensor = available[name];
      if (!tensor) throw new PrismError('MODEL_LOAD_FAILED', `model expects an unknown input "${name}"`);
      feeds[name] = tensor;
    }

    const run = this.#lastRun.then(() => this.#model.session.run(feeds, rows, width));
    this.#lastRun = run.catch(() => undefined);
    const hidden = await run;
    if (hidden.dims[2] !== MINILM_DIM) {
      throw new PrismError('DIMENSION_MISMATCH', `model output last_hidden_state must be [batch, seq, ${MINILM_DIM}]`);
    }
    return batch.map((ids, r) => meanPoolNormalised(hidden.data, r, width, ids.length));
  }
}

/** Mean over the first `length` (unpadded) positions of row `row`, then L2-normalised. */
function meanPoolNormalised(hidden: Float32Array, row: number, width: number, length: number): Float32Array {
  const sum = new Float64Array(MINILM_DIM);
  for (let t = 0; t < length; t++) {
    const offset = (row * width + t) * MINILM_DIM;
    for (let d = 0; d < MINILM_DIM; d++) sum[d] = (sum[d] ?? 0) + (hidden[offset + d] ?? 0);
  }
  let squares = 0;
  for (let d = 0; d < MINILM_DIM; d++) squares += (sum[d] ?? 0) ** 2;
  // Dividing by the token count is unnecessary before normalising; 1e-12 is torch's normalize eps.
  const scale = 1 / Math.max(Math.sqrt(squares), 1e-12);
  const vector = new Float32Array(MINILM_DIM);
  for (let d = 0; d < MINILM_DIM; d++) vector[d] = (sum[d] ?? 0) * scale;
  return vector;
}

/** Turns tokenizer.json and tokenizer_config.json into the tokenizer and the ids of [CLS], [SEP] and [PAD]. */
function buildTokenizer(
  TokenizerClass: typeof Tokenizer,
  tokenizerJson: unknown,
  tokenizerConfig: unknown,
  source: ModelSource,
): MiniLmTokenizer {
  let tokenizer: Tokenizer;
  try {
    tokenizer = new TokenizerClass(tokenizerJson as object, tokenizerConfig as object);
  } catch (cause) {
    throw new PrismError('MODEL_LOAD_FAILED', `${source.location}: tokenizer.json cannot be read as a tokenizer`, { cause });
  }
  const specialTokenId = (key: 'cls_token' | 'sep_token' | 'pad_token'): number => {
    const declared = isRecord(tokenizerConfig) ? tokenizerConfig[key] : undefined;
    // tokenizer_config.json writes a special token as its text, or as an added-token object.
    const token = typeof declared === 'string' ? declared : isRecord(declared) && typeof declared['content'] === 'string' ? declared['content'] : undefined;
    const id = token === undefined ? undefined : tokenizer.token_to_id(token);
    if (id === undefined) throw new PrismError('MODEL_LOAD_FAILED', `${source.location}: tokenizer_config.json names no ${key} the vocabulary holds`);
    return id;
  };
  return { tokenizer, cls: specialTokenId('cls_token'), sep: specialTokenId('sep_token'), pad: specialTokenId('pad_token') };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

async function readJson(source: ModelSource, relPath: string, signal: AbortSignal | undefined): Promise<unknown> {
  const bytes = await source.read(relPath, signal);
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch (cause) {
    throw new PrismError('MODEL_LOAD_FAILED', `${relPath} from ${source.location} is not valid JSON`, { cause });
  }
}
