import type { Conversation } from '../ingest/conversation.ts';
import type { LocomoSample } from '../ingest/locomo.ts';
import { normaliseEvidence } from './evidence.ts';

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
