import type { Conversation } from '../ingest/conversation.ts';

/** One question as the runner asks it, whichever benchmark it comes from. */
export interface EvalQuestion {
  /** `<memory id>#<index>`: pairs a question's outcomes across systems and runs. */
  key: string;
  question: string;
  answer: string;
  /** The benchmark's category name (LoCoMo category, LongMemEval `question_type`). */
  category: string;
  /** Dialog ids of the gold evidence turns; a question without any is not scored for evidence recall. */
  gold: string[];
  /** No gold turn shares a content word with the question (see `isLexicalGap`). */
  lexicalGap: boolean;
  /**
   * When the question is asked (a stored time, `2023-05-30T23:40:00`): search resolves relative
   * time in it ("two weeks ago") against this. null: the benchmark gives none.
   */
  askedAt: string | null;
  /** Labels (see `EvalSample.sessionLabels`) of the sessions holding the evidence; null where the benchmark scores no session ranking. */
  goldSessions: string[] | null;
  /** The memory does not hold the answer (LongMemEval `_abs`): reported apart, never scored for recall. */
  abstention: boolean;
  /**
   * Gold turns holding the latest value of something that changed (LongMemEval knowledge-update):
   * those of the latest-dated session among the gold ones. null elsewhere.
   */
  latestGold: string[] | null;
}

/** One memory and the questions asked of it. */
export interface EvalSample {
  conversation: Conversation;
  /**
   * The benchmark's name of each session, by the conversation's session id, where the two differ
   * (LongMemEval ids repeat within a haystack; the conversation numbers its sessions). Session
   * rankings and `goldSessions` use these labels.
   */
  sessionLabels: Record<string, string> | null;
  questions: EvalQuestion[];
}

export interface DatasetStats {
  /** Memories the questions are asked of: LoCoMo conversations, LongMemEval questions (one haystack each). */
  conversations: number;
  sessions: number;
  turns: number;
  /** Evaluated questions per category, abstention questions included. */
  questionsPerCategory: Record<string, number>;
  /** Questions of the data left out of the evaluation, and why; null when none is. */
  skipped: { count: number; reason: string } | null;
  /** Abstention questions (reported apart). */
  abstention: number;
  /** Gold evidence turns named by the questions (LoCoMo: ids after normalisation). */
  evidenceIds: number;
  /** Evidence ids naming no turn of their conversation. */
  unresolvedIds: { question: string; id: string }[];
  /** Questions (abstention aside) excluded from evidence recall because none of their evidence resolves. */
  questionsWithoutEvidence: string[];
}

export type BenchmarkName = 'locomo' | 'longmemeval';

/** A benchmark's questions over their memories, ready for the runner. */
export interface Benchmark {
  name: BenchmarkName;
  /** Its name in reports. */
  title: string;
  /** Every category it has, in report order. */
  categories: readonly string[];
  samples: EvalSample[];
  dataset: DatasetStats;
}

/** The session label of every dialog id of a sample (see `EvalSample.sessionLabels`). */
export function sessionOfTurn(sample: EvalSample): Map<string, string> {
  const sessionOf = new Map<string, string>();
  for (const session of sample.conversation.sessions) {
    const label = sample.sessionLabels?.[session.id] ?? session.id;
    for (const turn of session.turns) sessionOf.set(turn.dialogId, label);
  }
  return sessionOf;
}
