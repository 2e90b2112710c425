import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { PrismError, throwIfAborted } from '../errors.ts';
import { packageRoot } from '../util/package-root.node.ts';
import { huggingFaceModelSource, type ModelSource } from './model-source.ts';

/**
 * The directory holding all-MiniLM-L6-v2 on this machine: env `PRISM_MODEL_DIR`, else
 * `../shared/models/all-MiniLM-L6-v2` next to the package root. The package root is found by
 * walking up to the nearest package.json, so this holds both from `src/` and from a build in `dist/`.
 */
export function defaultModelDir(): string {
  const fromEnv = process.env['PRISM_MODEL_DIR'];
  if (fromEnv) return resolve(fromEnv);
  return resolve(packageRoot(), '..', 'shared', 'models', 'all-MiniLM-L6-v2');
}

/** Reads model files from a directory in the Hugging Face layout. */
export function fileModelSource(dir: string = defaultModelDir()): ModelSource {
  const root = resolve(dir);
  return {
    location: root,
    async read(relPath, signal) {
      const path = join(root, relPath);
      try {
        const bytes = await readFile(path, signal ? { signal } : {});
        return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      } catch (cause) {
        throwIfAborted(signal);
        const hint = process.env['PRISM_MODEL_DIR'] ? '' : ' (set PRISM_MODEL_DIR to the model directory)';
        throw new PrismError('MODEL_LOAD_FAILED', `cannot read ${path}${hint}`, { cause });
      }
    },
  };
}

/**
 * Where Node loads MiniLM from by default: `PRISM_MODEL_DIR` when set (and only there, so a
 * wrong path fails loudly), else the local model directory when it holds the files, else the
 * Hugging Face hub (`Xenova/all-MiniLM-L6-v2`) for a user with a network.
 */
export function defaultModelSource(dir: string = defaultModelDir()): ModelSource {
  if (process.env['PRISM_MODEL_DIR'] || existsSync(join(dir, 'tokenizer.json'))) return fileModelSource(dir);
  return huggingFaceModelSource();
}
