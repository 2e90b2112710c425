/**
 * Replies of a well-behaved model to PRISM's ingest prompts, for the local OpenAI-compatible
 * server: a §2.3 extraction built from the turns in the prompt (one fact per turn), and no
 * causal pairs for §2.6 consolidation.
 */
import { reply, type RecordedRequest, type ScriptedReply } from './openai-server.ts';

export function extractionReply(prompt: string) {
  const turns = [...prompt.matchAll(/\((D\d+:\d+)\) (\w+): ([^\n]*)/g)].map((m) => ({ id: m[1] ?? '', speaker: m[2] ?? '', text: m[3] ?? '' }));
  return {
    episode_summary: turns.map((t) => `${t.speaker}: ${t.text}`).join(' '),
    entities: [...new Set(turns.map((t) => t.speaker))].map((name) => ({ name, entity_type: 'person' })),
    facet_points: turns.map((t) => ({ content: `${t.speaker} said: ${t.text}`, related_entity_name: t.speaker, timestamp_text: null, dialog_ids: [t.id] })),
    facets: [{ theme: 'what was said', facet_point_indices: turns.map((_, i) => i) }],
    temporal_info: [],
  };
}

export function isConsolidation(request: RecordedRequest): boolean {
  return (request.body?.messages[0]?.content ?? '').includes('cause-and-effect');
}

/** The prompt's chunk: the last user message. */
export function promptOf(request: RecordedRequest): string {
  return request.body?.messages.at(-1)?.content ?? '';
}

/** Answers extraction with `extractionReply` and consolidation with no pairs. */
export function validHandler(request: RecordedRequest): ScriptedReply {
  if (isConsolidation(request)) return reply.json({ causal_pairs: [] });
  return reply.json(extractionReply(promptOf(request)));
}
