import { DEFAULT_CONFIG } from '../config.ts';
import { PrismError, throwIfAborted } from '../errors.ts';
import { packContext, type PackedContext } from '../retrieve/pack.ts';
import { loadTokenCounter } from '../util/tokens.ts';
import { sha256Hex } from '../util/hash.ts';
import { sessionOfTurn, type Benchmark, type BenchmarkName, type DatasetStats, type EvalQuestion, type EvalSample } from './benchmark.ts';
import { shortHash } from './fingerprint.ts';
import { answerAndJudge, type JudgeConfig } from './judge.ts';
import {
  NDCG_K,
  RECALL_KS,
  SESSION_KS,
  evidenceRecall,
  ndcgAtK,
  recallAny,
  recallAtK,
  sessionRanking,
  summariseOutcomes,
  type JudgedAnswer,
  type OutcomeSummary,
  type QuestionOutcome,
} from './metrics.ts';
import { BOOTSTRAP_RESAMPLES, mcNemarMidP, pairedBootstrapCI, type BootstrapOptions } from './stats.ts';
import type { EvalSystem, RetrievalResult } from './systems.ts';

export const DEFAULT_BUDGETS: readonly number[] = [256, 512, 1024, 2048, 4096];

/** Bump when the meaning of a stored outcome changes, so old partial results are not reused. */
const OUTCOME_FORMAT = 3;

/** Key-value persistence of finished (system, memory) work; values are JSON text. */
export interface EvalCache {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string): Promise<void>;
}

export type EvalProgress =
  /** A system is ingesting a conversation; done/total as the system reports them. */
  | { phase: 'prepare'; system: string; conversationId: string; done: number; total: number }
  /** Questions answered so far over the whole run (all systems); `cached` when restored, not run. */
  | { phase: 'questions'; system: string; conversationId: string; done: number; total: number; cached: boolean };

export interface EvalOptions {
  /** The questions and their memories (see `locomoBenchmark`, `longMemEvalBenchmark`). */
  benchmark: Benchmark;
  systems: readonly EvalSystem[];
  /** Path of the data file, echoed into the results. */
  dataPath?: string;
  /** Context budgets in tokens; default 256, 512, 1024, 2048, 4096. */
  budgets?: readonly number[];
  /** LLM mode: answer + judge each question. Zero-LLM mode when absent. */
  judge?: JudgeConfig;
  /** Where finished (system, memory) outcomes are kept, so an interrupted run resumes. */
  cache?: EvalCache;
  onProgress?: (event: EvalProgress) => void;
  signal?: AbortSignal;
  /** Extra run settings for the report (embedder id and precision, PRISM flags, ...). */
  runConfig?: Record<string, string | number | boolean | null>;
  bootstrap?: BootstrapOptions;
  /** Version of the code under evaluation (the package version); part of every cache key, so an upgrade recomputes. */
  version?: string;
  /**
   * Pairs to compare besides the automatic ones (every system against the best baseline, every
   * variant's parent against the variant); both names must be among `systems`.
   */
  compare?: readonly SystemPair[];
  /**
   * Systems compared with every baseline of the run per category and overall, on ER at every
   * budget and on the session ranking, paired by question (`breakdown` in the results).
   */
  compareByCategory?: readonly string[];
}

export interface SystemPair {
  system: string;
  reference: string;
}

/**
 * Why a pair is compared: `best-baseline` (the reference is the best baseline), `variant` (the
 * system is the parent the reference is a variant of, so Δ is what the variant gives up) or
 * `requested` (asked for by the caller).
 */
export type ComparisonKind = 'best-baseline' | 'variant' | 'requested';

interface ComparedPair extends SystemPair {
  kind: ComparisonKind;
}

export interface SystemResult extends OutcomeSummary {
  baseline: boolean;
  fingerprint: string;
  /** Judge score per 1K context tokens at the judge budget; null in zero-LLM mode. */
  judgePer1k: number | null;
  /** Answer + judge LLM calls and tokens per question; null in zero-LLM mode. */
  answerLlm: { callsPerQuery: number | null; tokensPerQuery: number | null } | null;
}

