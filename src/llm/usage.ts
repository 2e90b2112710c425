import { LLM_ROLES, type LlmRole, type LlmUsage } from './types.ts';

/** Calls and tokens (prompt + completion) summed over `roles`; the difference of two readings is what happened in between. */
export function usageTotals(usage: LlmUsage, roles: readonly LlmRole[] = LLM_ROLES): { calls: number; tokens: number } {
  let calls = 0;
  let tokens = 0;
  for (const role of roles) {
    calls += usage[role].calls;
    tokens += usage[role].promptTokens + usage[role].completionTokens;
  }
  return { calls, tokens };
}
