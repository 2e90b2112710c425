import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Embedder } from '../src/embed/types.ts';
import { onnxWebEngine, type OrtWeb } from '../src/embed/ort-web.ts';
import { createNodeMiniLmEmbedder, defaultModelDir, nodeEmbedder, nodeUsearch } from '../src/node.ts';
import { Memory } from '../src/memory.ts';
import type { MemorySnapshot } from '../src/graph/types.ts';
import type { SessionInfo } from '../src/memory/records.ts';
import { DEFAULT_PARTITION } from '../src/scope.ts';
import { encodeCheckpoint } from '../src/store/checkpoint.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { applyBatch } from '../src/store/snapshot.ts';
import { DEFAULT_VECTOR_PRECISION, roundVectors } from '../src/store/vector-codec.ts';
import { sha256Hex } from '../src/util/hash.ts';
import { sampleFollowUp, sampleMemory } from '../e2e/support/sample-memory.ts';
import { bundleWorker, type WorkerModule } from './edge/bundle.ts';
import { chatCorpus } from './edge/chat-corpus.ts';
import { isolateMemory } from './edge/isolate-memory.ts';
import { fromBase64, runEdgeScenario, searchAll, type ScenarioResult } from './edge/scenario.ts';
import { serveFolders, type StaticServer } from './edge/static-server.ts';
import { freePort, residentBytes, startWorkerd, waitForPort, writeWorkerdConfig, type Workerd } from './edge/workerd.ts';
import type { WorkerdScenarioResult } from './edge/workerd-main.ts';
import { FORGOTTEN, type StoreReport } from './edge/workerd-store.ts';
import { findOnDisk } from './faults/erase-scenarios.ts';
import { conversation } from './helpers/conversation.ts';
import { goldenTexts } from './helpers/golden-texts.ts';

// The same scenario (test/edge/scenario.ts) runs in Node, in Deno and in workerd, each the real
// runtime binary from npm (`deno`, `workerd`), MiniLM included, and must give the same graph, the
// same units and a checkpoint that moves back into Node. In workerd, the SQL store also runs on
// SQLite-backed Durable Objects; and the two example projects (examples/cloudflare-worker,
// examples/deno) run as they are, over HTTP, with their figures measured.

