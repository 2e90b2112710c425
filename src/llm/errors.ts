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
