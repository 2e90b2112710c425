import { z } from 'zod';
import { PrismError } from '../errors.ts';
import type { LocomoSample } from '../ingest/locomo.ts';
import data from './implicit-recall.json' with { type: 'json' };

/**
 * Implicit recall: the query is a later remark that relates to an earlier statement without
 * sharing its words ("the kick that set me free" → "losing my job gave me the push I needed").
 * The cases are written by hand for this project from the dev conversations and name only dialog
 * ids; the conversations themselves come from the data file at run time.
 */
export interface ImplicitRecallCase {
  conversation: string;
  /** The later remark, a statement rather than a question. */
  remark: string;
  /** Dialog ids of the earlier turns the remark relates to. */
  relatesTo: string[];
}

const CaseFile = z.object({
  cases: z.array(z.object({ conversation: z.string().min(1), remark: z.string().min(1), relatesTo: z.array(z.string().min(1)).min(1) })),
});

export const IMPLICIT_RECALL_CASES: readonly ImplicitRecallCase[] = CaseFile.parse(data).cases;

/**
 * The cases as LoCoMo samples over the same conversation objects (so systems reuse what they
 * prepared for them), one question per remark with the earlier turns as evidence. They are
 * filed as single-hop (category 4): one remark, one earlier statement. Conversations without a
 * case are left out; a case naming an unknown conversation is an error.
 */
export function implicitRecallSamples(samples: readonly LocomoSample[], cases: readonly ImplicitRecallCase[] = IMPLICIT_RECALL_CASES): LocomoSample[] {
  const known = new Set(samples.map((s) => s.conversation.id));
  const unknown = cases.filter((c) => !known.has(c.conversation));
  if (unknown.length > 0) {
    throw new PrismError('INVALID_INPUT', `implicit-recall cases name unknown conversations: ${[...new Set(unknown.map((c) => c.conversation))].join(', ')}`);
  }
  return samples.flatMap((sample) => {
    const questions = cases
      .filter((c) => c.conversation === sample.conversation.id)
      .map((c) => ({ question: c.remark, answer: '', evidence: c.relatesTo, category: 4 as const }));
    return questions.length > 0 ? [{ conversation: sample.conversation, questions }] : [];
  });
}