const repoRoot = resolve(import.meta.dirname, '..');
const bin = (name: string) => join(repoRoot, 'node_modules', '.bin', name);
/** The date the test workers run at; the example names its own in wrangler.jsonc. */
const COMPATIBILITY_DATE = '2025-09-01';
/** The package's entries as a user imports them, resolved to this checkout. */
const PRISM_SOURCE = {
  'prism-memory': join(repoRoot, 'src/index.ts'),
  'prism-memory/advanced': join(repoRoot, 'src/advanced.ts'),
  'prism-memory/wasm/usearch.wasm': join(repoRoot, 'wasm/usearch.wasm'),
};
/** Cloudflare's limits are in MB; the strict reading is 10⁶ bytes. */
const MB = 1_000_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], options: { env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { cwd: repoRoot, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

let node: ScenarioResult;
let referenceEmbedder: Embedder;

beforeAll(async () => {
  // Deno and workerd embed with onnxruntime-web, so the Node reference does too (Node's default
  // engine, onnxruntime-node, agrees only to float rounding, and the scenarios compare scores).
  // Node cannot run onnxruntime-web's WASM-only browser bundle (the engine's default); its Node build is the same runtime.
  const engine = onnxWebEngine({ load: () => import('onnxruntime-web') as Promise<OrtWeb> });
  const [embedder, usearch] = await Promise.all([createNodeMiniLmEmbedder({ precision: 'int8', engine }), nodeUsearch()]);
  node = await runEdgeScenario('node', embedder, (dim) => usearch.createIndex({ dim }));
  referenceEmbedder = embedder;
});

/** Same graph, same ranked units and traces; scores within `tolerance`. */
function expectSameAsNode(other: ScenarioResult, tolerance: number): void {
  expect(other.stats).toEqual(node.stats);
  expect(other.searches.map((s) => [s.query, s.intent, s.tier, s.dialogIds])).toEqual(node.searches.map((s) => [s.query, s.intent, s.tier, s.dialogIds]));
  other.searches.forEach((search, i) => {
    const reference = node.searches[i]!;
    expect(search.units.map((u) => [u.id, u.trace])).toEqual(reference.units.map((u) => [u.id, u.trace]));
    search.units.forEach((unit, j) => expect(Math.abs(unit.score - reference.units[j]!.score)).toBeLessThan(tolerance));
  });
}

describe('the Node reference run', () => {
  it('finds the evidence of each question first', () => {
    expect(node.stats.nodes.episode).toBe(2);
    expect(node.searches.map((s) => s.dialogIds[0])).toEqual(['D1:1', 'D1:2', 'D1:3']);
    expect(node.searches[0]).toMatchObject({ intent: 'TEMPORAL', tier: 'keyword' });
  });
});

describe('Deno', () => {
  it('runs the whole pipeline — MiniLM on onnxruntime-web included — with no network', async () => {
    const modelUrl = pathToFileURL(`${defaultModelDir()}/`).href;
    const result = await run(bin('deno'), ['run', '--no-lock', '--allow-read', '--allow-env', '--deny-net', '--no-prompt', 'test/edge/deno-main.ts', modelUrl], {
      env: { DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' },
    });
    expect(result.stderr).not.toMatch(/error/i);
    expect(result.code).toBe(0);
    const deno = JSON.parse(result.stdout) as ScenarioResult;
    expect(deno.runtime).toBe('deno');
    // Same ONNX model on the same WASM runtime; thread scheduling may change the last bits.
    expectSameAsNode(deno, 1e-4);
  });

  it('serves examples/deno as it is: two users, each with a memory of their own', async () => {
    const port = await freePort();
    // In the example's folder, as `deno task start` runs it: its deno.json maps `prism-memory` to this checkout.
    const server = spawn(bin('deno'), ['run', '--no-lock', '--allow-read', '--allow-env', `--allow-net=127.0.0.1:${port}`, '--no-prompt', 'main.ts'], {
      cwd: join(repoRoot, 'examples/deno'),
      env: { ...process.env, PORT: String(port), HOSTNAME: '127.0.0.1', PRISM_MODEL_URL: pathToFileURL(`${defaultModelDir()}/`).href, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    server.stdout.on('data', (d: Buffer) => (log += d.toString()));
    server.stderr.on('data', (d: Buffer) => (log += d.toString()));
    const exited = new Promise<void>((done) => server.once('exit', () => done()));
    try {
      // Listening once the model is loaded; an early exit fails the test with Deno's output.
      await Promise.race([waitForPort(port, 120_000), exited.then(() => Promise.reject(new Error(`deno exited:\n${log}`)))]);
      const api = exampleApi(`http://127.0.0.1:${port}`, () => log);
      const served = await Promise.all(USERS.map((user) => addAndRead(api, user)));
      USERS.forEach((user, i) => expectOwnMemory(user, served[i]!));
      await api.call('DELETE', '/users/bob');
      expect(await api.call('GET', '/users/bob/sessions')).toEqual([]);
      expect(await api.call('GET', '/users/alice/sessions')).toEqual(served[0]!.sessions);
    } finally {
      server.kill();
      await exited;
    }
  });
});

describe('workerd', () => {
  let dir: string;
  let workerd: Workerd | undefined;
  let port: number;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'prism-workerd-'));
    port = await freePort();
    const modules = await bundleWorker(join(repoRoot, 'test/edge/workerd-main.ts'), join(dir, 'out'));
    // The model comes from workerd's disk service over the model folder.
    await writeWorkerdConfig(join(dir, 'config.capnp'), port, { modules, compatibilityDate: COMPATIBILITY_DATE, services: { MODELS: { disk: defaultModelDir() } } });
    workerd = await startWorkerd(join(dir, 'config.capnp'), port);
  });

  afterAll(async () => {
    await workerd?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('runs the whole pipeline — MiniLM on onnxruntime-web from a precompiled module included — like Node', async () => {
    // Every 64th golden text: long documentation pages, cut at MiniLM's 256 tokens.
    const texts = goldenTexts().filter((_, i) => i % 64 === 3);
    const response = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: JSON.stringify({ texts }) });
    const body = await response.text();
    expect(response.status, `${body}\n${workerd?.log()}`).toBe(200);
    const workerdResult = JSON.parse(body) as WorkerdScenarioResult;
    expect(workerdResult.runtime).toBe('workerd');
    // Same model on the same WASM runtime, its int8 weights dequantized per run in workerd and once in Node.
    expectSameAsNode(workerdResult, 1e-4);

    // MiniLM in workerd against Node's own (onnxruntime-node) on the golden texts.
    const nodeVectors = await (await nodeEmbedder('int8')).embed(texts);
    const cosines = workerdResult.vectors.map((vector, i) => vector.reduce((sum, x, d) => sum + x * nodeVectors[i]![d]!, 0));
    console.log(`workerd MiniLM vs Node: min cosine ${Math.min(...cosines).toFixed(6)} over ${texts.length} golden texts`);
    expect(cosines).toHaveLength(texts.length);
    expect(Math.min(...cosines)).toBeGreaterThanOrEqual(0.9999);

    // The checkpoint written in workerd opens in Node and answers the same way.
    const usearch = await nodeUsearch();
    const memory = await Memory.open({ store: new MemoryStore(), embedder: referenceEmbedder, createIndex: (dim) => usearch.createIndex({ dim }), llm: null });
    await memory.import(fromBase64(workerdResult.checkpoint));
    expect(await memory.stats()).toEqual(node.stats);
    const searches = await searchAll(memory);
    expect(searches.map((s) => s.units.map((u) => u.id))).toEqual(node.searches.map((s) => s.units.map((u) => u.id)));
  });
});

describe('workerd Durable Object (SQLite-backed) as the graph store', () => {
  let dir: string;
  let workerd: Workerd | undefined;
  let config: string;
  let port: number;

  beforeAll(async () => {
    ({ dir, port, config } = await prepareObjectWorker('workerd-store.ts', 'MemoryObject', 'prism-workerd-do-'));
  });

  afterAll(async () => {
    await workerd?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  async function post<T>(action: string): Promise<T> {
    const response = await fetch(`http://127.0.0.1:${port}/${action}`, { method: 'POST' });
    const body = await response.text();
    expect(response.status, `${body}\n${workerd?.log()}`).toBe(200);
    return JSON.parse(body) as T;
  }

  it('commits, loads, counts revisions per partition, and keeps everything across a workerd restart', async () => {
    const other = 'bob\u001fagent\u001f';
    const expected = {
      partitions: [other, DEFAULT_PARTITION].sort(),
      revisions: { [DEFAULT_PARTITION]: 2, [other]: 1 },
      // The store keeps vectors at its precision (f16), so the checkpoints it exports hold them so.
      digests: {
        [DEFAULT_PARTITION]: await sha256Hex(encodeCheckpoint(atStorePrecision(applyBatch(sampleMemory(), sampleFollowUp())))),
        [other]: await sha256Hex(encodeCheckpoint(atStorePrecision(sampleMemory({ episodes: 2, seed: 3 })))),
      },
      // 'b' was tagged chunk-2 and deleted by that tag.
      cached: ['1', null, '3'],
    };
    workerd = await startWorkerd(config, port, ['--experimental']);
    const written = await post<{ revisions: number[]; invalid: string; order: string[]; report: StoreReport }>('write');
    expect(written.revisions).toEqual([1, 1, 2]);
    expect(written.invalid).toBe('DIMENSION_MISMATCH');
    expect(written.order).toEqual(['first+', 'first-', 'second+', 'second-']);
    expect(written.report).toEqual(expected);

    await workerd.stop();
    workerd = await startWorkerd(config, port, ['--experimental']);
    expect(await post<StoreReport>('read')).toEqual(expected);
    const cleared = await post<StoreReport>('clear-other');
    expect(cleared.partitions).toEqual([DEFAULT_PARTITION]);
    // Above every revision the store handed out: the cleared partition leaves no row of its own.
    expect(cleared.revisions).toEqual({ ...expected.revisions, [other]: 3 });
    expect(cleared.digests).toEqual({ ...expected.digests, [other]: null });
  });

  // workerd refuses `secure_delete`, checkpoints and VACUUM (see DurableObjectSqlDriver.eraseDeleted),
  // so a delete cannot reach the bytes. This shows where they stay; the README says so.
  it('keeps deleted rows on disk: in the -wal while the object runs, in the database file after it stops', async () => {
    await workerd?.stop();
    workerd = await startWorkerd(config, port, ['--experimental']);
    const report = await post<StoreReport>('forget');
    expect(report.partitions).not.toContain(FORGOTTEN.partition);
    const objects = join(dir, 'objects');
    const running = await findOnDisk(objects, [FORGOTTEN.text]);
    expect(running.filter((hit) => hit.file.endsWith('.sqlite-wal')).length).toBeGreaterThan(0);
    await workerd.stop();
    workerd = undefined;
    const stopped = await findOnDisk(objects, [FORGOTTEN.text, FORGOTTEN.partition]);
    expect(stopped.filter((hit) => hit.file.endsWith('.sqlite') && hit.needle === FORGOTTEN.text).length).toBeGreaterThan(0);
  });
});

describe('examples/cloudflare-worker in workerd: bundled as wrangler bundles it, configured from its wrangler.jsonc', () => {
  const example = join(repoRoot, 'examples/cloudflare-worker');
  /** Where the example's static assets hold the model (README: copy it to public/models/all-MiniLM-L6-v2/). */
  const MODEL_PATH = '/models/all-MiniLM-L6-v2/';
  let dir: string;
  let objects: string;
  let config: string;
  let port: number;
  let inspector: number;
  let modules: WorkerModule[];
  let assets: StaticServer;
  let workerd: Workerd | undefined;
  let api: ExampleApi;
  /** What the run measured, printed at the end (the README's edge section quotes it). */
  const figures: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'prism-cloudflare-example-'));
    const wrangler = readWranglerConfig(await readFile(join(example, 'wrangler.jsonc'), 'utf8'));
    modules = await bundleWorker(join(example, wrangler.main), join(dir, 'out'), { packages: PRISM_SOURCE, minify: wrangler.minify });
    // The static assets: a loopback server that serves the model folder and notes every request.
    assets = await serveFolders({ [MODEL_PATH]: defaultModelDir() });
    [port, inspector] = [await freePort(), await freePort()];
    objects = join(dir, 'objects');
    await mkdir(objects);
    config = join(dir, 'config.capnp');
    await writeWorkerdConfig(config, port, {
      modules,
      compatibilityDate: wrangler.compatibilityDate,
      objects: { ...wrangler.objects, dir: objects },
      services: { [wrangler.assetsBinding]: { http: assets.address } },
    });
    api = exampleApi(`http://127.0.0.1:${port}`, () => workerd?.log() ?? '');
  });

  afterAll(async () => {
    await workerd?.stop();
    await assets?.close();
    await rm(dir, { recursive: true, force: true });
    console.log(`examples/cloudflare-worker in workerd, measured:\n  ${figures.join('\n  ')}`);
  });

  const start = async (): Promise<Workerd> => (workerd = await startWorkerd(config, port, ['--experimental', `--inspector-addr=127.0.0.1:${inspector}`]));

  /** The isolate's memory (heap, ArrayBuffers, WebAssembly memories) and the workerd process's resident set. */
  async function memory(label: string): Promise<number> {
    const isolate = await isolateMemory(inspector, 'main');
    const wasm = isolate.wasmMemories.reduce((sum, bytes) => sum + bytes, 0);
    const total = isolate.heapTotal + isolate.backingStores + wasm;
    const rss = await residentBytes(workerd!.pid);
    figures.push(
      `${label}: isolate ${mb(total)} of 128 MB (JS heap ${mb(isolate.heapTotal)}, ArrayBuffers ${mb(isolate.backingStores)}, WebAssembly ${isolate.wasmMemories.map(mb).join(' + ') || 'none'}); workerd RSS ${mb(rss)}`,
    );
    return total;
  }

  it('bundles to a Worker whose compressed upload is under the 10 MB limit', () => {
    const sizes = modules.map((module) => ({ ...module, compressed: gzipSync(readFileSync(module.path)).length }));
    const compressed = sizes.reduce((sum, module) => sum + module.compressed, 0);
    figures.push(`upload: ${mb(compressed)} gzip (${sizes.map((m) => `${m.name} ${mb(m.bytes)} → ${mb(m.compressed)}`).join(', ')}) against 10 MB`);
    expect(sizes.map((m) => m.name)).toEqual(['worker.js', 'ort-wasm-simd-threaded.wasm']);
    expect(compressed).toBeLessThan(10 * MB);
  });

  it('serves two users from objects of their own, MiniLM inside: add, search with a budget, list; a restart keeps everything and fetches no model file again', async () => {
    figures.push(`startup: workerd spawned → listening in ${(await start()).startMs.toFixed(0)} ms (process start, onnxruntime's WASM compiled, the bundle evaluated) against 1 s`);
    await memory('idle');

    // The first request loads the model (fetched from the assets, kept in alice's object) and adds a session.
    const [alice, bob] = USERS;
    const [first, ...rest] = alice!.sessions;
    const cold = await api.timed('POST', `/users/alice/messages`, sessionBody(first!));
    figures.push(`cold first request (model fetched and loaded, a 3-message session added): ${cold.ms.toFixed(0)} ms`);
    const fetched = [...assets.requests];
    expect(fetched.length).toBeGreaterThan(0);
    expect(fetched.every((path) => path.startsWith(MODEL_PATH))).toBe(true);
    expect(new Set(fetched).size).toBe(fetched.length);
    const loaded = await memory('after model load');
    expect(loaded).toBeLessThan(128 * MB);

    // Both users at once: two objects, each with its own SQLite database.
    await Promise.all([addSessions(api, 'alice', rest), addSessions(api, 'bob', bob!.sessions)]);
    const served = await Promise.all(USERS.map((user) => readUser(api, user)));
    USERS.forEach((user, i) => expectOwnMemory(user, served[i]!));
    // The same answers as a Node memory given the same messages.
    const reference = await Promise.all(USERS.map(nodeReference));
    expect(served.map((user) => user.searches.map((s) => s.dialogIds))).toEqual(reference);

    const adds: number[] = [];
    for (let i = 0; i < 5; i++) adds.push((await api.timed('POST', '/users/alice/messages', { sessionId: 'warm', messages: [{ speaker: 'Caroline', text: `I signed up for pottery class number ${i + 1}.` }] })).ms);
    const searches: number[] = [];
    for (let i = 0; i < 20; i++) searches.push((await api.timed('POST', '/users/alice/search', { query: alice!.queries[i % alice!.queries.length], budget: 256 })).ms);
    figures.push(`warm add of one message: p50 ${median(adds).toFixed(0)} ms (5 adds); warm search (budget 256): p50 ${median(searches).toFixed(0)} ms (20 searches)`);

    const before = await Promise.all(USERS.map((user) => readUser(api, user)));
    await workerd!.stop();
    await start();
    const again = await api.timed('POST', '/users/alice/search', { query: alice!.queries[0], budget: 256 });
    figures.push(`second cold start, first request (model read from the object's storage): ${again.ms.toFixed(0)} ms`);
    expect(again.body).toEqual(before[0]!.searches[0]);
    expect(await Promise.all(USERS.map((user) => readUser(api, user)))).toEqual(before);
    expect(assets.requests).toEqual(fetched);
  });

  it('forgets a deleted session and a deleted user, also after a restart, leaving no byte of the user on disk', async () => {
    const [alice, bob] = USERS;
    const session = alice!.sessions[1]!;
    const deletedTexts = new Set(session.messages.map((m) => m.text));
    expect(await api.call('DELETE', `/users/alice/sessions/${session.sessionId}`)).toEqual({ chunksDeleted: 1 });
    await api.call('DELETE', '/users/bob');
    const bobTexts = bob!.sessions.flatMap((s) => s.messages.map((m) => m.text));

    const forgotten = async (): Promise<void> => {
      expect((await api.call<SessionInfo[]>('GET', '/users/alice/sessions')).map((s) => s.sessionId)).not.toContain(session.sessionId);
      for (const query of alice!.queries) {
        const result = await api.call<ExampleSearch>('POST', '/users/alice/search', { query, budget: 256 });
        expect(result.units.flatMap((u) => u.turns).filter((turn) => deletedTexts.has(turn.text))).toEqual([]);
      }
      expect(await api.call('GET', '/users/bob/sessions')).toEqual([]);
      expect((await api.call<ExampleSearch>('POST', '/users/bob/search', { query: bob!.queries[0], budget: 256 })).units).toEqual([]);
    };
    await forgotten();
    await workerd!.stop();
    // `deleteAll()` removed bob's database: none of his messages is anywhere under the objects' folder.
    expect(await findOnDisk(objects, bobTexts)).toEqual([]);
    await start();
    await forgotten();
  });

  it('holds a user with 1,000 messages within the 128 MB of an isolate', async () => {
    const corpus = chatCorpus(40, 25);
    // Two of them are long (documentation pages cut under the 2,000-character passage limit, over
    // MiniLM's 256 tokens), so onnxruntime runs the largest batch the example lets it.
    const [firstLong, secondLong] = goldenTexts().slice(0, 2).map((text) => text.slice(0, 1900));
    corpus[0]!.messages[0]!.text = firstLong!;
    corpus[0]!.messages[1]!.text = secondLong!;
    const started = performance.now();
    await addSessions(api, 'carol', corpus);
    figures.push(`1,000 messages (40 sessions of 25) added in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    const full = await memory('after 1,000 messages (and alice\'s memory beside them)');
    expect(full).toBeLessThan(128 * MB);
    expect((await api.call<SessionInfo[]>('GET', '/users/carol/sessions')).reduce((sum, s) => sum + s.messages, 0)).toBe(1000);
  });
});

interface UserScript {
  id: string;
  sessions: ScriptSession[];
  /** Its own question first, then the other user's. */
  queries: string[];
  /** The dialog id that answers the first query. */
  firstEvidence: string;
}

interface ScriptSession {
  sessionId: string;
  date: string;
  messages: { speaker: string; text: string; id?: string }[];
}

const USERS: readonly UserScript[] = [
  {
    id: 'alice',
    sessions: conversation.sessions.map((session) => ({
      sessionId: session.id,
      date: session.time ?? '',
      messages: session.turns.map((turn) => ({ speaker: turn.speaker, text: turn.text, id: turn.dialogId })),
    })),
    queries: ['What did Melanie paint?', 'Where does Max like to run?', 'Who teaches Bob the cello?'],
    firstEvidence: 'D1:2',
  },
  {
    id: 'bob',
    sessions: [
      {
        sessionId: 'lessons',
        date: '2023-07-02T18:30:00',
        messages: [
          { speaker: 'Bob', text: 'I started cello lessons with a teacher named Ilse.', id: 'B1:1' },
          { speaker: 'Dana', text: 'How is the cello going? My parrot Kiwi keeps whistling Bach.', id: 'B1:2' },
          { speaker: 'Bob', text: 'I practise scales every morning before work.', id: 'B1:3' },
        ],
      },
      {
        sessionId: 'moving',
        date: '2023-08-15T09:00:00',
        messages: [
          { speaker: 'Bob', text: 'I moved to Rotterdam for a job at the harbour.', id: 'B2:1' },
          { speaker: 'Dana', text: 'Kiwi learned to say hello in Dutch.', id: 'B2:2' },
        ],
      },
    ],
    queries: ['Who teaches Bob the cello?', 'Where did Bob move for work?', 'What did Melanie paint?'],
    firstEvidence: 'B1:1',
  },
];

/** What both examples answer to `POST /users/:user/search`. */
interface ExampleSearch {
  context: string;
  tokens: number;
  dialogIds: string[];
  units: { id: string; score: number; turns: { id: string; speaker: string; text: string; date: string | null; sessionId: string }[] }[];
}

interface UserServed {
  searches: ExampleSearch[];
  sessions: SessionInfo[];
}

interface ExampleApi {
  /** Sends a request; anything but 200 fails the test, with the server's log. */
  call<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  timed<T = unknown>(method: string, path: string, body?: unknown): Promise<{ body: T; ms: number }>;
}

function exampleApi(base: string, log: () => string): ExampleApi {
  const timed = async <T>(method: string, path: string, body?: unknown): Promise<{ body: T; ms: number }> => {
    const started = performance.now();
    const response = await fetch(`${base}${path}`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }) });
    const text = await response.text();
    const ms = performance.now() - started;
    expect(response.status, `${method} ${path}: ${text}\n${log()}`).toBe(200);
    return { body: JSON.parse(text) as T, ms };
  };
  return { timed, call: async (method, path, body) => (await timed(method, path, body)).body as never };
}

function sessionBody(session: ScriptSession): { sessionId: string; date: string; messages: ScriptSession['messages'] } {
  return { sessionId: session.sessionId, date: session.date, messages: session.messages };
}

async function addSessions(api: ExampleApi, user: string, sessions: readonly ScriptSession[]): Promise<void> {
  for (const session of sessions) await api.call('POST', `/users/${user}/messages`, sessionBody(session));
}

async function readUser(api: ExampleApi, user: UserScript): Promise<UserServed> {
  const searches: ExampleSearch[] = [];
  for (const query of user.queries) searches.push(await api.call<ExampleSearch>('POST', `/users/${user.id}/search`, { query, budget: 256 }));
  return { searches, sessions: await api.call<SessionInfo[]>('GET', `/users/${user.id}/sessions`) };
}

async function addAndRead(api: ExampleApi, user: UserScript): Promise<UserServed> {
  await addSessions(api, user.id, user.sessions);
  return readUser(api, user);
}

/** The user sees its own sessions and messages only, and its own question finds its evidence first. */
function expectOwnMemory(user: UserScript, served: UserServed): void {
  expect(served.sessions.map((s) => [s.sessionId, s.userId, s.messages])).toEqual(user.sessions.map((s) => [s.sessionId, user.id, s.messages.length]));
  const own = new Set(user.sessions.flatMap((s) => s.messages.map((m) => m.text)));
  const turns = served.searches.flatMap((search) => search.units.flatMap((unit) => unit.turns));
  expect(turns.length).toBeGreaterThan(0);
  for (const turn of turns) expect(own.has(turn.text), `${user.id} was shown ${JSON.stringify(turn.text)}`).toBe(true);
  expect(served.searches[0]!.dialogIds[0]).toBe(user.firstEvidence);
}

/** The dialog ids each of the user's searches finds in a Node memory (onnxruntime-node) given the same sessions. */
async function nodeReference(user: UserScript): Promise<string[][]> {
  const [embedder, usearch] = await Promise.all([nodeEmbedder('int8'), nodeUsearch()]);
  const memory = await Memory.open({ store: new MemoryStore(), embedder, createIndex: (dim) => usearch.createIndex({ dim }), llm: null });
  try {
    for (const session of user.sessions) await memory.add(session.messages, { userId: user.id, sessionId: session.sessionId, date: session.date });
    const dialogIds: string[][] = [];
    for (const query of user.queries) dialogIds.push((await memory.search(query, { userId: user.id, budget: 256 })).dialogIds);
    return dialogIds;
  } finally {
    await memory.close();
  }
}

/** What the test reads from the example's wrangler.jsonc: the entry, minification, the date, the Durable Object class and binding, the assets binding. */
interface WranglerSettings {
  main: string;
  minify: boolean;
  compatibilityDate: string;
  objects: { className: string; binding: string };
  assetsBinding: string;
}

function readWranglerConfig(jsonc: string): WranglerSettings {
  // JSON with comments: drop every comment outside strings.
  const json = jsonc.replace(/("(?:\\.|[^"\\])*")|\/\/[^\n]*|\/\*[\s\S]*?\*\//g, (_, string?: string) => string ?? '');
  const config = JSON.parse(json) as {
    main: string;
    minify?: boolean;
    compatibility_date: string;
    assets: { binding: string };
    durable_objects: { bindings: { name: string; class_name: string }[] };
    migrations: { new_sqlite_classes?: string[] }[];
  };
  const [binding, ...others] = config.durable_objects.bindings;
  expect(binding, 'one Durable Object binding').toBeDefined();
  expect(others).toEqual([]);
  // The class runs on SQLite storage, as openDurableObjectStore needs.
  expect(config.migrations.flatMap((m) => m.new_sqlite_classes ?? [])).toContain(binding!.class_name);
  return { main: config.main, minify: config.minify ?? false, compatibilityDate: config.compatibility_date, objects: { className: binding!.class_name, binding: binding!.name }, assetsBinding: config.assets.binding };
}

function atStorePrecision(snapshot: MemorySnapshot): MemorySnapshot {
  return { ...snapshot, vectors: new Map(roundVectors([...snapshot.vectors], DEFAULT_VECTOR_PRECISION)) };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

function mb(bytes: number): string {
  return `${(bytes / MB).toFixed(1)} MB`;
}

/** Builds a Durable Object worker of test/edge into a fresh temp dir and writes its workerd config (objects stored beside it). */
async function prepareObjectWorker(entry: string, className: string, prefix: string): Promise<{ dir: string; port: number; config: string }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const modules = await bundleWorker(join(repoRoot, 'test/edge', entry), join(dir, 'out'));
  const port = await freePort();
  const config = join(dir, 'config.capnp');
  const objects = join(dir, 'objects');
  await mkdir(objects);
  await writeWorkerdConfig(config, port, { modules, compatibilityDate: COMPATIBILITY_DATE, objects: { className, binding: 'MEMORY', dir: objects } });
  return { dir, port, config };
}
