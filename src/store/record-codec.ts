import { chunkText } from '../graph/chunk-text.ts';
import { edgeId, type Chunk, type ChunkTurn, type EdgeType, type GraphEdge, type GraphNode } from '../graph/types.ts';

/**
 * How the SQL stores keep records compactly, and read them back exactly. What a record can be
 * rebuilt from is not written twice (on LongMemEval chat it was most of a memory's bytes):
 * - a `belongs_to` or `involves_entity` edge is its from-node's `facetId`, `episodeId` or
 *   `entityId` (one of every two records of a graph): its node keeps just the edge's key;
 * - a FacetPoint's `content` is its speaker and a stretch of its turn's text: it keeps the
 *   stretch's offsets, `[start, end]`;
 * - a chunk's `text` is its header and turn lines (`chunkText`): it keeps `null`.
 * Rebuilt fields keep their place, so a record reads back equal to what was committed, key
 * order included (checkpoints are its JSON). Whatever does not match these forms exactly is
 * written as it is. The codec is pure: the store runs it inside its transactions.
 */

/** Edge types a node can carry as a key: the edge runs from the node to an id the node holds. */
const DERIVED_EDGE_TYPES = ['belongs_to', 'involves_entity'] as const satisfies readonly EdgeType[];
type DerivedEdgeType = (typeof DERIVED_EDGE_TYPES)[number];

/** What a stored node adds: the keys of the derived edges it folds in. */
interface StoredNodeFields {
  edgeKeys?: Partial<Record<DerivedEdgeType, number>>;
}

/** The node id a derived edge of `type` runs to from `node`, or null when it has none. */
function derivedTarget(node: GraphNode, type: DerivedEdgeType): string | null {
  if (type === 'involves_entity') return node.layer === 'facetPoint' ? node.entityId : null;
  if (node.layer === 'facetPoint') return node.facetId;
  return node.layer === 'facet' ? node.episodeId : null;
}

/** Whether a node of this layer can fold derived edges in (Facets and FacetPoints). */
export function canFoldEdges(node: GraphNode): boolean {
  return node.layer === 'facet' || node.layer === 'facetPoint';
}

/** True when `edge` is exactly what `node` rebuilds for its type, given the edge's key. */
function isDerivedFrom(edge: GraphEdge, node: GraphNode): edge is GraphEdge & { type: DerivedEdgeType } {
  if (edge.type !== 'belongs_to' && edge.type !== 'involves_entity') return false;
  const to = derivedTarget(node, edge.type);
  return (
    to !== null &&
    edge.from === node.id &&
    edge.to === to &&
    edge.id === edgeId(edge.type, node.id, to) &&
    'chunkId' in node &&
    edge.chunkId === node.chunkId &&
    edge.description === null &&
    edge.confidence === null
  );
}

function turnOf(chunk: Chunk | undefined, dialogId: string | undefined): ChunkTurn | undefined {
  // A damaged stored chunk may lack its turns: the content then stays as stored, for validation to reject.
  return dialogId === undefined || !Array.isArray(chunk?.turns) ? undefined : chunk.turns.find((t) => t?.dialogId === dialogId);
}

/** The offsets that rebuild a FacetPoint's content from its turn, or null when it is not such a stretch. */
function contentOffsets(content: string, turn: ChunkTurn | undefined): [number, number] | null {
  const prefix = `${turn?.speaker}: `;
  if (!turn || !content.startsWith(prefix)) return null;
  const stretch = content.slice(prefix.length);
  const start = turn.text.indexOf(stretch);
  return start < 0 ? null : [start, start + stretch.length];
}

/**
 * A node's stored JSON, and the ids of the `edges` it folds in (those it rebuilds exactly; the
 * store writes no row for them). `chunk` is the node's chunk when known, for content offsets.
 */
