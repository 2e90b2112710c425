import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { createConnection, createServer } from 'node:net';
import { dirname, join, relative, resolve } from 'node:path';
import type { WorkerModule } from './bundle.ts';

/** The real `workerd` binary from npm, configured and run the way the edge tests need it. */

const WORKERD = resolve(import.meta.dirname, '../../node_modules/.bin/workerd');

/** A service a worker reaches by binding name: a folder (workerd's disk service) or an HTTP server on this machine. */
export type WorkerdService = { disk: string } | { http: string };

export interface WorkerdSetup {
  modules: readonly WorkerModule[];
  compatibilityDate: string;
  /** A SQLite-backed (`enableSql`) Durable Object class bound as `binding`, its databases in `dir`, which outlives restarts. */
  objects?: { className: string; binding: string; dir: string };
  /** Service bindings by name. */
  services?: Record<string, WorkerdService>;
}

/** Writes the capnp config serving `setup` on `port` to `path`. */
export async function writeWorkerdConfig(path: string, port: number, setup: WorkerdSetup): Promise<void> {
  const at = (file: string) => JSON.stringify(relative(dirname(path), file));
  const modules = setup.modules.map((module) => `(name = "${module.name}", ${module.kind} = embed ${at(module.path)})`);
  const services = Object.entries(setup.services ?? {});
  const serviceDefinitions = services.map(([name, service]) =>
    'disk' in service ? `(name = "${name}", disk = (path = ${JSON.stringify(service.disk)}))` : `(name = "${name}", external = (address = ${JSON.stringify(service.http)}, http = ()))`,
  );
  const bindings = services.map(([name]) => `(name = "${name}", service = "${name}")`);
  const { objects } = setup;
  if (objects) {
    serviceDefinitions.push(`(name = "objects", disk = (path = ${JSON.stringify(objects.dir)}, writable = true))`);
    bindings.push(`(name = "${objects.binding}", durableObjectNamespace = "${objects.className}")`);
  }
  const storage = objects
    ? `
  durableObjectNamespaces = [(className = "${objects.className}", uniqueKey = "prism-${objects.className}", enableSql = true)],
  durableObjectStorage = (localDisk = "objects"),`
    : '';
  await writeFile(
    path,
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [${['(name = "main", worker = .worker)', ...serviceDefinitions].join(', ')}],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")],
);
const worker :Workerd.Worker = (
  modules = [${modules.join(', ')}],
  compatibilityDate = "${setup.compatibilityDate}",
  bindings = [${bindings.join(', ')}],${storage}
);
`,
  );
}

export interface Workerd {
  readonly pid: number;
  /** From spawning the process to its socket accepting connections. */
  readonly startMs: number;
  stop(): Promise<void>;
  /** Everything workerd printed so far. */
  log(): string;
}

/** Runs `workerd serve <config>` until `stop()`, once it listens on `port`. */
export async function startWorkerd(config: string, port: number, flags: string[] = []): Promise<Workerd> {
  const started = performance.now();
  const child = spawn(WORKERD, ['serve', ...flags, config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  await waitForPort(port);
  const startMs = performance.now() - started;
  return {
    pid: child.pid ?? -1,
    startMs,
    stop: async () => {
      child.kill();
      await exited;
    },
    log: () => log,
  };
}

/** The resident set of process `pid` (Linux `/proc`), in bytes. */
export async function residentBytes(pid: number): Promise<number> {
  const status = await readFile(join('/proc', String(pid), 'status'), 'utf8');
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  if (kb === undefined) throw new Error(`no VmRSS for process ${pid}`);
  return Number(kb) * 1024;
}

export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.on('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? done(address.port) : fail(new Error('no port'))));
    });
  });
}

/** Resolves once something listens on `port` (127.0.0.1). */
export async function waitForPort(port: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((done) => {
      const socket = createConnection({ port, host: '127.0.0.1' });
      socket.once('connect', () => (socket.end(), done(true)));
      socket.once('error', () => done(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`nothing listened on ${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
