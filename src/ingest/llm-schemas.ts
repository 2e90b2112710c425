/**
 * The zod schemas of the ingest-side LLM replies (§2.3 extraction, §2.6 consolidation). Kept in
 * their own module and imported only on the first LLM call, so zod stays out of a zero-LLM page.
 */
import { z } from 'zod';

const entityTypes = ['person', 'organization', 'place', 'concept', 'event', 'other'] as const;

/** The §2.3 extraction object, validated like the paper's Pydantic model. */
const extractionObject = z.object({
  episode_summary: z.string(),
  entities: z.array(z.object({ name: z.string().min(1), entity_type: z.enum(entityTypes).catch('other') })),
  facet_points: z.array(
    z.object({
      content: z.string().min(1),
      related_entity_name: z.string().nullable().optional(),
      timestamp_text: z.string().nullable().optional(),
      dialog_ids: z.array(z.string()).optional(),
    }),
  ),
  facets: z.array(z.object({ theme: z.string(), facet_point_indices: z.array(z.number().int().nonnegative()) })),
  temporal_info: z.array(
    z.object({
      subject: z.string(),
      time_expression: z.string(),
      normalized_time: z.string().nullable().optional(),
      relation: z.enum(['before', 'after', 'during', 'at']).catch('at'),
    }),
  ),
});

/** A reply with neither a summary nor a fact fails too, so the client re-asks once and never caches it. */
export const extractionSchema = extractionObject.refine(
  (json) => json.episode_summary.trim() !== '' || json.facet_points.length > 0,
  'the extraction is empty (no summary, no fact)',
);

export type ExtractionJson = z.infer<typeof extractionSchema>;

/** The §2.6 consolidation reply. */
export const causalSchema = z.object({
  causal_pairs: z.array(
    z.object({
      cause_id: z.string(),
      effect_id: z.string(),
      description: z.string(),
      confidence: z.number().min(0).max(1),
    }),
  ),
});
