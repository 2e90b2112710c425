/**
 * The options every open function shares (`openNodeMemory`, `openBrowserMemory`): the LLM as
 * settings, extraction, chunking and config. `Memory.open` takes the same fields with a built
 * LLM client instead of settings.
 */
import type { DeepPartial, PrismConfig } from './config.ts';
import { PrismError } from './errors.ts';
import type { ChunkingOptions } from './ingest/chunking.ts';
import type { LlmConfig } from './llm/client.ts';
import type { LlmRole } from './llm/types.ts';
import type { TokenCounter } from './util/tokens.ts';

/**
 * An OpenAI-compatible endpoint as a settings form or a config file has it, plus any adapter
 * option (`headers`, a proxying `fetch`, `timeoutMs`, `concurrency`, `retry`, …).
 */
export interface LlmSettings extends Omit<LlmConfig, 'baseURL' | 'models' | 'cache'> {
  /** Endpoint including `/v1`, or a proxy (e.g. same-origin `/llm/v1`) that adds the credentials itself. */
  baseURL: string;
  /** The model of every role not named in `models`. */
  model: string;
  /** Per-role models, e.g. a cheaper one for `extract` and a stronger one for `answer`. Default: `model` for all. */
  models?: Partial<Record<LlmRole, string>>;
  /** Kept only inside the client object; never written to the store. Omit it behind a proxy. */
  apiKey?: string;
}

/** What every open function takes besides where the memory lives and how the model is loaded. */
export interface MemorySettings {
  /** The LLM for extraction, consolidation, N3 rerank, N4's last tier and `answer()`. Default: none (zero-LLM). */
  llm?: LlmSettings | null;
  /** Default: `llm` when an LLM is configured, else `local`. */
  extraction?: 'local' | 'llm';
  /** How conversations are cut into Episodes. Default `{ by: 'session' }`. */
  chunking?: ChunkingOptions;
  /** Overrides of the paper's constants and PRISM's limits. Default: none. */
  config?: DeepPartial<PrismConfig>;
  /** Token counter of your answer model, for budgets. Default: o200k_base (gpt-4o family), loaded on open. */
  countTokens?: TokenCounter;
}

/**
 * Checks settings and turns them into the adapter's config. `resolveUrl` resolves the base URL
 * (a page resolves relative URLs against its location; elsewhere it must be absolute).
 */
export function llmConfigFromSettings(settings: LlmSettings, resolveUrl: (url: string) => URL = absoluteUrl): Omit<LlmConfig, 'cache'> {
  const baseURL = settings.baseURL.trim();
  const model = settings.model.trim();
  if (baseURL === '' || model === '') throw new PrismError('LLM_NOT_CONFIGURED', 'an LLM endpoint needs a base URL and a model');
  const { model: _model, models, apiKey: rawKey, baseURL: _baseURL, ...adapter } = settings;
  const apiKey = rawKey?.trim();
  return {
    ...adapter,
    baseURL: resolveUrl(baseURL).href.replace(/\/$/, ''),
    models: { ...models, default: model },
    ...(apiKey ? { apiKey } : {}),
  };
}

function absoluteUrl(url: string): URL {
  try {
    return new URL(url);
  } catch (cause) {
    throw new PrismError('INVALID_INPUT', `not an absolute URL: ${url}`, { cause });
  }
}
