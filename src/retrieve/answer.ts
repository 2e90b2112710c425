import type { LlmClient } from '../llm/types.ts';

/** Answer instructions of design §4, in our words. One text for `Memory.answer()` and the eval's answer role. */
const ANSWER_INSTRUCTIONS = `You answer a question about a long conversation using only the memory excerpts provided.
Each group of excerpts starts with a bracketed header naming the session and the date it took place; each line below it is one turn, written as (dialog id) speaker: text.
- Be specific: give the concrete names, places, numbers and things mentioned rather than general statements.
- For a question about time, read the session date from the header and turn relative expressions ("last week", "yesterday", "next month") into an actual date or period.
- When something happened more than once, tell the occurrences apart by their dates.
- If the excerpts only partly cover the question, answer from what they do say.
- Reply "cannot answer" only when nothing in the excerpts bears on the question.
Reply with the answer alone, as a short phrase or sentence.`;

/** One `answer`-role call over a packed context. */
export async function answerFromContext(llm: LlmClient, question: string, context: string, signal?: AbortSignal): Promise<string> {
  const answer = await llm.chatText(
    'answer',
    [
      { role: 'system', content: ANSWER_INSTRUCTIONS },
      { role: 'user', content: `Memory excerpts:\n${context}\n\nQuestion: ${question}` },
    ],
    signal ? { signal } : {},
  );
  return answer.trim();
}
