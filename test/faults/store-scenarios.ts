/**
 * Store fault scenarios on real SQLite files and real processes, shared by the fault suite
 * (store.fault.ts) and the vitest tests (test/store-processes.test.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, stat, truncate, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { PrismError } from '../../src/errors.ts';
import { DEFAULT_PARTITION } from '../../src/scope.ts';
import { openSqliteStore } from '../../src/store/sqlite.node.ts';
import { censusOf, writerBatch, type BatchCensus } from './store-records.ts';

const repoRoot = resolve(import.meta.dirname, '..', '..');
const writerScript = join(repoRoot, 'test', 'faults', 'store-writer.ts');

export interface WriterExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Batches the writer reported durable. */
  acknowledged: number;
  stderr: string;
}

interface Writer {
  child: ChildProcess;
  exit: Promise<WriterExit>;
}

/** Starts store-writer.ts; `onAcknowledged(n)` runs after the writer reports its n-th durable batch. */
function startWriter(path: string, writer: string, batches: number, onAcknowledged: (count: number) => void = () => undefined): Writer {
  const child = spawn(process.execPath, ['--import', 'tsx', writerScript, path, writer, String(batches)], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let acknowledged = 0;
  let stderr = '';
  let partial = '';
  child.stdout?.on('data', (data: Buffer) => {
    const lines = (partial + data.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (line.startsWith('committed ')) onAcknowledged(++acknowledged);
    }
  });
  child.stderr?.on('data', (data: Buffer) => (stderr += data.toString()));
  const exit = new Promise<WriterExit>((done, fail) => {
    child.on('error', fail);
    child.on('close', (code, signal) => done({ code, signal, acknowledged, stderr }));
  });
  return { child, exit };
}

/** What a reopened store holds of each writer's batches, and whether its lock is free. */
export interface StoreAfter {
  census: Record<string, BatchCensus>;
  revision: number;
  lockFree: boolean;
}

async function inspect(path: string, writers: readonly string[]): Promise<StoreAfter> {
  const store = await openSqliteStore(path, { lockTimeoutMs: 2_000 });
  try {
    const snapshot = await store.load(DEFAULT_PARTITION);
    const lockFree = await store.withWriteLock(DEFAULT_PARTITION, async () => true).catch(() => false);
    return {
      census: Object.fromEntries(writers.map((writer) => [writer, censusOf(snapshot, writer)])),
      revision: await store.revision(DEFAULT_PARTITION),
      lockFree,
    };
  } finally {
    await store.close();
  }
}

/** Batches in 0..count-1 missing from a census. */
export function missing(census: BatchCensus, count: number): number {
  let absent = 0;
  for (let i = 0; i < count; i++) if (!census.whole.has(i)) absent++;
  return absent;
}

/** Two processes commit `batches` batches each to one file at once, under the writer lock. */
export async function twoProcesses(dir: string, batches: number): Promise<{ exits: WriterExit[]; after: StoreAfter }> {
  const path = join(dir, 'memory.sqlite');
  const writers = ['a', 'b'];
  const exits = await Promise.all(writers.map((writer) => startWriter(path, writer, batches).exit));
  return { exits, after: await inspect(path, writers) };
}

/** A writer is killed with SIGKILL after `killAfter` durable batches, in the middle of its commit loop. */
export async function killDuringCommit(dir: string, killAfter: number): Promise<{ exit: WriterExit; after: StoreAfter }> {
  const path = join(dir, 'memory.sqlite');
  const writer = startWriter(path, 'k', 1_000_000, (count) => {
    if (count === killAfter) writer.child.kill('SIGKILL');
  });
  const exit = await writer.exit;
  return { exit, after: await inspect(path, ['k']) };
}

/**
 * Commits batches into a store capped at `maxBytes` until the disk is "full" (SQLITE_FULL),
 * then reopens it uncapped (space freed) and commits once more.
 */
export async function diskFull(dir: string, maxBytes: number): Promise<{ failure: PrismError | null; acknowledged: number; after: StoreAfter; writableAfter: boolean }> {
  const path = join(dir, 'memory.sqlite');
  const store = await openSqliteStore(path, { maxBytes });
  let acknowledged = 0;
  let failure: PrismError | null = null;
  try {
    for (; acknowledged < 100_000; acknowledged++) {
      await store.commit(DEFAULT_PARTITION, writerBatch('f', acknowledged, acknowledged === 0));
    }
  } catch (err) {
    if (!(err instanceof PrismError)) throw err;
    failure = err;
  }
  await store.close();
  const after = await inspect(path, ['f']);
  // Space freed (the cap lifted): the same file takes commits again.
  const uncapped = await openSqliteStore(path);
  const writableAfter = await uncapped.commit(DEFAULT_PARTITION, writerBatch('f', acknowledged, false)).then(
    () => true,
    () => false,
  );
  await uncapped.close();
  return { failure, acknowledged, after, writableAfter };
}

export type Damage = 'garbage' | 'truncated' | 'scribbled';

/**
 * Writes `batches` batches, closes the store, folds the write-ahead log into the file, damages
 * the file, and opens and loads it again: either a typed error naming the file, or the data.
 */
export async function corruptFile(dir: string, damage: Damage, batches: number): Promise<{ error: PrismError | null; path: string; census: BatchCensus | null }> {
  const path = join(dir, 'memory.sqlite');
  const store = await openSqliteStore(path);
  for (let i = 0; i < batches; i++) await store.commit(DEFAULT_PARTITION, writerBatch('c', i, i === 0));
  await store.close();
  const raw = new Database(path);
  raw.pragma('wal_checkpoint(TRUNCATE)');
  raw.pragma('journal_mode = DELETE');
  raw.close();
  const { size } = await stat(path);
  if (damage === 'garbage') await writeFile(path, Buffer.alloc(size, 0xa5));
  if (damage === 'truncated') await truncate(path, Math.floor(size / 2));
  if (damage === 'scribbled') {
    const bytes = await readFile(path);
    for (let i = 4096; i < bytes.length; i += 61) bytes[i] = (bytes[i] as number) ^ 0xff;
    await writeFile(path, bytes);
  }
  try {
    const reopened = await openSqliteStore(path);
    try {
      return { error: null, path, census: censusOf(await reopened.load(DEFAULT_PARTITION), 'c') };
    } finally {
      await reopened.close();
    }
  } catch (err) {
    if (!(err instanceof PrismError)) throw err;
    return { error: err, path, census: null };
  }
}
