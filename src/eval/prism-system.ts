import { resolveConfig, type DeepPartial, type IngestConfig, type PrismConfig } from '../config.ts';
import { PrismError } from '../errors.ts';
import type { MemoryGraph } from '../graph/memory-graph.ts';
import type { LlmModels } from '../llm/client.ts';
import type { LlmRole } from '../llm/types.ts';
import type { Memory } from '../memory.ts';
import type { RetrievalMode } from '../retrieve/types.ts';
import type { EvalSample } from './benchmark.ts';
import { shortHash } from './fingerprint.ts';
import type { LocoCandidate } from './loco.ts';
import type { EvalSystem, PrepareOptions } from './systems.ts';

export interface PrismVariantSpec {
  /** Applied over the memories' config for retrieval. */
  overlay: DeepPartial<PrismConfig>;
  /**
   * `zero-llm` reads a locally extracted memory and calls no model. `llm` reads an LLM-extracted
   * memory and lets the LLM rerank (N3) and, with routing on, classify intents (N4 tier 3).
   */
  mode: RetrievalMode;
}

const VARIANTS = {
  prism: { mode: 'zero-llm', overlay: {} },
  // The paper's graph routing, off by default here: bridges (N1), then bridges with N2 discounts
  // under N4 intents (discounts need a routed intent and a bridge to act on).
  'prism+n1': { mode: 'zero-llm', overlay: { flags: { relationPaths: true } } },
  'prism+n1+n2+n4': { mode: 'zero-llm', overlay: { flags: { relationPaths: true, edgeDiscounts: true, intentRouting: true } } },
  'prism-no-n3': { mode: 'zero-llm', overlay: { flags: { compression: false } } },
  'prism+n4': { mode: 'zero-llm', overlay: { flags: { intentRouting: true } } },
  'prism-no-hybrid': { mode: 'zero-llm', overlay: { flags: { hybridAnchors: false } } },
  'prism-whole-episodes': { mode: 'zero-llm', overlay: { flags: { fineUnits: false } } },
  // This project's turn-scoring terms, one at a time.
  'prism-no-speaker': { mode: 'zero-llm', overlay: { retrieval: { turnScore: { speaker: 0 } } } },
  'prism-no-neighbours': { mode: 'zero-llm', overlay: { retrieval: { turnScore: { neighbourFact: 0, neighbourLexical: 0 } } } },
  'prism-no-question-prior': { mode: 'zero-llm', overlay: { retrieval: { turnScore: { question: 0 } } } },
  'prism-no-exchange': { mode: 'zero-llm', overlay: { retrieval: { turnScore: { exchange: 0 } } } },
  // Speaker names left in the query vector; the search not narrowed to the named speakers' Episodes.
  'prism-no-name-masking': { mode: 'zero-llm', overlay: { flags: { maskSpeakerNames: false } } },
  'prism-no-speaker-scope': { mode: 'zero-llm', overlay: { flags: { speakerScope: false } } },
  // Fine units drawn from `unitEpisodes` Episodes however little text they hold (`unitBudgets` 0).
  'prism-no-unit-budgets': { mode: 'zero-llm', overlay: { retrieval: { unitBudgets: 0 } } },
  'prism-no-date-focus': { mode: 'zero-llm', overlay: { flags: { dateFocus: false } } },
  // Relative time in the query ("two weeks ago") left unresolved, as before search knew when it is asked.
  'prism-no-relative-dates': { mode: 'zero-llm', overlay: { flags: { relativeDates: false } } },
  // First- and second-person queries not read as naming the user or the assistant.
  'prism-no-pronoun-speakers': { mode: 'zero-llm', overlay: { flags: { pronounSpeakers: false } } },
  // Any second-person query read as naming the assistant, requests ("can you suggest…?") too.
  'prism-any-second-person': { mode: 'zero-llm', overlay: { flags: { pastSecondPerson: false } } },
  // A query pointing at neither side read as naming no one (`flags.userByDefault` off).
  'prism-no-user-by-default': { mode: 'zero-llm', overlay: { flags: { userByDefault: false } } },
  // A turn that does not fit whole skipped, never fitted as its best sentences (the packing before `fitRemainder`).
  'prism-no-fit-remainder': { mode: 'zero-llm', overlay: { retrieval: { fitRemainder: 0 } } },
  // Turns from the K bundle Episodes only (unitEpisodes = K).
  'prism-bundle-turns': { mode: 'zero-llm', overlay: { retrieval: { unitEpisodes: 0, unitBudgets: 0 } } },
  // This project's session-independent turn anchors and adaptive fusion, each off, then both
  // with the question prior and exchange terms off too (the v0.3 scoring).
  'prism-no-turn-anchors': { mode: 'zero-llm', overlay: { retrieval: { turnAnchors: 0 } } },
  'prism-no-adaptive-fusion': { mode: 'zero-llm', overlay: { flags: { adaptiveFusion: false } } },
  'prism-v0.3-scoring': {
    mode: 'zero-llm',
    overlay: { retrieval: { turnAnchors: 0, unitBudgets: 0, turnScore: { question: 0, exchange: 0, speaker: 0.2 } }, flags: { adaptiveFusion: false, maskSpeakerNames: false, speakerScope: false, dateFocus: false, meaningRoute: false } },
  },
  // The meaning route off (every query ranked as a question is), and on without its reply term.
  'prism-no-meaning-route': { mode: 'zero-llm', overlay: { flags: { meaningRoute: false } } },
  'prism-meaning-no-reply': { mode: 'zero-llm', overlay: { retrieval: { meaningRoute: { reply: 0 } } } },
  // The meaning route ranking turns by their Facet's cosine (the turn's line), not their sentences taken together.
  'prism-meaning-facet-cosine': { mode: 'zero-llm', overlay: { flags: { composedTurns: false } } },
  // The meaning route keeping BM25's anchors in N1, as every other query does.
  'prism-meaning-lexical-anchors': { mode: 'zero-llm', overlay: { flags: { meaningRouteLexicalAnchors: true } } },
  // A capitalised word one letter away from a speaker's name left unread (`flags.nameTypos` off).
  'prism-no-name-typos': { mode: 'zero-llm', overlay: { flags: { nameTypos: false } } },
  // Routing on so that N4's LLM tier is exercised; `prism+n4` is its zero-LLM counterpart.
  'prism-llm': { mode: 'llm', overlay: { flags: { intentRouting: true } } },
} satisfies Record<string, PrismVariantSpec>;

