/**
 * Opening a store that cannot be written, for real: a store file at mode 0444 read by another
 * user, and a store on a full filesystem (a small tmpfs, filled). The reads run in a child
 * process (open-reader.ts); shared by the fault suite (open.fault.ts) and the vitest tests
 * (test/store-open.test.ts).
 */
import { spawn } from 'node:child_process';
import { appendFile, chmod, chown, copyFile, mkdir, readdir, rm, statfs, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Memory } from '../../src/memory.ts';
import { nodeUsearch } from '../../src/node.ts';
import { openSqliteStore } from '../../src/store/sqlite.node.ts';
import { hashEmbedder } from '../helpers/hash-embedder.ts';
import type { ReaderReport } from './open-reader.ts';

const repoRoot = resolve(import.meta.dirname, '..', '..');
const readerScript = join(repoRoot, 'test', 'faults', 'open-reader.ts');

/** Root ignores file modes, so as root the reader runs as `nobody` (uid 65534) to meet them. */
export const OTHER_USER = 65534;
export const isRoot = process.getuid?.() === 0;

export interface OpenOutcome {
  /** What the reader saw and was refused while the store could not be written. */
  readOnly: ReaderReport;
  /** Files that open left in the store's directory that were not there before it. */
  leftBehind: string[];
  /** The same reader once the store is writable again: nothing refused. */
  writable: ReaderReport;
  /** The message text the store holds. */
  stored: string;
}

/** Runs open-reader.ts on `dir`, as uid `user` when given. */
function runReader(dir: string, marker: string, user?: number): Promise<ReaderReport> {
  const node = [process.execPath, '--import', 'tsx', readerScript, dir, marker];
  const [command, ...args] = user === undefined ? node : ['setpriv', `--reuid=${user}`, `--regid=${user}`, '--clear-groups', ...node];
  return new Promise((done, fail) => {
    const child = spawn(command!, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (data: Buffer) => (stdout += data.toString()));
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    child.on('error', fail);
    child.on('close', (code) => {
      if (code === 0) done(JSON.parse(stdout.trim().split('\n').pop() ?? '') as ReaderReport);
      else fail(new Error(`open-reader.ts exited ${code}: ${stderr}`));
    });
  });
}

/** A store with one session, closed (no write-ahead log left): returns the stored text. */
async function writeStore(dir: string, marker: string): Promise<string> {
  const usearch = await nodeUsearch();
  const text = `I left the spare key ${marker} under the blue flowerpot.`;
  const memory = await Memory.open({ store: await openSqliteStore(join(dir, 'memory.sqlite')), embedder: hashEmbedder(), createIndex: (dim) => usearch.createIndex({ dim }), llm: null });
  await memory.add([{ speaker: 'Ana', text }], { sessionId: 'keys', date: '2024-05-01' });
  await memory.close();
  return text;
}

const newFiles = async (dir: string, before: readonly string[]): Promise<string[]> => (await readdir(dir)).filter((file) => !before.includes(file));

/**
 * The store file at mode 0444 in a directory its reader owns (so SQLite could create files
 * there): the reader opens, reads and is refused writes; then the file is made writable again
 * and the same reader opens it and writes.
 */
export async function readOnlyOpen(dir: string, marker: string): Promise<OpenOutcome> {
  const stored = await writeStore(dir, marker);
  const path = join(dir, 'memory.sqlite');
  const user = isRoot ? OTHER_USER : undefined;
  if (user !== undefined) {
    await chown(dir, user, user);
    for (const file of await readdir(dir)) await chown(join(dir, file), user, user);
  }
  await chmod(path, 0o444);
  const before = await readdir(dir);
  const readOnly = await runReader(dir, marker, user);
  const leftBehind = await newFiles(dir, before);
  await chmod(path, 0o644);
  return { readOnly, leftBehind, writable: await runReader(dir, marker, user), stored };
}

/** Fills the filesystem of `dir` until a write fails with ENOSPC. */
async function fill(dir: string): Promise<void> {
  const filler = join(dir, 'filler');
  const { bavail, bsize } = await statfs(dir);
  await writeFile(filler, Buffer.alloc(bavail * bsize)).catch(() => undefined);
  for (;;) {
    const full = await appendFile(filler, Buffer.alloc(512)).then(
      () => false,
      (err: NodeJS.ErrnoException) => err.code === 'ENOSPC',
    );
    if (full) return;
  }
}

/**
 * The store on a 2 MB tmpfs (mounted at `dir`/disk; needs root) that is then filled: the
 * reader opens, reads and is refused writes; then the filler goes and the reader writes.
 */
export async function fullDiskOpen(dir: string, marker: string): Promise<OpenOutcome> {
  const stored = await writeStore(dir, marker);
  const disk = join(dir, 'disk');
  await mkdir(disk);
  await run('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', disk]);
  try {
    await copyFile(join(dir, 'memory.sqlite'), join(disk, 'memory.sqlite'));
    await fill(disk);
    const before = await readdir(disk);
    const readOnly = await runReader(disk, marker);
    const leftBehind = await newFiles(disk, before);
    await rm(join(disk, 'filler'));
    return { readOnly, leftBehind, writable: await runReader(disk, marker), stored };
  } finally {
    await run('umount', [disk]);
  }
}

function run(command: string, args: string[]): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    child.on('error', fail);
    child.on('close', (code) => (code === 0 ? done() : fail(new Error(`${command} ${args.join(' ')} exited ${code}: ${stderr}`))));
  });
}
