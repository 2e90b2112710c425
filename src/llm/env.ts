import { PrismError } from '../errors.ts';
import type { LlmConfig, LlmModels } from './client.ts';
import { LLM_ROLES } from './types.ts';

/**
 * Endpoint settings from environment-style variables, passed in by the caller (Node's
 * `process.env`, a worker's `env` binding, a test's literal) so core code never reads globals:
 *
 * - `PRISM_LLM_BASE_URL`, `PRISM_LLM_API_KEY` (both optional), `PRISM_LLM_MODEL` (the default model),
 * - `PRISM_LLM_MODEL_<ROLE>` per role, e.g. `PRISM_LLM_MODEL_JUDGE`.
 *
 * Returns `null` when none of them is set (zero-LLM mode); throws `LLM_NOT_CONFIGURED` when
 * some are set but the default model is missing, since a half-configured endpoint is a mistake.
 */
export function llmConfigFromEnv(env: Record<string, string | undefined>): LlmConfig | null {
  const read = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === '' ? undefined : value;
  };
  const roleModels = LLM_ROLES.flatMap((role) => {
    const model = read(`PRISM_LLM_MODEL_${role.toUpperCase()}`);
    return model === undefined ? [] : [[role, model] as const];
  });
  const baseURL = read('PRISM_LLM_BASE_URL');
  const apiKey = read('PRISM_LLM_API_KEY');
  const defaultModel = read('PRISM_LLM_MODEL');
  if (baseURL === undefined && apiKey === undefined && defaultModel === undefined && roleModels.length === 0) {
    return null;
  }
  if (defaultModel === undefined) {
    throw new PrismError('LLM_NOT_CONFIGURED', 'PRISM_LLM_MODEL must name the default model when an LLM endpoint is configured');
  }
  const models: LlmModels = { default: defaultModel, ...Object.fromEntries(roleModels) };
  return {
    ...(baseURL === undefined ? {} : { baseURL }),
    ...(apiKey === undefined ? {} : { apiKey }),
    models,
  };
}
