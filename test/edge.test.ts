import { spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Embedder } from '../src/embed/types.ts';
import { onnxWebEngine, type OrtWeb } from '../src/embed/ort-web.ts';
import { createNodeMiniLmEmbedder, defaultModelDir, nodeEmbedder, nodeUsearch } from '../src/node.ts';
import { Memory } from '../src/memory.ts';
import { DEFAULT_PARTITION } from '../src/scope.ts';
import { encodeCheckpoint } from '../src/store/checkpoint.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { applyBatch } from '../src/store/snapshot.ts';
import { sha256Hex } from '../src/util/hash.ts';
import { sampleFollowUp, sampleMemory } from '../e2e/support/sample-memory.ts';
import { fromBase64, runEdgeScenario, searchAll, type ScenarioResult } from './edge/scenario.ts';
import { recordingEmbedder, type VectorTable } from './edge/vector-table.ts';
import { runMemoryAction, type ActionAnswer, type AddAnswer, type MemoryAction, type OverviewAnswer, type SearchAnswer } from './edge/memory-actions.ts';
import type { MemoryRequest } from './edge/workerd-memory.ts';
import { conversation } from './helpers/conversation.ts';
import { FORGOTTEN, type StoreReport } from './edge/workerd-store.ts';
import { findOnDisk } from './faults/erase-scenarios.ts';

// The same scenario (test/edge/scenario.ts) runs in Node, in Deno and in workerd, each the real
// runtime binary from npm (`deno`, `workerd`), and must give the same graph, the same units and
// a checkpoint that moves back into Node. In workerd, the SQL store also runs on SQLite-backed
// Durable Objects: the store alone, and whole Memories, one object per user, across a restart.

const repoRoot = resolve(import.meta.dirname, '..');
const bin = (name: string) => join(repoRoot, 'node_modules', '.bin', name);

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
let table: VectorTable;
let embedderId: string;
let referenceEmbedder: Embedder;

beforeAll(async () => {
  // Deno embeds with onnxruntime-web, so the Node reference does too (Node's default engine,
  // onnxruntime-node, agrees only to float rounding, and the scenarios compare exact scores);
  // workerd replays the recorded vectors.
  // Node cannot run onnxruntime-web's WASM-only browser bundle (the engine's default); its Node build is the same runtime.
  const engine = onnxWebEngine({ load: () => import('onnxruntime-web') as Promise<OrtWeb> });
  const [embedder, usearch] = await Promise.all([createNodeMiniLmEmbedder({ precision: 'int8', engine }), nodeUsearch()]);
  const recording = recordingEmbedder(embedder);
  node = await runEdgeScenario('node', recording.embedder, (dim) => usearch.createIndex({ dim }));
  table = recording.table;
  embedderId = embedder.id;
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
    // --allow-ffi: @xenova/transformers (whose tokenizer PRISM uses) imports onnxruntime-node at
    // load time in Node-compatible runtimes; PRISM never runs it.
    const result = await run(bin('deno'), ['run', '--no-lock', '--allow-read', '--allow-env', '--allow-ffi', '--deny-net', '--no-prompt', 'test/edge/deno-main.ts', modelUrl], {
      env: { DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' },
    });
    expect(result.stderr).not.toMatch(/error/i);
    expect(result.code).toBe(0);
    const deno = JSON.parse(result.stdout) as ScenarioResult;
    expect(deno.runtime).toBe('deno');
    // Same ONNX model on the same WASM runtime; thread scheduling may change the last bits.
    expectSameAsNode(deno, 1e-4);
  });
});

