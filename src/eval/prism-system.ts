import { resolveConfig, type DeepPartial, type PrismConfig } from '../config.ts';
import { PrismError } from '../errors.ts';
import type { MemoryGraph } from '../graph/memory-graph.ts';
import type { LocomoSample } from '../ingest/locomo.ts';
import type { Memory } from '../memory.ts';
import type { RetrievalMode } from '../retrieve/types.ts';
import type { EvalSystem, PrepareOptions } from './systems.ts';

/** PRISM as evaluated: the default, and the paper's ablations (plus this project's), as config overlays. */
export const PRISM_VARIANTS = {
  prism: {},
  'prism-no-n1': { flags: { relationPaths: false } },
  'prism-no-n2': { flags: { edgeDiscounts: false } },
  'prism-no-n3': { flags: { compression: false } },
  'prism+n4': { flags: { intentRouting: true } },
  'prism-no-hybrid': { flags: { hybridAnchors: false } },
  'prism-whole-episodes': { flags: { fineUnits: false } },
} satisfies Record<string, DeepPartial<PrismConfig>>;

export type PrismVariant = keyof typeof PRISM_VARIANTS;
export const PRISM_VARIANT_NAMES = Object.keys(PRISM_VARIANTS) as PrismVariant[];

export interface PrismSystemOptions {
  variant: PrismVariant;
  /**
   * The memory holding `sample`'s conversation, ingested (or restored from its checkpoint).
   * Variants share one memory per conversation, so the caller decides when to open and close it.
   */
  memoryFor: (sample: LocomoSample, options: PrepareOptions) => Promise<Memory>;
  mode: RetrievalMode;
  /** Identifies the memory's build (embedder, chunking, extraction); part of the resume-cache key. */
  memoryFingerprint: string;
}

/**
 * A PRISM variant as an EvalSystem. PRISM packs to the budget itself (fine units are chosen per
 * budget), so it is budget-sensitive: the runner asks once per budget. ER@K is taken over the
 * ranked bundle Episodes, as in the paper.
 */
export function prismSystem(options: PrismSystemOptions): EvalSystem {
  const overlay: DeepPartial<PrismConfig> = PRISM_VARIANTS[options.variant];
  let memory: Memory | null = null;
  return {
    name: options.variant,
    baseline: false,
    fingerprint: `${options.variant}/${options.mode}/${JSON.stringify(overlay)}/${options.memoryFingerprint}`,
    budgetSensitive: true,
    async prepare(sample, prepareOptions = {}) {
      memory = await options.memoryFor(sample, prepareOptions);
    },
    async retrieve(question, { budget, signal }) {
      if (memory === null) throw new PrismError('INVALID_INPUT', `${options.variant}: retrieve called before prepare`);
      const result = await memory.search(question, { budget, mode: options.mode, config: overlay, ...(signal ? { signal } : {}) });
      const routed = resolveConfig(overlay, memory.config).flags.intentRouting;
      const graph = memory.graph;
      return {
        units: result.units,
        episodes: result.ranked.map((e) => ({ dialogIds: episodeDialogIds(graph, e.episodeId) })),
        llmCalls: result.llmCalls,
        llmTokens: result.llmTokens,
        ...(routed ? { intent: { label: result.intent, tier: result.tier } } : {}),
      };
    },
  };
}

function episodeDialogIds(graph: MemoryGraph, episodeId: string): string[] {
  const episode = graph.nodes.get(episodeId);
  if (episode?.layer !== 'episode') return [];
  return graph.chunks.get(episode.chunkId)?.turns.map((t) => t.dialogId) ?? [];
}
