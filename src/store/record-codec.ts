import { chunkText, turnTheme } from '../graph/chunk-text.ts';
import { edgeId, episodeIdOf, type Chunk, type ChunkTurn, type EdgeType, type GraphEdge, type GraphNode, type Layer } from '../graph/types.ts';

/**
 * How the stores (SQL and IndexedDB) keep records compactly, and read them back exactly. What a record can be
 * rebuilt from is not written twice (on LongMemEval chat it was most of a memory's bytes):
 * - a `belongs_to` or `involves_entity` edge is its from-node's `facetId`, `episodeId` or
 *   `entityId` (one of every two records of a graph): its node keeps just the edge's key;
 * - a Facet's or FacetPoint's `episodeId` that is its chunk's Episode (`episodeIdOf`) is `null`;
 * - a FacetPoint's `content` is its speaker and a stretch of its turn's text: it keeps the
 *   stretch's offsets, `[start, end]`; its `dialogIds` naming just that turn keep the turn's index;
 * - a Facet's `theme` that is a turn's theme as the local extractor names it (`turnTheme`) keeps
 *   the turn's index;
 * - a chunk's `text` is its header and turn lines (`chunkText`): it keeps `null`;
 * - a node or edge with exactly the keys graph building writes, in its order, is the array of
 *   its values, without the key names (a node's first value is its layer's number, its last the
 *   keys of the edges it folds in, as offsets from its own key; an edge's `id` is
 *   `edgeId(type, from, to)` and its trailing nulls are left off).
 * Rebuilt fields keep their place, so a record reads back equal to what was committed, key
 * order included (checkpoints are its JSON). Each replaced field's stand-in has a type the field
 * never has, so a field that does not match these forms exactly is written as it is; a record
 * with other keys or another key order is written as an object. The codec is pure: the store
 * runs it inside its transactions.
 */

/** Edge types a node can carry as a key: the edge runs from the node to an id the node holds. */
const DERIVED_EDGE_TYPES = ['belongs_to', 'involves_entity'] as const satisfies readonly EdgeType[];
type DerivedEdgeType = (typeof DERIVED_EDGE_TYPES)[number];
type EdgeKeys = Partial<Record<DerivedEdgeType, number>>;

/** Layers by their number in a stored node array. Append only: the numbers are on disk. */
const STORED_LAYERS = ['episode', 'facet', 'facetPoint', 'entity'] as const satisfies readonly Layer[];

/** Each layer's keys in the order graph building writes them: a node array holds their values but `layer`'s. */
const NODE_KEYS: { readonly [L in Layer]: readonly string[] } = {
  episode: ['id', 'key', 'layer', 'chunkId', 'summary', 'time', 'order'],
  facet: ['id', 'key', 'layer', 'chunkId', 'episodeId', 'theme'],
  facetPoint: ['id', 'key', 'layer', 'chunkId', 'episodeId', 'facetId', 'content', 'entityId', 'timeText', 'time', 'dialogIds'],
  entity: ['id', 'key', 'layer', 'name', 'entityType', 'chunkIds'],
};

/** An edge's keys in the order graph building writes them; an edge array holds their values but `id`'s. */
const EDGE_KEYS = ['id', 'key', 'type', 'from', 'to', 'chunkId', 'description', 'confidence'] as const;
/** Values an edge array always holds (key to chunkId); description and confidence only when not null. */
const EDGE_REQUIRED_VALUES = 5;

