/**
 * A batch closes when the next (shorter) text is under this share of the batch's width: every
 * row is padded to the widest, so mixing a 150-token summary with 20-token facts wastes most of
 * the batch. 0.75 cut padded tokens by 39–46% on LoCoMo ingest calls (issue 13).
 */
export const BUCKET_MIN_FILL = 0.75;

/** How large one padded inference call may be (`lengthBuckets`). */
export interface BatchLimits {
  /** Most sequences a batch. */
  texts: number;
  /** Most padded tokens a batch: its rows × its widest row (a batch holds one sequence at least). */
  tokens: number;
}

/**
 * Groups sequence indices into batches for padded inference: longest first (as
 * sentence-transformers does, so the largest allocation happens up front), within `limits`,
 * and a new batch wherever a length falls under `minFill` × the batch's first (widest).
 */
export function lengthBuckets(lengths: readonly number[], limits: BatchLimits, minFill: number = BUCKET_MIN_FILL): number[][] {
  const order = lengths.map((_, i) => i).sort((a, b) => (lengths[b] ?? 0) - (lengths[a] ?? 0));
  const batches: number[][] = [];
  let current: number[] = [];
  let width = 0;
  for (const index of order) {
    const length = lengths[index] ?? 0;
    const full = current.length === limits.texts || (current.length + 1) * width > limits.tokens;
    if (current.length > 0 && (full || length < minFill * width)) {
      batches.push(current);
      current = [];
    }
    if (current.length === 0) width = length;
    current.push(index);
  }
  if (current.length > 0) batches.push(current);
  return batches;
}
