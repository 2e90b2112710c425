import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { LazyEmbedder } from '../src/embed/lazy.ts';
import { cachedModelSource, defaultModelDir, defaultModelSource, fileModelSource, modelCacheDir } from '../src/embed/model-source.node.ts';
import type { DownloadProgress, ModelFile, ModelSource } from '../src/embed/model-source.ts';
import { PrismError } from '../src/errors.ts';
import { openNodeMemory } from '../src/node.ts';

/**
 * Where Node finds MiniLM, and the one-time download into the per-user cache: a real HTTP server
 * on loopback stands in for the hub (serving the local model files) and counts the requests; real
 * processes share one cache directory.
 */

/** The files the int8 embedder reads, as the test server delivers them. */
const MODEL_PATHS = ['tokenizer.json', 'tokenizer_config.json', 'onnx/model_quantized.onnx'];
const FILES: ModelFile[] = MODEL_PATHS.map((path) => {
  const bytes = readFileSync(join(defaultModelDir(), path));
  return { path, bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
});

/** Serves the local model folder under `/model/`, counting requests per file; responses wait while the gate is closed. */
interface HubStandIn {
  baseUrl: string;
  requests: Map<string, number>;
  /** Holds every response until `open()`. */
  close(): void;
  open(): void;
  /** Resolves once every path has been requested `times` times in all. */
  requested(times: number): Promise<void>;
  stop(): Promise<void>;
}

async function startHub(): Promise<HubStandIn> {
  const requests = new Map<string, number>();
  let gate: Promise<void> = Promise.resolve();
  let openGate: () => void = () => undefined;
  const server: Server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://localhost').pathname).replace(/^\/model\//, '');
    requests.set(path, (requests.get(path) ?? 0) + 1);
    void gate.then(() => {
      if (!MODEL_PATHS.includes(path)) {
        res.writeHead(404).end();
        return;
      }
      const bytes = readFileSync(join(defaultModelDir(), path));
      res.writeHead(200, { 'content-length': String(bytes.length), 'content-type': 'application/octet-stream' });
      res.end(bytes);
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/model/`,
    requests,
    close() {
      gate = new Promise((done) => {
        openGate = done;
      });
    },
    open: () => openGate(),
    async requested(times) {
      await vi.waitFor(() => expect(MODEL_PATHS.every((p) => (requests.get(p) ?? 0) >= times)).toBe(true), { timeout: 60_000, interval: 50 });
    },
    stop: () =>
      new Promise((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

/** A `model-download.ts` child process and the JSON lines it printed. */
interface Downloader {
  child: ChildProcess;
  lines: Array<{ event?: DownloadProgress; vector?: number[] }>;
  exit: Promise<{ code: number | null; stderr: string }>;
}

function startDownloader(cacheDir: string, baseUrl: string, filesPath: string): Downloader {
  const child = spawn(process.execPath, ['--import', 'tsx', resolve('test/helpers/model-download.ts'), cacheDir, baseUrl, filesPath], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Downloader['lines'] = [];
  let pending = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    const complete = pending.split('\n');
    pending = complete.pop() ?? '';
    for (const line of complete) if (line.trim() !== '') lines.push(JSON.parse(line) as Downloader['lines'][number]);
  });
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<{ code: number | null; stderr: string }>((done) => child.on('close', (code) => done({ code, stderr })));
  return { child, lines, exit };
}

const events = (d: Downloader): DownloadProgress[] => d.lines.flatMap((l) => (l.event ? [l.event] : []));
const vectorOf = (d: Downloader): number[] | undefined => d.lines.find((l) => l.vector)?.vector;

/** Every file under `dir`, relative to it. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => relative(dir, join(e.parentPath, e.name))).sort();
}

let hub: HubStandIn;
let work: string;
let filesPath: string;

beforeAll(async () => {
  hub = await startHub();
  work = await mkdtemp(join(tmpdir(), 'prism-model-cache-'));
  filesPath = join(work, 'files.json');
  await writeFile(filesPath, JSON.stringify(FILES));
});

afterAll(async () => {
  hub.open();
  await hub.stop();
  await rm(work, { recursive: true, force: true });
});

afterEach(() => {
  hub.open();
  hub.requests.clear();
  vi.unstubAllEnvs();
});

describe('where Node reads the model from', () => {
  it('an explicit source, then PRISM_MODEL_DIR, then the checkout\'s model folder, then the per-user cache', () => {
    const explicit: ModelSource = { location: 'explicit', read: () => Promise.reject(new Error('unused')) };
    vi.stubEnv('PRISM_MODEL_DIR', '/nowhere/model');
    expect(defaultModelSource({ source: explicit }).location).toBe('explicit');
    expect(defaultModelSource().location).toBe('/nowhere/model');
    vi.stubEnv('PRISM_MODEL_DIR', '');
    // This checkout has ../shared/models/all-MiniLM-L6-v2; an installed package has not, and goes to the cache.
    expect(defaultModelSource().location).toBe(defaultModelDir());
    expect(cachedModelSource({ cacheDir: '/tmp/c' }).location).toBe('/tmp/c/models/Xenova/all-MiniLM-L6-v2/751bff37182d3f1213fa05d7196b954e230abad9');
  });

  it('the cache directory: the option, then PRISM_CACHE_DIR, then XDG_CACHE_HOME, then ~/.cache', () => {
    vi.stubEnv('PRISM_CACHE_DIR', '/from/env');
    vi.stubEnv('XDG_CACHE_HOME', '/xdg');
    expect(modelCacheDir('/given')).toBe('/given');
    expect(modelCacheDir()).toBe('/from/env');
    vi.stubEnv('PRISM_CACHE_DIR', '');
    expect(modelCacheDir()).toBe('/xdg/prism-memory');
    vi.stubEnv('XDG_CACHE_HOME', 'relative/ignored');
    vi.stubEnv('HOME', '/home/someone');
    expect(modelCacheDir()).toBe('/home/someone/.cache/prism-memory');
  });

  it('a missing PRISM_MODEL_DIR fails naming the path and the variable', async () => {
    const missing = join(work, 'no-model-here');
    const error = await fileModelSource(missing).read('tokenizer.json').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PrismError);
    expect((error as PrismError).code).toBe('MODEL_LOAD_FAILED');
    expect((error as PrismError).message).toContain(join(missing, 'tokenizer.json'));
    expect((error as PrismError).message).toContain('PRISM_MODEL_DIR');
  });
});

describe('the per-user model cache', () => {
  it('two processes share one download: one request per file, the second waits and reads what the first cached', async () => {
    const cacheDir = join(work, 'shared');
    hub.close();
    const first = startDownloader(cacheDir, hub.baseUrl, filesPath);
    await hub.requested(1);
    // The first holds every file's lock while its responses are held back; the second must wait for it.
    const second = startDownloader(cacheDir, hub.baseUrl, filesPath);
    await vi.waitFor(() => expect(events(second).filter((e) => e.status === 'waiting')).toHaveLength(MODEL_PATHS.length), { timeout: 60_000, interval: 50 });
    hub.open();
    const [a, b] = await Promise.all([first.exit, second.exit]);
    expect(a, a.stderr).toMatchObject({ code: 0 });
    expect(b, b.stderr).toMatchObject({ code: 0 });

    expect(Object.fromEntries(hub.requests)).toEqual(Object.fromEntries(MODEL_PATHS.map((p) => [p, 1])));
    expect(events(first).filter((e) => e.status === 'initiate')).toHaveLength(MODEL_PATHS.length);
    expect(events(first).filter((e) => e.status === 'done' && !e.fromCache)).toHaveLength(MODEL_PATHS.length);
    expect(events(second).filter((e) => e.status === 'initiate')).toEqual([]);
    expect(events(second).filter((e) => e.status === 'done' && e.fromCache)).toHaveLength(MODEL_PATHS.length);
    expect(vectorOf(first)).toHaveLength(8);
    expect(vectorOf(second)).toEqual(vectorOf(first));
    // Only the checked files are left: no lock, no partial download.
    const folder = join(cacheDir, 'models', 'test', 'all-MiniLM-L6-v2');
    expect(await filesUnder(folder)).toEqual([...MODEL_PATHS].map((p) => join(...p.split('/'))).sort());

    // A later process downloads nothing.
    const third = startDownloader(cacheDir, hub.baseUrl, filesPath);
    expect((await third.exit).code).toBe(0);
    expect([...hub.requests.values()].reduce((a, b) => a + b, 0)).toBe(MODEL_PATHS.length);
    expect(events(third).map((e) => e.status)).toEqual(MODEL_PATHS.map(() => 'done'));
  }, 180_000);

  it('a downloader killed mid-download leaves its locks; the next process takes them over and downloads', async () => {
    const cacheDir = join(work, 'killed');
    hub.close();
    const killed = startDownloader(cacheDir, hub.baseUrl, filesPath);
    await hub.requested(1);
    killed.child.kill('SIGKILL');
    await killed.exit;
    const folder = join(cacheDir, 'models', 'test', 'all-MiniLM-L6-v2');
    expect((await filesUnder(folder)).filter((f) => f.endsWith('.lock'))).toHaveLength(MODEL_PATHS.length);

    const next = startDownloader(cacheDir, hub.baseUrl, filesPath);
    await hub.requested(2);
    hub.open();
    const result = await next.exit;
    expect(result, result.stderr).toMatchObject({ code: 0 });
    expect(vectorOf(next)).toHaveLength(8);
    expect(await filesUnder(folder)).toEqual([...MODEL_PATHS].map((p) => join(...p.split('/'))).sort());
  }, 180_000);

  it('refuses a download whose size or SHA-256 is not the expected one, and caches nothing', async () => {
    const cacheDir = join(work, 'corrupt');
    const wrong = FILES.map((f) => (f.path === 'tokenizer_config.json' ? { ...f, sha256: '0'.repeat(64) } : f));
    const source = cachedModelSource({ cacheDir, download: { name: 'test/corrupt', baseUrl: hub.baseUrl, files: wrong } });
    const error = await source.read('tokenizer_config.json').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PrismError);
    expect((error as PrismError).code).toBe('MODEL_LOAD_FAILED');
    expect((error as PrismError).message).toMatch(/SHA-256 [0-9a-f]{64}, expected \d+ bytes with 0{64}; nothing was cached/);
    expect(await filesUnder(join(cacheDir, 'models', 'test', 'corrupt'))).toEqual([]);
  });

  it('offline: the error names PRISM_MODEL_DIR and the cache directory; with downloads off nothing is fetched', async () => {
    const cacheDir = join(work, 'offline');
    // A port nothing listens on: the connection is refused, as with no network.
    const closed = await startHub();
    const deadUrl = closed.baseUrl;
    await closed.stop();
    const folder = join(cacheDir, 'models', 'test', 'offline');
    for (const download of [{ name: 'test/offline', baseUrl: deadUrl, files: FILES }, false] as const) {
      const source = cachedModelSource({ cacheDir, download: download === false ? false : download });
      const error = await source.read('tokenizer.json').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PrismError);
      expect((error as PrismError).code).toBe('MODEL_LOAD_FAILED');
      expect((error as PrismError).message).toContain('PRISM_MODEL_DIR');
      expect((error as PrismError).message).toContain(download === false ? modelCacheDir(cacheDir) : folder);
    }
    expect(hub.requests.size).toBe(0);
  });
});

describe('the model is read only by what embeds', () => {
  /** The local model folder, counting the files read (under a location of its own, so no embedder loaded before is shared). */
  function countingSource(): ModelSource & { reads: string[] } {
    const inner = fileModelSource(defaultModelDir());
    const reads: string[] = [];
    return { location: `counted:${inner.location}`, reads, read: (path, signal) => (reads.push(path), inner.read(path, signal)) };
  }

  it('open, list, get, stats, scopes, export, import and delete read no model file; search does', async () => {
    const dir = join(work, 'lazy-store');
    const writer = await openNodeMemory({ dir });
    await writer.add([{ speaker: 'Sam', text: 'My beagle is called Biscuit.' }], { userId: 'sam', sessionId: 'pets', date: '2025-03-01' });
    await writer.close();

    const source = countingSource();
    const memory = await openNodeMemory({ dir, model: { source } });
    try {
      expect((await memory.list({ userId: 'sam' })).map((s) => s.sessionId)).toEqual(['pets']);
      expect((await memory.get('pets', { userId: 'sam' }))?.kind).toBe('session');
      expect((await memory.stats({ userId: 'sam' })).chunks).toBe(1);
      expect(await memory.scopes()).toContainEqual({ userId: 'sam', agentId: null, runId: null });
      const checkpoint = await memory.export({ userId: 'sam' });
      await memory.import(checkpoint, { userId: 'sam-copy' });
      expect((await memory.stats({ userId: 'sam-copy' })).chunks).toBe(1);
      expect(await memory.delete({ userId: 'sam-copy', sessionId: 'pets' })).toEqual({ chunksDeleted: 1 });
      expect(await memory.delete({ userId: 'sam-copy' })).toEqual({ chunksDeleted: 0 });
      expect(source.reads).toEqual([]);
      expect((memory.embedder as LazyEmbedder).loaded).toBe(false);

      const { context } = await memory.search('What is my dog called?', { userId: 'sam' });
      expect(context).toContain('Biscuit');
      expect([...source.reads].sort()).toEqual(['onnx/model_quantized.onnx', 'tokenizer.json', 'tokenizer_config.json']);
    } finally {
      await memory.close();
    }
  }, 120_000);

  it('prism list, get, stats, export, import and delete answer with no model at all; prism search names PRISM_MODEL_DIR', async () => {
    const dir = join(work, 'cli-store');
    const prism = (args: readonly string[], modelDir: string) =>
      promisify(execFile)(process.execPath, ['--import', 'tsx', resolve('test/helpers/prism-cli.ts'), ...args, '--dir', dir], { env: { ...process.env, PRISM_MODEL_DIR: modelDir } }).then(
        ({ stdout }) => ({ code: 0, stdout, stderr: '' }),
        (err: { code: number; stdout: string; stderr: string }) => err,
      );
    const added = await prism(['add', resolve('examples/chat.txt'), '--date', '2025-03-14', '--user', 'sam'], defaultModelDir());
    expect(added.code, added.stderr).toBe(0);
    const missing = join(work, 'no-model-dir');
    const checkpoint = join(work, 'sam.prism');
    for (const args of [['list'], ['get', '2025-03-14'], ['stats'], ['export', checkpoint], ['import', checkpoint, '--user', 'sam-copy'], ['delete', '--all', '--user', 'sam-copy']]) {
      const result = await prism([...args, ...(args.includes('--user') ? [] : ['--user', 'sam'])], missing);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    }
    const search = await prism(['search', 'What is the name of the dog?', '--user', 'sam'], missing);
    expect(search.code).toBe(1);
    expect(search.stderr).toContain('PRISM_MODEL_DIR');
    expect(search.stderr).toContain('[MODEL_LOAD_FAILED]');
  }, 180_000);

  it('a lazy embedder checks what it loaded, and tries again after a failed load', async () => {
    let attempts = 0;
    const vector = new Float32Array([1, 0, 0]);
    const lazy = new LazyEmbedder('model/a', 3, async () => {
      attempts++;
      if (attempts === 1) throw new PrismError('MODEL_LOAD_FAILED', 'first load fails');
      return { id: attempts === 2 ? 'model/b' : 'model/a', dim: 3, embed: async (texts) => texts.map(() => vector) };
    });
    await expect(lazy.embed(['x'])).rejects.toThrow('first load fails');
    await expect(lazy.embed(['x'])).rejects.toThrow('expected embedder model/a (3-d), loaded model/b (3-d)');
    expect(await lazy.embed(['x', 'y'])).toEqual([vector, vector]);
    expect(attempts).toBe(3);
  });
});
