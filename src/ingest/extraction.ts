import type { ChunkExtraction, EntityType } from '../graph/types.ts';

/**
 * What extraction yields for one chunk: the five fields of design §2.3, in camelCase.
 * Both extractors (LLM and local) produce it; graph building consumes it.
 */
export interface Extraction {
  summary: string;
  entities: ExtractedEntity[];
  facetPoints: ExtractedFacetPoint[];
  facets: ExtractedFacet[];
  temporal: ExtractedTemporal[];
  /**
   * The facts whose sentences the summary quotes, when it is made of them (the local extractor):
   * the Episode's vector is then the normalised sum of their vectors rather than another
   * embedding of the same sentences. Absent for a written summary (LLM), which is embedded.
   */
  summaryQuotes?: number[];
}

export interface ExtractedEntity {
  name: string;
  type: EntityType;
}

export interface ExtractedFacetPoint {
  content: string;
  entityName: string | null;
  timeText: string | null;
  /** ISO-8601 prefix (`2023`, `2023-05`, `2023-05-07`) when the time expression resolves. */
  time: string | null;
  /** Turns the fact comes from, when the extractor knows them. */
  dialogIds: string[];
}

export interface ExtractedFacet {
  theme: string;
  pointIndices: number[];
}

export interface ExtractedTemporal {
  subject: string;
  timeExpression: string;
  normalizedTime: string | null;
  relation: 'before' | 'after' | 'during' | 'at';
}

/** The chunk as an extractor sees it. */
export interface ExtractionInput {
  /** `Chunk.id`: tags the LLM reply in the response cache, so deleting the chunk forgets it. */
  chunkId: string;
  header: string;
  /** ISO date-time of the session, the reference for relative time expressions. */
  time: string | null;
  turns: Array<{ dialogId: string; speaker: string; text: string }>;
}

export interface Extractor {
  readonly mode: 'local' | 'llm';
  extract(input: ExtractionInput, signal?: AbortSignal): Promise<ExtractionOutcome>;
  /** Loads what `extract` imports on first use, so later extractions need no network. */
  preload(): Promise<void>;
}

export interface ExtractionOutcome {
  extraction: Extraction;
  /** Set when the extractor fell back (invalid or empty output); counted by the pipeline. */
  warning: string | null;
}

/** What a chunk records about its extraction: the extractor's mode, or `fallback` when it fell back. */
export function chunkExtraction(extractor: Extractor, outcome: ExtractionOutcome): ChunkExtraction {
  return outcome.warning === null ? extractor.mode : 'fallback';
}
