import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, open, readFile, rename, rm, stat, unlink, utimes } from 'node:fs/promises';
import { homedir, hostname } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { PrismError, throwIfAborted } from '../errors.ts';
import { packageRoot } from '../util/package-root.node.ts';
import { MINILM_FILES, MINILM_HUB_ID, MINILM_REVISION, fetchBytes, huggingFaceUrl, type DownloadProgress, type ModelFile, type ModelSource } from './model-source.ts';

/**
 * Where model files are fetched from when the cache lacks them, and what they must be: a file
 * whose size or SHA-256 differs from `files` is refused and never enters the cache.
 */
export interface ModelDownload {
  /** What the files are, as a relative path (e.g. `Xenova/all-MiniLM-L6-v2/<revision>`): their folder in the cache, and their name in errors. */
  name: string;
  /** Folder URL in the Hugging Face layout. */
  baseUrl: string | URL;
  files: readonly ModelFile[];
  /** Default `globalThis.fetch`. */
  fetch?: typeof fetch;
}

/** all-MiniLM-L6-v2 from the Hugging Face hub at the pinned `MINILM_REVISION`. */
export const MINILM_DOWNLOAD: ModelDownload = {
  name: `${MINILM_HUB_ID}/${MINILM_REVISION}`,
  baseUrl: huggingFaceUrl(MINILM_HUB_ID, MINILM_REVISION),
  files: MINILM_FILES,
};

/** Where Node reads MiniLM from (`defaultModelSource`, `openNodeMemory({ model })`, the CLI). */
export interface NodeModelOptions {
  /** Read the files from here and nowhere else. */
  source?: ModelSource;
  /**
   * The per-user cache the model is downloaded into once and read from afterwards. Default: env
   * `PRISM_CACHE_DIR`, else `$XDG_CACHE_HOME/prism-memory`, else `~/.cache/prism-memory`.
   */
  cacheDir?: string;
  /** Where a file missing from the cache comes from. Default `MINILM_DOWNLOAD` (the hub); `false` never downloads. */
  download?: ModelDownload | false;
  /** Download progress per file, and `waiting` while another process downloads it. */
  onProgress?: (progress: DownloadProgress) => void;
}

/**
 * The model directory of a development checkout: env `PRISM_MODEL_DIR`, else
 * `../shared/models/all-MiniLM-L6-v2` beside the package root (found by walking up to the
 * nearest package.json, so this holds both from `src/` and from a build in `dist/`). Tests and
 * benches read the model files from here; an installed package uses `defaultModelSource`.
 */
export function defaultModelDir(): string {
  const fromEnv = process.env['PRISM_MODEL_DIR'];
  if (fromEnv) return resolve(fromEnv);
  return resolve(packageRoot(), '..', 'shared', 'models', 'all-MiniLM-L6-v2');
}

/** The per-user cache directory: `dir`, else env `PRISM_CACHE_DIR`, else `$XDG_CACHE_HOME/prism-memory`, else `~/.cache/prism-memory`. */
export function modelCacheDir(dir?: string): string {
  if (dir !== undefined) return resolve(dir);
  const fromEnv = process.env['PRISM_CACHE_DIR'];
  if (fromEnv) return resolve(fromEnv);
  const xdg = process.env['XDG_CACHE_HOME'];
  // The XDG spec ignores a relative XDG_CACHE_HOME.
  return join(xdg && isAbsolute(xdg) ? xdg : join(homedir(), '.cache'), 'prism-memory');
}

/** Reads model files from a directory in the Hugging Face layout. */
export function fileModelSource(dir: string = defaultModelDir()): ModelSource {
  const root = resolve(dir);
  return {
    location: root,
    async read(relPath, signal) {
      const path = join(root, relPath);
      try {
        const bytes = await readFile(path, signal ? { signal } : {});
        return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      } catch (cause) {
        throwIfAborted(signal);
        const hint = process.env['PRISM_MODEL_DIR'] ? ' (PRISM_MODEL_DIR names this directory)' : ' (set PRISM_MODEL_DIR to the model directory)';
        throw new PrismError('MODEL_LOAD_FAILED', `cannot read ${path}${hint}`, { cause });
      }
    },
  };
}

/**
 * Where Node reads MiniLM from, first match wins: `options.source`; env `PRISM_MODEL_DIR` (and
 * only there, so a wrong path fails loudly); the `../shared` model directory of a development
 * checkout, when it holds the files; else the per-user cache (`modelCacheDir`), into which each
 * file is downloaded once, checked against its size and SHA-256 (`cachedModelSource`).
 */
