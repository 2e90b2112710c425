import { PrismError } from '../errors.ts';

/** Counts the tokens of `text` the way the answer model will see them. Must be synchronous: packing calls it per unit. */
export type TokenCounter = (text: string) => number;

let active: TokenCounter | null = null;
let loadingDefault: Promise<TokenCounter> | null = null;

/**
 * Makes `countTokens` ready: installs `custom` when given, else loads the default counter,
 * o200k_base (the BPE of gpt-4o-mini, the paper's answer model), whose tables are ~1 MB of
 * gzipped JS and so are imported only here. Budgets, chunk windows and every compared system
 * count with the one installed counter; it is process-wide (one answer model per process or
 * page), and `Memory.open` awaits this before its first add or search.
 */
export async function loadTokenCounter(custom?: TokenCounter): Promise<TokenCounter> {
  if (custom !== undefined && typeof custom !== 'function') throw new PrismError('INVALID_INPUT', 'countTokens must be a function (text: string) => number');
  if (custom) return (active = custom);
  loadingDefault ??= import('gpt-tokenizer/encoding/o200k_base').then((o200k) => o200k.countTokens);
  loadingDefault.catch(() => (loadingDefault = null));
  active ??= await loadingDefault;
  return active;
}

/** Tokens of `text` under the installed counter (see `loadTokenCounter`). */
export function countTokens(text: string): number {
  if (!active) throw new PrismError('INVALID_INPUT', 'no token counter loaded yet: await loadTokenCounter() (Memory.open does) before counting tokens');
  return active(text);
}
