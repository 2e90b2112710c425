/**
 * Typed errors. Every failure PRISM reports is a `PrismError` with a stable `code`,
 * so callers can branch on `err.code` without parsing messages.
 */
export type PrismErrorCode =
  | 'INVALID_INPUT'
  | 'INPUT_TOO_LARGE'
  | 'NOT_FOUND'
  | 'DIMENSION_MISMATCH'
  | 'EMBEDDER_MISMATCH'
  | 'NON_FINITE_VECTOR'
  | 'WASM_LOAD_FAILED'
  | 'OUT_OF_MEMORY'
  | 'MODEL_LOAD_FAILED'
  | 'STORE_QUOTA_EXCEEDED'
  | 'STORE_BLOCKED'
  | 'STORE_VERSION'
  | 'STORE_IO'
  | 'STORE_READONLY'
  | 'STORE_BUSY'
  | 'CORRUPT_CHECKPOINT'
  | 'LLM_HTTP'
  | 'LLM_AUTH'
  | 'LLM_CONFIG'
  | 'LLM_RATE_LIMITED'
  | 'LLM_TIMEOUT'
  | 'LLM_BAD_JSON'
  | 'LLM_SCHEMA'
  | 'LLM_NOT_CONFIGURED'
  | 'ABORTED';

/** Every failure PRISM reports; branch on `code` (stable), show `message` (readable). */
export class PrismError extends Error {
  readonly code: PrismErrorCode;
  constructor(code: PrismErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PrismError';
    this.code = code;
  }
}

/** Throws `ABORTED` when the signal has fired; call between units of work. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) {
    throw new PrismError('ABORTED', 'operation aborted', { cause: signal.reason });
  }
}