export function defaultModelSource(options: NodeModelOptions = {}): ModelSource {
  if (options.source) return options.source;
  if (process.env['PRISM_MODEL_DIR']) return fileModelSource(process.env['PRISM_MODEL_DIR']);
  const checkout = defaultModelDir();
  if (existsSync(join(checkout, 'tokenizer.json'))) return fileModelSource(checkout);
  return cachedModelSource(options);
}

/** How often a downloading process marks its lock as alive, and how long a lock may go unmarked before another process takes over. */
const LOCK_HEARTBEAT_MS = 5_000;
const LOCK_STALE_MS = 60_000;
/** How often a process waiting for another's download looks again. */
const WAIT_POLL_MS = 100;

/**
 * Model files from the per-user cache, each downloaded into it on first read (`download`). A
 * file in the cache is used when its size is right (it was checked against its SHA-256 when it
 * arrived). Processes sharing the cache download each file once: the downloader holds
 * `<file>.lock` (created exclusively) while it fetches, then moves the checked bytes into place
 * with an atomic rename; the others wait for the file to appear. A lock whose process died (same
 * host) or that has not been refreshed for a minute is taken over.
 */
export function cachedModelSource(options: Omit<NodeModelOptions, 'source'> = {}): ModelSource {
  const root = modelCacheDir(options.cacheDir);
  const download = options.download ?? MINILM_DOWNLOAD;
  const manifest = download === false ? MINILM_DOWNLOAD : download;
  const folder = join(root, 'models', ...checkedName(manifest.name).split('/'));
  const report = options.onProgress ?? (() => undefined);
  return {
    location: folder,
    async read(relPath, signal) {
      const file = manifest.files.find((f) => f.path === relPath);
      if (!file) throw new PrismError('MODEL_LOAD_FAILED', `${relPath} is not a file of ${manifest.name}`);
      const target = join(folder, ...relPath.split('/'));
      const cached = await readIfComplete(target, file);
      if (cached) {
        report({ status: 'done', file: target, loaded: cached.length, total: cached.length, fromCache: true });
        return cached;
      }
      if (download === false) throw offline(folder, relPath, null);
      return downloadOnce({ download, file, target, folder, report, ...(signal ? { signal } : {}) });
    },
  };
}

/** A cache subfolder name: relative, with no `.`/`..` steps, so the files stay inside the cache. */
function checkedName(name: string): string {
  const parts = name.split('/');
  if (name === '' || isAbsolute(name) || parts.some((p) => p === '' || p === '.' || p === '..' || p.includes('\\'))) {
    throw new PrismError('INVALID_INPUT', `model download name must be a relative path without . or .. steps, got ${JSON.stringify(name)}`);
  }
  return name;
}

/** The file's bytes when it is there with the expected size, else null. */
async function readIfComplete(path: string, file: ModelFile): Promise<Uint8Array | null> {
  const bytes = await readFile(path).catch(() => null);
  if (!bytes || bytes.byteLength !== file.bytes) return null;
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function offline(folder: string, relPath: string, cause: unknown): PrismError {
  return new PrismError(
    'MODEL_LOAD_FAILED',
    `the MiniLM model file ${relPath} is not in the model cache ${folder}` +
      (cause === null ? ' and downloading is off' : ` and could not be downloaded (${cause instanceof Error ? cause.message : String(cause)})`) +
      '. Set PRISM_MODEL_DIR to a directory holding all-MiniLM-L6-v2 (tokenizer.json, tokenizer_config.json, onnx/model_quantized.onnx),' +
      ' or run once with network access so the files are downloaded into the cache (PRISM_CACHE_DIR moves it).',
    cause === null ? undefined : { cause },
  );
}

interface DownloadJob {
  download: ModelDownload;
  file: ModelFile;
  target: string;
  folder: string;
  report: (progress: DownloadProgress) => void;
  signal?: AbortSignal;
}

/** What a lock file holds: who downloads, so that a lock left by a dead process can be told apart. */
interface LockOwner {
  host: string;
  pid: number;
  nonce: string;
}

/** Downloads `job.file` into the cache unless another process is doing so, then returns its bytes. */
async function downloadOnce(job: DownloadJob): Promise<Uint8Array> {
  const lockPath = `${job.target}.lock`;
  await mkdir(dirname(job.target), { recursive: true }).catch((err: NodeJS.ErrnoException) => {
    throw cacheWriteError(job.folder, err);
  });
  let waited = false;
  for (;;) {
    throwIfAborted(job.signal);
    const owner: LockOwner = { host: hostname(), pid: process.pid, nonce: randomBytes(8).toString('hex') };
    const lock = await open(lockPath, 'wx').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'EEXIST') return null;
      throw cacheWriteError(job.folder, err);
    });
    if (lock) {
      await lock.writeFile(JSON.stringify(owner));
      await lock.close();
      return holdingLock(lockPath, owner, () => fetchIntoCache(job));
    }
    if (!waited) job.report({ status: 'waiting', file: job.target });
    waited = true;
    const bytes = await waitForOther(job, lockPath);
    if (bytes) {
      job.report({ status: 'done', file: job.target, loaded: bytes.length, total: bytes.length, fromCache: true });
      return bytes;
    }
  }
}

