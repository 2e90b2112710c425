import { spawn } from 'node:child_process';
import { copyFile, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultModelDir, nodeEmbedder, nodeUsearch } from '../src/node.ts';
import { Memory } from '../src/memory.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { fromBase64, runEdgeScenario, searchAll, type ScenarioResult } from './edge/scenario.ts';
import { recordingEmbedder, type VectorTable } from './edge/vector-table.ts';

// The same scenario (test/edge/scenario.ts) runs in Node, in Deno and in workerd, each the real
// runtime binary from npm (`deno`, `workerd`), and must give the same graph, the same units and
// a checkpoint that moves back into Node.

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

beforeAll(async () => {
  const [embedder, usearch] = await Promise.all([nodeEmbedder('int8'), nodeUsearch()]);
  const recording = recordingEmbedder(embedder);
  node = await runEdgeScenario('node', recording.embedder, (dim) => usearch.createIndex({ dim }));
  table = recording.table;
  embedderId = embedder.id;
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
  let stopWorkerd: () => void = () => {};
  let workerdLog = '';
  let baseUrl: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'prism-workerd-'));
    const build = await run(process.execPath, [join(repoRoot, 'node_modules/vite/bin/vite.js'), 'build', '-c', 'test/edge/vite.config.ts'], {
      env: { PRISM_WORKERD_OUT: dir },
    });
    expect(build.code, build.stderr).toBe(0);
    await copyFile(join(repoRoot, 'wasm/usearch.wasm'), join(dir, 'usearch.wasm'));
    const modules = (await readdir(dir)).filter((f) => f.endsWith('.js')).map((f) => `(name = "${f}", esModule = embed "${f}")`);
    const port = await freePort();
    await writeFile(
      join(dir, 'config.capnp'),
      `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "main", worker = .worker)],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")],
);
const worker :Workerd.Worker = (
  modules = [${[...modules, '(name = "usearch.wasm", wasm = embed "usearch.wasm")'].join(', ')}],
  compatibilityDate = "2025-09-01",
);
`,
    );
    const child = spawn(bin('workerd'), ['serve', join(dir, 'config.capnp')], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d: Buffer) => (workerdLog += d.toString()));
    child.stderr.on('data', (d: Buffer) => (workerdLog += d.toString()));
    stopWorkerd = () => child.kill();
    baseUrl = `http://127.0.0.1:${port}/`;
    await waitForPort(port);
  });

  afterAll(async () => {
    stopWorkerd();
    await rm(dir, { recursive: true, force: true });
  });

  it('ingests and retrieves with the usearch WASM from a precompiled Module, like Node', async () => {
    const response = await fetch(baseUrl, { method: 'POST', body: JSON.stringify({ embedderId, dim: 384, vectors: table }) });
    const body = await response.text();
    expect(response.status, `${body}\n${workerdLog}`).toBe(200);
    const workerd = JSON.parse(body) as ScenarioResult;
    expect(workerd.runtime).toBe('workerd');
    // Identical vectors in, so identical arithmetic out.
    expectSameAsNode(workerd, 1e-9);

    // The checkpoint written in workerd opens in Node and answers the same way.
    const [embedder, usearch] = await Promise.all([nodeEmbedder('int8'), nodeUsearch()]);
    const memory = await Memory.open({ store: new MemoryStore(), embedder, createIndex: (dim) => usearch.createIndex({ dim }), llm: null });
    await memory.import(fromBase64(workerd.checkpoint));
    expect(await memory.stats()).toEqual(node.stats);
    const searches = await searchAll(memory);
    expect(searches.map((s) => s.units.map((u) => u.id))).toEqual(node.searches.map((s) => s.units.map((u) => u.id)));
  });
});

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
