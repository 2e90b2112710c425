import { PrismError, throwIfAborted } from '../errors.ts';

/**
 * Where a model's files come from. Paths are relative to the model root in the Hugging Face
 * layout (`tokenizer.json`, `onnx/model.onnx`, …), so a hub URL, a static-site folder and a
 * directory on disk are interchangeable.
 */
export interface ModelSource {
  /** Human-readable location (URL or directory), used in error messages. */
  readonly location: string;
  read(relPath: string, signal?: AbortSignal): Promise<Uint8Array>;
}

/** The Hugging Face repository whose file layout (and, by default, files) the MiniLM embedder uses. */
export const MINILM_HUB_ID = 'Xenova/all-MiniLM-L6-v2';

/** The commit of `MINILM_HUB_ID` whose files PRISM downloads: a fixed revision, so the bytes (and `MINILM_FILES`) never change. */
export const MINILM_REVISION = '751bff37182d3f1213fa05d7196b954e230abad9';

/** A model file as a download must deliver it. */
export interface ModelFile {
  /** Path in the Hugging Face layout, e.g. `onnx/model_quantized.onnx`. */
  path: string;
  bytes: number;
  /** Lowercase hex SHA-256 of the file. */
  sha256: string;
}

/** The files of `MINILM_HUB_ID` at `MINILM_REVISION` that the embedder reads (int8 and fp32 weights, tokenizer). */
export const MINILM_FILES: readonly ModelFile[] = [
  { path: 'tokenizer.json', bytes: 711_661, sha256: 'da0e79933b9ed51798a3ae27893d3c5fa4a201126cef75586296df9b4d2c62a0' },
  { path: 'tokenizer_config.json', bytes: 366, sha256: '9261e7d79b44c8195c1cada2b453e55b00aeb81e907a6664974b4d7776172ab3' },
  { path: 'onnx/model_quantized.onnx', bytes: 22_972_370, sha256: 'afdb6f1a0e45b715d0bb9b11772f032c399babd23bfc31fed1c170afc848bdb1' },
  { path: 'onnx/model.onnx', bytes: 90_387_606, sha256: '759c3cd2b7fe7e93933ad23c4c9181b7396442a2ed746ec7c1d46192c469c46e' },
];

/**
 * Download progress of one file, in transformers.js's vocabulary: `initiate` when a download
 * starts, `progress` per received piece (`total` is null when the server sends no length), `done`
 * when the bytes are there — `fromCache` when they came from a cache (the Cache API, or in Node
 * the model cache directory) and this call fetched nothing. `waiting` (Node): another process is
 * downloading the file into the shared model cache, and this one waits for it instead of
 * downloading it again.
 */
export type DownloadProgress =
  | { status: 'initiate'; file: string }
  | { status: 'progress'; file: string; loaded: number; total: number | null }
  | { status: 'waiting'; file: string }
  | { status: 'done'; file: string; loaded: number; total: number | null; fromCache: boolean };

export interface UrlFetchOptions {
  fetch?: typeof fetch;
  /**
   * Cache API cache the files are kept in, so a returning page opens without downloading them
   * again (transformers.js's `useBrowserCache` habit). Default `prism-models` where the Cache API
   * exists; `false` turns it off. Caching failures (quota, private mode) only cost the download.
   */
  cache?: string | false;
  onProgress?: (progress: DownloadProgress) => void;
}

export const DEFAULT_MODEL_CACHE = 'prism-models';

/** Reads model files over HTTP(S) from `baseUrl` (a folder URL; a trailing slash is added if missing), through the Cache API where there is one. */
export function urlModelSource(baseUrl: string | URL, options: UrlFetchOptions = {}): ModelSource {
  const root = new URL(String(baseUrl).endsWith('/') ? String(baseUrl) : `${String(baseUrl)}/`);
  return {
    location: root.href,
    read: (relPath, signal) => fetchBytes(new URL(relPath, root), options, signal),
  };
}

/** The folder URL of a Hugging Face hub repository's files at `revision`. */
export function huggingFaceUrl(repoId: string, revision: string): string {
  return `https://huggingface.co/${repoId}/resolve/${revision}/`;
}

/**
 * Files of a Hugging Face hub repository, for users with network access. The default is MiniLM
 * at `MINILM_REVISION`; another repository defaults to its `main` branch.
 */
export function huggingFaceModelSource(
  repoId: string = MINILM_HUB_ID,
  revision: string = repoId === MINILM_HUB_ID ? MINILM_REVISION : 'main',
  options: UrlFetchOptions = {},
): ModelSource {
  return urlModelSource(huggingFaceUrl(repoId, revision), options);
}

/** The bytes at `url`: from the Cache API when it holds them, else fetched (with progress) and then cached. */
export async function fetchBytes(url: URL, options: UrlFetchOptions = {}, signal?: AbortSignal): Promise<Uint8Array> {
  const file = url.href;
  const cache = await openCache(url, options.cache);
  const cached = await cache?.match(url).catch(() => undefined);
  if (cached?.ok) {
    const bytes = new Uint8Array(await cached.arrayBuffer());
    options.onProgress?.({ status: 'done', file, loaded: bytes.length, total: bytes.length, fromCache: true });
    return bytes;
  }
  options.onProgress?.({ status: 'initiate', file });
  let response: Response;
  try {
    response = await (options.fetch ?? globalThis.fetch)(url, signal ? { signal } : {});
  } catch (cause) {
    throwIfAborted(signal);
    throw new PrismError('MODEL_LOAD_FAILED', `cannot fetch ${file}`, { cause });
  }
  if (!response.ok) throw new PrismError('MODEL_LOAD_FAILED', `fetching ${file} failed: HTTP ${response.status}`);
  const bytes = await readWithProgress(response, file, options.onProgress, signal);
  options.onProgress?.({ status: 'done', file, loaded: bytes.length, total: bytes.length, fromCache: false });
  // A copy: Response takes ArrayBuffer-backed views only, and the caller owns `bytes`.
  await cache?.put(url, new Response(bytes.slice(), { headers: { 'content-type': response.headers.get('content-type') ?? 'application/octet-stream' } })).catch(() => undefined);
  return bytes;
}

/** The named cache for http(s) URLs where the Cache API exists (pages, workers, Deno), else null. */
async function openCache(url: URL, name: string | false | undefined): Promise<Cache | null> {
  if (name === false || typeof caches === 'undefined' || (url.protocol !== 'https:' && url.protocol !== 'http:')) return null;
  return caches.open(name ?? DEFAULT_MODEL_CACHE).catch(() => null);
}

async function readWithProgress(response: Response, file: string, onProgress: UrlFetchOptions['onProgress'], signal: AbortSignal | undefined): Promise<Uint8Array> {
  const length = Number(response.headers.get('content-length'));
  const total = Number.isFinite(length) && length > 0 ? length : null;
  if (!onProgress || !response.body) return new Uint8Array(await response.arrayBuffer());
  const reader = response.body.getReader();
  const pieces: Uint8Array[] = [];
  let loaded = 0;
  for (;;) {
    throwIfAborted(signal);
    const { done, value } = await reader.read();
    if (done) break;
    pieces.push(value);
    loaded += value.length;
    onProgress({ status: 'progress', file, loaded, total });
  }
  const bytes = new Uint8Array(new ArrayBuffer(loaded));
  let offset = 0;
  for (const piece of pieces) {
    bytes.set(piece, offset);
    offset += piece.length;
  }
  return bytes;
}
