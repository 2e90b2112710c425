import { CATEGORY_NAMES, type LocomoCategory } from '../ingest/locomo.ts';

/** Categories that are scored; 5 (adversarial) has no evidence to recall and is skipped. */
export type EvalCategory = Exclude<LocomoCategory, 5>;
export const EVAL_CATEGORIES: readonly EvalCategory[] = [1, 2, 3, 4];
export type CategoryName = 'multi-hop' | 'temporal' | 'open-domain' | 'single-hop';

export function categoryName(category: EvalCategory): CategoryName {
  return CATEGORY_NAMES[category] as CategoryName;
}

export function isEvalCategory(category: LocomoCategory): category is EvalCategory {
  return category !== 5;
}

/** The K of ER@K reported (paper-compatible). */
export const RECALL_KS = [1, 5, 10] as const;

/** Anything ranked that names the turns it covers: a ContextUnit, an Episode. */
export interface CoversTurns {
  readonly dialogIds: readonly string[];
}

/** Share of the gold turns that are among `covered`; null when there is no gold turn to find. */
export function evidenceRecall(gold: readonly string[], covered: Iterable<string>): number | null {
  if (gold.length === 0) return null;
  const set = covered instanceof Set ? (covered as Set<string>) : new Set(covered);
  return gold.filter((id) => set.has(id)).length / gold.length;
}

/** ER@K: share of the gold turns inside the first `k` ranked items. */
export function recallAtK(gold: readonly string[], ranked: readonly CoversTurns[], k: number): number | null {
  return evidenceRecall(gold, ranked.slice(0, k).flatMap((item) => item.dialogIds));
}

/** Arithmetic mean; null for no values (a metric over nothing is undefined, not zero). */
export function mean(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  return values.reduce((sum, v) => sum + v, 0) / values.length;
}

/**
 * The p-th percentile (0–100) with linear interpolation between closest ranks; null for no
 * values. The one definition for the harness and the bench, so their p50/p95 compare.
 */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (Math.min(100, Math.max(0, p)) / 100) * (sorted.length - 1);
  const lower = Math.floor(rank);
  const upper = Math.ceil(rank);
  const lo = sorted[lower] as number;
  const hi = sorted[upper] as number;
  return lo + (hi - lo) * (rank - lower);
}

/** What one system did on one question; stored per (system, conversation) so runs can resume. */
export interface QuestionOutcome {
  /** `<conversationId>#<index in the sample's qa list>`: pairs outcomes across systems. */
  key: string;
  conversationId: string;
  category: EvalCategory;
  /** No gold turn shares a content word with the question (see `isLexicalGap`). */
  lexicalGap: boolean;
  /** Evidence recall, or null when the question has no resolvable gold turn (excluded from ER). */
  recall: {
    /** ER of the context packed at each budget (keys are budgets in tokens). */
    atBudget: Record<string, number>;
    /** ER@K over the ranked Episodes (or units) before packing (keys are K). */
    atK: Record<string, number>;
  } | null;
  /** Tokens of the packed context at each budget, counted with the fixed tokenizer. */
  contextTokens: Record<string, number>;
  /** Wall time of the system's retrieval for this question (its largest-budget call, if budget-sensitive). */
  latencyMs: number;
  /** LLM calls (and their tokens) the system spent retrieving for this question. */
  llmCalls: number;
  llmTokens: number;
  /** N4 routing, when the system reports it. */
  intent: { label: string; tier: string } | null;
  /** Answer + judge outcome in LLM mode; null in zero-LLM mode. */
  judge: JudgedAnswer | null;
}

export interface JudgedAnswer {
  answer: string;
  correct: boolean;
  reasoning: string;
  /** LLM calls and tokens of the answer and judge roles for this question. */
  llmCalls: number;
  llmTokens: number;
}

