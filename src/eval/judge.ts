import { z } from 'zod';
import type { LlmClient, LlmUsage } from '../llm/types.ts';
import { usageTotals } from '../llm/usage.ts';
import { answerFromContext } from '../retrieve/answer.ts';
import type { JudgedAnswer } from './metrics.ts';

/** The answer and judge roles of design §4, in LLM mode only. */
export interface JudgeConfig {
  client: LlmClient;
  /** Budget whose packed context the answer model reads; default 2048 when evaluated, else the largest. */
  budget?: number;
  /** Model names, shown in the report's run config. */
  models?: { answer: string; judge: string };
}

const JUDGE_INSTRUCTIONS = `You grade a generated answer to a question about a conversation, given the gold answer.
Label it CORRECT when it states the same fact as the gold answer. Be lenient about form: a date written in any format, a paraphrase, or an answer that is partial but accurate on what the question asks all count as CORRECT. Label it WRONG when it contradicts the gold answer, misses its point, or declines to answer.
Reply with JSON only: {"reasoning": "<one sentence>", "label": "CORRECT" or "WRONG"}.`;

const verdictSchema = z.object({
  reasoning: z.string(),
  label: z.enum(['CORRECT', 'WRONG']),
});

/** Answers from the packed context, then judges the answer against the gold one. */
export async function answerAndJudge(
  client: LlmClient,
  input: { question: string; goldAnswer: string; context: string },
  signal?: AbortSignal,
): Promise<JudgedAnswer> {
  const before = client.usage();
  const answer = await answerFromContext(client, input.question, input.context, signal);
  const verdict = await client.chatJson(
    'judge',
    [
      { role: 'system', content: JUDGE_INSTRUCTIONS },
      {
        role: 'user',
        content: `Question: ${input.question}\nGold answer: ${input.goldAnswer}\nGenerated answer: ${answer}`,
      },
    ],
    verdictSchema,
    { signal },
  );
  const spent = usageDelta(before, client.usage());
  return { answer, correct: verdict.label === 'CORRECT', reasoning: verdict.reasoning, ...spent };
}

/** What the answer and judge roles spent between two readings of the adapter's accounting. */
function usageDelta(before: LlmUsage, after: LlmUsage): { llmCalls: number; llmTokens: number } {
  const [was, now] = [usageTotals(before, JUDGE_ROLES), usageTotals(after, JUDGE_ROLES)];
  return { llmCalls: now.calls - was.calls, llmTokens: now.tokens - was.tokens };
}

const JUDGE_ROLES = ['answer', 'judge'] as const;