export interface PairedComparison {
  system: string;
  /** The best baseline at this budget, the variant, or the requested reference (see `kind`). */
  reference: string;
  kind: ComparisonKind;
  budget: number;
  /** Questions compared (those with resolvable evidence). */
  n: number;
  /** Mean per-question ER difference system − reference, with its paired bootstrap 95% CI. */
  diff: number;
  low: number;
  high: number;
}

/** One system against one baseline on one metric, over one category's questions (all: null), paired by question. */
export interface BreakdownComparison {
  system: string;
  reference: string;
  category: string | null;
  /** `ER@<budget>`, `R@<K>` (session recall_any) or `NDCG@<K>`. */
  metric: string;
  n: number;
  diff: number;
  low: number;
  high: number;
}

export interface JudgeComparison {
  system: string;
  reference: string;
  kind: ComparisonKind;
  n: number;
  diff: number;
  low: number;
  high: number;
  /** Discordant pairs: system correct & reference wrong, and the reverse. */
  systemOnly: number;
  referenceOnly: number;
  midP: number;
}

/** N4 routing: how many questions each tier decided, by category. */
export type RoutingBreakdown = Record<string, { total: number; share: number; byCategory: Record<string, number> }>;

export interface SystemTimings {
  prepareMs: number;
  /** Preparing (ingesting, or restoring) each memory, in run order. */
  prepareMsByMemory: number[];
  retrieveMs: number;
  judgeMs: number;
  /** Memories restored from the cache (their timings are those of the run that computed them). */
  cachedConversations: number;
}

export interface EvalResults {
  benchmark: BenchmarkName;
  /** The benchmark's name in reports. */
  title: string;
  /** The benchmark's categories, in report order. */
  categories: string[];
  data: string | null;
  /** Evaluated questions per system (abstention questions included). */
  questions: number;
  mode: 'zero-llm' | 'llm';
  systems: Record<string, SystemResult>;
  budgets: number[];
  dataset: DatasetStats;
  /** Per budget, every system against the best baseline at that budget. */
  comparisons: PairedComparison[];
  /** Judge labels against the best baseline by judge score; empty in zero-LLM mode. */
  judgeComparisons: JudgeComparison[];
  /** The `compareByCategory` systems against every baseline, per category and overall. */
  breakdown: BreakdownComparison[];
  /** Each variant's parent against the variant (the ablation protocol), then the requested pairs; one entry per budget. */
  paired: PairedComparison[];
  /** Judge labels of the same pairs; empty in zero-LLM mode. */
  pairedJudge: JudgeComparison[];
  /** Systems that report intent tiers only. */
  routing: Record<string, RoutingBreakdown>;
  /** Every system's per-question outcomes, in question order (for analyses across runs: pooled pairing, leave-one-conversation-out). */
  outcomes: Record<string, QuestionOutcome[]>;
  timings: { wallMs: number; systems: Record<string, SystemTimings> };
  config: {
    budgets: number[];
    conversations: string[];
    judgeBudget: number | null;
    judgeModels: { answer: string; judge: string } | null;
    bootstrap: { resamples: number; seed: number };
    version: string | null;
    systems: Record<string, string>;
    [extra: string]: unknown;
  };
}

/** What one system did on one memory, as cached. */
interface StoredSample {
  format: number;
  outcomes: QuestionOutcome[];
  prepareMs: number;
  retrieveMs: number;
  judgeMs: number;
}

/** What every system's stored outcomes of a run depend on, besides the system's own fingerprint. */
interface RunSettings {
  version: string | null;
  budgets: readonly number[];
  judgeBudget: number | null;
  models: JudgeConfig['models'] | null;
}

/**
 * Runs every system over every memory of the benchmark: prepare once per memory, retrieve once
 * per question (at the time it is asked), pack the ranking at every budget with the shared
 * packer, score evidence recall and the session ranking (and, in LLM mode, answer + judge).
 * Finished (system, memory) pairs are stored in `cache` and skipped on a re-run.
 */