describe('workerd', () => {
  let dir: string;
  let server: Workerd | undefined;
  let baseUrl: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'prism-workerd-'));
    const port = await freePort();
    await writeFile(join(dir, 'config.capnp'), workerdConfig(port, await buildWorker('workerd-main.ts', dir)));
    server = await startWorkerd(join(dir, 'config.capnp'), port);
    baseUrl = `http://127.0.0.1:${port}/`;
  });

  afterAll(async () => {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('ingests and retrieves with the usearch WASM from a precompiled Module, like Node', async () => {
    const response = await fetch(baseUrl, { method: 'POST', body: JSON.stringify({ embedderId, dim: 384, vectors: table }) });
    const body = await response.text();
    expect(response.status, `${body}\n${server?.log()}`).toBe(200);
    const workerd = JSON.parse(body) as ScenarioResult;
    expect(workerd.runtime).toBe('workerd');
    // Identical vectors in, so identical arithmetic out.
    expectSameAsNode(workerd, 1e-9);

    // The checkpoint written in workerd opens in Node and answers the same way.
    const usearch = await nodeUsearch();
    const memory = await Memory.open({ store: new MemoryStore(), embedder: referenceEmbedder, createIndex: (dim) => usearch.createIndex({ dim }), llm: null });
    await memory.import(fromBase64(workerd.checkpoint));
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
      digests: {
        [DEFAULT_PARTITION]: await sha256Hex(encodeCheckpoint(applyBatch(sampleMemory(), sampleFollowUp()))),
        [other]: await sha256Hex(encodeCheckpoint(sampleMemory({ episodes: 2, seed: 3 }))),
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

describe('Memory in workerd: one SQLite-backed Durable Object per user', () => {
  let dir: string;
  let workerd: Workerd | undefined;
  let config: string;
  let port: number;
  let reference: UserAnswers[];
  let vectors: VectorTable;

  beforeAll(async () => {
    ({ dir, port, config } = await prepareObjectWorker('workerd-memory.ts', 'UserMemory', 'prism-workerd-memory-'));
    // The reference: the same actions on a Node Memory per user, recording MiniLM's vectors.
    const [embedder, usearch] = await Promise.all([nodeEmbedder('int8'), nodeUsearch()]);
    const recording = recordingEmbedder(embedder);
    reference = await Promise.all(
      USERS.map(async (user) => {
        const memory = await Memory.open({ store: new MemoryStore(), embedder: recording.embedder, createIndex: (dim) => usearch.createIndex({ dim }), llm: null });
        const answers = await userAnswers(user, (action) => runMemoryAction(memory, user.id, action));
        await memory.close();
        return answers;
      }),
    );
    vectors = recording.table;
  });

  afterAll(async () => {
    await workerd?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  async function ask(userId: string, action: MemoryAction): Promise<ActionAnswer> {
    const request: MemoryRequest = { ...action, embedderId, dim: 384, vectors };
    const response = await fetch(`http://127.0.0.1:${port}/${encodeURIComponent(userId)}`, { method: 'POST', body: JSON.stringify(request) });
    const body = await response.text();
    expect(response.status, `${body}\n${workerd?.log()}`).toBe(200);
    return JSON.parse(body) as ActionAnswer;
  }

  it('two users add and search over HTTP, never see each other, and answer the same after a restart', async () => {
    workerd = await startWorkerd(config, port, ['--experimental']);
    // Both users at once: two objects, each with its own SQLite database.
    const served = await Promise.all(USERS.map((user) => userAnswers(user, (action) => ask(user.id, action))));
    // The same vectors in, so the same graph and ranking as Node.
    expect(served.map(roundScores)).toEqual(reference.map(roundScores));

    USERS.forEach((user, i) => {
      const { searches, overview } = served[i]!;
      expect(overview.scopes).toEqual([{ userId: user.id, agentId: null, runId: null }]);
      expect(overview.sessions.map((s) => [s.sessionId, s.userId, s.messages])).toEqual(user.sessions.map((s) => [s.sessionId, user.id, s.messages.length]));
      const own = new Set(user.sessions.flatMap((s) => s.messages.map((m) => m.text)));
      const turns = searches.flatMap((search) => search.units.flatMap((unit) => unit.turns));
      expect(turns.length).toBeGreaterThan(0);
      for (const turn of turns) {
        expect(turn.userId).toBe(user.id);
        expect(own.has(turn.text), `${user.id} was shown ${JSON.stringify(turn.text)}`).toBe(true);
      }
      // Each user's own question finds its evidence first.
      expect(searches[0]!.dialogIds[0]).toBe(user.firstEvidence);
    });

    await workerd.stop();
    workerd = await startWorkerd(config, port, ['--experimental']);
    const reads = await Promise.all(USERS.map((user) => userReads(user, (action) => ask(user.id, action))));
    expect(reads).toEqual(served.map(({ searches, overview }) => ({ searches, overview })));
  });
});

interface UserScript {
  id: string;
  sessions: { sessionId: string; date: string; messages: { speaker: string; text: string; id: string }[] }[];
  /** Its own question first, then the other user's. */
  queries: string[];
  /** The dialog id that answers the first query. */
  firstEvidence: string;
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

interface UserReads {
  searches: SearchAnswer[];
  overview: OverviewAnswer;
}
interface UserAnswers extends UserReads {
  adds: AddAnswer[];
}

type Ask = (action: MemoryAction) => Promise<ActionAnswer>;

async function userReads(user: UserScript, ask: Ask): Promise<UserReads> {
  const searches: SearchAnswer[] = [];
  for (const query of user.queries) searches.push((await ask({ action: 'search', query })) as SearchAnswer);
  return { searches, overview: (await ask({ action: 'overview' })) as OverviewAnswer };
}

/** Adds the user's sessions one after the other, then reads. */
async function userAnswers(user: UserScript, ask: Ask): Promise<UserAnswers> {
  const adds: AddAnswer[] = [];
  for (const session of user.sessions) adds.push((await ask({ action: 'add', ...session })) as AddAnswer);
  return { adds, ...(await userReads(user, ask)) };
}

/** Node's usearch and the WASM one may differ in the last bits of a score. */
function roundScores(answers: UserAnswers): UserAnswers {
  return { ...answers, searches: answers.searches.map((s) => ({ ...s, units: s.units.map((u) => ({ ...u, score: Math.round(u.score * 1e9) / 1e9 })) })) };
}

/**
 * Builds one workerd entry of test/edge into `dir` and returns its module list for the config:
 * worker.js first (workerd takes the first module as the main one), then the lazily imported
 * chunks, then the usearch WASM, which workerd compiles ahead of time.
 */
async function buildWorker(entry: string, dir: string): Promise<string[]> {
  const build = await run(process.execPath, [join(repoRoot, 'node_modules/vite/bin/vite.js'), 'build', '-c', 'test/edge/vite.config.ts'], {
    env: { PRISM_WORKERD_OUT: join(dir, 'out'), PRISM_WORKERD_ENTRY: entry },
  });
  expect(build.code, build.stderr).toBe(0);
  await copyFile(join(repoRoot, 'wasm/usearch.wasm'), join(dir, 'out', 'usearch.wasm'));
  const chunks = (await readdir(join(dir, 'out'))).filter((f) => f.endsWith('.js') && f !== 'worker.js');
  return [
    ...['worker.js', ...chunks].map((f) => `(name = "${f}", esModule = embed "out/${f}")`),
    '(name = "usearch.wasm", wasm = embed "out/usearch.wasm")',
  ];
}

/** An empty folder for Durable Objects' SQLite databases, kept across workerd restarts. */
async function objectsDir(dir: string): Promise<string> {
  const objects = join(dir, 'objects');
  await mkdir(objects);
  return objects;
}

/**
 * A workerd config serving `modules` on `port`. With `objects`, the worker's `className` is a
 * SQLite-backed (`enableSql`) Durable Object namespace bound as `MEMORY`, its databases on
 * local disk in `objects.dir` so they survive a restart.
 */
function workerdConfig(port: number, modules: readonly string[], objects?: { className: string; dir: string }): string {
  const storage = objects
    ? `
  durableObjectNamespaces = [(className = "${objects.className}", uniqueKey = "prism-${objects.className}", enableSql = true)],
  durableObjectStorage = (localDisk = "objects"),
  bindings = [(name = "MEMORY", durableObjectNamespace = "${objects.className}")],`
    : '';
  const disk = objects ? `, (name = "objects", disk = (path = "${objects.dir}", writable = true))` : '';
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "main", worker = .worker)${disk}],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")],
);
const worker :Workerd.Worker = (
  modules = [${modules.join(', ')}],
  compatibilityDate = "2025-09-01",${storage}
);
`;
}

interface Workerd {
  stop(): Promise<void>;
  /** Everything workerd printed so far. */
  log(): string;
}

/** Runs `workerd serve <config>` until `stop()`, once it listens on `port`. */
/** Builds a Durable Object worker into a fresh temp dir and writes its workerd config (objects stored beside it). */
async function prepareObjectWorker(entry: string, className: string, prefix: string): Promise<{ dir: string; port: number; config: string }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const modules = await buildWorker(entry, dir);
  const port = await freePort();
  const config = join(dir, 'config.capnp');
  await writeFile(config, workerdConfig(port, modules, { className, dir: await objectsDir(dir) }));
  return { dir, port, config };
}

async function startWorkerd(config: string, port: number, flags: string[] = []): Promise<Workerd> {
  const child = spawn(bin('workerd'), ['serve', ...flags, config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  await waitForPort(port);
  return {
    stop: async () => {
      child.kill();
      await exited;
    },
    log: () => log,
  };
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.on('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? done(address.port) : fail(new Error('no port'))));
    });
  });
}

async function waitForPort(port: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((done) => {
      const socket = createConnection({ port, host: '127.0.0.1' });
      socket.once('connect', () => (socket.end(), done(true)));
      socket.once('error', () => done(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`workerd did not listen on ${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
