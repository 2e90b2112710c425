import type { LlmSettings } from '../src/open-options.ts';
import type { EdgeType, Layer } from '../src/graph/types.ts';
import type { Conversation } from '../src/ingest/conversation.ts';
import type { IngestProgress, IngestReport } from '../src/ingest/pipeline.ts';
import type { DeleteTarget, MemoryStats } from '../src/memory.ts';
import type { MemoryTurn, SessionInfo } from '../src/memory/records.ts';
import type { UnitKind } from '../src/retrieve/units.ts';
import type { Intent, IntentTier, PathTemplate, RetrievalMode } from '../src/retrieve/types.ts';

/**
 * Messages between the page and the memory worker. The worker owns the Memory (model,
 * indexes, IndexedDB); the page only renders plain data it gets back.
 */

export interface DemoSettings {
  /** Folder URL of the MiniLM files, relative to the page. */
  modelBaseUrl: string;
  /** Null: zero-LLM. The key inside lives only in page and worker memory. */
  llm: LlmSettings | null;
  /** Extract facts with the LLM at ingest (else the local extractor). */
  llmExtraction: boolean;
}

export type WorkerRequest =
  | { type: 'open'; settings: DemoSettings }
  | { type: 'ingest'; conversations: Conversation[] }
  | { type: 'cancel-ingest' }
  | { type: 'ask'; query: string; budget: number; mode: RetrievalMode; answer: boolean }
  | { type: 'forget'; target: DeleteTarget };

/** A session as `memory.list()` reports it. */
export type SessionView = Pick<SessionInfo, 'sessionId' | 'date' | 'messages' | 'facts'>;

/** A turn of a retrieved unit, from the unit's structured `turns`. */
export type TurnView = Pick<MemoryTurn, 'id' | 'speaker' | 'text' | 'date' | 'sessionId'>;

/** What the page shows about the memory as a whole. */
export interface MemoryView {
  embedderId: string;
  llm: boolean;
  stats: MemoryStats;
  sessions: SessionView[];
}

export interface IngestProgressView extends IngestProgress {
  /** Over all conversations of the request: chunks finished and chunks in all. */
  overallDone: number;
  overallTotal: number;
  /** The memory as committed so far, so the counts grow chunk by chunk. */
  memory: MemoryView;
}

export interface UnitView {
  id: string;
  episodeId: string;
  kind: UnitKind;
  turns: TurnView[];
  dialogIds: string[];
  score: number;
  template: PathTemplate;
  pathCost: number;
  /** `formatTrace` of the winning N1 path. */
  trace: string;
  /** Node and edge ids of that path, to highlight it in the graph. */
  pathNodeIds: string[];
  pathEdgeIds: string[];
}

export interface GraphNodeView {
  id: string;
  layer: Layer;
  label: string;
  /** Full text for the detail panel. */
  detail: string;
  /** Rank (1-based) of the Episode among the retrieved ones; null for other nodes. */
  rank: number | null;
  onPath: boolean;
  /** Ordering hint: time order of the node's Episode (entities: mean of their neighbours'). */
  order: number;
}

export interface GraphEdgeView {
  id: string;
  type: EdgeType;
  source: string;
  target: string;
  onPath: boolean;
  description: string | null;
}

export interface NeighbourhoodView {
  nodes: GraphNodeView[];
  edges: GraphEdgeView[];
  /** Nodes and edges of the memory left out to keep the view readable. */
  omittedNodes: number;
}

export interface AskView {
  query: string;
  intent: Intent;
  tier: IntentTier;
  mode: RetrievalMode;
  budget: number;
  context: string;
  tokens: number;
  units: UnitView[];
  dialogIds: string[];
  /** Null unless an answer was asked for (needs an LLM). */
  answer: string | null;
  llmCalls: number;
  llmTokens: number;
  warnings: string[];
  ms: number;
  neighbourhood: NeighbourhoodView;
}

export interface IngestView {
  reports: IngestReport[];
  memory: MemoryView;
  cancelled: boolean;
}

export interface ErrorView {
  code: string;
  message: string;
}

/** The reply to each request, by its type. */
export interface WorkerReplies {
  open: MemoryView;
  ingest: IngestView;
  'cancel-ingest': null;
  ask: AskView;
  forget: { chunksDeleted: number; memory: MemoryView };
}

export type WorkerMessage =
  | { kind: 'reply'; id: number; ok: true; value: WorkerReplies[WorkerRequest['type']] }
  | { kind: 'reply'; id: number; ok: false; error: ErrorView }
  | { kind: 'progress'; id: number; progress: IngestProgressView }
  | { kind: 'status'; text: string };

export type Envelope = { id: number; request: WorkerRequest };

export type { EdgeType, Layer };