export async function runEval(options: EvalOptions): Promise<EvalResults> {
  const started = performance.now();
  const budgets = [...new Set(options.budgets ?? DEFAULT_BUDGETS)].sort((a, b) => a - b);
  if (budgets.length === 0 || budgets.some((b) => !Number.isInteger(b) || b <= 0)) {
    throw new PrismError('INVALID_INPUT', `budgets must be positive integers, got ${budgets.join(',')}`);
  }
  if (options.systems.length === 0) throw new PrismError('INVALID_INPUT', 'no systems to evaluate');
  const names = options.systems.map((s) => s.name);
  if (new Set(names).size !== names.length) throw new PrismError('INVALID_INPUT', `duplicate system names: ${names.join(', ')}`);
  const { benchmark } = options;
  const byCategory = options.compareByCategory ?? [];
  const unknown = byCategory.filter((name) => !names.includes(name));
  if (unknown.length > 0) throw new PrismError('INVALID_INPUT', `cannot compare systems not in the run: ${unknown.join(', ')}`);
  // Every system's context is packed by o200k counts, baselines included.
  await loadTokenCounter();
  const judgeBudget = options.judge ? (options.judge.budget ?? (budgets.includes(2048) ? 2048 : (budgets.at(-1) as number))) : null;
  if (judgeBudget !== null && !budgets.includes(judgeBudget)) {
    throw new PrismError('INVALID_INPUT', `judge budget ${judgeBudget} is not among the budgets ${budgets.join(',')}`);
  }
  const bootstrap = { resamples: options.bootstrap?.resamples ?? BOOTSTRAP_RESAMPLES, seed: options.bootstrap?.seed ?? DEFAULT_CONFIG.seed };
  const pairs = pairsToCompare(options.systems, options.compare ?? []);
  const version = options.version ?? null;
  const runSettings: RunSettings = { version, budgets, judgeBudget, models: options.judge?.models ?? null };

  const totalQuestions = benchmark.samples.reduce((n, s) => n + s.questions.length, 0);
  const outcomes = new Map<string, QuestionOutcome[]>(names.map((n) => [n, []]));
  const timings = new Map<string, SystemTimings>(
    names.map((n) => [n, { prepareMs: 0, prepareMsByMemory: [], retrieveMs: 0, judgeMs: 0, cachedConversations: 0 }]),
  );
  let done = 0;
  try {
    for (const sample of benchmark.samples) {
      const conversationId = sample.conversation.id;
      const contentHash = await sha256Hex(JSON.stringify(sample));
      for (const system of options.systems) {
        throwIfAborted(options.signal);
        const key = await cacheKey(benchmark.name, system, conversationId, contentHash, runSettings);
        const cached = await loadStored(options.cache, key);
        const stored =
          cached ??
          (await evaluateSample(system, sample, budgets, judgeBudget, options, (answered) =>
            options.onProgress?.({
              phase: 'questions',
              system: system.name,
              conversationId,
              done: done + answered,
              total: totalQuestions * names.length,
              cached: false,
            }),
          ));
        if (cached) {
          options.onProgress?.({
            phase: 'questions',
            system: system.name,
            conversationId,
            done: done + stored.outcomes.length,
            total: totalQuestions * names.length,
            cached: true,
          });
        } else {
          await options.cache?.set(key, JSON.stringify(stored));
        }
        done += stored.outcomes.length;
        outcomes.get(system.name)?.push(...stored.outcomes);
        const t = timings.get(system.name) as SystemTimings;
        t.prepareMs += stored.prepareMs;
        t.prepareMsByMemory.push(stored.prepareMs);
        t.retrieveMs += stored.retrieveMs;
        t.judgeMs += stored.judgeMs;
        if (cached) t.cachedConversations++;
      }
    }
  } finally {
    // Memories are the outer loop (PRISM variants share each memory), so a system is done only
    // once the last memory is.
    for (const system of options.systems) await system.dispose?.();
  }

  const systems: Record<string, SystemResult> = {};
  for (const system of options.systems) {
    const summary = summariseOutcomes(outcomes.get(system.name) ?? [], budgets, benchmark.categories);
    const judged = (outcomes.get(system.name) ?? []).flatMap((o) => (o.judge ? [o.judge] : []));
    const tokensAtJudge = judgeBudget === null ? null : summary.meanContextTokensAtBudget[String(judgeBudget)];
    systems[system.name] = {
      ...summary,
      baseline: system.baseline,
      fingerprint: system.fingerprint,
      judgePer1k: summary.judge !== null && tokensAtJudge ? summary.judge / (tokensAtJudge / 1000) : null,
      answerLlm:
        judged.length === 0
          ? null
          : {
              callsPerQuery: judged.reduce((s, j) => s + j.llmCalls, 0) / judged.length,
              tokensPerQuery: judged.reduce((s, j) => s + j.llmTokens, 0) / judged.length,
            },
    };
  }

  const baselines = options.systems.filter((s) => s.baseline).map((s) => s.name);
  return {
    benchmark: benchmark.name,
    title: benchmark.title,
    categories: [...benchmark.categories],
    data: options.dataPath ?? null,
    questions: totalQuestions,
    mode: options.judge ? 'llm' : 'zero-llm',
    systems,
    budgets,
    dataset: benchmark.dataset,
    comparisons: compareWithBestBaseline(options.systems, systems, outcomes, budgets, bootstrap),
    judgeComparisons: compareJudgeWithBestBaseline(options.systems, systems, outcomes, bootstrap),
    breakdown: byCategory.flatMap((system) =>
      baselines.filter((reference) => reference !== system).flatMap((reference) => compareBreakdown(system, reference, outcomes, budgets, benchmark.categories, bootstrap)),
    ),
    paired: pairs.flatMap((pair) => budgets.flatMap((budget) => compareEr(pair, outcomes, budget, bootstrap) ?? [])),
    pairedJudge: pairs.flatMap((pair) => compareJudge(pair, outcomes, bootstrap) ?? []),
    routing: routingBreakdowns(outcomes, benchmark.categories),
    outcomes: Object.fromEntries(outcomes),
    timings: { wallMs: performance.now() - started, systems: Object.fromEntries(timings) },
    config: {
      ...options.runConfig,
      budgets,
      conversations: benchmark.samples.map((s) => s.conversation.id),
      judgeBudget,
      judgeModels: options.judge?.models ?? null,
      bootstrap,
      version,
      systems: Object.fromEntries(options.systems.map((s) => [s.name, s.fingerprint])),
    },
  };
}

