import type { IntentScores } from './llm-schemas.ts';
import type { PrismConfig } from '../config.ts';
import { PrismError } from '../errors.ts';
import type { ChatMessage, LlmClient } from '../llm/types.ts';
import { dot } from '../util/vectors.ts';
import type { EmbedTexts, Intent, IntentTier, PrototypeScorer, RetrievalMode } from './types.ts';

/** N4 tier 1 (design §3): 18 temporal triggers. Word-bounded so that e.g. "whenever" still counts but "agoraphobia" does not. */
export const TEMPORAL_TRIGGERS: readonly RegExp[] = [
  /\bwhen(ever)?\b/i,
  /\bwhat (year|month|day|date|time|week|weekend|season)\b/i,
  /\bwhich (year|month|day|date|week|weekend|season)\b/i,
  /\bhow long\b/i,
  /\bhow (often|frequently)\b/i,
  /\bhow many (years|months|weeks|days|hours|times)\b/i,
  /\bbefore\b/i,
  /\bafter(wards)?\b/i,
  /\bduring\b/i,
  /\bsince\b/i,
  /\b(until|till)\b/i,
  /\bago\b/i,
  /\b(first|last|next) time\b/i,
  /\b(earliest|latest|most recent(ly)?|recently)\b/i,
  /\b(yesterday|tomorrow|tonight)\b/i,
  /\b(last|next|this|past|previous) (week|weekend|month|year|summer|winter|spring|fall|autumn)\b/i,
  /\b(january|february|march|april|june|july|august|september|october|november|december)\b/i,
  /\b(19|20)\d{2}\b/,
];

/** N4 tier 1: 14 causal triggers. */
export const CAUSAL_TRIGGERS: readonly RegExp[] = [
  /\bwhy\b/i,
  /\bbecause\b/i,
  /\bcaus(e|es|ed|ing)\b/i,
  /\breasons?\b/i,
  /\b(led|lead|leads|leading) to\b/i,
  /\bresult(ed|s)? in\b|\bas a result\b/i,
  /\bdue to\b/i,
  /\bwhat made\b/i,
  /\bmotivat\w*/i,
  /\binspir\w*/i,
  /\b(so that|in order to)\b/i,
  /\bhow come\b/i,
  /\b(consequences?|effects?|impacts?|outcomes?)\b/i,
  /\bwhat (prompted|drove|pushed|triggered|sparked)\b/i,
];

/**
 * Words of a query that asks for the value as it stands now, where it may have changed: "what
 * is my current…", "how many … so far", "where do I keep it now", "my most recent visit". A
 * question about an earlier value ("previous", "before I changed") has none of them.
 */
const LATEST_TRIGGERS = /\b(current|currently|now|nowadays|these days|at the moment|latest|most recent(ly)?|so far|still|anymore|any more|to date|up to date)\b/i;

/** Does the query ask for the latest or current value of something (see `LATEST_TRIGGERS`)? */
export function asksForLatest(query: string): boolean {
  return LATEST_TRIGGERS.test(query);
}

type PrototypeLabel = Exclude<Intent, 'GENERAL'>;

/**
 * N4 tier 2: 46 example queries, 24 generic and 22 in the style of LoCoMo questions
 * (temporal 10, causal 10, multi-hop 14, entity-centric 12). Written for this project.
 */
