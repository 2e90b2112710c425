import { readFile } from 'node:fs/promises';
import { PrismError } from '../errors.ts';

/** The committed build output of wasm/build.sh, relative to this source file. */
export const USEARCH_WASM_URL = new URL('../../wasm/usearch.wasm', import.meta.url);

/** Reads the usearch WASM bytes from disk for `loadUsearchWasm` in Node. */
export async function readUsearchWasm(location: URL | string = USEARCH_WASM_URL): Promise<Uint8Array> {
  try {
    return new Uint8Array(await readFile(location));
  } catch (error) {
    throw new PrismError('WASM_LOAD_FAILED', `cannot read ${String(location)}`, { cause: error });
  }
}