/**
 * The fingerprint carries what the system's behaviour depends on (for PRISM: resolved config,
 * extraction, memory build); the run settings add what every system shares.
 */
async function cacheKey(benchmark: BenchmarkName, system: EvalSystem, conversationId: string, contentHash: string, runSettings: RunSettings): Promise<string> {
  const hash = await shortHash({ OUTCOME_FORMAT, fingerprint: system.fingerprint, contentHash, ...runSettings });
  return `${benchmark}/${system.name}/${conversationId}/${hash}`;
}

async function loadStored(cache: EvalCache | undefined, key: string): Promise<StoredSample | null> {
  const text = await cache?.get(key);
  if (text === undefined) return null;
  try {
    const stored = JSON.parse(text) as StoredSample;
    return stored.format === OUTCOME_FORMAT && Array.isArray(stored.outcomes) ? stored : null;
  } catch {
    // A torn or foreign entry is simply recomputed.
    return null;
  }
}

async function evaluateSample(
  system: EvalSystem,
  sample: EvalSample,
  budgets: readonly number[],
  judgeBudget: number | null,
  options: EvalOptions,
  onAnswered: (answered: number) => void,
): Promise<StoredSample> {
  const { signal } = options;
  const conversationId = sample.conversation.id;
  const prepareStart = performance.now();
  await system.prepare(sample, {
    signal,
    onProgress: (done, total) => options.onProgress?.({ phase: 'prepare', system: system.name, conversationId, done, total }),
  });
  const stored: StoredSample = { format: OUTCOME_FORMAT, outcomes: [], prepareMs: performance.now() - prepareStart, retrieveMs: 0, judgeMs: 0 };
  const largest = budgets.at(-1) as number;
  const sessionOf = sessionOfTurn(sample);
  for (const q of sample.questions) {
    throwIfAborted(signal);
    // One ranking packed at every budget, unless the system ranks differently per budget.
    const retrievals = new Map<number, { result: RetrievalResult; ms: number }>();
    for (const budget of system.budgetSensitive ? budgets : [largest]) {
      const t0 = performance.now();
      const result = await system.retrieve(q.question, { budget, askedAt: q.askedAt, signal });
      retrievals.set(budget, { result, ms: performance.now() - t0 });
    }
    const main = retrievals.get(largest) as { result: RetrievalResult; ms: number };
    const packed = new Map<number, PackedContext>(
      budgets.map((b) => [b, packContext((retrievals.get(b) ?? main).result.units, b)]),
    );
    let judge: JudgedAnswer | null = null;
    if (options.judge && judgeBudget !== null) {
      const t0 = performance.now();
      judge = await answerAndJudge(
        options.judge.client,
        { question: q.question, goldAnswer: q.answer, context: packed.get(judgeBudget)?.text ?? '' },
        signal,
      );
      stored.judgeMs += performance.now() - t0;
    }
    stored.retrieveMs += [...retrievals.values()].reduce((s, r) => s + r.ms, 0);
    stored.outcomes.push({
      ...scoreRetrieval(q, main.result, packed, sessionOf),
      key: q.key,
      conversationId,
      category: q.category,
      abstention: q.abstention,
      lexicalGap: q.lexicalGap,
      contextTokens: Object.fromEntries(budgets.map((b) => [String(b), packed.get(b)?.tokens ?? 0])),
      latencyMs: main.ms,
      llmCalls: main.result.llmCalls,
      llmTokens: main.result.llmTokens ?? 0,
      intent: main.result.intent ?? null,
      judge,
    });
    onAnswered(stored.outcomes.length);
  }
  return stored;
}

