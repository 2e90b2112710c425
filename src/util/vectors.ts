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

/**
 * `dot(row, q)` for every row, bit for bit: each sum adds the same products in the same order.
 * Four rows share a pass over `q`, so the CPU overlaps four independent chains of additions
 * instead of waiting on one (a query scores hundreds of FacetPoints this way).
 */
export function dotEach(rows: readonly Float32Array[], q: Float32Array): Float64Array {
  const n = q.length;
  for (const row of rows) {
    if (row.length !== n) throw new PrismError('DIMENSION_MISMATCH', `vectors of ${row.length} and ${n} dimensions`);
  }
  const out = new Float64Array(rows.length);
  let r = 0;
  for (; r + 4 <= rows.length; r += 4) {
    const [a, b, c, d] = [rows[r]!, rows[r + 1]!, rows[r + 2]!, rows[r + 3]!];
    let sa = 0;
    let sb = 0;
    let sc = 0;
    let sd = 0;
    for (let i = 0; i < n; i++) {
      const x = q[i]!;
      sa += a[i]! * x;
      sb += b[i]! * x;
      sc += c[i]! * x;
      sd += d[i]! * x;
    }
    out[r] = sa;
    out[r + 1] = sb;
    out[r + 2] = sc;
    out[r + 3] = sd;
  }
  for (; r < rows.length; r++) out[r] = dot(rows[r]!, q);
  return out;
}

/** Packs vectors row-major into one matrix, as the vector index takes them. */
export function packRows(rows: readonly Float32Array[], dim: number): Float32Array {
  const out = new Float32Array(rows.length * dim);
  rows.forEach((row, i) => out.set(row, i * dim));
  return out;
}

/** (a + b + …) / ‖a + b + …‖; the zero vector stays zero. */
export function normalisedSum(...vectors: readonly Float32Array[]): Float32Array {
  // Sums and norm in float64, components stored as float32 before dividing: `normalisedSumDot`
  // repeats exactly these operations for two vectors.
  const sums = float64Sums(vectors);
  const norm = float64Norm(sums);
  const out = Float32Array.from(sums);
  if (norm > 0) for (let i = 0; i < out.length; i++) out[i] = (out[i] ?? 0) / norm;
  return out;
}

/** ‖a + b + …‖ as `normalisedSum` takes it. */
export function normOfSum(vectors: readonly Float32Array[]): number {
  return float64Norm(float64Sums(vectors));
}

function float64Sums(vectors: readonly Float32Array[]): Float64Array {
  const sums = new Float64Array(vectors[0]?.length ?? 0);
  for (const v of vectors) for (let i = 0; i < sums.length; i++) sums[i] = (sums[i] ?? 0) + (v[i] ?? 0);
  return sums;
}

function float64Norm(sums: Float64Array): number {
  let norm = 0;
  for (const x of sums) norm += x * x;
  return Math.sqrt(norm);
}

/** ‖a + b‖ as `normalisedSum` takes it (sums and norm in float64). */
export function sumNorm(a: Float32Array, b: Float32Array): number {
  let norm = 0;
  for (let i = 0; i < a.length; i++) {
    const v = (a[i] ?? 0) + (b[i] ?? 0);
    norm += v * v;
  }
  return Math.sqrt(norm);
}

/**
 * `dot(normalisedSum(a, b), q)` without building the sum: the same operations in the same
 * order, so the same number, for the per-query edge costs that would otherwise allocate a
 * vector each. `norm` is `sumNorm(a, b)`, which callers may keep (see `pairMemo`).
 */
export function normalisedSumDot(a: Float32Array, b: Float32Array, q: Float32Array, norm: number = sumNorm(a, b)): number {
  if (a.length !== q.length) {
    throw new PrismError('DIMENSION_MISMATCH', `vectors of ${a.length} and ${q.length} dimensions`);
  }
  let sum = 0;
  for (let i = 0; i < a.length; i++) {
    // Each component is stored as float32, as `normalisedSum` writes it, then divided and stored again.
    const v = Math.fround((a[i] ?? 0) + (b[i] ?? 0));
    sum += (norm > 0 ? Math.fround(v / norm) : v) * (q[i] ?? 0);
  }
  return sum;
}

/**
 * `f` of two vectors, computed once per pair and kept while both vectors are: for numbers every
 * query needs that do not depend on the query (the norm of an edge's composed vector, the dot
 * of two adjacent turns' Facets). Weak maps, so nothing is kept for vectors the graph dropped.
 */
export function pairMemo(f: (a: Float32Array, b: Float32Array) => number): (a: Float32Array, b: Float32Array) => number {
  const byFirst = new WeakMap<Float32Array, WeakMap<Float32Array, number>>();
  return (a, b) => {
    let withA = byFirst.get(a);
    if (!withA) byFirst.set(a, (withA = new WeakMap()));
    let value = withA.get(b);
    if (value === undefined) withA.set(b, (value = f(a, b)));
    return value;
  };
}
