import { DEFAULT_CONFIG } from '../config.ts';
import { PrismError, throwIfAborted } from '../errors.ts';
import type { LocomoSample } from '../ingest/locomo.ts';
import { packContext, type PackedContext } from '../retrieve/pack.ts';
import { loadTokenCounter } from '../util/tokens.ts';
import { sha256Hex } from '../util/hash.ts';
import { createEvidenceResolver } from './evidence.ts';
import { shortHash } from './fingerprint.ts';
import { answerAndJudge, type JudgeConfig } from './judge.ts';
import {
  EVAL_CATEGORIES,
  RECALL_KS,
  categoryName,
  evidenceRecall,
  isEvalCategory,
  recallAtK,
  summariseOutcomes,
  type CategoryName,
  type EvalCategory,
  type JudgedAnswer,
  type OutcomeSummary,
  type QuestionOutcome,
} from './metrics.ts';
import { isLexicalGap } from './slices.ts';
import { BOOTSTRAP_RESAMPLES, mcNemarMidP, pairedBootstrapCI, type BootstrapOptions } from './stats.ts';
import type { EvalSystem, RetrievalResult } from './systems.ts';

export const DEFAULT_BUDGETS: readonly number[] = [256, 512, 1024, 2048, 4096];

/** Bump when the meaning of a stored outcome changes, so old partial results are not reused. */
const OUTCOME_FORMAT = 2;

/** Key-value persistence of finished (system, conversation) work; values are JSON text. */
export interface EvalCache {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string): Promise<void>;
}

export type EvalProgress =
  /** A system is ingesting a conversation; done/total as the system reports them. */
  | { phase: 'prepare'; system: string; conversationId: string; done: number; total: number }
  /** Questions answered so far over the whole run (all systems); `cached` when restored, not run. */
  | { phase: 'questions'; system: string; conversationId: string; done: number; total: number; cached: boolean };

