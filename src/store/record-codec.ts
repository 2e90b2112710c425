import { chunkText, joinChunkText, shareTurnTexts, speakerLead, turnTheme, type UnjoinedChunk } from '../graph/chunk-text.ts';
import { DERIVED_EDGE_TYPES, derivedTarget, EDGE_KEYS, hasKeysInOrder, isDerivedFrom, type NodeEdgeKeys } from '../graph/derived-edges.ts';
import { EDGE_TYPES, edgeId, episodeIdOf, type Chunk, type ChunkTurn, type EdgeType, type GraphEdge, type GraphNode, type Layer } from '../graph/types.ts';
import { isCanonicalFactIdOf, type FactColumns } from '../graph/fact-columns.ts';
import { appendedTo } from '../util/appended.ts';

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
 * - an Entity's `chunkIds` longer than `ENTITY_PAGE_IDS` (a speaker's Entity names every chunk)
 *   are kept in pages beside the record, which keeps their count and digest (`entityPaging`), so
 *   a chunk joining the Entity rewrites its last page, not the whole list;
 * - a node or edge with exactly the keys graph building writes, in its order, is the array of
 *   its values, without the key names (a node's first value is its layer's number, its last the
 *   keys of the edges it folds in, as offsets from its own key; an edge's `id` is
 *   `edgeId(type, from, to)` and its trailing nulls are left off);
 * - keyed (where the store keys the record by its id, as SQL rows and IndexedDB values are): a
 *   node array's id is `null`, and an edge array's type and ends are one `null`, read back from
 *   the record's key.
 * Rebuilt fields keep their place, so a record reads back equal to what was committed, key
 * order included (checkpoints are its JSON). Each replaced field's stand-in has a type the field
 * never has, so a field that does not match these forms exactly is written as it is; a record
 * with other keys or another key order is written as an object. The codec is pure: the store
 * runs it inside its transactions.
 */

/** Layers by their number in a stored node array. Append only: the numbers are on disk. */
const STORED_LAYERS = ['episode', 'facet', 'facetPoint', 'entity'] as const satisfies readonly Layer[];

/**
 * A node's fields from the values of its stored array (`values[0]` is the layer's code, then the
 * fields in the order graph building writes them, `layer` left out), made in one literal: a
 * record then holds its fields in the object itself, where one filled key by key from an empty
 * object kept most of them in a property array grown beside it (20 MB of heap at 100K messages).
 */
const NODE_OF_VALUES: { readonly [L in Layer]: (values: readonly unknown[]) => Record<string, unknown> } = {
  episode: (v) => ({ id: v[1], key: v[2], layer: 'episode', chunkId: v[3], summary: v[4], time: v[5], order: v[6] }),
  facet: (v) => ({ id: v[1], key: v[2], layer: 'facet', chunkId: v[3], episodeId: v[4], theme: v[5] }),
  facetPoint: (v) => ({ id: v[1], key: v[2], layer: 'facetPoint', chunkId: v[3], episodeId: v[4], facetId: v[5], content: v[6], entityId: v[7], timeText: v[8], time: v[9], dialogIds: v[10] }),
  entity: (v) => ({ id: v[1], key: v[2], layer: 'entity', name: v[3], entityType: v[4], chunkIds: v[5] }),
};

/** Each layer's node keys in their stored order: the order `NODE_OF_VALUES` makes them in. */
const NODE_KEYS: { readonly [L in Layer]: readonly string[] } = {
  episode: Object.keys(NODE_OF_VALUES.episode([])),
  facet: Object.keys(NODE_OF_VALUES.facet([])),
  facetPoint: Object.keys(NODE_OF_VALUES.facetPoint([])),
  entity: Object.keys(NODE_OF_VALUES.entity([])),
};

/** Values an edge array (`EDGE_KEYS`' values but `id`'s) always holds, key to chunkId; description and confidence only when not null. */
const EDGE_REQUIRED_VALUES = 5;

