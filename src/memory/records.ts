import type { MemoryGraph } from '../graph/memory-graph.ts';
import type { Chunk, ChunkTurn, FacetPointNode, JsonValue } from '../graph/types.ts';
import type { ResolvedScope } from '../scope.ts';

/** One remembered message (or one passage of a long one), with where and whose it is. */
export interface MemoryTurn {
  /** The message id the caller gave, or the generated `<session>:<n>`; passages of a long message are `<id>#<k>`. */
  id: string;
  speaker: string;
  text: string;
  /** ISO time of the message, else of its session; null when neither was known. */
  date: string | null;
  sessionId: string;
  userId: string;
  agentId: string | null;
  runId: string | null;
  metadata?: Record<string, JsonValue>;
}

/** A session as `list()` shows it. */
export interface SessionInfo {
  sessionId: string;
  userId: string;
  agentId: string | null;
  runId: string | null;
  /** ISO time of the session (its first chunk). */
  date: string | null;
  messages: number;
  /** FacetPoints (atomic facts) extracted from the session. */
  facts: number;
}

/** One atomic fact (a FacetPoint) and the messages it was taken from. */
export interface FactInfo {
  id: string;
  text: string;
  /** The fact's own resolved time (`2023-05-07`, `2023-05`, …) when it states one. */
  time: string | null;
  sessionId: string;
  dialogIds: string[];
}

/** What `get(id)` finds: a session with its messages and facts, one message, or one fact. */
export type MemoryRecord =
  | { kind: 'session'; session: SessionInfo; messages: MemoryTurn[]; facts: FactInfo[] }
  | { kind: 'message'; message: MemoryTurn }
  | { kind: 'fact'; fact: FactInfo };

export function memoryTurn(chunk: Chunk, turn: ChunkTurn, scope: ResolvedScope): MemoryTurn {
  return {
    id: turn.dialogId,
    speaker: turn.speaker,
    text: turn.text,
    date: turn.time ?? chunk.time,
    sessionId: chunk.sessionId,
    ...scope,
    ...(turn.metadata ? { metadata: turn.metadata } : {}),
  };
}

function factInfo(node: FacetPointNode, chunk: Chunk | undefined): FactInfo {
  return { id: node.id, text: node.content, time: node.time, sessionId: chunk?.sessionId ?? '', dialogIds: [...node.dialogIds] };
}

/** Chunks grouped by session, each group in ingestion order, sessions by first chunk. */
function sessions(graph: MemoryGraph): Map<string, Chunk[]> {
  const chunks = [...graph.chunks.values()].sort((a, b) => a.order - b.order);
  const bySession = new Map<string, Chunk[]>();
  for (const chunk of chunks) {
    const list = bySession.get(chunk.sessionId) ?? [];
    list.push(chunk);
    bySession.set(chunk.sessionId, list);
  }
  return bySession;
}

/** FacetPoints per chunk id. */
function countByChunk(points: readonly FacetPointNode[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const node of points) counts.set(node.chunkId, (counts.get(node.chunkId) ?? 0) + 1);
  return counts;
}

function sessionInfo(sessionId: string, chunks: readonly Chunk[], facts: Map<string, number>, scope: ResolvedScope): SessionInfo {
  return {
    sessionId,
    ...scope,
    date: chunks[0]?.time ?? null,
    messages: chunks.reduce((sum, c) => sum + c.turns.length, 0),
    facts: chunks.reduce((sum, c) => sum + (facts.get(c.id) ?? 0), 0),
  };
}

/** Every session of a scope's memory, in the order they were added. */
export function listSessions(graph: MemoryGraph, scope: ResolvedScope): SessionInfo[] {
  const facts = countByChunk(graph.nodesOfLayer('facetPoint'));
  return [...sessions(graph)].map(([id, chunks]) => sessionInfo(id, chunks, facts, scope));
}

/** A session id, message id or fact id of one scope's memory; null when none has it. */
export function findRecord(graph: MemoryGraph, scope: ResolvedScope, id: string): MemoryRecord | null {
  const bySession = sessions(graph);
  const chunks = bySession.get(id);
  if (chunks) {
    const chunkIds = new Set(chunks.map((c) => c.id));
    const points = graph.nodesOfLayer('facetPoint').filter((n) => chunkIds.has(n.chunkId));
    const facts = points.map((n) => factInfo(n, graph.chunks.get(n.chunkId)));
    return {
      kind: 'session',
      session: sessionInfo(id, chunks, countByChunk(points), scope),
      messages: chunks.flatMap((c) => c.turns.map((t) => memoryTurn(c, t, scope))),
      facts,
    };
  }
  const node = graph.nodes.get(id);
  if (node?.layer === 'facetPoint') return { kind: 'fact', fact: factInfo(node, graph.chunks.get(node.chunkId)) };
  for (const chunk of graph.chunks.values()) {
    const turn = chunk.turns.find((t) => t.dialogId === id);
    if (turn) return { kind: 'message', message: memoryTurn(chunk, turn, scope) };
  }
  return null;
}

/** The turns behind a retrieved unit: those of its Episode's chunk named by `dialogIds`. */
export function unitTurns(graph: MemoryGraph, episodeId: string, dialogIds: readonly string[], scope: ResolvedScope): MemoryTurn[] {
  const episode = graph.nodes.get(episodeId);
  const chunk = episode?.layer === 'episode' ? graph.chunks.get(episode.chunkId) : undefined;
  if (!chunk) return [];
  const wanted = new Set(dialogIds);
  return chunk.turns.filter((t) => wanted.has(t.dialogId)).map((t) => memoryTurn(chunk, t, scope));
}

