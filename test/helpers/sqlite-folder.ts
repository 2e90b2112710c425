import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite.node.ts';
import type { GraphStore } from '../../src/store/types.ts';
import { testRuntime, type TestRuntime } from './runtime.ts';

/**
 * For a test file of SQLite memories: the real runtime, a fresh folder each test (removed after
 * it), and `sqlite(name)`, a store on a file there that is closed after the test.
 */
export function sqliteFolder(prefix: string): { runtime: () => TestRuntime; path: (name?: string) => string; sqlite: (name?: string) => Promise<GraphStore> } {
  let runtime: TestRuntime | null = null;
  let dir = '';
  const stores: GraphStore[] = [];
  beforeAll(async () => {
    runtime = await testRuntime();
  });
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), prefix));
  });
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((store) => store.close()));
    await rm(dir, { recursive: true, force: true });
  });
  const path = (name = 'memory.sqlite') => join(dir, name);
  return {
    runtime: () => runtime as TestRuntime,
    path,
    sqlite: async (name) => {
      const store = await openSqliteStore(path(name));
      stores.push(store);
      return store;
    },
  };
}
