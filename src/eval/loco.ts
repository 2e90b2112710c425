import type { DeepPartial, PrismConfig } from '../config.ts';
import { recallSummary, type QuestionOutcome } from './metrics.ts';

/** One setting of the weights and thresholds under choice, as an overlay on the defaults. */
export interface LocoCandidate {
  name: string;
  overlay: DeepPartial<PrismConfig>;
}

/**
 * The settings `prism eval locomo --loco` chooses among: turn anchors (off, offered as units,
 * or offered with an anchor term of some weight) and fusion (plain reciprocal-rank fusion, or
 * adaptive fusion with full BM25 trust at half the query's terms). The heavier anchor terms
 * are tried under adaptive fusion only, where they fade as the query's words match. The first
 * candidate is the v0.3 scoring.
 */
const GRID: ReadonlyArray<[fusion: 'rrf' | 'adaptive0.5', turnAnchors: number, anchor: number]> = [
  ['rrf', 0, 0],
  ['adaptive0.5', 0, 0],
  ['rrf', 10, 0],
  ['adaptive0.5', 10, 0],
  ['rrf', 10, 0.25],
  ['adaptive0.5', 10, 0.25],
  ['adaptive0.5', 10, 0.5],
  ['adaptive0.5', 10, 1],
];

export const LOCO_CANDIDATES: readonly LocoCandidate[] = GRID.map(([fusion, turnAnchors, anchor]) => ({
  name: `loco:anchors${turnAnchors}${anchor ? `w${anchor}` : ''}+${fusion}`,
  overlay: {
    flags: { adaptiveFusion: fusion !== 'rrf' },
    retrieval: { turnAnchors, turnScore: { anchor }, ...(fusion === 'rrf' ? {} : { lexicalFullShare: 0.5 }) },
  },
}));

export interface LocoFold {
  /** The conversation held out. */
  conversationId: string;
  /** The candidate with the best objective on the other conversations. */
  chosen: string;
  /** Mean ER of the chosen candidate on the held-out conversation, per budget. */
  heldOut: Record<string, number>;
  n: number;
}

export interface LocoReport {
  budgets: number[];
  folds: LocoFold[];
  /** Question-weighted mean over the folds of the held-out ER, per budget. */
  loco: Record<string, number>;
  /** The candidate chosen on all conversations, and its (in-sample) ER. */
  inSample: { chosen: string; er: Record<string, number> };
  /** Every candidate's ER on all conversations. */
  candidates: Record<string, Record<string, number>>;
}

/**
 * Leave-one-conversation-out choice: for each conversation, the candidate with the best mean
 * over `budgets` of ER on the other conversations (ties: earlier candidate), scored on the
 * held-out one. Outcomes are per candidate, over the same questions; questions without
 * resolvable evidence are left out.
 */
export function leaveOneConversationOut(outcomes: Readonly<Record<string, readonly QuestionOutcome[]>>, budgets: readonly number[]): LocoReport {
  const names = Object.keys(outcomes);
  const scored = (name: string) => (outcomes[name] ?? []).filter((o) => o.recall !== null);
  const perBudget = (list: readonly QuestionOutcome[]) => recallSummary(list, budgets).erAtBudget;
  const objective = (list: readonly QuestionOutcome[]): number => {
    const er = perBudget(list);
    return budgets.reduce((s, b) => s + (er[String(b)] ?? 0), 0) / budgets.length;
  };
  const best = (keep: (o: QuestionOutcome) => boolean): string => {
    let chosen = names[0] ?? '';
    let top = -Infinity;
    for (const name of names) {
      const value = objective(scored(name).filter(keep));
      if (value > top) [chosen, top] = [name, value];
    }
    return chosen;
  };
  const conversations = [...new Set(scored(names[0] ?? '').map((o) => o.conversationId))];
  const folds = conversations.map((conversationId) => {
    const chosen = best((o) => o.conversationId !== conversationId);
    const heldOut = scored(chosen).filter((o) => o.conversationId === conversationId);
    return { conversationId, chosen, heldOut: perBudget(heldOut), n: heldOut.length };
  });
  const total = folds.reduce((s, f) => s + f.n, 0);
  const loco = Object.fromEntries(
    budgets.map((b) => [String(b), total === 0 ? 0 : folds.reduce((s, f) => s + (f.heldOut[String(b)] ?? 0) * f.n, 0) / total]),
  );
  const chosen = best(() => true);
  return {
    budgets: [...budgets],
    folds,
    loco,
    inSample: { chosen, er: perBudget(scored(chosen)) },
    candidates: Object.fromEntries(names.map((name) => [name, perBudget(scored(name))])),
  };
}

/** The report section of a leave-one-conversation-out choice. */
export function renderLoco(report: LocoReport): string {
  const ers = (er: Record<string, number>) => report.budgets.map((b) => (er[String(b)] ?? 0).toFixed(3));
  const head = (first: readonly string[]) => [`| ${[...first, ...report.budgets.map((b) => `ER@${b}`)].join(' | ')} |`, `|${' --- |'.repeat(first.length + report.budgets.length)}`];
  return [
    '## Leave-one-conversation-out choice of weights',
    '',
    `Objective: mean of ER@${report.budgets.join(' and ER@')} on the other conversations.`,
    '',
    ...head(['held out', 'chosen', 'n']),
    ...report.folds.map((f) => `| ${[f.conversationId, f.chosen, String(f.n), ...ers(f.heldOut)].join(' | ')} |`),
    `| ${['**LOCO**', '', String(report.folds.reduce((s, f) => s + f.n, 0)), ...ers(report.loco)].join(' | ')} |`,
    `| ${['**in-sample**', report.inSample.chosen, '', ...ers(report.inSample.er)].join(' | ')} |`,
    '',
    ...head(['candidate']),
    ...Object.entries(report.candidates).map(([name, er]) => `| ${[name, ...ers(er)].join(' | ')} |`),
    '',
  ].join('\n');
}