/** A stored node's fields (stand-ins included), the keys of the edges it folds in, and which form it takes. */
interface StoredNode {
  fields: Record<string, unknown>;
  edgeKeys: EdgeKeys;
  asArray: boolean;
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

/** True when `record` has exactly `keys`, in that order, none of them undefined (which an array would write as null). */
function hasKeysInOrder(record: object, keys: readonly string[]): boolean {
  const own = Object.entries(record);
  return own.length === keys.length && own.every(([key, value], i) => key === keys[i] && value !== undefined);
}

/** The chunk's turns, or none when they are not all whole records (a damaged stored chunk's fields then stay as stored). */
function turnsOf(chunk: Chunk | undefined): readonly ChunkTurn[] {
  const turns: unknown = chunk?.turns;
  return Array.isArray(turns) && turns.every((t) => typeof t === 'object' && t !== null) ? (turns as ChunkTurn[]) : [];
}

/** The index of the first turn with this dialog id, or -1. */
function turnIndex(turns: readonly ChunkTurn[], dialogId: string | undefined): number {
  return dialogId === undefined ? -1 : turns.findIndex((t) => t.dialogId === dialogId);
}

/** The offsets that rebuild a FacetPoint's content from its turn, or null when it is not such a stretch. */
function contentOffsets(content: string, turn: ChunkTurn | undefined): [number, number] | null {
  const prefix = `${turn?.speaker}: `;
  if (!turn || !content.startsWith(prefix)) return null;
  const stretch = content.slice(prefix.length);
  const start = turn.text.indexOf(stretch);
  return start < 0 ? null : [start, start + stretch.length];
}

/** The fields of `node` as stored: each field its chunk rebuilds replaced by its stand-in. */
function storedFields(node: GraphNode, chunk: Chunk | undefined): Record<string, unknown> {
  const fields: Record<string, unknown> = { ...node };
  if ((node.layer === 'facet' || node.layer === 'facetPoint') && node.episodeId === episodeIdOf(node.chunkId)) fields['episodeId'] = null;
  const turns = turnsOf(chunk);
  if (node.layer === 'facet') {
    const theme = turns.findIndex((t) => node.theme.startsWith(`${t.speaker}: `) && node.theme === turnTheme(t.speaker, t.text));
    if (theme >= 0) fields['theme'] = theme;
  }
  if (node.layer === 'facetPoint') {
    const turn = turnIndex(turns, node.dialogIds[0]);
    fields['content'] = contentOffsets(node.content, turns[turn]) ?? node.content;
    if (turn >= 0 && node.dialogIds.length === 1) fields['dialogIds'] = turn;
  }
  return fields;
}

/** `fields` with the stand-ins of fields its chunk rebuilds replaced; a stand-in that cannot be rebuilt stays, for validation to reject. */
function rebuiltNode(fields: Record<string, unknown>, chunks: ReadonlyMap<string, Chunk>): GraphNode {
  const chunkId = fields['chunkId'];
  if (typeof chunkId !== 'string') return fields as unknown as GraphNode;
  if (fields['episodeId'] === null) fields['episodeId'] = episodeIdOf(chunkId);
  const turns = turnsOf(chunks.get(chunkId));
  const { theme, dialogIds, content } = fields;
  if (typeof theme === 'number' && turns[theme]) fields['theme'] = turnTheme(turns[theme].speaker, turns[theme].text);
  if (typeof dialogIds === 'number' && turns[dialogIds]) fields['dialogIds'] = [turns[dialogIds].dialogId];
  const dialogId = fields['dialogIds'];
  const turn = Array.isArray(dialogId) && typeof dialogId[0] === 'string' ? turns[turnIndex(turns, dialogId[0])] : undefined;
  if (isOffsets(content) && turn) fields['content'] = `${turn.speaker}: ${turn.text.slice(content[0], content[1])}`;
  return fields as unknown as GraphNode;
}

function isOffsets(value: unknown): value is [number, number] {
  return Array.isArray(value) && value.length === 2 && value.every((n) => Number.isInteger(n));
}

function writeStored({ fields, edgeKeys, asArray }: StoredNode): string {
  const folds = DERIVED_EDGE_TYPES.some((type) => edgeKeys[type] !== undefined);
  if (!asArray) return JSON.stringify(folds ? { ...fields, edgeKeys } : fields);
  const layer = fields['layer'] as Layer;
  const values = [STORED_LAYERS.indexOf(layer), ...NODE_KEYS[layer].filter((k) => k !== 'layer').map((k) => fields[k])];
  const nodeKey = fields['key'] as number;
  if (folds) values.push(DERIVED_EDGE_TYPES.map((type) => (edgeKeys[type] === undefined ? null : edgeKeys[type] - nodeKey)));
  return JSON.stringify(values);
}

function readStored(json: string): StoredNode {
  const parsed: unknown = JSON.parse(json);
  if (!Array.isArray(parsed)) {
    const { edgeKeys = {}, ...fields } = parsed as Record<string, unknown> & { edgeKeys?: EdgeKeys };
    return { fields, edgeKeys, asArray: false };
  }
  const layer = STORED_LAYERS[parsed[0] as number];
  // An array of no known layer stays a layer-less record, for validation to reject.
  if (layer === undefined) return { fields: { layer: parsed[0] }, edgeKeys: {}, asArray: false };
  const keys = NODE_KEYS[layer];
  const fields: Record<string, unknown> = {};
  let at = 1;
  for (const key of keys) fields[key] = key === 'layer' ? layer : parsed[at++];
  const offsets: unknown = parsed[at];
  const edgeKeys: EdgeKeys = {};
  if (Array.isArray(offsets) && typeof fields['key'] === 'number') {
    DERIVED_EDGE_TYPES.forEach((type, i) => {
      if (typeof offsets[i] === 'number') edgeKeys[type] = (fields['key'] as number) + (offsets[i] as number);
    });
  }
  return { fields, edgeKeys, asArray: true };
}

/**
 * A node's stored JSON, and the ids of the `edges` it folds in (those it rebuilds exactly; the
 * store writes no row for them). `chunk` is the node's chunk when known, for the fields it rebuilds.
 */
export function encodeNode(node: GraphNode, edges: readonly GraphEdge[], chunk: Chunk | undefined): { json: string; folded: string[] } {
  const edgeKeys: EdgeKeys = {};
  const folded: string[] = [];
  for (const edge of edges) {
    if (!isDerivedFrom(edge, node)) continue;
    edgeKeys[edge.type] = edge.key;
    folded.push(edge.id);
  }
  const asArray = hasKeysInOrder(node, NODE_KEYS[node.layer]);
  return { json: writeStored({ fields: storedFields(node, chunk), edgeKeys, asArray }), folded };
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
  const stored = readStored(json);
  // The targets need no chunk: only an Episode id stands in, and it is rebuilt from the chunk id.
  const node = rebuiltNode({ ...stored.fields }, new Map());
  for (const type of DERIVED_EDGE_TYPES) {
    const to = stored.edgeKeys[type] === undefined ? null : derivedTarget(node, type);
    if (to === null || edgeId(type, node.id, to) !== id) continue;
    const { [type]: _dropped, ...rest } = stored.edgeKeys;
    return writeStored({ ...stored, edgeKeys: rest });
  }
  return null;
}

/**
 * A stored node and the edges it folds in, as committed; `chunks` are the partition's chunks by
 * id. A record whose fields do not fit is returned as it reads, for snapshot validation to reject.
 */
export function decodeNode(json: string, chunks: ReadonlyMap<string, Chunk>): { node: GraphNode; edges: GraphEdge[] } {
  const { fields, edgeKeys } = readStored(json);
  const node = rebuiltNode(fields, chunks);
  const edges: GraphEdge[] = [];
  for (const type of DERIVED_EDGE_TYPES) {
    const key = edgeKeys[type];
    const to = key === undefined ? null : derivedTarget(node, type);
    if (key === undefined || to === null || !('chunkId' in node)) continue;
    edges.push({ id: edgeId(type, node.id, to), key, type, from: node.id, to, chunkId: node.chunkId, description: null, confidence: null });
  }
  return { node, edges };
}

/** An edge's stored JSON: the array of its values when its keys and id are the ones graph building writes. */
export function encodeEdge(edge: GraphEdge): string {
  if (!hasKeysInOrder(edge, EDGE_KEYS) || edge.id !== edgeId(edge.type, edge.from, edge.to)) return JSON.stringify(edge);
  const values: unknown[] = EDGE_KEYS.slice(1).map((k) => edge[k]);
  while (values.length > EDGE_REQUIRED_VALUES && values.at(-1) === null) values.pop();
  return JSON.stringify(values);
}

/** A stored edge as committed (an array of the wrong types is returned as it reads, for validation to reject). */
export function decodeEdge(json: string): GraphEdge {
  const parsed: unknown = JSON.parse(json);
  if (!Array.isArray(parsed)) return parsed as GraphEdge;
  const [key, type, from, to, chunkId, description = null, confidence = null] = parsed as unknown[];
  const id = edgeId(type as EdgeType, String(from), String(to));
  return { id, key, type, from, to, chunkId, description, confidence } as GraphEdge;
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
