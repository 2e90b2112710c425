import { PrismError } from '../errors.ts';

/** Inner product; equals cosine for the L2-normalised vectors PRISM stores. */
export function dot(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) {
    throw new PrismError('DIMENSION_MISMATCH', `vectors of ${a.length} and ${b.length} dimensions`);
  }
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i] ?? 0) * (b[i] ?? 0);
  return sum;
}
