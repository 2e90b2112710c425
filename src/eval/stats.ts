import { PrismError } from '../errors.ts';
import { DEFAULT_CONFIG } from '../config.ts';

/**
 * mulberry32: a 32-bit seeded PRNG. Statistically plain but fully deterministic across runtimes,
 * which is what a reproducible bootstrap needs. Returns floats in [0, 1).
 */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface BootstrapOptions {
  /** Number of resamples; the paper uses 2,000. */
  resamples?: number;
  seed?: number;
  /** Confidence level, e.g. 0.95. */
  level?: number;
}

export const BOOTSTRAP_RESAMPLES = 2000;

export interface ConfidenceInterval {
  /** The statistic on the observed sample. */
  estimate: number;
  low: number;
  high: number;
  n: number;
}

/** Percentile-bootstrap CI of the mean of `values`. */
export function bootstrapMeanCI(values: readonly number[], options: BootstrapOptions = {}): ConfidenceInterval {
  const n = values.length;
  if (n === 0) throw new PrismError('INVALID_INPUT', 'bootstrap needs at least one value');
  const resamples = options.resamples ?? BOOTSTRAP_RESAMPLES;
  const level = options.level ?? 0.95;
  const random = mulberry32(options.seed ?? DEFAULT_CONFIG.seed);
  const means = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += values[Math.floor(random() * n)] as number;
    means[r] = sum / n;
  }
  means.sort();
  const tail = (1 - level) / 2;
  const at = (q: number) => means[Math.min(resamples - 1, Math.max(0, Math.round(q * (resamples - 1))))] as number;
  return { estimate: values.reduce((s, v) => s + v, 0) / n, low: at(tail), high: at(1 - tail), n };
}

/**
 * Paired bootstrap: resamples questions, so both systems are always compared on the same
 * questions. CI of mean(a − b); `a` and `b` must be aligned question by question.
 */
export function pairedBootstrapCI(
  a: readonly number[],
  b: readonly number[],
  options: BootstrapOptions = {},
): ConfidenceInterval {
  if (a.length !== b.length) throw new PrismError('INVALID_INPUT', `paired samples differ in length: ${a.length} vs ${b.length}`);
  return bootstrapMeanCI(
    a.map((v, i) => v - (b[i] as number)),
    options,
  );
}

export interface McNemarResult {
  /** Pairs where `a` is correct and `b` wrong. */
  aOnly: number;
  /** Pairs where `b` is correct and `a` wrong. */
  bOnly: number;
  /** Two-sided mid-p of the exact McNemar (binomial) test. */
  midP: number;
}

/**
 * McNemar's exact test on paired binary labels with the mid-p correction (Fagerland et al.,
 * 2013): under H0 the discordant pairs split Binomial(n = aOnly + bOnly, ½), and
 * mid-p = 2·P(X ≤ m) − P(X = m) with m = min(aOnly, bOnly), capped at 1.
 */
export function mcNemarMidP(a: readonly boolean[], b: readonly boolean[]): McNemarResult {
  if (a.length !== b.length) throw new PrismError('INVALID_INPUT', `paired labels differ in length: ${a.length} vs ${b.length}`);
  let aOnly = 0;
  let bOnly = 0;
  a.forEach((label, i) => {
    if (label && !b[i]) aOnly++;
    else if (!label && b[i]) bOnly++;
  });
  return { aOnly, bOnly, midP: mcNemarMidPFromCounts(aOnly, bOnly) };
}

export function mcNemarMidPFromCounts(aOnly: number, bOnly: number): number {
  const n = aOnly + bOnly;
  if (n === 0) return 1;
  const m = Math.min(aOnly, bOnly);
  // Binomial(n, ½) pmf in log space: n reaches the thousands, where 2^-n underflows.
  let logPmf = -n * Math.LN2;
  let cumulative = 0;
  let atM = 0;
  for (let k = 0; k <= m; k++) {
    const pmf = Math.exp(logPmf);
    cumulative += pmf;
    if (k === m) atM = pmf;
    logPmf += Math.log(n - k) - Math.log(k + 1);
  }
  return Math.min(1, 2 * cumulative - atM);
}