/** Runs `task` while keeping the lock fresh, and removes the lock afterwards (if it is still ours). */
async function holdingLock<T>(lockPath: string, owner: LockOwner, task: () => Promise<T>): Promise<T> {
  const heartbeat = setInterval(() => {
    const now = new Date();
    utimes(lockPath, now, now).catch(() => undefined);
  }, LOCK_HEARTBEAT_MS);
  heartbeat.unref();
  try {
    return await task();
  } finally {
    clearInterval(heartbeat);
    if ((await readOwner(lockPath))?.nonce === owner.nonce) await unlink(lockPath).catch(() => undefined);
  }
}

/**
 * Waits while another process holds the lock: resolves to the file once it is complete, or to
 * null when the lock went away without it (that download failed) or was stale and is removed,
 * so the caller tries to take the lock itself.
 */
async function waitForOther(job: DownloadJob, lockPath: string): Promise<Uint8Array | null> {
  for (;;) {
    const done = await readIfComplete(job.target, job.file);
    if (done) return done;
    const lock = await stat(lockPath).catch(() => null);
    if (!lock) return null;
    const owner = await readOwner(lockPath);
    const deadOwner = owner !== null && owner.host === hostname() && !processAlive(owner.pid);
    if (deadOwner || Date.now() - lock.mtimeMs > LOCK_STALE_MS) {
      // Removed only if it is still the lock judged stale, not one another waiter took since.
      if ((await readOwner(lockPath))?.nonce === owner?.nonce) await unlink(lockPath).catch(() => undefined);
      return null;
    }
    await delay(WAIT_POLL_MS, undefined, job.signal ? { signal: job.signal } : {}).catch(() => throwIfAborted(job.signal));
  }
}

async function readOwner(lockPath: string): Promise<LockOwner | null> {
  const text = await readFile(lockPath, 'utf8').catch(() => null);
  if (text === null) return null;
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null) return null;
    const { host, pid, nonce } = parsed as Record<string, unknown>;
    return typeof host === 'string' && typeof pid === 'number' && typeof nonce === 'string' ? { host, pid, nonce } : null;
  } catch {
    // A lock file whose owner is still writing it: judged by its age alone.
    return null;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Fetches the file (with progress), checks its size and SHA-256, and moves it into the cache atomically. */
async function fetchIntoCache(job: DownloadJob): Promise<Uint8Array> {
  // The previous holder may have finished between this process's look and its lock.
  const present = await readIfComplete(job.target, job.file);
  if (present) {
    job.report({ status: 'done', file: job.target, loaded: present.length, total: present.length, fromCache: true });
    return present;
  }
  const url = new URL(job.file.path, String(job.download.baseUrl).endsWith('/') ? String(job.download.baseUrl) : `${String(job.download.baseUrl)}/`);
  let bytes: Uint8Array;
  try {
    bytes = await fetchBytes(url, { cache: false, onProgress: job.report, ...(job.download.fetch ? { fetch: job.download.fetch } : {}) }, job.signal);
  } catch (cause) {
    throwIfAborted(job.signal);
    throw offline(job.folder, job.file.path, cause);
  }
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  if (bytes.length !== job.file.bytes || sha256 !== job.file.sha256) {
    throw new PrismError(
      'MODEL_LOAD_FAILED',
      `${url.href} is not the expected ${job.file.path} of ${job.download.name}: got ${bytes.length} bytes with SHA-256 ${sha256}, expected ${job.file.bytes} bytes with ${job.file.sha256}; nothing was cached`,
    );
  }
  const part = `${job.target}.${process.pid}.${randomBytes(4).toString('hex')}.part`;
  try {
    const handle = await open(part, 'w');
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(part, job.target);
  } catch (cause) {
    await rm(part, { force: true }).catch(() => undefined);
    throw cacheWriteError(job.folder, cause as NodeJS.ErrnoException);
  }
  return bytes;
}

function cacheWriteError(folder: string, cause: NodeJS.ErrnoException): PrismError {
  return new PrismError('MODEL_LOAD_FAILED', `cannot write to the model cache ${folder}: ${cause.code ?? cause.message} (PRISM_CACHE_DIR moves it)`, { cause });
}
