/**
 * The package as a user gets it (`npm run test:package`): a clean build, `npm pack`, then
 * `npm install <tarball>` into a fresh project with nothing from this checkout (no overrides, the
 * npm registry and its local cache only), and then the installed package at work: the library
 * (add, search, list), the `prism` command, MCP over stdio with the SDK's client, and a strict
 * TypeScript consumer. Also checks what the tarball holds and that the README states its sizes.
 *
 * Slow (the install compiles better-sqlite3: minutes on two cores), so it is not part of
 * `npm test`; `.ci/run` runs it. The model comes from PRISM_MODEL_DIR (default
 * ../shared/models/all-MiniLM-L6-v2), made absolute, since nothing downloads here.
 */
import assert from 'node:assert/strict';
import { execFile, type ExecFileOptions } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

const REPO = resolve(import.meta.dirname, '..', '..');
const MODEL_DIR = resolve(REPO, process.env['PRISM_MODEL_DIR'] ?? '../shared/models/all-MiniLM-L6-v2');
/** How far the README's package sizes may be from `npm pack`'s before it must be updated. */
const README_SIZE_TOLERANCE = 0.03;

interface PackResult {
  filename: string;
  size: number;
  unpackedSize: number;
  entryCount: number;
  files: Array<{ path: string; size: number }>;
}

const run = promisify(execFile);

async function sh(command: string, args: readonly string[], options: ExecFileOptions = {}): Promise<string> {
  const { stdout } = await run(command, args, { maxBuffer: 64 * 1024 * 1024, encoding: 'utf8', ...options });
  return String(stdout);
}

/** Bytes of the files under `dir` (apparent sizes). */
async function diskUsage(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return total;
}

let work: string;
let project: string;
let pack: PackResult;
let env: NodeJS.ProcessEnv;

before(async () => {
  assert.ok(existsSync(join(MODEL_DIR, 'tokenizer.json')), `no model in ${MODEL_DIR} (set PRISM_MODEL_DIR)`);
  work = await mkdtemp(join(tmpdir(), 'prism-package-'));
  project = join(work, 'consumer');
  // The model is found through PRISM_MODEL_DIR only; the cache directory is the test's own.
  env = { ...process.env, PRISM_MODEL_DIR: MODEL_DIR, PRISM_CACHE_DIR: join(work, 'cache') };

  await sh('npm', ['run', 'build'], { cwd: REPO });
  [pack] = JSON.parse(await sh('npm', ['pack', '--json', '--pack-destination', work], { cwd: REPO })) as [PackResult];

  await mkdir(project);
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'prism-consumer', version: '1.0.0', private: true, type: 'module' }, null, 2));
  const started = performance.now();
  await sh('npm', ['install', join(work, pack.filename), '--no-audit', '--no-fund', '--prefer-offline'], { cwd: project });
  const seconds = (performance.now() - started) / 1000;
  const packages = Object.keys((JSON.parse(readFileSync(join(project, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> }).packages).filter((p) => p !== '').length;
  const bytes = await diskUsage(join(project, 'node_modules'));
  console.log(`npm install <tarball>: ${seconds.toFixed(0)} s, ${packages} packages, ${(bytes / 1e6).toFixed(0)} MB in node_modules`);
});

after(async () => {
  if (work && !process.env['PRISM_KEEP_PACKAGE_TEST']) await rm(work, { recursive: true, force: true });
});

describe('the tarball', () => {
  it('holds a LICENSE, no source maps, no sources and no evaluation harness', () => {
    const paths = pack.files.map((f) => f.path);
    assert.ok(paths.includes('LICENSE'));
    assert.match(readFileSync(join(REPO, 'LICENSE'), 'utf8'), /Apache License\s+Version 2\.0/);
    assert.deepEqual(paths.filter((p) => p.endsWith('.map')), []);
    assert.deepEqual(paths.filter((p) => p.startsWith('src/') || p.startsWith('dist/eval/')), []);
    assert.ok(paths.includes('dist/node.js') && paths.includes('bin/prism.js') && paths.includes('wasm/usearch.wasm'));
  });

  it('is as large as the README says', () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    const stated = /The package itself \(`npm pack`\): ([\d,]+) kB packed, ([\d,]+) kB unpacked, (\d+) files/.exec(readme);
    assert.ok(stated, 'README states the package size as "The package itself (`npm pack`): N kB packed, N kB unpacked, N files"');
    const [packedKb, unpackedKb, files] = stated.slice(1).map((n) => Number(n.replace(/,/g, '')));
    const near = (actual: number, claimed: number | undefined) => claimed !== undefined && Math.abs(actual - claimed) <= claimed * README_SIZE_TOLERANCE;
    const actual = `${(pack.size / 1000).toFixed(0)} kB packed, ${(pack.unpackedSize / 1000).toFixed(0)} kB unpacked, ${pack.entryCount} files`;
    assert.ok(near(pack.size / 1000, packedKb) && near(pack.unpackedSize / 1000, unpackedKb) && near(pack.entryCount, files), `README: ${stated[0]}; npm pack: ${actual}`);
  });
});

