/** The K of ER@K reported (paper-compatible). */
export const RECALL_KS = [1, 5, 10] as const;

/** The K of session recall_any@K (LongMemEval's retrieval metric), and of NDCG over sessions. */
export const SESSION_KS = [5, 10] as const;
export const NDCG_K = 10;

/**
 * Share of abstention questions a system's best score leaves below this percentile of its best
 * scores on the answerable questions: the questions a threshold that gives up 10% of the
 * answerable ones would flag as having no answer in memory.
 */
const LOW_SCORE_PERCENTILE = 10;

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

/**
 * Session labels in the order a ranking first reaches them: a session ranks where its
 * best-ranked item does. Items may cover several turns (an Episode); unknown dialog ids are skipped.
 */
export function sessionRanking(ranked: readonly CoversTurns[], sessionOf: ReadonlyMap<string, string>): string[] {
  const order = new Set<string>();
  for (const item of ranked) {
    for (const dialogId of item.dialogIds) {
      const session = sessionOf.get(dialogId);
      if (session !== undefined) order.add(session);
    }
  }
  return [...order];
}

/** recall_any@K: 1 when any gold session is among the first `k` of the ranking, else 0. */
export function recallAny(gold: readonly string[], ranking: readonly string[], k: number): number {
  return ranking.slice(0, k).some((session) => gold.includes(session)) ? 1 : 0;
}

/** NDCG@K with binary relevance: DCG of the gold sessions' ranks over the DCG of the ideal ranking. */
export function ndcgAtK(gold: readonly string[], ranking: readonly string[], k: number): number {
  const gain = (rank: number) => 1 / Math.log2(rank + 2);
  const dcg = ranking.slice(0, k).reduce((sum, session, rank) => sum + (gold.includes(session) ? gain(rank) : 0), 0);
  let ideal = 0;
  for (let rank = 0; rank < Math.min(k, new Set(gold).size); rank++) ideal += gain(rank);
  return ideal === 0 ? 0 : dcg / ideal;
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
  /** The benchmark's category name. */
  category: string;
  /** An abstention question (no answer in memory): no recall, reported apart. */
  abstention: boolean;
  /** No gold turn shares a content word with the question (see `isLexicalGap`). */
  lexicalGap: boolean;
  /** Evidence recall, or null when the question has no resolvable gold turn (excluded from ER). */
  recall: {
    /** ER of the context packed at each budget (keys are budgets in tokens). */
    atBudget: Record<string, number>;
    /** ER@K over the ranked Episodes (or units) before packing (keys are K). */
    atK: Record<string, number>;
  } | null;
  /** Session ranking (see `sessionRanking`), or null when the question has no gold sessions. */
  sessions: {
    /** recall_any@K, 1 or 0 (keys are K). */
    recallAny: Record<string, number>;
    ndcg: number;
  } | null;
  /** Whether a turn holding the latest value (`EvalQuestion.latestGold`) is inside the context at each budget, 1 or 0; null for other questions. */
  latest: Record<string, number> | null;
  /** Score of the system's best unit (on its own scale), null when it ranked nothing. */
  topScore: number | null;
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
  sessions: SessionSummary;
  latest: LatestSummary;
}

/** Session ranking figures over the `n` questions with gold sessions (0 with n = 0). */
export interface SessionSummary {
  recallAny: Record<string, number>;
  ndcg: number;
  n: number;
}

/** Share of the `n` questions with a latest value whose latest-value turn is in the context, per budget. */
export interface LatestSummary {
  atBudget: Record<string, number>;
  n: number;
}

/**
 * Abstention questions: how often the context is empty, and how far the best score tells them
 * from the answerable ones (null without both kinds).
 */