/**
 * Chunk ids an Entity record holds itself. A longer list is kept in pages of this many ids
 * beside it: on 10K messages of chat a speaker's Entity named ~1,000 chunks (64 KB) and was
 * written whole on every add; now an add rewrites one page (≤ 4.6 KB of 16-digit chunk ids,
 * 17 KB of the 64-digit ids older memories hold) and the record.
 */
export const ENTITY_PAGE_IDS = 256;

/** What a paged Entity's record keeps for its `chunkIds`: their count and digest (an object, which `chunkIds` never is). */
interface PagedChunkIds {
  count: number;
  digest: string;
}

function isPagedChunkIds(value: unknown): value is PagedChunkIds {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && typeof (value as PagedChunkIds).count === 'number' && typeof (value as PagedChunkIds).digest === 'string';
}

/**
 * A digest of a list of ids, taken as it grows. Two 32-bit multiply-xor lanes (53 bits): a stored
 * digest tells a writer whether the list it puts starts with the stored one, so it rewrites only
 * the pages after it.
 */
class IdsDigest {
  private h1 = 0xdeadbeef;
  private h2 = 0x41c6ce57;

  add(id: string): void {
    for (let i = 0; i <= id.length; i++) {
      // The list's separator (a code no UTF-16 unit has) after each id.
      const code = i < id.length ? id.charCodeAt(i) : 0x10000;
      this.h1 = Math.imul(this.h1 ^ code, 2654435761);
      this.h2 = Math.imul(this.h2 ^ code, 1597334677);
    }
  }

  copy(): IdsDigest {
    const digest = new IdsDigest();
    digest.h1 = this.h1;
    digest.h2 = this.h2;
    return digest;
  }

