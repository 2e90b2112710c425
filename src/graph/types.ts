/**
 * PRISM's typed memory graph (design §1) as plain data. Every node and edge carries a
 * numeric `key` used by the vector indexes; ids are readable strings.
 */
export type Layer = 'episode' | 'facet' | 'facetPoint' | 'entity';
export const LAYERS: readonly Layer[] = ['episode', 'facet', 'facetPoint', 'entity'];

export type RelationType = 'temporal' | 'causal' | 'evolution' | 'involves_entity' | 'semantic';
export type EdgeType = 'belongs_to' | RelationType;
export const EDGE_TYPES: readonly EdgeType[] = [
  'belongs_to',
  'temporal',
  'causal',
  'evolution',
  'involves_entity',
  'semantic',
];

/** An edge's id: its type and ends, so one relation between two nodes is one record. */
export function edgeId(type: EdgeType, from: string, to: string): string {
  return `${type}:${from}>${to}`;
}

/** Whether `id` is `edgeId(type, from, to)`, told without building that string (an open checks every edge). */
export function isEdgeId(id: string, type: EdgeType, from: string, to: string): boolean {
  const arrow = type.length + 1 + from.length;
  return (
    id.length === arrow + 1 + to.length &&
    id.startsWith(type) &&
    id.charCodeAt(type.length) === 0x3a &&
    id.startsWith(from, type.length + 1) &&
    id.charCodeAt(arrow) === 0x3e &&
    id.endsWith(to)
  );
}

/** The id of a chunk's Episode: one Episode per chunk, named by its chunk. */
export function episodeIdOf(chunkId: string): string {
  return `ep:${chunkId.slice(0, 16)}`;
}

/**
 * Relation types whose vector may be composed from their endpoints' vectors (the normalised
 * sum) instead of embedding a description: see `IngestConfig.edgeVectors`.
 */
export const COMPOSABLE_EDGE_TYPES: ReadonlySet<EdgeType> = new Set<EdgeType>(['involves_entity', 'evolution', 'temporal']);

export type EntityType = 'person' | 'organization' | 'place' | 'concept' | 'event' | 'other';

interface NodeBase {
  id: string;
  /** Index key, unique across nodes and edges of one memory. */
  key: number;
}

export interface EpisodeNode extends NodeBase {
  layer: 'episode';
  chunkId: string;
  summary: string;
  /** ISO-8601 date-time of the chunk's session header, when known. */
  time: string | null;
  /** Position in ingestion order; ties in `time` are broken by it. */
  order: number;
}

export interface FacetNode extends NodeBase {
  layer: 'facet';
  chunkId: string;
  episodeId: string;
  theme: string;
}

export interface FacetPointNode extends NodeBase {
  layer: 'facetPoint';
  chunkId: string;
  episodeId: string;
  facetId: string;
  content: string;
  entityId: string | null;
  /** The time expression as written, and its normalised ISO date when resolvable. */
  timeText: string | null;
  time: string | null;
  /** Dialog ids (`D3:12`) of the turns this fact was taken from, when known. Never changed in place: a read shares one list among a turn's facts. */
  dialogIds: readonly string[];
}

/**
 * What retrieval reads of each FacetPoint of an Episode (`MemoryGraph.facetPointsOf`): the node,
 * or, for a fact the graph holds as columns, its fields with its content made when first read.
 */
export type EpisodeFact = Readonly<Pick<FacetPointNode, 'id' | 'key' | 'facetId' | 'time' | 'content' | 'dialogIds'>>;

export interface EntityNode extends NodeBase {
  layer: 'entity';
  name: string;
  entityType: EntityType;
  /** Chunks that mention the entity, the one whose commit made the node first; the entity is deleted with the last of them. */
  chunkIds: string[];
}

export type GraphNode = EpisodeNode | FacetNode | FacetPointNode | EntityNode;

export interface GraphEdge {
  id: string;
  key: number;
  type: EdgeType;
  from: string;
  to: string;
  /** Chunk whose ingestion created the edge (deletion unit). */
  chunkId: string;
  /** Text the edge is embedded from (relation edges only). */
  description: string | null;
  /** Causal edges keep the consolidator's confidence. */
  confidence: number | null;
}

/** JSON-compatible metadata a caller attaches to messages. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * How a chunk's nodes were extracted: by the LLM, by the local extractor, or by the local
 * fallback after the LLM's answer stayed invalid (summary + entities only, re-extractable).
 */
export type ChunkExtraction = 'llm' | 'local' | 'fallback';

/** One ingested conversation chunk: the raw text behind an Episode. */
export interface Chunk {
  /** SHA-256 (hex) of the chunk's canonical text (or of its batch id); doubles as the dedup hash. */
  id: string;
  /** The session as callers name it: `add()`'s `sessionId`, or `<conversation>/<session>` for `addConversation`. */
  sessionId: string;
  /** e.g. `[Session 3 — 1:56 pm on 8 May, 2023]` */
  header: string;
  text: string;
  time: string | null;
  order: number;
  turns: ChunkTurn[];
  /** Absent in memories written before v0.3 (read as `local` or `llm` by the memory's mode). */
  extraction?: ChunkExtraction;
  /**
   * Tokens of `text` under the default counter (o200k_base), counted once at ingest so a search
   * does not count a whole session again to know how much text an Episode holds. Absent when a
   * custom counter was installed, and in chunks written before the field; read only while the
   * default counter is installed.
   */
  textTokens?: number;
  /**
   * The Entities this chunk's facts are about that no other chunk had named when it was
   * committed (`IngestConfig.sharedEntities`): each is made a node, under this id, when a second
   * chunk names it. Absent when there are none, and in chunks written before the field.
   */
  mentions?: EntityMention[];
}

/** A name a chunk's facts are about, not (yet) an Entity node: the id its facts' `entityId` names. */
export interface EntityMention {
  id: string;
  name: string;
  type: EntityType;
}

export interface ChunkTurn {
  /** The caller's message id, or a generated `<session>:<n>`; passages of a long message are `<id>#<k>`. */
  dialogId: string;
  speaker: string;
  text: string;
  /** ISO time of the message when the caller gave one (else the session's time applies). */
  time?: string | null;
  /**
   * Tokens of the turn's line (`turnLine`) under the default counter, counted once at ingest so
   * a search does not tokenise a long turn again to know whether it fits whole. Absent as
   * `Chunk.textTokens` is, and read only while that counter is installed.
   */
  lineTokens?: number;
  metadata?: Record<string, JsonValue>;
}

export interface MemoryMeta {
  schemaVersion: number;
  embedderId: string;
  dim: number;
  nextKey: number;
  chunkCount: number;
  /** Free-form settings persisted with the memory (e.g. extraction mode). */
  settings: Record<string, string | number | boolean>;
}

/** Everything a memory holds, as plain data: what stores load and checkpoints carry. */
export interface MemorySnapshot {
  meta: MemoryMeta;
  nodes: GraphNode[];
  edges: GraphEdge[];
  chunks: Chunk[];
  /** Vectors by node/edge id. */
  vectors: Map<string, Float32Array>;
  /** The ids of ingested chunks (`chunkIdOf` their content hash; older memories hold the full hash). */
  hashes: Set<string>;
}
