import { z } from 'zod';
import { PrismError } from '../errors.ts';
import { LlmError } from '../llm/errors.ts';
import type { LlmClient } from '../llm/types.ts';
import { extractLocally } from './extract-local.ts';
import type { Extraction, ExtractionInput, ExtractionOutcome, Extractor } from './extraction.ts';
import { turnLine } from './chunking.ts';
import { resolveTimeExpression } from './time.ts';

const entityTypes = ['person', 'organization', 'place', 'concept', 'event', 'other'] as const;

/** The §2.3 extraction object, validated like the paper's Pydantic model. */
const extractionSchema = z.object({
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

type ExtractionJson = z.infer<typeof extractionSchema>;

const SYSTEM_PROMPT = `You turn one chunk of a conversation into structured memory. Reply with one JSON object and nothing else, with these keys:
- "episode_summary": a string that covers every event and fact in the chunk, keeping names, dates, places, objects and quantities.
- "entities": a list of {"name", "entity_type"} where entity_type is one of person, organization, place, concept, event, other. Use names as written. Concrete things count: books, foods, pets, activities, places.
- "facet_points": a list of {"content", "related_entity_name", "timestamp_text", "dialog_ids"}. Each is one atomic, specific fact stated in the chunk, self-contained (name the speaker rather than "I"). Prefer more facts to fewer. related_entity_name and timestamp_text may be null. dialog_ids lists the ids in parentheses of the turns the fact comes from.
- "facets": a list of {"theme", "facet_point_indices"} grouping facet_points (by zero-based index) under short themes.
- "temporal_info": a list of {"subject", "time_expression", "normalized_time", "relation"} where relation is before, after, during or at. Resolve relative expressions such as "yesterday" or "last week" against the chunk's date in its header and give normalized_time as an ISO-8601 date, or null when it cannot be resolved.`;

/** The paper's extractor: one LLM call per chunk (role `extract`), with the local fallback of §2.3. */
export function createLlmExtractor(llm: LlmClient): Extractor {
  return {
    mode: 'llm',
    async extract(input: ExtractionInput, signal?: AbortSignal): Promise<ExtractionOutcome> {
      const messages = [
        { role: 'system' as const, content: SYSTEM_PROMPT },
        { role: 'user' as const, content: [input.header, ...input.turns.map(turnLine)].join('\n') },
      ];
      try {
        const json = await llm.chatJson('extract', messages, extractionSchema, signal ? { signal } : {});
        const extraction = fromJson(json, input);
        if (extraction.facetPoints.length === 0 && extraction.summary.trim() === '') {
          return fallback(input, 'extraction was empty');
        }
        return { extraction, warning: null };
      } catch (err) {
        // A bad answer for one chunk falls back; an abort or an endpoint that stays unreachable
        // stops the ingest at its last committed chunk, so a re-run extracts this chunk properly.
        if (isTransient(err)) throw err;
        return fallback(input, err instanceof Error ? err.message : String(err));
      }
    },
  };
}

/** Failures that say nothing about the chunk: abort, timeouts, rate limits, 5xx and network errors (retries already spent). */
function isTransient(err: unknown): boolean {
  if (!(err instanceof PrismError)) return false;
  if (err.code === 'ABORTED' || err.code === 'LLM_TIMEOUT' || err.code === 'LLM_RATE_LIMITED') return true;
  if (err.code !== 'LLM_HTTP') return false;
  const status = err instanceof LlmError ? err.status : undefined;
  return status === undefined || status === 408 || status >= 500;
}

/** §2.3 fallback: only the summary and the entity list, so one bad chunk never aborts ingestion. */
async function fallback(input: ExtractionInput, reason: string): Promise<ExtractionOutcome> {
  const local = await extractLocally(input);
  return {
    extraction: { summary: local.summary, entities: local.entities, facetPoints: [], facets: [], temporal: [] },
    warning: `extraction fell back to summary + entities: ${reason}`,
  };
}

/** `2023`, `2023-05`, `2023-05-07`, optionally followed by a time: what `FacetPointNode.time` holds. */
const ISO_PREFIX = /^\d{4}(-\d{2}(-\d{2})?)?(T|$)/;

function fromJson(json: ExtractionJson, input: ExtractionInput): Extraction {
  const known = new Set(input.turns.map((t) => t.dialogId));
  // The model's own resolution of an expression (temporal_info) fills in what chrono-node cannot parse.
  const normalisedByExpression = new Map<string, string>();
  for (const t of json.temporal_info) {
    if (t.normalized_time && ISO_PREFIX.test(t.normalized_time)) normalisedByExpression.set(t.time_expression.trim().toLowerCase(), t.normalized_time.slice(0, 10));
  }
  const facetPoints = json.facet_points.map((fp) => {
    const resolved = fp.timestamp_text ? resolveTimeExpression(fp.timestamp_text, input.time) : null;
    return {
      content: fp.content,
      entityName: fp.related_entity_name ?? null,
      timeText: fp.timestamp_text ?? null,
      time: resolved?.iso ?? (fp.timestamp_text ? (normalisedByExpression.get(fp.timestamp_text.trim().toLowerCase()) ?? null) : null),
      dialogIds: (fp.dialog_ids ?? []).filter((id) => known.has(id)),
    };
  });
  return {
    summary: json.episode_summary,
    entities: json.entities.map((e) => ({ name: e.name, type: e.entity_type })),
    facetPoints,
    facets: json.facets.map((f) => ({
      theme: f.theme,
      pointIndices: f.facet_point_indices.filter((i) => i < facetPoints.length),
    })),
    temporal: json.temporal_info.map((t) => ({
      subject: t.subject,
      timeExpression: t.time_expression,
      normalizedTime: t.normalized_time ?? null,
      relation: t.relation,
    })),
  };
}