  value(): string {
    const h1 = Math.imul(this.h1 ^ (this.h1 >>> 16), 2246822507) ^ Math.imul(this.h2 ^ (this.h2 >>> 13), 3266489909);
    const h2 = Math.imul(this.h2 ^ (this.h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
    return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36);
  }
}

/**
 * A long Entity's chunk list as a writer last wrote it, with its digest. Kept by the writer, it
 * spares hashing every id on every add: a list that starts with it (the same strings, compared
 * by reference first) is hashed from where it ends.
 */
export interface WrittenList {
  ids: readonly string[];
  digest: IdsDigest;
}

/** The digest of `ids[from, to)` continued from `base` (a fresh digest when none; `base` is left as it is). */
function digestOver(ids: readonly string[], from: number, to: number, base?: IdsDigest): IdsDigest {
  const digest = base ? base.copy() : new IdsDigest();
  for (let i = from; i < to; i++) digest.add(ids[i] as string);
  return digest;
}

function digestOf(ids: readonly string[]): string {
  return digestOver(ids, 0, ids.length).value();
}

/** The pages a paged Entity's chunk ids are written in, from page `from` on, each as its JSON. */
export function entityPages(chunkIds: readonly string[], from = 0): Array<[page: number, json: string]> {
  const pages: Array<[number, string]> = [];
  for (let page = from; page * ENTITY_PAGE_IDS < chunkIds.length; page++) pages.push([page, JSON.stringify(chunkIds.slice(page * ENTITY_PAGE_IDS, (page + 1) * ENTITY_PAGE_IDS))]);
  return pages;
}

/** How many pages a stored node record has beside it (0: none, its chunk ids, if any, are in the record). */
export function storedPageCount(json: string): number {
  const { fields } = readStored(json);
  const ids = fields['chunkIds'];
  return isPagedChunkIds(ids) ? Math.ceil(ids.count / ENTITY_PAGE_IDS) : 0;
}

/**
 * Which of an Entity's pages a write must rewrite: those from the first page the stored list
 * (`storedJson`, its record as stored, or none) does not hold unchanged, through the new list's
 * last; how many pages are stored, so that those past the new list's last go; and, for a paged
 * list, its digest and the list to remember as written. `written` is the list this writer wrote
 * last (if any): when the stored record still has its digest, the stored list is that one.
 */
export function entityPaging(
  node: GraphNode,
  storedJson: string | undefined,
  written: WrittenList | undefined,
): { pages: Array<[page: number, json: string]>; storedPages: number; paged: WrittenList | null } {
  const stored = storedJson === undefined ? undefined : readStored(storedJson).fields['chunkIds'];
  const storedPages = isPagedChunkIds(stored) ? Math.ceil(stored.count / ENTITY_PAGE_IDS) : 0;
  if (node.layer !== 'entity' || node.chunkIds.length <= ENTITY_PAGE_IDS) return { pages: [], storedPages, paged: null };
  const ids = node.chunkIds;
  if (!isPagedChunkIds(stored)) return { pages: entityPages(ids), storedPages, paged: { ids, digest: digestOver(ids, 0, ids.length) } };
  // The stored list still holds when it is a prefix of the new one: only its last page can change.
  // What this writer wrote last is what is stored when the stored digest is its digest (its ids
  // are then compared by reference first); else the digest of the new list's head says.
  const known = written?.ids.length === stored.count && written.digest.value() === stored.digest ? written : undefined;
  let head: IdsDigest | undefined;
  if (known) head = startsWith(ids, known.ids) ? known.digest : undefined;
  else if (stored.count <= ids.length) {
    const digest = digestOver(ids, 0, stored.count);
    head = digest.value() === stored.digest ? digest : undefined;
  }
  const kept = head ? Math.floor(stored.count / ENTITY_PAGE_IDS) : 0;
  return { pages: entityPages(ids, kept), storedPages, paged: { ids, digest: head ? digestOver(ids, stored.count, ids.length, head) : digestOver(ids, 0, ids.length) } };
}

/**
 * Whether `list` starts with `head`'s strings, the same ones: at once when `list` was `appended`
 * to `head` (a speaker's list, ~10K ids at 100K messages, at every add), else compared one by one.
 */
function startsWith(list: readonly string[], head: readonly string[]): boolean {
  if (appendedTo(list) === head) return true;
  if (head.length > list.length) return false;
  for (let i = 0; i < head.length; i++) if (head[i] !== list[i]) return false;
  return true;
}

/** A stored node's fields (stand-ins included), the keys of the edges it folds in, and which form it takes. */
interface StoredNode {
  fields: Record<string, unknown>;
  edgeKeys: NodeEdgeKeys;
  asArray: boolean;
  /** An array whose id is its row's key: written `null` again. */
  keyed?: boolean;
}

/** The chunk's turns, or none when they are not all whole records (a damaged stored chunk's fields then stay as stored). */
function turnsOf(chunk: Chunk | undefined): readonly ChunkTurn[] {
  return (wholeTurns(chunk?.turns) as ChunkTurn[] | null) ?? [];
}

/** A stored chunk's turns when they are a list of records (their fields not checked), else null. */
function wholeTurns(turns: unknown): Array<Record<string, unknown>> | null {
  return Array.isArray(turns) && turns.every((t) => typeof t === 'object' && t !== null) ? (turns as Array<Record<string, unknown>>) : null;
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
function storedFields(node: GraphNode, chunk: Chunk | undefined, paged: WrittenList | undefined): Record<string, unknown> {
  const fields: Record<string, unknown> = { ...node };
  if (node.layer === 'entity' && node.chunkIds.length > ENTITY_PAGE_IDS) {
    const digest = paged?.ids === node.chunkIds ? paged.digest.value() : digestOf(node.chunkIds);
    fields['chunkIds'] = { count: node.chunkIds.length, digest } satisfies PagedChunkIds;
  }
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

/**
 * What one read shares among the records it rebuilds, so that a value many of them name is one
 * string or list in the heap. A read meets a chunk's records together, so each value is kept for
 * the chunk, or the record, last asked about:
 * - the `dialogIds` of the FacetPoints rebuilt from their turn's index, one frozen list per turn:
 *   a turn's facts (2.6 a turn on LongMemEval chat) name just that turn, and a list each was
 *   ~10 MB of heap at 100K messages;
 * - a chunk's Episode id, which its Facets and FacetPoints leave to their chunk, and the Facet
 *   and Entity a FacetPoint names, where the one before named the same: made or parsed anew for
 *   each record, they lived until the graph put its own strings in their place, copied by every
 *   collection of the young heap on the way (at 100K messages ~1.07M strings, ~600K of them now
 *   shared: 437K Episode ids made 19K times, 162K of 318K Facet ids, 21K of 318K Entity ids).
 */
export class ReadSharing {
  private chunk: Chunk | null = null;
  private lists: Array<readonly string[] | undefined> = [];
  private episodeChunkId = '';
  private episodeId = '';
  private readonly last = { facetId: '', entityId: '' };
  private stretchChunk: Chunk | null = null;
  private lengths: readonly number[] = [];

  dialogIds(chunk: Chunk, turn: number, dialogId: string): readonly string[] {
    if (chunk !== this.chunk) {
      this.chunk = chunk;
      this.lists = [];
    }
    return (this.lists[turn] ??= Object.freeze([dialogId]));
  }

  /**
   * The length of the text of each turn of `chunk` a FacetPoint's content may be a stretch of: the
   * first turn of its dialog id (as `rebuiltNode` finds the turn a content's stretch is of), −1 for
   * any other (or one that is not whole); the same list while the chunk is the same.
   */
  stretchLengths(chunk: Chunk): readonly number[] {
    if (chunk !== this.stretchChunk) {
      this.stretchChunk = chunk;
      const turns = wholeTurns(chunk.turns) ?? [];
      this.lengths = turns.map((turn, at) => (typeof turn['dialogId'] === 'string' && typeof turn['text'] === 'string' && turnIndex(chunk.turns, turn['dialogId']) === at ? turn['text'].length : -1));
    }
    return this.lengths;
  }

  /** `episodeIdOf(chunkId)`, the same string while the chunk is the same. */
  episodeIdOf(chunkId: string): string {
    if (chunkId !== this.episodeChunkId) {
      this.episodeChunkId = chunkId;
      this.episodeId = episodeIdOf(chunkId);
    }
    return this.episodeId;
  }

  /** `id`, or the equal string the last record read named in `field`. */
  id(field: 'facetId' | 'entityId', id: string): string {
    if (id === this.last[field]) return this.last[field];
    this.last[field] = id;
    return id;
  }
}

/**
 * `fields` with the stand-ins of fields its chunk (or its pages) rebuild replaced; a stand-in that
 * cannot be rebuilt stays, for validation to reject.
 */
function rebuiltNode(fields: Record<string, unknown>, chunks: ReadonlyMap<string, Chunk>, pages?: ReadonlyMap<string, readonly string[]>, sharing?: ReadSharing): GraphNode {
  const paged = fields['chunkIds'];
  const own = isPagedChunkIds(paged) && typeof fields['id'] === 'string' ? pages?.get(fields['id']) : undefined;
  if (isPagedChunkIds(paged) && own !== undefined) {
    const ids = idsOfPages(own);
    if (ids !== null && ids.length === paged.count && digestOf(ids) === paged.digest) fields['chunkIds'] = ids;
  }
  const named = fields['chunkIds'];
  // An Entity's chunks by their own id strings, as a Facet's or FacetPoint's chunk below.
  if (Array.isArray(named)) fields['chunkIds'] = named.map((id: unknown) => (typeof id === 'string' ? (chunks.get(id)?.id ?? id) : id));
  const chunkId = fields['chunkId'];
  if (typeof chunkId !== 'string') return fields as unknown as GraphNode;
  if (fields['episodeId'] === null) fields['episodeId'] = sharing ? sharing.episodeIdOf(chunkId) : episodeIdOf(chunkId);
  if (sharing) {
    const { facetId, entityId } = fields;
    if (typeof facetId === 'string') fields['facetId'] = sharing.id('facetId', facetId);
    if (typeof entityId === 'string') fields['entityId'] = sharing.id('entityId', entityId);
  }
  const chunk = chunks.get(chunkId);
  // The chunk's own id string, not the copy each record's JSON makes: ~12 nodes a chunk share it.
  if (chunk) fields['chunkId'] = chunk.id;
  const turns = turnsOf(chunk);
  const { theme, dialogIds, content } = fields;
  if (typeof theme === 'number' && turns[theme]) fields['theme'] = turnTheme(turns[theme].speaker, turns[theme].text);
  if (typeof dialogIds === 'number' && turns[dialogIds]) {
    const { dialogId } = turns[dialogIds];
    fields['dialogIds'] = sharing && chunk ? sharing.dialogIds(chunk, dialogIds, dialogId) : [dialogId];
  }
  const dialogId = fields['dialogIds'];
  const turn = Array.isArray(dialogId) && typeof dialogId[0] === 'string' ? turns[turnIndex(turns, dialogId[0])] : undefined;
  if (isOffsets(content) && turn) fields['content'] = speakerLead(turn.speaker) + turn.text.slice(content[0], content[1]);
  return fields as unknown as GraphNode;
}

/** The ids of an Entity's pages in order, or null when one is not a JSON list of strings. */
function idsOfPages(pages: readonly string[]): string[] | null {
  const ids: string[] = [];
  for (const page of pages) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(page);
    } catch {
      return null;
    }
    if (!Array.isArray(parsed) || !parsed.every((id) => typeof id === 'string')) return null;
    ids.push(...(parsed as string[]));
  }
  return ids;
}

function isOffsets(value: unknown): value is [number, number] {
  return Array.isArray(value) && value.length === 2 && value.every((n) => Number.isInteger(n));
}

function writeStored({ fields, edgeKeys, asArray, keyed = false }: StoredNode): string {
  const folds = DERIVED_EDGE_TYPES.some((type) => edgeKeys[type] !== undefined);
  if (!asArray) return JSON.stringify(folds ? { ...fields, edgeKeys } : fields);
  const layer = fields['layer'] as Layer;
  const values = [STORED_LAYERS.indexOf(layer), ...NODE_KEYS[layer].filter((k) => k !== 'layer').map((k) => (keyed && k === 'id' ? null : fields[k]))];
  const nodeKey = fields['key'] as number;
  if (folds) values.push(DERIVED_EDGE_TYPES.map((type) => (edgeKeys[type] === undefined ? null : edgeKeys[type] - nodeKey)));
  return JSON.stringify(values);
}

/** A stored node's parts; `rowKey` is its row's key, when the store keys rows by id (it stands in for a `null` id). */
function readStored(json: string, rowKey?: string): StoredNode {
  const parsed: unknown = JSON.parse(json);
  if (!Array.isArray(parsed)) {
    const { edgeKeys = {}, ...fields } = parsed as Record<string, unknown> & { edgeKeys?: NodeEdgeKeys };
    return { fields, edgeKeys, asArray: false };
  }
  const layer = STORED_LAYERS[parsed[0] as number];
  // An array of no known layer stays a layer-less record, for validation to reject.
  if (layer === undefined) return { fields: { layer: parsed[0] }, edgeKeys: {}, asArray: false };
  const fields = NODE_OF_VALUES[layer](parsed);
  const keyed = fields['id'] === null && rowKey !== undefined;
  if (keyed) fields['id'] = rowKey;
  // The derived edges' key offsets follow the fields: the array holds the layer's code, then every field but the layer.
  const offsets: unknown = parsed[NODE_KEYS[layer].length];
  const edgeKeys: NodeEdgeKeys = {};
  if (Array.isArray(offsets) && typeof fields['key'] === 'number') {
    DERIVED_EDGE_TYPES.forEach((type, i) => {
      if (typeof offsets[i] === 'number') edgeKeys[type] = (fields['key'] as number) + (offsets[i] as number);
    });
  }
  return { fields, edgeKeys, asArray: true, keyed };
}

/**
 * A node's stored JSON, and the ids of the `edges` it folds in (those it rebuilds exactly; the
 * store writes no row for them). `chunk` is the node's chunk when known, for the fields it
 * rebuilds; `keyed` when the row's key is the node's id (the JSON leaves it out).
 */
export function encodeNode(node: GraphNode, edges: readonly GraphEdge[], chunk: Chunk | undefined, paged?: WrittenList, keyed = false): { json: string; folded: string[] } {
  const edgeKeys: NodeEdgeKeys = {};
  const folded: string[] = [];
  for (const edge of edges) {
    if (!isDerivedFrom(edge, node)) continue;
    edgeKeys[edge.type] = edge.key;
    folded.push(edge.id);
  }
  const asArray = hasKeysInOrder(node, NODE_KEYS[node.layer]);
  return { json: writeStored({ fields: storedFields(node, chunk, paged), edgeKeys, asArray, keyed }), folded };
}

/** `json` (of the row keyed `rowKey`) without the derived edge `id` (a delete of that edge alone), or null when it does not fold it in. */
export function withoutFoldedEdge(json: string, id: string, rowKey?: string): string | null {
  const stored = readStored(json, rowKey);
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
 * A stored node and the keys of the derived edges it folds in (`derivedEdgesOf` makes them), as
 * committed; `chunks` are the partition's chunks by id, `pages` each paged Entity's pages in
 * order, by its id; `rowKey` the key of its row where the store keys rows by id. A record whose
 * fields do not fit (or whose pages do not) is returned as it reads, for snapshot validation to
 * reject.
 */
export function decodeNode(
  json: string,
  chunks: ReadonlyMap<string, Chunk>,
  pages?: ReadonlyMap<string, readonly string[]>,
  rowKey?: string,
  sharing?: ReadSharing,
): { node: GraphNode; edgeKeys: NodeEdgeKeys } {
  const { fields, edgeKeys } = readStored(json, rowKey);
  return { node: rebuiltNode(fields, chunks, pages, sharing), edgeKeys };
}

/** How a stored FacetPoint array in the plain keyed form starts: its layer's code, then the `null` its row key stands in for. */
const PLAIN_FACT_HEAD = `[${STORED_LAYERS.indexOf('facetPoint')},null,`;
/** Values of a stored FacetPoint array: the layer's code and every field but the layer (`NODE_KEYS`), then, where it folds edges in, their key offsets. */
const FACT_VALUES = NODE_KEYS.facetPoint.length;

/**
 * Adds the FacetPoint stored as `json` under row key `rowKey` to `columns` when it is one graph
 * building wrote, in the keyed form (record-codec's header): its id canonical for its chunk
 * (`fp:<chunk prefix>:<n>`), its Episode its chunk's, its content a stretch of a turn of its
 * chunk, its dialog ids that turn's alone, and any folded edge's key a count. False, nothing
 * added, for any other record, and for one whose id the columns hold already: `decodeNode` reads
 * it, and validation judges it as ever. What is added reads back (`MemoryGraph`'s fact nodes)
 * equal to what `decodeNode` makes of it.
 */
export function addPlainFact(columns: FactColumns, json: string, rowKey: string, chunks: ReadonlyMap<string, Chunk>, sharing: ReadSharing): boolean {
  if (!json.startsWith(PLAIN_FACT_HEAD)) return false;
  const values: unknown = JSON.parse(json);
  if (!Array.isArray(values) || (values.length !== FACT_VALUES && values.length !== FACT_VALUES + 1) || values[4] !== null) return false;
  const [, , key, chunkId, , facetId, stretch, entityId, timeText, time, turnAt, offsets] = values as unknown[];
  if (!Number.isSafeInteger(key) || (key as number) < 0 || !isOffsets(stretch)) return false;
  if (typeof chunkId !== 'string' || !isCanonicalFactIdOf(rowKey, chunkId)) return false;
  if (!isPlainEnd(facetId) || (entityId !== null && !isPlainEnd(entityId)) || !isStringOrNull(timeText) || !isStringOrNull(time)) return false;
  const edgeKeys = foldedKeys(key as number, offsets);
  const chunk = chunks.get(chunkId);
  if (edgeKeys === null || chunk === undefined || !isStretchOf(sharing.stretchLengths(chunk), turnAt, stretch[0], stretch[1])) return false;
  // An involves_entity key of a fact with no Entity stands for no edge, as `StoredRecordsReader` reads it.
  const involves = entityId === null ? -1 : edgeKeys[1];
  return columns.add(rowKey, key as number, chunk.id, sharing.id('facetId', facetId), entityId === null ? null : sharing.id('entityId', entityId), turnAt as number, stretch[0], stretch[1], timeText, time, edgeKeys[0], involves) >= 0;
}

/** Whether `start` to `end` is a stretch of the text of turn `turn`, of `lengths` (`ReadSharing.stretchLengths`). */
export function isStretchOf(lengths: readonly number[], turn: unknown, start: number, end: number): boolean {
  const length = Number.isInteger(turn) ? lengths[turn as number] : undefined;
  return length !== undefined && start >= 0 && start <= end && end <= length;
}

/** A plain node id an edge may end at: non-empty, without `>` (`StoredRecordsReader` keeps such edges as keys). */
export function isPlainEnd(id: unknown): id is string {
  return typeof id === 'string' && id !== '' && !id.includes('>');
}

export function isStringOrNull(value: unknown): value is string | null {
  return value === null || typeof value === 'string';
}

/** The `belongs_to` and `involves_entity` keys (−1: none) a node of key `key` folds in, from their stored offsets; null unless each is a count. */
function foldedKeys(key: number, offsets: unknown): [number, number] | null {
  if (offsets === undefined) return [-1, -1];
  if (!Array.isArray(offsets)) return null;
  const keys: [number, number] = [-1, -1];
  for (let i = 0; i < 2; i++) {
    const offset: unknown = offsets[i];
    if (offset === null || offset === undefined) continue;
    if (typeof offset !== 'number' || !Number.isSafeInteger(key + offset) || key + offset < 0) return null;
    keys[i] = key + offset;
  }
  return keys;
}

/**
 * An edge's stored JSON: the array of its values when its keys and id are the ones graph building
 * writes. `keyed` when the row's key is the edge's id: its type and ends are then one `null`,
 * where the id names them unambiguously (`edgeOfId`).
 */
export function encodeEdge(edge: GraphEdge, keyed = false): string {
  if (!hasKeysInOrder(edge, EDGE_KEYS) || edge.id !== edgeId(edge.type, edge.from, edge.to)) return JSON.stringify(edge);
  const values: unknown[] = EDGE_KEYS.slice(1).map((k) => edge[k]);
  while (values.length > EDGE_REQUIRED_VALUES && values.at(-1) === null) values.pop();
  if (keyed && edgeOfId(edge.id)?.from === edge.from) values.splice(1, 3, null);
  return JSON.stringify(values);
}

/** An edge's type and ends as its id (`<type>:<from>><to>`) names them: null when the type is unknown or the ends hold another `>`. */
function edgeOfId(id: string): { type: EdgeType; from: string; to: string } | null {
  const colon = id.indexOf(':');
  const arrow = id.indexOf('>', colon + 1);
  // The type's own constant: a slice this short is a copy (~69K copies of "evolution" at 30K messages of chat).
  const type = EDGE_TYPES.find((name) => name.length === colon && id.startsWith(name));
  if (colon < 0 || arrow < 0 || id.indexOf('>', arrow + 1) >= 0 || type === undefined) return null;
  return { type, from: id.slice(colon + 1, arrow), to: id.slice(arrow + 1) };
}

/** A stored edge as committed; `rowKey` is its row's key where the store keys rows by id (an array of the wrong types is returned as it reads, for validation to reject). */
export function decodeEdge(json: string, rowKey?: string): GraphEdge {
  const parsed: unknown = JSON.parse(json);
  if (!Array.isArray(parsed)) return parsed as GraphEdge;
  const named = parsed[1] === null && rowKey !== undefined ? edgeOfId(rowKey) : null;
  if (named) {
    const [key, , chunkId, description = null, confidence = null] = parsed as unknown[];
    return { id: rowKey, key, ...named, chunkId, description, confidence } as GraphEdge;
  }
  const [key, stored, from, to, chunkId, description = null, confidence = null] = parsed as unknown[];
  const type = EDGE_TYPES.find((name) => name === stored) ?? stored;
  const id = edgeId(type as EdgeType, String(from), String(to));
  return { id, key, type, from, to, chunkId, description, confidence } as GraphEdge;
}

/** A chunk's stored JSON: its text `null` when the text is the canonical one. */
export function encodeChunk(chunk: Chunk): string {
  return JSON.stringify(chunk.text === chunkText(chunk.header, chunk.turns) ? { ...chunk, text: null } : chunk);
}

/**
 * A chunk as the stores keep it (a SQL row's `json` and `text` columns; an IndexedDB value, see
 * idb.ts's `chunkValue`): its record and its turns' texts one after another (no separator), each
 * turn's text in the record as its length. Only where the chunk's text is its canonical join (as
 * `encodeChunk` leaves it out); any other chunk is stored as `encodeChunk` stores it, `text`
 * null. An open then reads a session's words as one string instead of parsing them out of JSON
 * (at 100K messages of chat ~99M characters: the chunks read in ~0.42 s instead of ~0.60 s, and
 * the collector no longer copies the turns JSON made), and the record alone tells a chunk's
 * turns, speakers and times without its text. The texts keep any character, a 0 too.
 */
export interface ChunkRow {
  json: string;
  text: string | null;
}

/** `chunk` as the stores keep it (see `ChunkRow`). */
export function encodeChunkRow(chunk: Chunk): ChunkRow {
  if (chunk.text !== chunkText(chunk.header, chunk.turns)) return { json: JSON.stringify(chunk), text: null };
  const turns = chunk.turns.map((turn) => ({ ...turn, text: turn.text.length }));
  return { json: JSON.stringify({ ...chunk, text: null, turns }), text: chunk.turns.map((turn) => turn.text).join('') };
}

/**
 * A chunk as `encodeChunkRow` stored it (or `encodeChunk`, `text` null). A record whose turns'
 * lengths do not cut `text` into them whole is read with no text at all, the chunk's and its
 * turns', for validation to reject (a node rebuilt from such a turn reads an empty stretch).
 * `join` gives a whole one its text: at once by default; a read of many joins them a batch at a
 * time (`ChunkTextJoiner`), and such a chunk has no text until its batch is joined.
 */
export function decodeChunkRow(json: string, text: string | null, join: (chunk: UnjoinedChunk) => void = joinChunkText): Chunk {
  if (text === null) return decodeChunk(json);
  const chunk = JSON.parse(json) as Omit<Chunk, 'text' | 'turns'> & { text: unknown; turns: unknown };
  const turns = wholeTurns(chunk.turns);
  if (turns !== null && chunk.text === null && typeof chunk.header === 'string' && cutsWhole(turns, text.length)) {
    let at = 0;
    for (const turn of turns) {
      const length = turn.text as number;
      turn.text = text.slice(at, at + length);
      at += length;
    }
    join(chunk as UnjoinedChunk);
    return chunk as unknown as Chunk;
  }
  for (const turn of turns ?? []) turn.text = '';
  chunk.text = null;
  return chunk as unknown as Chunk;
}

/** Whether the turns' stored lengths are counts that add up to `length`. */
function cutsWhole(turns: ReadonlyArray<Record<string, unknown>>, length: number): boolean {
  let sum = 0;
  for (const { text } of turns) {
    if (typeof text !== 'number' || !Number.isSafeInteger(text) || text < 0) return false;
    sum += text;
  }
  return sum === length;
}

/** A stored chunk as committed (a record too damaged to rebuild its text is returned as it reads). */
export function decodeChunk(json: string): Chunk {
  const chunk = JSON.parse(json) as Omit<Chunk, 'text'> & { text: string | null };
  const rebuildable = typeof chunk.header === 'string' && wholeTurns(chunk.turns) !== null;
  if (chunk.text === null && rebuildable) {
    if (chunk.turns.every((t) => typeof t.text === 'string')) joinChunkText(chunk);
    else {
      // A damaged turn: its text joined as it reads, for validation to reject.
      chunk.text = chunkText(chunk.header, chunk.turns);
      shareTurnTexts(chunk as Chunk);
    }
  }
  return chunk as Chunk;
}