/**
 * What a question's retrieval found: evidence recall of the context at each budget and of the
 * top-K ranked Episodes (or units); the session ranking, where a session ranks as its
 * best-ranked unit does and, past the units in the largest context, its best-ranked Episode; a
 * latest-value turn in the context; the best unit's score.
 */
function scoreRetrieval(
  q: EvalQuestion,
  main: RetrievalResult,
  packed: ReadonlyMap<number, PackedContext>,
  sessionOf: ReadonlyMap<string, string>,
): Pick<QuestionOutcome, 'recall' | 'sessions' | 'latest' | 'topScore'> {
  const atBudget = (score: (dialogIds: readonly string[]) => number) =>
    Object.fromEntries([...packed].map(([budget, context]) => [String(budget), score(context.dialogIds)]));
  const recallRanking = main.episodes ?? main.units;
  const ranking = q.goldSessions === null ? null : sessionRanking([...main.units, ...(main.episodes ?? [])], sessionOf);
  const latest = q.latestGold;
  return {
    recall:
      q.gold.length === 0
        ? null
        : {
            atBudget: atBudget((dialogIds) => evidenceRecall(q.gold, dialogIds) ?? 0),
            atK: Object.fromEntries(RECALL_KS.map((k) => [String(k), recallAtK(q.gold, recallRanking, k) ?? 0])),
          },
    sessions:
      q.goldSessions === null || ranking === null
        ? null
        : {
            recallAny: Object.fromEntries(SESSION_KS.map((k) => [String(k), recallAny(q.goldSessions as string[], ranking, k)])),
            ndcg: ndcgAtK(q.goldSessions, ranking, NDCG_K),
          },
    latest: latest === null || latest.length === 0 ? null : atBudget((dialogIds) => (latest.some((id) => dialogIds.includes(id)) ? 1 : 0)),
    topScore: main.units.reduce<number | null>((best, unit) => (best === null || unit.score > best ? unit.score : best), null),
  };
}

