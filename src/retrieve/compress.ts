import type { RerankReply } from './llm-schemas.ts';
import type { PrismConfig } from '../config.ts';
import { PrismError } from '../errors.ts';
import type { MemoryGraph } from '../graph/memory-graph.ts';
import type { ChatMessage, LlmClient } from '../llm/types.ts';
import { bestFactCosine, bestLexicalTurn, factCosines, type QueryEvidence } from './evidence.ts';
import type { BundleEntry, RankedEpisode } from './types.ts';

/**
 * N3 output: the whole bundle in its new order (the top M are `ranked.slice(0, M)`; the rest
 * stay available to fill a token budget).
 */
export interface Compression {
  ranked: RankedEpisode[];
  llmCalls: number;
  /** Recoverable problems, e.g. an unusable rerank reply (the bundle order was kept). */
  warnings: string[];
}

/** N1 order as a ranking; `score` = 1 − path cost, so it reads like a cosine. */
export function bundleOrder(bundle: readonly BundleEntry[], warnings: string[] = []): Compression {
  return { ranked: bundle.map((e) => ({ ...e, score: 1 - e.cost })), llmCalls: 0, warnings };
}

const RERANK_SYSTEM_PROMPT = [
  'You judge which passages from a conversation memory help answer a question.',
  'Score every passage from 0 (useless) to 10 (contains the answer or direct evidence for it).',
  'Passages that give the date, the people or the circumstances the question asks about are useful even when partial.',
  'Reply with JSON only: {"scores": [{"index": <passage number>, "score": <0-10>}, ...]} covering every passage.',
].join('\n');

/**
 * N3 with the `rerank` role (design §3): when the bundle holds more than `keep` Episodes, one
 * call sees the question and each Episode's summary cut to `rerankSnippetChars` — no costs, no
 * metadata — and scores them. Order is by score, ties by bundle order; passages the reply
 * leaves out rank after all scored ones. An unusable reply keeps the bundle order with a warning.
 */
export async function rerankWithLlm(
  query: string,
  bundle: readonly BundleEntry[],
  graph: MemoryGraph,
  llm: LlmClient,
  config: PrismConfig,
  options: { keep?: number; signal?: AbortSignal } = {},
): Promise<Compression> {
  const keep = options.keep ?? config.retrieval.keep;
  if (bundle.length <= keep) return bundleOrder(bundle);
  const passages = bundle.map((e, i) => `[${i}] ${snippet(graph, e.episodeId, config.retrieval.rerankSnippetChars)}`);
  const messages: ChatMessage[] = [
    { role: 'system', content: RERANK_SYSTEM_PROMPT },
    { role: 'user', content: `Question: ${query}\n\nPassages:\n${passages.join('\n\n')}` },
  ];
  const { rerankReplySchema } = await import('./llm-schemas.ts');
  let reply: RerankReply;
  try {
    reply = await llm.chatJson('rerank', messages, rerankReplySchema, options.signal ? { signal: options.signal } : undefined);
  } catch (err) {
    if (err instanceof PrismError && (err.code === 'LLM_BAD_JSON' || err.code === 'LLM_SCHEMA')) {
      return { ...bundleOrder(bundle, [`rerank: ${err.message}; bundle order kept`]), llmCalls: 1 };
    }
    throw err;
  }
  const items = Array.isArray(reply) ? reply : reply.scores;
  const scores = new Map<number, number>();
  for (const item of items) {
    if (item.index >= 0 && item.index < bundle.length && !scores.has(item.index)) {
      scores.set(item.index, Math.min(10, Math.max(0, item.score)));
    }
  }
  if (scores.size === 0) {
    return { ...bundleOrder(bundle, ['rerank: reply scored no passage of the bundle; bundle order kept']), llmCalls: 1 };
  }
  const warnings = scores.size < bundle.length ? [`rerank: ${bundle.length - scores.size} of ${bundle.length} passages unscored`] : [];
  // Unscored passages get −1: below every valid score, ordered among themselves by bundle position.
  return { ranked: rankBy(bundle, (_, i) => scores.get(i) ?? -1), llmCalls: 1, warnings };
}

/**
 * Zero-LLM N3 (beyond the paper): a local precision score per Episode,
 *   w_path · (1 − path cost) + w_fact · best FacetPoint cosine + w_lex · best turn BM25 / bundle max,
 * with weights from `config.retrieval.localPrecision`. The path term keeps N1's judgement;
 * the fact term rewards an Episode holding one fact close to the question even when it was
 * reached through a weaker anchor; the lexical term rewards the exact names and rare words a
 * question shares with a turn.
 */
export function localPrecision(bundle: readonly BundleEntry[], graph: MemoryGraph, evidence: QueryEvidence, config: PrismConfig): Compression {
  const w = config.retrieval.localPrecision;
  const lexical = bundle.map((e) => bestLexicalTurn(evidence, e.episodeId));
  const lexicalMax = Math.max(0, ...lexical);
  const score = (e: BundleEntry, i: number): number => {
    const fact = bestFactCosine(factCosines(graph, e.episodeId, evidence), 0);
    const lex = lexicalMax > 0 ? (lexical[i] ?? 0) / lexicalMax : 0;
    return w.path * (1 - e.cost) + w.fact * fact + w.lexical * evidence.lexicalWeight * lex;
  };
  return { ranked: rankBy(bundle, score), llmCalls: 0, warnings: [] };
}

/** Sorts by score, best first; ties keep bundle order, so the selection is deterministic. */
function rankBy(bundle: readonly BundleEntry[], score: (entry: BundleEntry, index: number) => number): RankedEpisode[] {
  return bundle
    .map((entry, index) => ({ entry, index, score: score(entry, index) }))
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .map(({ entry, score: s }) => ({ ...entry, score: s }));
}

/** What the reranker reads of an Episode: its summary, or its turns when it has none. */
function snippet(graph: MemoryGraph, episodeId: string, chars: number): string {
  const node = graph.nodes.get(episodeId);
  let text = node?.layer === 'episode' ? node.summary.trim() : '';
  if (!text && node?.layer === 'episode') {
    text = (graph.chunks.get(node.chunkId)?.turns ?? []).map((t) => `${t.speaker}: ${t.text}`).join(' ');
  }
  const flat = text.replace(/\s+/g, ' ');
  return flat.length <= chars ? flat : `${flat.slice(0, chars - 1)}…`;
}
