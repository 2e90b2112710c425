import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { EvalCache } from './runner.ts';

/**
 * An EvalCache of one file per key under `dir`. Writes go to a temporary file renamed into
 * place, so Ctrl-C mid-write leaves either the old entry or none, never a torn one.
 */
export function createDirectoryCache(dir: string): EvalCache {
  const fileOf = (key: string) => join(dir, `${encodeURIComponent(key)}.json`);
  return {
    async get(key) {
      try {
        return await readFile(fileOf(key), 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
    },
    async set(key, value) {
      await mkdir(dir, { recursive: true });
      const file = fileOf(key);
      const temporary = `${file}.${process.pid}.tmp`;
      await writeFile(temporary, value, 'utf8');
      await rename(temporary, file);
    },
  };
}
