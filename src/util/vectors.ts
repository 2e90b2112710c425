/** Inner product of two equal-length vectors (cosine when both are L2-normalised). */
export function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i] ?? 0) * (b[i] ?? 0);
  return s;
}

/** Packs vectors row-major into one matrix, as the vector index takes them. */
export function packRows(rows: readonly Float32Array[], dim: number): Float32Array {
  const out = new Float32Array(rows.length * dim);
  rows.forEach((row, i) => out.set(row, i * dim));
  return out;
}

/** (a + b) / ‖a + b‖; the zero vector stays zero. */
export function normalisedSum(a: Float32Array, b: Float32Array): Float32Array {
  const out = new Float32Array(a.length);
  let norm = 0;
  for (let i = 0; i < a.length; i++) {
    const v = (a[i] ?? 0) + (b[i] ?? 0);
    out[i] = v;
    norm += v * v;
  }
  norm = Math.sqrt(norm);
  if (norm > 0) for (let i = 0; i < out.length; i++) out[i] = (out[i] ?? 0) / norm;
  return out;
}
