/**
 * The zod schemas of the query-side LLM replies (N4 intent scores, N3 rerank). Kept in their own
 * module and imported only on the first LLM call, so zod stays out of a zero-LLM page.
 */
import { z } from 'zod';

/** N4's tier-3 reply: four independent scores in [0, 1]. */
export const intentScoresSchema = z.object({
  temporal: z.number().min(0).max(1),
  causal: z.number().min(0).max(1),
  multi_hop: z.number().min(0).max(1),
  entity_centric: z.number().min(0).max(1),
});
export type IntentScores = z.infer<typeof intentScoresSchema>;

const rerankItem = z.object({ index: z.number().int(), score: z.number() });
/** The prompt asks for `{"scores": [...]}` (JSON mode needs an object); a bare array is accepted too. */
export const rerankReplySchema = z.union([z.object({ scores: z.array(rerankItem) }), z.array(rerankItem)]);
export type RerankReply = z.infer<typeof rerankReplySchema>;