/** ER figures are 0..1; over no scored question they are 0, with `n` 0 to say so. */
export interface CategorySummary {
  erAtBudget: Record<string, number>;
  erAtK: Record<string, number>;
  judge: number | null;
  /** Questions scored for ER (those with resolvable evidence). */
  n: number;
  /** All questions of the category, scored or not. */
  questions: number;
}

export interface OutcomeSummary {
  /** 0..1, as CategorySummary's. */
  erAtBudget: Record<string, number>;
  erAtK: Record<string, number>;
  /** Questions scored for ER (those with resolvable evidence). */
  n: number;
  /** Mean packed-context tokens at the largest budget. */
  meanContextTokens: number | null;
  meanContextTokensAtBudget: Record<string, number | null>;
  /** CORRECT / (CORRECT + WRONG) over judged questions; null when nothing was judged. */
  judge: number | null;
  llmCallsPerQuery: number | null;
  llmTokensPerQuery: number | null;
  latencyMs: { p50: number | null; p95: number | null };
  perCategory: Record<CategoryName, CategorySummary>;
  /** The lexical-gap slice: questions whose gold turns share no content word with them. */
  lexicalGap: Pick<CategorySummary, 'erAtBudget' | 'erAtK' | 'n'>;
  questions: number;
  /** Questions excluded from ER because none of their evidence ids resolve. */
  questionsWithoutEvidence: number;
}

/** Averages per-question outcomes into one system's figures. */
export function summariseOutcomes(outcomes: readonly QuestionOutcome[], budgets: readonly number[]): OutcomeSummary {
  const largest = Math.max(...budgets);
  const tokensAt = (b: number) => mean(outcomes.map((o) => o.contextTokens[String(b)] ?? 0));
  const latencies = outcomes.map((o) => o.latencyMs);
  const perCategory = {} as Record<CategoryName, CategorySummary>;
  for (const category of EVAL_CATEGORIES) {
    const inCategory = outcomes.filter((o) => o.category === category);
    perCategory[categoryName(category)] = {
      ...recallSummary(inCategory, budgets),
      judge: judgeScore(inCategory),
      questions: inCategory.length,
    };
  }
  return {
    ...recallSummary(outcomes, budgets),
    meanContextTokens: tokensAt(largest),
    meanContextTokensAtBudget: Object.fromEntries(budgets.map((b) => [String(b), tokensAt(b)])),
    judge: judgeScore(outcomes),
    llmCallsPerQuery: mean(outcomes.map((o) => o.llmCalls)),
    llmTokensPerQuery: mean(outcomes.map((o) => o.llmTokens)),
    latencyMs: { p50: percentile(latencies, 50), p95: percentile(latencies, 95) },
    perCategory,
    lexicalGap: recallSummary(outcomes.filter((o) => o.lexicalGap), budgets),
    questions: outcomes.length,
    questionsWithoutEvidence: outcomes.filter((o) => o.recall === null).length,
  };
}

/** ER per budget and per K over the outcomes with resolvable evidence, and their number. */
export function recallSummary(
  outcomes: readonly QuestionOutcome[],
  budgets: readonly number[],
): Pick<CategorySummary, 'erAtBudget' | 'erAtK' | 'n'> {
  const scored = outcomes.flatMap((o) => (o.recall ? [o.recall] : []));
  // results.json promises ER in 0..1, never null: an empty mean is reported as 0 beside n = 0.
  const average = (values: number[]) => mean(values) ?? 0;
  return {
    erAtBudget: Object.fromEntries(budgets.map((b) => [String(b), average(scored.map((r) => r.atBudget[String(b)] ?? 0))])),
    erAtK: Object.fromEntries(RECALL_KS.map((k) => [String(k), average(scored.map((r) => r.atK[String(k)] ?? 0))])),
    n: scored.length,
  };
}

function judgeScore(outcomes: readonly QuestionOutcome[]): number | null {
  return mean(outcomes.flatMap((o) => (o.judge ? [o.judge.correct ? 1 : 0] : [])));
}
