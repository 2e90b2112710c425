import type { PrismConfig } from '../config.ts';
import type { MemoryGraph } from '../graph/memory-graph.ts';
import type { EdgeType, Layer } from '../graph/types.ts';
import type { LlmClient } from '../llm/types.ts';
import type { LexicalIndex } from './lexical.ts';

/** N4 labels (design §3). Only TEMPORAL and CAUSAL change edge costs. */
export type Intent = 'TEMPORAL' | 'CAUSAL' | 'MULTI_HOP' | 'ENTITY_CENTRIC' | 'GENERAL';

/** Which N4 tier decided; `none` when routing is off or no tier was confident. */
export type IntentTier = 'keyword' | 'prototype' | 'llm' | 'none';

/** `zero-llm` never calls an LLM at query time; `llm` may call the intent and rerank roles. */
export type RetrievalMode = 'zero-llm' | 'llm';

/** A node recalled for the query; `score` is its cosine to the query, so d(a) = 1 − score. */
export interface Anchor {
  id: string;
  score: number;
}

export type LayerAnchors = Record<Layer, Anchor[]>;

/** Dense top-k of one layer's index, best first, as node ids with cosines. */
export type SearchLayer = (layer: Layer, queryVector: Float32Array, k: number) => Promise<Anchor[]>;
export type EmbedQuery = (text: string, signal?: AbortSignal) => Promise<Float32Array>;
export type EmbedTexts = (texts: readonly string[]) => Promise<Float32Array[]>;

/** The eight N1 path templates (design §3). */
export type PathTemplate =
  | 'Ep'
  | 'Fc→Ep'
  | 'FP→Fc→Ep'
  | 'En→FP→Fc→Ep'
  | 'En→Fc→Ep'
  | 'temporal bridge'
  | 'causal bridge'
  | 'evolution bridge';

export interface TraceNode {
  id: string;
  layer: Layer;
  /** Entity name, Facet theme, FacetPoint content, or the Episode's ingestion order. */
  label: string;
}

export interface TraceEdge {
  id: string;
  type: EdgeType;
  /** N2 cost c_edge of this hop (c_hop is on the trace). */
  cost: number;
  /** Whether the hop follows the stored edge direction (relation bridges may run either way). */
  forward: boolean;
}

/** One N1 path from an anchor to an Episode: the retrieval trace of that Episode when it is the cheapest. */
export interface PathTrace {
  template: PathTemplate;
  /** d(a) = 1 − cos(q, anchor). */
  anchorCost: number;
  hopCost: number;
  /** d(a) + Σ (c_edge + c_hop). */
  total: number;
  nodes: TraceNode[];
  edges: TraceEdge[];
}

/** An Episode of the N1 bundle with its minimum path cost and that path. */
export interface BundleEntry {
  episodeId: string;
  cost: number;
  trace: PathTrace;
}

/** A bundle Episode after N3, best first; `score` is higher-is-better on the ranking's own scale. */
export interface RankedEpisode extends BundleEntry {
  score: number;
}

/** N4's prototype tier: each non-GENERAL label's best cosine with the query, best first. */
export interface PrototypeScorer {
  scores(queryVector: Float32Array): Promise<Array<{ label: Exclude<Intent, 'GENERAL'>; score: number }>>;
}

/** What retrieval needs from a memory; the lead builds one per Memory. */
export interface RetrieveDeps {
  graph: MemoryGraph;
  embedQuery: EmbedQuery;
  searchLayer: SearchLayer;
  /** BM25 index over the graph's text; required for hybrid anchors and lexical precision signals. */
  lexical?: LexicalIndex;
  /** N4 tier 2 (`PrototypeBank`); create once per embedder and reuse (it embeds its 46 queries once). */
  prototypes: PrototypeScorer;
  llm?: LlmClient;
  config: PrismConfig;
}
