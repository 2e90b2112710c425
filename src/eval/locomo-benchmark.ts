import { CATEGORY_NAMES, type LocomoSample } from '../ingest/locomo.ts';
import type { Benchmark, DatasetStats, EvalQuestion } from './benchmark.ts';
import { createEvidenceResolver } from './evidence.ts';
import { isLexicalGap } from './slices.ts';

/** LoCoMo's scored categories (1–4) by name; 5 (adversarial) has no evidence to recall and is skipped. */
export const LOCOMO_CATEGORIES: readonly string[] = [1, 2, 3, 4].map((category) => CATEGORY_NAMES[category as 1 | 2 | 3 | 4]);

/**
 * LoCoMo samples as the runner's benchmark: each conversation is one memory; its questions of
 * categories 1–4 are asked of it with their evidence ids resolved (see `createEvidenceResolver`).
 * LoCoMo gives no time a question is asked at: its few relative words ("last week", "yesterday")
 * speak from inside one of the sessions, so they are left unresolved (`askedAt` null).
 */
export function locomoBenchmark(samples: readonly LocomoSample[]): Benchmark {
  const dataset: DatasetStats = {
    conversations: samples.length,
    sessions: 0,
    turns: 0,
    questionsPerCategory: Object.fromEntries(LOCOMO_CATEGORIES.map((c) => [c, 0])),
    skipped: null,
    abstention: 0,
    evidenceIds: 0,
    unresolvedIds: [],
    questionsWithoutEvidence: [],
  };
  let adversarial = 0;
  const evalSamples = samples.map(({ conversation, questions }) => {
    dataset.sessions += conversation.sessions.length;
    dataset.turns += conversation.sessions.reduce((n, s) => n + s.turns.length, 0);
    const resolver = createEvidenceResolver(conversation);
    const turnTexts = new Map(conversation.sessions.flatMap((session) => session.turns.map((turn) => [turn.dialogId, turn.text] as const)));
    const list: EvalQuestion[] = [];
    questions.forEach((q, index) => {
      if (q.category === 5) {
        adversarial++;
        return;
      }
      const key = `${conversation.id}#${index}`;
      const category = CATEGORY_NAMES[q.category];
      const { turns, unresolved } = resolver.resolve(q.evidence);
      dataset.questionsPerCategory[category] = (dataset.questionsPerCategory[category] ?? 0) + 1;
      dataset.evidenceIds += turns.length + unresolved.length;
      dataset.unresolvedIds.push(...unresolved.map((id) => ({ question: key, id })));
      if (turns.length === 0) dataset.questionsWithoutEvidence.push(key);
      list.push({
        key,
        question: q.question,
        answer: q.answer,
        category,
        gold: turns,
        lexicalGap: isLexicalGap(q.question, turns.map((id) => turnTexts.get(id) ?? '')),
        askedAt: null,
        goldSessions: null,
        abstention: false,
        latestGold: null,
      });
    });
    return { conversation, sessionLabels: null, questions: list };
  });
  dataset.skipped = { count: adversarial, reason: 'adversarial (category 5)' };
  return { name: 'locomo', title: 'LoCoMo', categories: LOCOMO_CATEGORIES, samples: evalSamples, dataset };
}