describe('the installed package', () => {
  it('installs none of what only development needs: no @xenova/transformers, sharp, vite, playwright or usearch', () => {
    for (const name of ['@xenova/transformers', 'sharp', 'vite', 'playwright-core', 'usearch', 'openai']) {
      assert.equal(existsSync(join(project, 'node_modules', name)), false, `${name} was installed`);
    }
  });

  it('the library adds, searches and lists', async () => {
    const script = join(project, 'library.mjs');
    await writeFile(
      script,
      [
        "import { openNodeMemory } from 'prism-memory/node';",
        'const memory = await openNodeMemory({ dir: process.argv[2] });',
        "await memory.add([{ speaker: 'Sam', text: 'I adopted a beagle called Biscuit on Saturday.' }], { userId: 'sam', date: '2025-03-14' });",
        "const { context } = await memory.search('What is my dog called?', { userId: 'sam' });",
        "console.log(JSON.stringify({ context, sessions: await memory.list({ userId: 'sam' }) }));",
        'await memory.close();',
      ].join('\n'),
    );
    const out = JSON.parse(await sh(process.execPath, [script, join(work, 'library-store')], { cwd: project, env })) as { context: string; sessions: Array<{ sessionId: string; messages: number }> };
    assert.match(out.context, /Biscuit/);
    assert.deepEqual(out.sessions.map((s) => [s.sessionId, s.messages]), [['2025-03-14', 1]]);
  });

  it('the prism command: version, add, search, and list without the model', async () => {
    const prism = join(project, 'node_modules', '.bin', 'prism');
    const version = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
    assert.equal((await sh(prism, ['--version'], { env })).trim(), version);
    const store = ['--dir', join(work, 'cli-store'), '--user', 'sam'];
    await sh(prism, ['add', join(REPO, 'examples', 'chat.txt'), '--date', '2025-03-14', ...store], { env });
    assert.match(await sh(prism, ['search', "What is the name of Sam's dog?", ...store], { env }), /Biscuit/);
    // list reads no model: a PRISM_MODEL_DIR that does not exist does not matter.
    assert.match(await sh(prism, ['list', ...store], { env: { ...env, PRISM_MODEL_DIR: join(work, 'no-model') } }), /2025-03-14/);
    const evaluation = await run(prism, ['eval', 'locomo', '--out', join(work, 'eval')], { env }).catch((err: { code: number; stderr: string }) => err);
    assert.equal('code' in evaluation ? evaluation.code : 0, 2);
    assert.match('stderr' in evaluation ? String(evaluation.stderr) : '', /source checkout/);
  });

  it('MCP over stdio: a server locked to alice adds, searches and lists, and refuses another user', async () => {
    // The registration the README shows: node with the installed bin/prism.js.
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [join(project, 'node_modules', 'prism-memory', 'bin', 'prism.js'), 'mcp', '--user', 'alice', '--dir', join(work, 'mcp-store')],
      env: env as Record<string, string>,
      stderr: 'pipe',
    });
    transport.stderr?.on('data', () => undefined);
    const client = new Client({ name: 'package-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallToolResult;
      const added = await call('add_memory', { sessionId: 'pets', text: 'My cat is called Pixel.' });
      assert.equal(added.isError ?? false, false, JSON.stringify(added.content));
      const found = await call('search_memory', { query: 'What is my cat called?' });
      assert.match(JSON.stringify(found.structuredContent), /Pixel/);
      const listed = await call('list_memories', {});
      assert.deepEqual((listed.structuredContent as { sessions: Array<{ sessionId: string; userId: string }> }).sessions.map((s) => [s.userId, s.sessionId]), [['alice', 'pets']]);
      const refused = await call('list_memories', { userId: 'bob' });
      assert.equal(refused.isError, true);
    } finally {
      await client.close();
    }
  });

  it('type-checks in a strict TypeScript project (skipLibCheck off)', async () => {
    await writeFile(
      join(project, 'consumer.ts'),
      [
        "import { Memory, PrismError, type SearchResult } from 'prism-memory';",
        "import { openNodeMemory, defaultModelSource, type NodeModelOptions } from 'prism-memory/node';",
        "import { createPrismMcpServer } from 'prism-memory/mcp';",
        "const options: NodeModelOptions = { cacheDir: '/tmp/cache', onProgress: (p) => console.log(p.status) };",
        'const memory: Memory = await openNodeMemory({ model: options });',
        "const result: SearchResult = await memory.search('q');",
        "createPrismMcpServer(memory, { lockedScope: { userId: 'alice' } });",
        'console.log(result.context, defaultModelSource(options).location, PrismError.name);',
      ].join('\n'),
    );
    await writeFile(
      join(project, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, skipLibCheck: false, noEmit: true }, files: ['consumer.ts'] }),
    );
    await sh(process.execPath, [join(REPO, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', project]).catch((err: { stdout: string }) => assert.fail(err.stdout));
  });
});