/** Per-question values of two systems on the questions both have, aligned by key. */
function aligned(
  a: readonly QuestionOutcome[],
  b: readonly QuestionOutcome[],
  value: (o: QuestionOutcome) => number | null,
): { a: number[]; b: number[] } {
  const byKey = new Map(b.map((o) => [o.key, o]));
  const pairs = { a: [] as number[], b: [] as number[] };
  for (const outcome of a) {
    const other = byKey.get(outcome.key);
    const va = value(outcome);
    const vb = other ? value(other) : null;
    if (va === null || vb === null) continue;
    pairs.a.push(va);
    pairs.b.push(vb);
  }
  return pairs;
}

function bestBaseline(
  systems: readonly EvalSystem[],
  results: Record<string, SystemResult>,
  score: (r: SystemResult) => number | null,
): string | null {
  let best: { name: string; score: number } | null = null;
  for (const system of systems) {
    const s = system.baseline ? score(results[system.name] as SystemResult) : null;
    if (s !== null && (best === null || s > best.score)) best = { name: system.name, score: s };
  }
  return best?.name ?? null;
}

/** Each variant's parent against the variant, then the requested pairs; duplicates dropped. */
function pairsToCompare(systems: readonly EvalSystem[], requested: readonly SystemPair[]): ComparedPair[] {
  const names = new Set(systems.map((s) => s.name));
  const unknown = requested.flatMap((p) => [p.system, p.reference]).filter((name) => !names.has(name));
  if (unknown.length > 0) throw new PrismError('INVALID_INPUT', `cannot compare systems not in the run: ${[...new Set(unknown)].join(', ')}`);
  const self = requested.find((p) => p.system === p.reference);
  if (self) throw new PrismError('INVALID_INPUT', `cannot compare ${self.system} with itself`);
  const pairs: ComparedPair[] = [];
  const add = (pair: SystemPair, kind: ComparisonKind) => {
    if (!pairs.some((p) => p.system === pair.system && p.reference === pair.reference)) pairs.push({ ...pair, kind });
  };
  for (const system of systems) {
    if (system.variantOf !== undefined && names.has(system.variantOf)) add({ system: system.variantOf, reference: system.name }, 'variant');
  }
  for (const pair of requested) add(pair, 'requested');
  return pairs;
}

/** Paired bootstrap CI of the per-question ER difference at `budget`; null when no question is shared. */
function compareEr(pair: ComparedPair, outcomes: Map<string, QuestionOutcome[]>, budget: number, bootstrap: BootstrapOptions): PairedComparison | null {
  const values = aligned(outcomes.get(pair.system) ?? [], outcomes.get(pair.reference) ?? [], (o) => o.recall?.atBudget[String(budget)] ?? null);
  if (values.a.length === 0) return null;
  const ci = pairedBootstrapCI(values.a, values.b, bootstrap);
  return { ...pair, budget, n: ci.n, diff: ci.estimate, low: ci.low, high: ci.high };
}

/** Paired bootstrap CI and McNemar mid-p on judge labels; null when no question was judged for both. */
function compareJudge(pair: ComparedPair, outcomes: Map<string, QuestionOutcome[]>, bootstrap: BootstrapOptions): JudgeComparison | null {
  const label = (o: QuestionOutcome) => (o.judge ? Number(o.judge.correct) : null);
  const values = aligned(outcomes.get(pair.system) ?? [], outcomes.get(pair.reference) ?? [], label);
  if (values.a.length === 0) return null;
  const ci = pairedBootstrapCI(values.a, values.b, bootstrap);
  const test = mcNemarMidP(
    values.a.map((v) => v === 1),
    values.b.map((v) => v === 1),
  );
  return { ...pair, n: ci.n, diff: ci.estimate, low: ci.low, high: ci.high, systemOnly: test.aOnly, referenceOnly: test.bOnly, midP: test.midP };
}

