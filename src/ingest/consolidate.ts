import type { IngestConfig } from '../config.ts';
import type { MemoryGraph } from '../graph/memory-graph.ts';
import { edgeId, type EpisodeNode } from '../graph/types.ts';
import type { LlmClient } from '../llm/types.ts';

const SYSTEM_PROMPT = `You read short summaries of consecutive conversation episodes, each with an id, and find cause-and-effect links between them: an event or decision in one episode that led to something in another. Reply with one JSON object {"causal_pairs": [{"cause_id", "effect_id", "description", "confidence"}]} where description is one short sentence naming the cause and the effect, and confidence is between 0 and 1. Use only the ids given. Return an empty list when there is no clear causal link.`;

export interface CausalPair {
  causeId: string;
  effectId: string;
  description: string;
  confidence: number;
}

/**
 * Design §2.6: one LLM call (role `consolidate`) over the most recent Episodes. Pairs below the
 * confidence floor, with unknown ids, self-loops, or duplicating an existing causal edge are dropped.
 */
export async function consolidateCausal(
  episodes: readonly EpisodeNode[],
  graph: MemoryGraph,
  llm: LlmClient,
  config: IngestConfig,
  signal?: AbortSignal,
): Promise<CausalPair[]> {
  if (episodes.length < 2) return [];
  // Short ids keep the prompt small and make invented ids easy to reject.
  const byShortId = new Map(episodes.map((ep, i) => [`E${i + 1}`, ep]));
  const listing = [...byShortId].map(([sid, ep]) => `${sid} (${ep.time?.slice(0, 10) ?? 'undated'}): ${ep.summary}`).join('\n\n');
  const { causalSchema } = await import('./llm-schemas.ts');
  const json = await llm.chatJson(
    'consolidate',
    [
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: listing },
    ],
    causalSchema,
    // Tagged with every chunk of the window: deleting any of them forgets the reply.
    { cacheTags: episodes.map((ep) => ep.chunkId), ...(signal ? { signal } : {}) },
  );
  const seen = new Set<string>();
  const out: CausalPair[] = [];
  for (const pair of json.causal_pairs) {
    const cause = byShortId.get(pair.cause_id.trim());
    const effect = byShortId.get(pair.effect_id.trim());
    if (!cause || !effect || cause.id === effect.id || pair.confidence < config.causalMinConfidence) continue;
    const key = edgeId('causal', cause.id, effect.id);
    if (seen.has(key) || graph.edges.has(key)) continue;
    seen.add(key);
    out.push({ causeId: cause.id, effectId: effect.id, description: pair.description, confidence: pair.confidence });
  }
  return out;
}
