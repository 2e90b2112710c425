import { z } from 'zod';
import type { LlmClient, LlmUsage } from '../llm/types.ts';
import type { JudgedAnswer } from './metrics.ts';

/** The answer and judge roles of design §4, in LLM mode only. */
export interface JudgeConfig {
  client: LlmClient;
  /** Budget whose packed context the answer model reads; default 2048 when evaluated, else the largest. */
  budget?: number;
  /** Model names, shown in the report's run config. */
  models?: { answer: string; judge: string };
}

const ANSWER_INSTRUCTIONS = `You answer a question about a long conversation between two people, using only the memory excerpts provided.
Each group of excerpts starts with a bracketed header naming the session and the date it took place; each line below it is one turn, written as (dialog id) speaker: text.
- Be specific: give the concrete names, places, numbers and things mentioned rather than general statements.
- For a question about time, read the session date from the header and turn relative expressions ("last week", "yesterday", "next month") into an actual date or period.
- When something happened more than once, tell the occurrences apart by their dates.
- If the excerpts only partly cover the question, answer from what they do say.
- Reply "cannot answer" only when nothing in the excerpts bears on the question.
Reply with the answer alone, as a short phrase or sentence.`;

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
  const answer = (
    await client.chatText(
      'answer',
      [
        { role: 'system', content: ANSWER_INSTRUCTIONS },
        { role: 'user', content: `Memory excerpts:\n${input.context}\n\nQuestion: ${input.question}` },
      ],
      { signal },
    )
  ).trim();
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

function usageDelta(before: LlmUsage, after: LlmUsage): { llmCalls: number; llmTokens: number } {
  let llmCalls = 0;
  let llmTokens = 0;
  for (const role of ['answer', 'judge'] as const) {
    llmCalls += after[role].calls - before[role].calls;
    llmTokens +=
      after[role].promptTokens + after[role].completionTokens - before[role].promptTokens - before[role].completionTokens;
  }
  return { llmCalls, llmTokens };
}