/**
 * `system` against `reference` over every category's questions and over all of them, on ER at
 * each budget and on the session ranking (recall_any@K, NDCG); metrics no shared question has
 * are left out.
 */
function compareBreakdown(
  system: string,
  reference: string,
  outcomes: Map<string, QuestionOutcome[]>,
  budgets: readonly number[],
  categories: readonly string[],
  bootstrap: BootstrapOptions,
): BreakdownComparison[] {
  const metrics: Array<[string, (o: QuestionOutcome) => number | null]> = [
    ...budgets.map((b): [string, (o: QuestionOutcome) => number | null] => [`ER@${b}`, (o) => o.recall?.atBudget[String(b)] ?? null]),
    ...SESSION_KS.map((k): [string, (o: QuestionOutcome) => number | null] => [`R@${k}`, (o) => o.sessions?.recallAny[String(k)] ?? null]),
    [`NDCG@${NDCG_K}`, (o) => o.sessions?.ndcg ?? null],
  ];
  return [null, ...categories].flatMap((category) =>
    metrics.flatMap(([metric, value]) => {
      const inCategory = (o: QuestionOutcome) => (category === null || o.category === category ? value(o) : null);
      const values = aligned(outcomes.get(system) ?? [], outcomes.get(reference) ?? [], inCategory);
      if (values.a.length === 0) return [];
      const ci = pairedBootstrapCI(values.a, values.b, bootstrap);
      return [{ system, reference, category, metric, n: ci.n, diff: ci.estimate, low: ci.low, high: ci.high }];
    }),
  );
}

function compareWithBestBaseline(
  systems: readonly EvalSystem[],
  results: Record<string, SystemResult>,
  outcomes: Map<string, QuestionOutcome[]>,
  budgets: readonly number[],
  bootstrap: BootstrapOptions,
): PairedComparison[] {
  return budgets.flatMap((budget) => {
    // A baseline that scored no question has ER 0 by convention, not a measured 0.
    const reference = bestBaseline(systems, results, (r) => (r.n > 0 ? (r.erAtBudget[String(budget)] ?? null) : null));
    if (reference === null) return [];
    return systems.flatMap((system) =>
      system.name === reference ? [] : (compareEr({ system: system.name, reference, kind: 'best-baseline' }, outcomes, budget, bootstrap) ?? []),
    );
  });
}

function compareJudgeWithBestBaseline(
  systems: readonly EvalSystem[],
  results: Record<string, SystemResult>,
  outcomes: Map<string, QuestionOutcome[]>,
  bootstrap: BootstrapOptions,
): JudgeComparison[] {
  const reference = bestBaseline(systems, results, (r) => r.judge);
  if (reference === null) return [];
  return systems.flatMap((system) =>
    system.name === reference ? [] : (compareJudge({ system: system.name, reference, kind: 'best-baseline' }, outcomes, bootstrap) ?? []),
  );
}

function routingBreakdowns(outcomes: Map<string, QuestionOutcome[]>, categories: readonly string[]): Record<string, RoutingBreakdown> {
  const routing: Record<string, RoutingBreakdown> = {};
  for (const [name, list] of outcomes) {
    const routed = list.filter((o) => o.intent !== null);
    if (routed.length === 0) continue;
    const breakdown: RoutingBreakdown = {};
    for (const o of routed) {
      const tier = (o.intent as { tier: string }).tier;
      const row = (breakdown[tier] ??= {
        total: 0,
        share: 0,
        byCategory: Object.fromEntries(categories.map((c) => [c, 0])),
      });
      row.total++;
      row.byCategory[o.category] = (row.byCategory[o.category] ?? 0) + 1;
    }
    for (const row of Object.values(breakdown)) row.share = row.total / routed.length;
    routing[name] = breakdown;
  }
  return routing;
}
