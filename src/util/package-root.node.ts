import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PrismError } from '../errors.ts';

/**
 * The package root (nearest package.json above this file), so paths hold both from `src/`
 * and from a build in `dist/`. `../shared` (models, data) sits beside it.
 */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

/** The package version from package.json: shown by `prism --version`, and keys every eval cache and memory build. */
export async function packageVersion(): Promise<string> {
  const manifest: unknown = JSON.parse(await readFile(join(packageRoot(), 'package.json'), 'utf8'));
  const version = typeof manifest === 'object' && manifest !== null && 'version' in manifest ? manifest.version : undefined;
  if (typeof version !== 'string') throw new PrismError('INVALID_INPUT', `no version in ${join(packageRoot(), 'package.json')}`);
  return version;
}