export const PROTOTYPES: ReadonlyArray<{ label: PrototypeLabel; text: string; style: 'generic' | 'locomo' }> = [
  // temporal — 5 generic, 5 LoCoMo-style
  { label: 'TEMPORAL', style: 'generic', text: 'At what point in time did this happen?' },
  { label: 'TEMPORAL', style: 'generic', text: 'Which came first, the move or the new job?' },
  { label: 'TEMPORAL', style: 'generic', text: 'How much time passed between the two events?' },
  { label: 'TEMPORAL', style: 'generic', text: 'What was going on around the start of the year?' },
  { label: 'TEMPORAL', style: 'generic', text: 'Put these events in chronological order.' },
  { label: 'TEMPORAL', style: 'locomo', text: 'On what date did Jon visit the dance studio?' },
  { label: 'TEMPORAL', style: 'locomo', text: 'Around which weekend did Maria go hiking with her church group?' },
  { label: 'TEMPORAL', style: 'locomo', text: 'How many weeks passed between Gina losing her job and opening her store?' },
  { label: 'TEMPORAL', style: 'locomo', text: 'In which month did Tim start learning the violin?' },
  { label: 'TEMPORAL', style: 'locomo', text: 'Was Andrew adopting the puppy earlier or later than his hiking trip?' },
  // causal — 5 generic, 5 LoCoMo-style
  { label: 'CAUSAL', style: 'generic', text: 'What was the reason behind that decision?' },
  { label: 'CAUSAL', style: 'generic', text: 'What happened as a consequence of the outage?' },
  { label: 'CAUSAL', style: 'generic', text: 'What explains the sudden change of plans?' },
  { label: 'CAUSAL', style: 'generic', text: 'What pushed them into starting over?' },
  { label: 'CAUSAL', style: 'generic', text: 'Which factors contributed to the failure?' },
  { label: 'CAUSAL', style: 'locomo', text: 'What got Caroline interested in counseling as a career?' },
  { label: 'CAUSAL', style: 'locomo', text: 'What made Nate decide to adopt another turtle?' },
  { label: 'CAUSAL', style: 'locomo', text: 'How did the accident change the way Joanna approaches her writing?' },
  { label: 'CAUSAL', style: 'locomo', text: 'What encouraged Deborah to open a yoga studio?' },
  { label: 'CAUSAL', style: 'locomo', text: 'What was the outcome of John volunteering at the shelter?' },
  // multi-hop — 7 generic, 7 LoCoMo-style
  { label: 'MULTI_HOP', style: 'generic', text: 'What do the two projects have in common?' },
  { label: 'MULTI_HOP', style: 'generic', text: 'Combining everything they said, what would they enjoy as a gift?' },
  { label: 'MULTI_HOP', style: 'generic', text: 'Which of the people mentioned have visited the same city?' },
  { label: 'MULTI_HOP', style: 'generic', text: 'List all the places the team travelled to over the whole project.' },
  { label: 'MULTI_HOP', style: 'generic', text: 'Given what she likes and where she lives, what job would suit her?' },
  { label: 'MULTI_HOP', style: 'generic', text: 'How do their hobbies compare with each other?' },
  { label: 'MULTI_HOP', style: 'generic', text: 'What connects the conference to the later partnership?' },
  { label: 'MULTI_HOP', style: 'locomo', text: 'What activities do Melanie and Caroline both enjoy?' },
  { label: 'MULTI_HOP', style: 'locomo', text: 'Which books has Tim read across all of their chats?' },
  { label: 'MULTI_HOP', style: 'locomo', text: 'Would Evan likely enjoy a camping trip, given his interests?' },
  { label: 'MULTI_HOP', style: 'locomo', text: 'What pets do Audrey and Andrew have between them?' },
  { label: 'MULTI_HOP', style: 'locomo', text: 'In which cities have both Jolene and Deborah lived?' },
  { label: 'MULTI_HOP', style: 'locomo', text: 'What instruments do the friends play altogether?' },
  { label: 'MULTI_HOP', style: 'locomo', text: 'Would Sam be considered a member of the LGBTQ community based on what he shared?' },
  // entity-centric — 7 generic, 5 LoCoMo-style
  { label: 'ENTITY_CENTRIC', style: 'generic', text: 'Tell me everything about the new manager.' },
  { label: 'ENTITY_CENTRIC', style: 'generic', text: 'What is her favourite food?' },
  { label: 'ENTITY_CENTRIC', style: 'generic', text: 'Where does he work now?' },
  { label: 'ENTITY_CENTRIC', style: 'generic', text: 'What kind of car does the neighbour drive?' },
  { label: 'ENTITY_CENTRIC', style: 'generic', text: 'Describe the company they founded.' },
  { label: 'ENTITY_CENTRIC', style: 'generic', text: 'Who is the person running the book club?' },
  { label: 'ENTITY_CENTRIC', style: 'generic', text: 'What are the main features of the product?' },
  { label: 'ENTITY_CENTRIC', style: 'locomo', text: "What is Melanie's daughter's name?" },
  { label: 'ENTITY_CENTRIC', style: 'locomo', text: 'What is Caroline’s relationship status?' },
  { label: 'ENTITY_CENTRIC', style: 'locomo', text: 'What breed is Audrey’s dog?' },
  { label: 'ENTITY_CENTRIC', style: 'locomo', text: 'What does John do for a living?' },
  { label: 'ENTITY_CENTRIC', style: 'locomo', text: 'Which country is Jolene from?' },
];

/**
 * The prototype bank, embedded on first use and cached; create one per embedder. A failed
 * embedding is not cached, so the next query retries.
 */
export class PrototypeBank implements PrototypeScorer {
  private vectors: Promise<Float32Array[]> | null = null;

  constructor(private readonly embed: EmbedTexts) {}

  /**
   * Each label's best prototype cosine to the query, best label first. The §3 top-1/top-2 margin
   * is taken between labels, not prototypes: two prototypes of the same label agreeing is
   * confidence, not ambiguity.
   */
  async scores(queryVector: Float32Array): Promise<Array<{ label: PrototypeLabel; score: number }>> {
    if (!this.vectors) {
      this.vectors = this.embed(PROTOTYPES.map((p) => p.text));
      this.vectors.catch(() => (this.vectors = null));
    }
    const vectors = await this.vectors;
    const best = new Map<PrototypeLabel, number>();
    PROTOTYPES.forEach((p, i) => {
      const v = vectors[i];
      if (v) best.set(p.label, Math.max(dot(v, queryVector), best.get(p.label) ?? -Infinity));
    });
    return [...best.entries()].map(([label, score]) => ({ label, score })).sort((a, b) => b.score - a.score);
  }
}