export interface AbstentionSummary {
  n: number;
  /** Share with an empty context, per budget. */
  emptyAtBudget: Record<string, number>;
  /** Share whose best score is below the answerable questions' 10th percentile (see `LOW_SCORE_PERCENTILE`). */
  lowScoring: number | null;
  /** Probability that an answerable question's best score beats an abstention question's (ties half): 0.5 is no signal. */
  auroc: number | null;
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
  perCategory: Record<string, CategorySummary>;
  sessions: SessionSummary;
  latest: LatestSummary;
  abstention: AbstentionSummary;
  /** The lexical-gap slice: questions whose gold turns share no content word with them. */
  lexicalGap: Pick<CategorySummary, 'erAtBudget' | 'erAtK' | 'n'>;
  questions: number;
  /** Questions excluded from ER because none of their evidence ids resolve. */
  questionsWithoutEvidence: number;
}

/** Averages per-question outcomes into one system's figures, per category in `categories` too. */
export function summariseOutcomes(outcomes: readonly QuestionOutcome[], budgets: readonly number[], categories: readonly string[]): OutcomeSummary {
  const largest = Math.max(...budgets);
  const tokensAt = (b: number) => mean(outcomes.map((o) => o.contextTokens[String(b)] ?? 0));
  const latencies = outcomes.map((o) => o.latencyMs);
  const perCategory: Record<string, CategorySummary> = {};
  for (const category of categories) {
    const inCategory = outcomes.filter((o) => o.category === category);
    perCategory[category] = {
      ...recallSummary(inCategory, budgets),
      judge: judgeScore(inCategory),
      questions: inCategory.length,
      sessions: sessionSummary(inCategory),
      latest: latestSummary(inCategory, budgets),
    };
  }
  return {
    ...recallSummary(outcomes, budgets),
    sessions: sessionSummary(outcomes),
    latest: latestSummary(outcomes, budgets),
    abstention: abstentionSummary(outcomes, budgets),
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

function sessionSummary(outcomes: readonly QuestionOutcome[]): SessionSummary {
  const ranked = outcomes.flatMap((o) => (o.sessions ? [o.sessions] : []));
  return {
    recallAny: Object.fromEntries(SESSION_KS.map((k) => [String(k), mean(ranked.map((s) => s.recallAny[String(k)] ?? 0)) ?? 0])),
    ndcg: mean(ranked.map((s) => s.ndcg)) ?? 0,
    n: ranked.length,
  };
}

function latestSummary(outcomes: readonly QuestionOutcome[], budgets: readonly number[]): LatestSummary {
  const latest = outcomes.flatMap((o) => (o.latest ? [o.latest] : []));
  return { atBudget: Object.fromEntries(budgets.map((b) => [String(b), mean(latest.map((l) => l[String(b)] ?? 0)) ?? 0])), n: latest.length };
}

function abstentionSummary(outcomes: readonly QuestionOutcome[], budgets: readonly number[]): AbstentionSummary {
  const abstaining = outcomes.filter((o) => o.abstention);
  // Nothing ranked is the lowest score there is.
  const best = (o: QuestionOutcome) => o.topScore ?? -Infinity;
  const answerable = outcomes.filter((o) => !o.abstention).map(best);
  const both = abstaining.length > 0 && answerable.length > 0;
  const floor = both ? percentile(answerable.filter(Number.isFinite), LOW_SCORE_PERCENTILE) : null;
  let wins = 0;
  for (const a of answerable) for (const o of abstaining) wins += a > best(o) ? 1 : a === best(o) ? 0.5 : 0;
  return {
    n: abstaining.length,
    emptyAtBudget: Object.fromEntries(budgets.map((b) => [String(b), mean(abstaining.map((o) => ((o.contextTokens[String(b)] ?? 0) === 0 ? 1 : 0))) ?? 0])),
    lowScoring: both ? (mean(abstaining.map((o) => (floor !== null && best(o) < floor ? 1 : 0))) ?? 0) : null,
    auroc: both ? wins / (answerable.length * abstaining.length) : null,
  };
}

function judgeScore(outcomes: readonly QuestionOutcome[]): number | null {
  return mean(outcomes.flatMap((o) => (o.judge ? [o.judge.correct ? 1 : 0] : [])));
}