export interface LocomoEvalOptions {
  samples: readonly LocomoSample[];
  systems: readonly EvalSystem[];
  /** Path of the data file, echoed into the results. */
  dataPath?: string;
  /** Context budgets in tokens; default 256, 512, 1024, 2048, 4096. */
  budgets?: readonly number[];
  /** Conversation (sample) ids to evaluate; all when absent. */
  conversations?: readonly string[];
  /** LLM mode: answer + judge each question. Zero-LLM mode when absent. */
  judge?: JudgeConfig;
  /** Where finished (system, conversation) outcomes are kept, so an interrupted run resumes. */
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

export interface DatasetStats {
  conversations: number;
  sessions: number;
  turns: number;
  /** Evaluated questions per category (category 5 is skipped and counted apart). */
  questionsPerCategory: Record<CategoryName, number>;
  adversarialSkipped: number;
  evidenceIds: number;
  /** Evidence ids (after normalisation) naming no turn of their conversation. */
  unresolvedIds: { question: string; id: string }[];
  /** Questions excluded from ER because none of their evidence resolves. */
  questionsWithoutEvidence: string[];
}

/** N4 routing: how many questions each tier decided, by category. */
export type RoutingBreakdown = Record<string, { total: number; share: number; byCategory: Record<CategoryName, number> }>;

export interface SystemTimings {
  prepareMs: number;
  retrieveMs: number;
  judgeMs: number;
  /** Conversations restored from the cache (their timings are those of the run that computed them). */
  cachedConversations: number;
}

export interface LocomoEvalResults {
  data: string | null;
  /** Evaluated questions (categories 1–4) per system. */
  questions: number;
  mode: 'zero-llm' | 'llm';
  systems: Record<string, SystemResult>;
  budgets: number[];
  dataset: DatasetStats;
  /** Per budget, every system against the best baseline at that budget. */
  comparisons: PairedComparison[];
  /** Judge labels against the best baseline by judge score; empty in zero-LLM mode. */
  judgeComparisons: JudgeComparison[];
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

interface StoredConversation {
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

/** One evaluated question with its gold turns resolved. */
interface EvalQuestion {
  key: string;
  question: string;
  answer: string;
  category: EvalCategory;
  gold: string[];
  lexicalGap: boolean;
}

/**
 * Runs every system over every selected conversation: prepare once per conversation, retrieve
 * once per question, pack the ranking at every budget with the shared packer, score evidence
 * recall (and, in LLM mode, answer + judge). Finished (system, conversation) pairs are stored in
 * `cache` and skipped on a re-run.
 */
export async function runLocomoEval(options: LocomoEvalOptions): Promise<LocomoEvalResults> {
  const started = performance.now();
  const budgets = [...new Set(options.budgets ?? DEFAULT_BUDGETS)].sort((a, b) => a - b);
  if (budgets.length === 0 || budgets.some((b) => !Number.isInteger(b) || b <= 0)) {
    throw new PrismError('INVALID_INPUT', `budgets must be positive integers, got ${budgets.join(',')}`);
  }
  if (options.systems.length === 0) throw new PrismError('INVALID_INPUT', 'no systems to evaluate');
  const names = options.systems.map((s) => s.name);
  if (new Set(names).size !== names.length) throw new PrismError('INVALID_INPUT', `duplicate system names: ${names.join(', ')}`);
  const samples = selectSamples(options.samples, options.conversations);
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

  const { questions, dataset } = resolveQuestions(samples);
  const totalQuestions = [...questions.values()].reduce((n, qs) => n + qs.length, 0);
  const outcomes = new Map<string, QuestionOutcome[]>(names.map((n) => [n, []]));
  const timings = new Map<string, SystemTimings>(
    names.map((n) => [n, { prepareMs: 0, retrieveMs: 0, judgeMs: 0, cachedConversations: 0 }]),
  );
  let done = 0;
  try {
    for (const sample of samples) {
      const conversationId = sample.conversation.id;
      const sampleQuestions = questions.get(conversationId) ?? [];
      const contentHash = await sha256Hex(JSON.stringify(sample));
      for (const system of options.systems) {
        throwIfAborted(options.signal);
        const key = await cacheKey(system, conversationId, contentHash, runSettings);
        const cached = await loadStored(options.cache, key);
        const stored =
          cached ??
          (await evaluateConversation(system, sample, sampleQuestions, budgets, judgeBudget, options, (answered) =>
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
        t.retrieveMs += stored.retrieveMs;
        t.judgeMs += stored.judgeMs;
        if (cached) t.cachedConversations++;
      }
    }
  } finally {
    // Conversations are the outer loop (PRISM variants share each conversation's memory), so a
    // system is done only once the last conversation is.
    for (const system of options.systems) await system.dispose?.();
  }

  const systems: Record<string, SystemResult> = {};
  for (const system of options.systems) {
    const summary = summariseOutcomes(outcomes.get(system.name) ?? [], budgets);
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

  return {
    data: options.dataPath ?? null,
    questions: totalQuestions,
    mode: options.judge ? 'llm' : 'zero-llm',
    systems,
    budgets,
    dataset,
    comparisons: compareWithBestBaseline(options.systems, systems, outcomes, budgets, bootstrap),
    judgeComparisons: compareJudgeWithBestBaseline(options.systems, systems, outcomes, bootstrap),
    paired: pairs.flatMap((pair) => budgets.flatMap((budget) => compareEr(pair, outcomes, budget, bootstrap) ?? [])),
    pairedJudge: pairs.flatMap((pair) => compareJudge(pair, outcomes, bootstrap) ?? []),
    routing: routingBreakdowns(outcomes),
    outcomes: Object.fromEntries(outcomes),
    timings: { wallMs: performance.now() - started, systems: Object.fromEntries(timings) },
    config: {
      ...options.runConfig,
      budgets,
      conversations: samples.map((s) => s.conversation.id),
      judgeBudget,
      judgeModels: options.judge?.models ?? null,
      bootstrap,
      version,
      systems: Object.fromEntries(options.systems.map((s) => [s.name, s.fingerprint])),
    },
  };
}

function selectSamples(samples: readonly LocomoSample[], ids: readonly string[] | undefined): LocomoSample[] {
  if (!ids || ids.length === 0) return [...samples];
  const known = new Set(samples.map((s) => s.conversation.id));
  const missing = ids.filter((id) => !known.has(id));
  if (missing.length > 0) {
    throw new PrismError('INVALID_INPUT', `unknown conversations: ${missing.join(', ')} (known: ${[...known].join(', ')})`);
  }
  const wanted = new Set(ids);
  return samples.filter((s) => wanted.has(s.conversation.id));
}

function resolveQuestions(samples: readonly LocomoSample[]): { questions: Map<string, EvalQuestion[]>; dataset: DatasetStats } {
  const questions = new Map<string, EvalQuestion[]>();
  const dataset: DatasetStats = {
    conversations: samples.length,
    sessions: 0,
    turns: 0,
    questionsPerCategory: Object.fromEntries(EVAL_CATEGORIES.map((c) => [categoryName(c), 0])) as Record<CategoryName, number>,
    adversarialSkipped: 0,
    evidenceIds: 0,
    unresolvedIds: [],
    questionsWithoutEvidence: [],
  };
  for (const sample of samples) {
    const { conversation } = sample;
    dataset.sessions += conversation.sessions.length;
    dataset.turns += conversation.sessions.reduce((n, s) => n + s.turns.length, 0);
    const resolver = createEvidenceResolver(conversation);
    const turnTexts = new Map(conversation.sessions.flatMap((session) => session.turns.map((turn) => [turn.dialogId, turn.text] as const)));
    const list: EvalQuestion[] = [];
    sample.questions.forEach((q, index) => {
      const { category } = q;
      if (!isEvalCategory(category)) {
        dataset.adversarialSkipped++;
        return;
      }
      const key = `${conversation.id}#${index}`;
      const { turns, unresolved } = resolver.resolve(q.evidence);
      dataset.questionsPerCategory[categoryName(category)]++;
      dataset.evidenceIds += turns.length + unresolved.length;
      dataset.unresolvedIds.push(...unresolved.map((id) => ({ question: key, id })));
      if (turns.length === 0) dataset.questionsWithoutEvidence.push(key);
      const lexicalGap = isLexicalGap(q.question, turns.map((id) => turnTexts.get(id) ?? ''));
      list.push({ key, question: q.question, answer: q.answer, category, gold: turns, lexicalGap });
    });
    questions.set(conversation.id, list);
  }
  return { questions, dataset };
}

/**
 * The fingerprint carries what the system's behaviour depends on (for PRISM: resolved config,
 * extraction, memory build); the run settings add what every system shares.
 */
async function cacheKey(system: EvalSystem, conversationId: string, contentHash: string, runSettings: RunSettings): Promise<string> {
  const hash = await shortHash({ OUTCOME_FORMAT, fingerprint: system.fingerprint, contentHash, ...runSettings });
  return `locomo/${system.name}/${conversationId}/${hash}`;
}

async function loadStored(cache: EvalCache | undefined, key: string): Promise<StoredConversation | null> {
  const text = await cache?.get(key);
  if (text === undefined) return null;
  try {
    const stored = JSON.parse(text) as StoredConversation;
    return stored.format === OUTCOME_FORMAT && Array.isArray(stored.outcomes) ? stored : null;
  } catch {
    // A torn or foreign entry is simply recomputed.
    return null;
  }
}

async function evaluateConversation(
  system: EvalSystem,
  sample: LocomoSample,
  questions: readonly EvalQuestion[],
  budgets: readonly number[],
  judgeBudget: number | null,
  options: LocomoEvalOptions,
  onAnswered: (answered: number) => void,
): Promise<StoredConversation> {
  const { signal } = options;
  const conversationId = sample.conversation.id;
  const prepareStart = performance.now();
  await system.prepare(sample, {
    signal,
    onProgress: (done, total) => options.onProgress?.({ phase: 'prepare', system: system.name, conversationId, done, total }),
  });
  const stored: StoredConversation = { format: OUTCOME_FORMAT, outcomes: [], prepareMs: performance.now() - prepareStart, retrieveMs: 0, judgeMs: 0 };
  const largest = budgets.at(-1) as number;
  for (const q of questions) {
    throwIfAborted(signal);
    // One ranking packed at every budget, unless the system ranks differently per budget.
    const retrievals = new Map<number, { result: RetrievalResult; ms: number }>();
    for (const budget of system.budgetSensitive ? budgets : [largest]) {
      const t0 = performance.now();
      const result = await system.retrieve(q.question, { budget, signal });
      retrievals.set(budget, { result, ms: performance.now() - t0 });
    }
    const main = retrievals.get(largest) as { result: RetrievalResult; ms: number };
    const packed = new Map<number, PackedContext>(
      budgets.map((b) => [b, packContext((retrievals.get(b) ?? main).result.units, b)]),
    );
    const recallRanking = main.result.episodes ?? main.result.units;
    const recall =
      q.gold.length === 0
        ? null
        : {
            atBudget: Object.fromEntries(budgets.map((b) => [String(b), evidenceRecall(q.gold, packed.get(b)?.dialogIds ?? []) ?? 0])),
            atK: Object.fromEntries(RECALL_KS.map((k) => [String(k), recallAtK(q.gold, recallRanking, k) ?? 0])),
          };
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
      key: q.key,
      conversationId,
      category: q.category,
      lexicalGap: q.lexicalGap,
      recall,
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

function routingBreakdowns(outcomes: Map<string, QuestionOutcome[]>): Record<string, RoutingBreakdown> {
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
        byCategory: Object.fromEntries(EVAL_CATEGORIES.map((c) => [categoryName(c), 0])) as Record<CategoryName, number>,
      });
      row.total++;
      row.byCategory[categoryName(o.category)]++;
    }
    for (const row of Object.values(breakdown)) row.share = row.total / routed.length;
    routing[name] = breakdown;
  }
  return routing;
}