export interface IntentDeps {
  queryVector: Float32Array;
  prototypes: PrototypeScorer;
  /** Needed in `llm` mode only. */
  llm?: LlmClient;
  config: PrismConfig;
  mode: RetrievalMode;
  signal?: AbortSignal;
}

export interface IntentDecision {
  intent: Intent;
  tier: IntentTier;
  llmCalls: number;
  /** Why a tier-3 call gave no usable answer, when it did not. */
  warnings: string[];
}

const INTENT_SYSTEM_PROMPT = [
  'You label questions asked of a long-term conversation memory.',
  'Score each property independently from 0 to 1 (they are not exclusive):',
  '- temporal: the answer depends on dates, times, durations or the order of events;',
  '- causal: the question asks for a reason, cause, motivation or consequence;',
  '- multi_hop: answering needs several separate facts combined, compared or aggregated;',
  '- entity_centric: the question is about attributes of one specific person, place or thing.',
  'Reply with JSON only: {"temporal": x, "causal": x, "multi_hop": x, "entity_centric": x}.',
].join('\n');

/** Tie order when two LLM scores are equal. */
const LLM_LABELS: ReadonlyArray<[keyof IntentScores, PrototypeLabel]> = [
  ['temporal', 'TEMPORAL'],
  ['causal', 'CAUSAL'],
  ['multi_hop', 'MULTI_HOP'],
  ['entity_centric', 'ENTITY_CENTRIC'],
];

/**
 * N4 (design §3): keyword triggers, then the prototype bank, then (in `llm` mode) one LLM
 * call; the first tier that is confident decides. Zero-LLM mode ends after tier 2 with GENERAL.
 */
export async function routeIntent(query: string, deps: IntentDeps): Promise<IntentDecision> {
  const keyword = keywordIntent(query);
  if (keyword) return { intent: keyword, tier: 'keyword', llmCalls: 0, warnings: [] };

  const r = deps.config.retrieval;
  const [top, second] = await deps.prototypes.scores(deps.queryVector);
  if (top && top.score > r.prototypeThreshold && top.score - (second?.score ?? -1) > r.prototypeMargin) {
    return { intent: top.label, tier: 'prototype', llmCalls: 0, warnings: [] };
  }
  if (deps.mode === 'zero-llm') return { intent: 'GENERAL', tier: 'none', llmCalls: 0, warnings: [] };
  if (!deps.llm) throw new PrismError('LLM_NOT_CONFIGURED', 'intent routing in llm mode needs an LLM client');
  return llmIntent(query, deps.llm, deps.config, deps.signal);
}

/**
 * Tier 1. When both kinds of trigger occur, the one appearing first in the question wins:
 * the question word usually leads ("Why did she move after…" is causal).
 */
export function keywordIntent(query: string): 'TEMPORAL' | 'CAUSAL' | null {
  const temporal = firstMatch(query, TEMPORAL_TRIGGERS);
  const causal = firstMatch(query, CAUSAL_TRIGGERS);
  if (temporal === null && causal === null) return null;
  if (causal === null) return 'TEMPORAL';
  if (temporal === null) return 'CAUSAL';
  return causal <= temporal ? 'CAUSAL' : 'TEMPORAL';
}

function firstMatch(query: string, triggers: readonly RegExp[]): number | null {
  let first: number | null = null;
  for (const trigger of triggers) {
    const m = trigger.exec(query);
    if (m && (first === null || m.index < first)) first = m.index;
  }
  return first;
}

async function llmIntent(query: string, llm: LlmClient, config: PrismConfig, signal?: AbortSignal): Promise<IntentDecision> {
  const messages: ChatMessage[] = [
    { role: 'system', content: INTENT_SYSTEM_PROMPT },
    { role: 'user', content: `Question: ${query}` },
  ];
  const { intentScoresSchema } = await import('./llm-schemas.ts');
  let scores: IntentScores;
  try {
    scores = await llm.chatJson('intent', messages, intentScoresSchema, signal ? { signal } : undefined);
  } catch (err) {
    if (err instanceof PrismError && (err.code === 'LLM_BAD_JSON' || err.code === 'LLM_SCHEMA')) {
      return { intent: 'GENERAL', tier: 'none', llmCalls: 1, warnings: [`intent: ${err.message}`] };
    }
    throw err;
  }
  return { intent: intentFromScores(scores, config.retrieval.llmIntentThreshold), tier: 'llm', llmCalls: 1, warnings: [] };
}

/** Thresholds the four scores; MULTI_HOP suppresses ENTITY_CENTRIC; the highest confident label wins. */
export function intentFromScores(scores: IntentScores, threshold: number): Intent {
  const confident = LLM_LABELS.filter(([key]) => scores[key] >= threshold);
  const multiHop = confident.some(([, label]) => label === 'MULTI_HOP');
  let best: { label: Intent; score: number } = { label: 'GENERAL', score: -Infinity };
  for (const [key, label] of confident) {
    if (multiHop && label === 'ENTITY_CENTRIC') continue;
    if (scores[key] > best.score) best = { label, score: scores[key] };
  }
  return best.label;
}
