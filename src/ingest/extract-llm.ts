import { PrismError } from '../errors.ts';
import { LlmError } from '../llm/errors.ts';
import type { LlmClient } from '../llm/types.ts';
import { extractLocally, loadCompromise } from './extract-local.ts';
import type { Extraction, ExtractionInput, ExtractionOutcome, Extractor } from './extraction.ts';
import { turnLine } from '../graph/chunk-text.ts';
import type { ExtractionJson } from './llm-schemas.ts';
import { resolveTimeExpression } from './time.ts';

const SYSTEM_PROMPT = `You turn one chunk of a conversation into structured memory. Reply with one JSON object and nothing else, with these keys:
- "episode_summary": a string that covers every event and fact in the chunk, keeping names, dates, places, objects and quantities.
- "entities": a list of {"name", "entity_type"} where entity_type is one of person, organization, place, concept, event, other. Use names as written. Concrete things count: books, foods, pets, activities, places.
- "facet_points": a list of {"content", "related_entity_name", "timestamp_text", "dialog_ids"}. Each is one atomic, specific fact stated in the chunk, self-contained (name the speaker rather than "I"). Prefer more facts to fewer. related_entity_name and timestamp_text may be null. dialog_ids lists the ids in parentheses of the turns the fact comes from.
- "facets": a list of {"theme", "facet_point_indices"} grouping facet_points (by zero-based index) under short themes.
- "temporal_info": a list of {"subject", "time_expression", "normalized_time", "relation"} where relation is before, after, during or at. Resolve relative expressions such as "yesterday" or "last week" against the chunk's date in its header and give normalized_time as an ISO-8601 date, or null when it cannot be resolved.`;

/**
 * The paper's extractor: one LLM call per chunk (role `extract`), with the local fallback of
 * §2.3 for a bad answer. The reply is cached under the chunk's id, so deleting the chunk forgets it.
 */
export function createLlmExtractor(llm: LlmClient): Extractor {
  return {
    mode: 'llm',
    // A bad answer falls back to local extraction, so its parser is loaded too.
    preload: async () => {
      await Promise.all([import('./llm-schemas.ts'), loadCompromise()]);
    },
    async extract(input: ExtractionInput, signal?: AbortSignal): Promise<ExtractionOutcome> {
      const messages = [
        { role: 'system' as const, content: SYSTEM_PROMPT },
        { role: 'user' as const, content: [input.header, ...input.turns.map(turnLine)].join('\n') },
      ];
      try {
        const { extractionSchema } = await import('./llm-schemas.ts');
        const json = await llm.chatJson('extract', messages, extractionSchema, { cacheTags: [input.chunkId], ...(signal ? { signal } : {}) });
        return { extraction: fromJson(json, input), warning: null };
      } catch (err) {
        // Only a bad answer for this chunk falls back (the chunk is marked and can be re-extracted).
        // Anything else stops the ingest at its last committed chunk: the caller's key, model or URL
        // (LLM_AUTH / LLM_CONFIG), an abort, or an endpoint that stays down after its retries.
        if (!isBadAnswer(err)) throw err;
        return fallback(input, err.message);
      }
    },
  };
}

/**
 * Failures that concern this chunk's request rather than the endpoint: a reply that stayed
 * invalid after the re-ask, or a 4xx the endpoint gives this request alone (too long, filtered).
 * 408 is a timeout and 401/403/404 never reach here as `LLM_HTTP` (they are `LLM_AUTH` / `LLM_CONFIG`).
 */
function isBadAnswer(err: unknown): err is PrismError {
  if (!(err instanceof PrismError)) return false;
  if (err.code === 'LLM_BAD_JSON' || err.code === 'LLM_SCHEMA') return true;
  const status = err instanceof LlmError ? err.status : undefined;
  return err.code === 'LLM_HTTP' && status !== undefined && status >= 400 && status < 500 && status !== 408;
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