export function encodeNode(node: GraphNode, edges: readonly GraphEdge[], chunk: Chunk | undefined): { json: string; folded: string[] } {
  const stored: Record<string, unknown> & StoredNodeFields = { ...node };
  const folded: string[] = [];
  for (const edge of edges) {
    if (!isDerivedFrom(edge, node)) continue;
    stored.edgeKeys = { ...stored.edgeKeys, [edge.type]: edge.key };
    folded.push(edge.id);
  }
  if (node.layer === 'facetPoint') stored['content'] = contentOffsets(node.content, turnOf(chunk, node.dialogIds[0])) ?? node.content;
  return { json: JSON.stringify(stored), folded };
}

/** Node ids a derived edge with this id may run from (the edge's id is `<type>:<from>><to>`). */
export function foldingNodeCandidates(id: string): string[] {
  const type = DERIVED_EDGE_TYPES.find((t) => id.startsWith(`${t}:`));
  if (type === undefined) return [];
  const rest = id.slice(type.length + 1);
  const candidates: string[] = [];
  for (let i = rest.indexOf('>'); i > 0; i = rest.indexOf('>', i + 1)) candidates.push(rest.slice(0, i));
  return candidates;
}

/** `json` without the derived edge `id` (a delete of that edge alone), or null when it does not fold it in. */
export function withoutFoldedEdge(json: string, id: string): string | null {
  const stored = JSON.parse(json) as Record<string, unknown> & GraphNode & StoredNodeFields;
  for (const type of DERIVED_EDGE_TYPES) {
    const to = stored.edgeKeys?.[type] === undefined ? null : derivedTarget(stored, type);
    if (to === null || edgeId(type, stored.id, to) !== id) continue;
    const { [type]: _dropped, ...rest } = stored.edgeKeys ?? {};
    if (Object.keys(rest).length > 0) stored.edgeKeys = rest;
    else delete stored.edgeKeys;
    return JSON.stringify(stored);
  }
  return null;
}

/**
 * A stored node and the edges it folds in, as committed; `chunks` are the partition's chunks by
 * id. A record whose fields do not fit is returned as it reads, for snapshot validation to reject.
 */
export function decodeNode(json: string, chunks: ReadonlyMap<string, Chunk>): { node: GraphNode; edges: GraphEdge[] } {
  const { edgeKeys, ...fields } = JSON.parse(json) as Record<string, unknown> & StoredNodeFields;
  const node = fields as unknown as GraphNode;
  if (node.layer === 'facetPoint' && isOffsets(fields['content'])) {
    const [start, end] = fields['content'];
    const turn = turnOf(chunks.get(node.chunkId), Array.isArray(node.dialogIds) ? node.dialogIds[0] : undefined);
    if (turn) node.content = `${turn.speaker}: ${turn.text.slice(start, end)}`;
  }
  const edges: GraphEdge[] = [];
  for (const type of DERIVED_EDGE_TYPES) {
    const key = edgeKeys?.[type];
    const to = key === undefined ? null : derivedTarget(node, type);
    if (key === undefined || to === null || !('chunkId' in node)) continue;
    edges.push({ id: edgeId(type, node.id, to), key, type, from: node.id, to, chunkId: node.chunkId, description: null, confidence: null });
  }
  return { node, edges };
}

function isOffsets(value: unknown): value is [number, number] {
  return Array.isArray(value) && value.length === 2 && value.every((n) => Number.isInteger(n));
}

/** A chunk's stored JSON: its text `null` when the text is the canonical one. */
export function encodeChunk(chunk: Chunk): string {
  return JSON.stringify(chunk.text === chunkText(chunk.header, chunk.turns) ? { ...chunk, text: null } : chunk);
}

/** A stored chunk as committed (a record too damaged to rebuild its text is returned as it reads). */
export function decodeChunk(json: string): Chunk {
  const chunk = JSON.parse(json) as Omit<Chunk, 'text'> & { text: string | null };
  const rebuildable = typeof chunk.header === 'string' && Array.isArray(chunk.turns) && chunk.turns.every((t) => typeof t === 'object' && t !== null);
  if (chunk.text === null && rebuildable) chunk.text = chunkText(chunk.header, chunk.turns);
  return chunk as Chunk;
}
