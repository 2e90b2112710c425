import type { Conversation } from '../ingest/conversation.ts';
import type { LocomoSample } from '../ingest/locomo.ts';
import { normaliseEvidence } from './evidence.ts';
import { mean } from './metrics.ts';
import { decimal, signed } from './report.ts';
import type { EvalResults } from './runner.ts';
import { pairedBootstrapCI, type BootstrapOptions } from './stats.ts';

/** Id of the one conversation the pooled mode evaluates. */
export const POOLED_CONVERSATION_ID = 'pooled';

/**
 * Pooled mode: every conversation in one memory, as one user's long history with several people,
 * and every question asked against all of it. Sessions keep their speakers and dates and follow
 * each other conversation by conversation; they and their turns are renumbered (`session_<n>`,
 * `D<n>:<turn>`) so dialog ids stay unique, and each question's evidence is renamed to match.
 * Questions keep their order (conversation by conversation), so outcome i of the pooled run
 * pairs with outcome i of the per-conversation run.
 */
export function pooledSample(samples: readonly LocomoSample[]): LocomoSample {
  const sessions: Conversation['sessions'] = [];
  const questions: LocomoSample['questions'] = [];
  for (const sample of samples) {
    const renamed = new Map<string, string>();
    for (const session of sample.conversation.sessions) {
      const number = sessions.length + 1;
      sessions.push({
        ...session,
        id: `session_${number}`,
        turns: session.turns.map((turn, i) => {
          const dialogId = `D${number}:${i + 1}`;
          for (const id of normaliseEvidence(turn.dialogId)) renamed.set(id, dialogId);
          return { ...turn, dialogId };
        }),
      });
    }
    for (const question of sample.questions) {
      // An evidence id naming no turn keeps a name no turn has, so it still counts as unresolved.
      const evidence = question.evidence.flatMap(normaliseEvidence).map((id) => renamed.get(id) ?? `${sample.conversation.id}/${id}`);
      questions.push({ ...question, evidence });
    }
  }
  return { conversation: { id: POOLED_CONVERSATION_ID, sessions }, questions };
}

/** One system's ER in the pooled memory against its per-conversation ER, paired question by question. */
export interface PooledComparison {
  system: string;
  budget: number;
  n: number;
  perConversation: number;
  pooled: number;
  /** pooled − per-conversation, with its paired bootstrap 95% CI. */
  diff: number;
  low: number;
  high: number;
}

/**
 * Pairs the pooled run's outcomes with the per-conversation run's by position (`pooledSample`
 * keeps the question order), for every system in both runs, at every budget of both.
 */
export function comparePooled(
  perConversation: Pick<EvalResults, 'budgets' | 'outcomes'>,
  pooled: Pick<EvalResults, 'budgets' | 'outcomes'>,
  bootstrap: BootstrapOptions = {},
): PooledComparison[] {
  const budgets = pooled.budgets.filter((b) => perConversation.budgets.includes(b));
  return Object.keys(pooled.outcomes).flatMap((system) => {
    const own = perConversation.outcomes[system];
    const inPool = pooled.outcomes[system];
    if (!own || !inPool || own.length !== inPool.length) return [];
    return budgets.flatMap((budget) => {
      const a: number[] = [];
      const b: number[] = [];
      inPool.forEach((outcome, i) => {
        const x = outcome.recall?.atBudget[String(budget)];
        const y = own[i]?.recall?.atBudget[String(budget)];
        if (x !== undefined && y !== undefined) {
          a.push(x);
          b.push(y);
        }
      });
      if (a.length === 0) return [];
      const ci = pairedBootstrapCI(a, b, bootstrap);
      return [{ system, budget, n: ci.n, perConversation: mean(b) ?? 0, pooled: mean(a) ?? 0, diff: ci.estimate, low: ci.low, high: ci.high }];
    });
  });
}

/** The pooled block of the report: ER per budget both ways with the paired difference, and pooled latency. */
export function renderPooled(comparisons: readonly PooledComparison[], pooled: EvalResults): string {
  const lines = [
    '## Pooled memory (all conversations in one memory)',
    '',
    'Every question asked against one memory holding all conversations; paired with the same question in its own conversation’s memory (bootstrap 95% CI).',
    '',
    '| system | budget | n | per-conversation | pooled | Δ [95% CI] |',
    '|---|---|---|---|---|---|',
    ...comparisons.map(
      (c) =>
        `| ${c.system} | ${c.budget} | ${c.n} | ${c.perConversation.toFixed(3)} | ${c.pooled.toFixed(3)} | ${signed(c.diff)} [${signed(c.low)}, ${signed(c.high)}] |`,
    ),
    '',
    '| system | pooled latency p50 ms | p95 ms |',
    '|---|---|---|',
    ...Object.entries(pooled.systems).map(([name, s]) => `| ${name} | ${decimal(s.latencyMs.p50, 1)} | ${decimal(s.latencyMs.p95, 1)} |`),
    '',
  ];
  return lines.join('\n');
}
