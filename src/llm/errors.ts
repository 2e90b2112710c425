import { PrismError, type PrismErrorCode } from '../errors.ts';

export interface LlmErrorDetails {
  /** HTTP status of the last response, when there was one. */
  status?: number;
  /** The model's raw reply, for `LLM_BAD_JSON` / `LLM_SCHEMA`, so a caller can log or salvage it. */
  raw?: string;
  /** Requests sent for this call before it failed. */
  attempts?: number;
  cause?: unknown;
}

/** A `PrismError` from the LLM adapter, carrying what a caller needs to diagnose the failure. */
export class LlmError extends PrismError {
  readonly status: number | undefined;
  readonly raw: string | undefined;
  readonly attempts: number;

  constructor(code: PrismErrorCode, message: string, details: LlmErrorDetails = {}) {
    super(code, message, { cause: details.cause });
    this.name = 'LlmError';
    this.status = details.status;
    this.raw = details.raw;
    this.attempts = details.attempts ?? 0;
  }
}

/**
 * Replies that name a missing model. OpenAI, vLLM and Ollama answer 404 for it; LiteLLM,
 * OpenRouter and some proxies answer 400 ("Invalid model name", "is not a valid model ID"); a
 * model that does not support a parameter we send (JSON mode) is a setting to change too.
 */
const MODEL = /\bmodel\b/i;
const UNKNOWN = /\b(not found|does not exist|invalid|not a valid|unknown|no such|not supported)\b/i;

/**
 * The failures that are the caller's to fix, so no retry or fallback can help: a key the
 * endpoint refuses (401/403 → `LLM_AUTH`), and a wrong URL or model (404, or a 400 naming an
 * unknown model → `LLM_CONFIG`). `undefined` for every other status.
 */
export function callerFaultCode(status: number, code: string | null | undefined, message: string): 'LLM_AUTH' | 'LLM_CONFIG' | undefined {
  if (status === 401 || status === 403) return 'LLM_AUTH';
  if (status === 404 || code === 'model_not_found') return 'LLM_CONFIG';
  if (status === 400 && MODEL.test(message) && UNKNOWN.test(message)) return 'LLM_CONFIG';
  return undefined;
}
