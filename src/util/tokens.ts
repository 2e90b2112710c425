import { countTokens as countO200k } from 'gpt-tokenizer/encoding/o200k_base';

/**
 * Token counts use one fixed tokenizer: o200k_base, the BPE of gpt-4o-mini (the paper's
 * answer model), so "tokens" means the same thing for budgets, chunk windows and every
 * system compared.
 */
export function countTokens(text: string): number {
  return countO200k(text);
}