/** PRISM as evaluated: the default, the paper's ablations (plus this project's), and LLM mode. */
export type PrismVariant = keyof typeof VARIANTS;
export const PRISM_VARIANTS: Readonly<Record<PrismVariant, PrismVariantSpec>> = VARIANTS;
export const PRISM_VARIANT_NAMES = Object.keys(VARIANTS) as PrismVariant[];
/** The variant every other one is compared with, as in the paper's ablation protocol. */
const PRISM_REFERENCE: PrismVariant = 'prism';

/** Everything an ingested memory depends on. */
export interface MemoryBuild {
  /** Package version, standing for the ingest code. */
  version: string;
  ingest: IngestConfig;
  extraction: 'local' | 'llm';
  /** Models of LLM extraction and causal consolidation; null for local extraction. */
  llmModels: Partial<Record<LlmRole, string>> | null;
  embedder: string;
  chunking: string;
}

/**
 * Names the directory a build's memories live in. Ingest reuses chunks by content hash alone,
 * so any change of the build must lead to a new directory rather than to old graphs.
 */
export async function memoryBuildKey(build: MemoryBuild): Promise<string> {
  return `${build.extraction}-${await shortHash(build)}`;
}

/** Ingested memories of one build, one at a time. */
export interface MemorySource {
  /** The `memoryBuildKey` of the memories it opens. */
  readonly key: string;
  /**
   * The memory holding `sample`'s conversation, ingested (or restored from its checkpoint).
   * Variants share one memory per sample, so the source decides when to close it.
   */
  open(sample: EvalSample, options: PrepareOptions): Promise<Memory>;
}

export interface PrismSystemOptions {
  variant: PrismVariant;
  /** Memories built for the variant's mode. */
  memories: MemorySource;
  /** The config the memories were opened with; the variant's overlay applies on top of it. */
  baseConfig: PrismConfig;
  /** Package version, standing for the retrieval code. */
  version: string;
  /** The endpoint's models; an LLM-mode variant's results depend on them (N3 rerank, N4 tier 3). */
  llmModels: LlmModels | null;
  /** A leave-one-conversation-out candidate: the variant under the candidate's name, its overlay on top. */
  candidate?: LocoCandidate;
}

/**
 * A PRISM variant as an EvalSystem. PRISM packs to the budget itself (fine units are chosen per
 * budget), so it is budget-sensitive: the runner asks once per budget. ER@K is taken over the
 * ranked bundle Episodes, as in the paper.
 */
export async function prismSystem(options: PrismSystemOptions): Promise<EvalSystem> {
  const { variant, memories, candidate } = options;
  const { overlay, mode } = PRISM_VARIANTS[variant];
  // Retrieval runs on exactly this config, whatever the memory was opened with, so the
  // fingerprint (and the resume cache keyed by it) changes with any constant that matters.
  const variantConfig = resolveConfig(overlay, options.baseConfig);
  const config = candidate ? resolveConfig(candidate.overlay, variantConfig) : variantConfig;
  const name = candidate?.name ?? variant;
  const settings = { config, llmModels: mode === 'llm' ? options.llmModels : null };
  const fingerprint = `${name}/${mode}/v${options.version}/config-${await shortHash(settings)}/memory-${memories.key}`;
  let memory: Memory | null = null;
  return {
    name,
    baseline: false,
    ...(variant === PRISM_REFERENCE || candidate ? {} : { variantOf: PRISM_REFERENCE }),
    fingerprint,
    budgetSensitive: true,
    async prepare(sample, prepareOptions = {}) {
      memory = await memories.open(sample, prepareOptions);
    },
    async retrieve(question, { budget, askedAt, signal }) {
      if (memory === null) throw new PrismError('INVALID_INPUT', `${name}: retrieve called before prepare`);
      // Asked when the benchmark says, or at no known time (never the machine's clock: runs must repeat).
      const result = await memory.search(question, { budget, mode, config, now: askedAt, ...(signal ? { signal } : {}) });
      const { graph } = await memory.inspect();
      return {
        units: result.units,
        episodes: result.ranked.map((e) => ({ dialogIds: episodeDialogIds(graph, e.episodeId) })),
        llmCalls: result.llmCalls,
        llmTokens: result.llmTokens,
        ...(config.flags.intentRouting ? { intent: { label: result.intent, tier: result.tier } } : {}),
      };
    },
  };
}

function episodeDialogIds(graph: MemoryGraph, episodeId: string): string[] {
  const episode = graph.nodes.get(episodeId);
  if (episode?.layer !== 'episode') return [];
  return graph.chunks.get(episode.chunkId)?.turns.map((t) => t.dialogId) ?? [];
}
