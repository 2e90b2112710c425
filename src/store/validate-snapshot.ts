import type { PrismErrorCode } from '../errors.ts';
import { DERIVED_EDGE_TYPES, derivedEdgeSources, derivedTarget, isDerivedEdgeType, isRelationEdgeId, keptDerivedEdge, type DerivedEdgeType } from '../graph/derived-edges.ts';
import { EDGE_TYPES } from '../graph/types.ts';
import { appendedTo } from '../util/appended.ts';
import { VectorTable } from '../graph/vector-table.ts';
import type { Chunk, ChunkExtraction, EntityType, GraphEdge, GraphNode, Layer, MemoryMeta, MemorySnapshot } from '../graph/types.ts';
import type { FactColumns } from '../graph/fact-columns.ts';
import type { FoldedEdgeLists } from './types.ts';

/**
 * What a memory must hold to be usable, checked wherever records come from outside the code
 * that wrote them: every write batch (record by record), every partition loaded from a store
 * (its structure), and every checkpoint before it is imported (structure and references). A
 * memory that passes cannot make `add`, `list`, `search` or `delete` fail on its scope.
 */

/**
 * Reports what is wrong and does not return. `code` is what a write batch is refused with; a
 * memory read back from a checkpoint or a store is damaged (`CORRUPT_CHECKPOINT`) whatever broke.
 */
export type Fail = (message: string, code?: PrismErrorCode) => never;

/** Largest vector dimension a memory may declare (embedding models stay far below it). */
export const MAX_VECTOR_DIM = 65_536;

/**
 * Largest `meta.nextKey`. Keys cross into the WASM index as f64: above 2^53 they stop being
 * exact, and a memory whose next key were close to that could fail its next add.
 */
const MAX_NEXT_KEY = 2 ** 52;

/**
 * Deepest nesting of a turn's metadata. Structured clones (IndexedDB) and `JSON.stringify`
 * (SQLite) overflow the stack a few thousand levels down, after embedding, as an untyped error.
 */
const MAX_METADATA_DEPTH = 256;

const ENTITY_TYPES: Record<EntityType, true> = { person: true, organization: true, place: true, concept: true, event: true, other: true };
const EXTRACTIONS: Record<ChunkExtraction, true> = { llm: true, local: true, fallback: true };

type Fields = Record<string, unknown>;

/** A value as an error message shows it: short, and never walked (a crafted one may nest deeply or run to megabytes). */
function shown(value: unknown): string {
  if (typeof value === 'string') return value.length > 80 ? `${value.slice(0, 80)}…` : value;
  if (typeof value === 'object' && value !== null) return Array.isArray(value) ? 'an array' : 'an object';
  return String(value);
}

function isRecord(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The checks below name what they check as `what`, then `field` when given: a record's checks
 * pass its name once and each field's as a constant, so no message is put together unless one
 * fails (an open checks every record).
 */
function named(what: string, field: string | undefined): string {
  return field === undefined ? what : `${what} ${field}`;
}

export function checkId(value: unknown, what: string, fail: Fail, field?: string): asserts value is string {
  if (!isId(value)) fail(`${named(what, field)} must be a non-empty string`);
}

function checkString(value: unknown, what: string, fail: Fail, field?: string): asserts value is string {
  if (!isString(value)) fail(`${named(what, field)} must be a string`);
}

function checkStringOrNull(value: unknown, what: string, fail: Fail, field?: string): void {
  if (value !== null) checkString(value, what, fail, field);
}

/**
 * The id lists (Entities' chunks) checked whole, or from where they grew: a list `appended` to
 * one of them (an add's Entity, put again with one more chunk) is checked from there on. Its
 * first ids are the checked list's own, and a speaker's ~9.7K at 100K messages took ~1 ms of
 * every add to look at again. Lists of an open are in here too, for the first add after it.
 */
const checkedIdLists = new WeakSet<readonly unknown[]>();

/**
 * Checks that `value` is an array of strings, of ids (non-empty) where `ids`: one loop with no
 * call an item, an item named only when it is bad; an open checks every fact's dialog ids (~318K
 * lists). An id list appended to one checked before is checked from where it grew.
 */
function checkStrings(value: unknown, what: string, fail: Fail, field: string, ids: boolean): void {
  if (!Array.isArray(value)) fail(`${named(what, field)} must be an array`);
  const items: readonly unknown[] = value;
  const least = ids ? 1 : 0;
  const head = ids ? appendedTo(items) : undefined;
  for (let i = head && checkedIdLists.has(head) ? head.length : 0; i < items.length; i++) {
    const item = items[i];
    if (typeof item === 'string' && item.length >= least) continue;
    if (ids) checkId(item, `${named(what, field)}[${i}]`, fail);
    else checkString(item, `${named(what, field)}[${i}]`, fail);
  }
  if (ids) checkedIdLists.add(items);
}

function isId(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

function isString(value: unknown): value is string {
  return typeof value === 'string';
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function checkCount(value: unknown, what: string, fail: Fail, field?: string): asserts value is number {
  if (!isCount(value)) fail(`${named(what, field)} must be a non-negative integer, got ${shown(value)}`);
}

function checkDepth(value: unknown, what: string, fail: Fail, depth = 1): void {
  if (typeof value !== 'object' || value === null) return;
  if (depth > MAX_METADATA_DEPTH) fail(`${what} is nested deeper than ${MAX_METADATA_DEPTH} levels`);
  for (const item of Object.values(value)) checkDepth(item, what, fail, depth + 1);
}

export function checkMeta(meta: unknown, fail: Fail): asserts meta is MemoryMeta {
  if (!isRecord(meta)) fail('meta must be an object');
  checkCount(meta.schemaVersion, 'meta.schemaVersion', fail);
  checkId(meta.embedderId, 'meta.embedderId', fail);
  checkCount(meta.dim, 'meta.dim', fail);
  if (meta.dim === 0 || meta.dim > MAX_VECTOR_DIM) fail(`meta.dim must be between 1 and ${MAX_VECTOR_DIM}, got ${meta.dim}`);
  checkCount(meta.nextKey, 'meta.nextKey', fail);
  if (meta.nextKey > MAX_NEXT_KEY) fail(`meta.nextKey must be at most 2^52, got ${meta.nextKey}`);
  checkCount(meta.chunkCount, 'meta.chunkCount', fail);
  if (!isRecord(meta.settings)) fail('meta.settings must be an object');
  for (const [name, value] of Object.entries(meta.settings)) {
    if (!['string', 'number', 'boolean'].includes(typeof value)) fail(`meta.settings.${shown(name)} must be a string, number or boolean`);
  }
}

/** The fields of each layer beyond id, key and layer. */
const LAYER_FIELDS: Record<Layer, (node: Fields, what: string, fail: Fail) => void> = {
  episode: (node: Fields, what: string, fail: Fail) => {
    checkId(node.chunkId, what, fail, 'chunkId');
    checkString(node.summary, what, fail, 'summary');
    checkStringOrNull(node.time, what, fail, 'time');
    checkCount(node.order, what, fail, 'order');
  },
  facet: (node: Fields, what: string, fail: Fail) => {
    checkId(node.chunkId, what, fail, 'chunkId');
    checkId(node.episodeId, what, fail, 'episodeId');
    checkString(node.theme, what, fail, 'theme');
  },
  facetPoint: (node: Fields, what: string, fail: Fail) => {
    checkId(node.chunkId, what, fail, 'chunkId');
    checkId(node.episodeId, what, fail, 'episodeId');
    checkId(node.facetId, what, fail, 'facetId');
    checkString(node.content, what, fail, 'content');
    if (node.entityId !== null) checkId(node.entityId, what, fail, 'entityId');
    checkStringOrNull(node.timeText, what, fail, 'timeText');
    checkStringOrNull(node.time, what, fail, 'time');
    checkStrings(node.dialogIds, what, fail, 'dialogIds', false);
  },
  entity: (node: Fields, what: string, fail: Fail) => {
    checkString(node.name, what, fail, 'name');
    if (typeof node.entityType !== 'string' || !Object.hasOwn(ENTITY_TYPES, node.entityType)) fail(`${what} has unknown entityType ${shown(node.entityType)}`);
    checkStrings(node.chunkIds, what, fail, 'chunkIds', true);
  },
};

export function checkNode(node: unknown, fail: Fail): asserts node is GraphNode {
  if (!isRecord(node)) fail('node must be an object');
  checkId(node.id, 'node id', fail);
  const what = `node ${shown(node.id)}`;
  checkCount(node.key, what, fail, 'key');
  if (typeof node.layer !== 'string' || !Object.hasOwn(LAYER_FIELDS, node.layer)) fail(`${what} has unknown layer ${shown(node.layer)}`);
  LAYER_FIELDS[node.layer as Layer](node, what, fail);
}

export function checkEdge(edge: unknown, fail: Fail): asserts edge is GraphEdge {
  if (!isRecord(edge)) fail('edge must be an object');
  checkId(edge.id, 'edge id', fail);
  const what = `edge ${shown(edge.id)}`;
  checkCount(edge.key, what, fail, 'key');
  if (!EDGE_TYPES.includes(edge.type as GraphEdge['type'])) fail(`${what} has unknown type ${shown(edge.type)}`);
  checkId(edge.from, what, fail, 'endpoint');
  checkId(edge.to, what, fail, 'endpoint');
  checkString(edge.chunkId, what, fail, 'chunkId');
  checkStringOrNull(edge.description, what, fail, 'description');
  if (edge.confidence !== null && !Number.isFinite(edge.confidence)) fail(`${what} confidence must be a finite number or null`);
}

/** What a relation edge read after its memory opened (`WorkingSnapshot.relations`) is checked against. */
export interface RelationEdgeContext {
  /** Whether the memory holds a node of this id. */
  holdsNode(id: string): boolean;
  /** The node or edge the memory holds under `key`, if any. */
  keyOwner(key: number): string | undefined;
  nextKey: number;
}

/**
 * A relation edge read from its store after the open, checked as the open checks edges: its
 * fields, its type (a relation type's, as its id says), its id no node's, and its key below
 * `meta.nextKey` and no other node's or edge's the memory holds. (A derived edge's key, kept on
 * its node, is not compared: neither kind is looked up by key. Ends are not checked at an open
 * either: an edge outlives the node it runs from until it is deleted itself.)
 */
export function checkRelationEdge(edge: unknown, context: RelationEdgeContext, fail: Fail): asserts edge is GraphEdge {
  checkEdge(edge, fail);
  const what = `edge ${shown(edge.id)}`;
  if (isDerivedEdgeType(edge.type) || !isRelationEdgeId(edge.id)) fail(`${what} is kept as a relation edge but has type ${shown(edge.type)}`);
  if (context.holdsNode(edge.id)) fail(`node or edge id ${shown(edge.id)} occurs twice`);
  if (edge.key >= context.nextKey) fail(`${what} has key ${edge.key}, not below meta.nextKey ${context.nextKey}`);
  const owner = context.keyOwner(edge.key);
  if (owner !== undefined && owner !== edge.id) fail(`${what} and ${shown(owner)} share key ${edge.key}`);
}

/** Turn `i` of the chunk named `what`: its own name is made only if it fails (an open checks every turn). */
function checkTurn(turn: unknown, what: string, i: number, fail: Fail): void {
  const turnWhat = () => `${what} turns[${i}]`;
  if (!isRecord(turn)) fail(`${turnWhat()} must be an object`);
  for (const field of ['dialogId', 'speaker', 'text'] as const) {
    if (typeof turn[field] !== 'string') checkString(turn[field], `${turnWhat()}.${field}`, fail);
  }
  if (turn.time !== undefined && turn.time !== null) checkString(turn.time, `${turnWhat()}.time`, fail);
  if (turn.lineTokens !== undefined && !isCount(turn.lineTokens)) checkCount(turn.lineTokens, `${turnWhat()}.lineTokens`, fail);
  if (turn.metadata !== undefined) {
    if (!isRecord(turn.metadata)) fail(`${turnWhat()}.metadata must be an object`);
    checkDepth(turn.metadata, `${turnWhat()}.metadata`, fail);
  }
}

export function checkChunk(chunk: unknown, fail: Fail): asserts chunk is Chunk {
  if (!isRecord(chunk)) fail('chunk must be an object');
  checkId(chunk.id, 'chunk id', fail);
  const what = `chunk ${shown(chunk.id)}`;
  checkString(chunk.sessionId, what, fail, 'sessionId');
  checkString(chunk.header, what, fail, 'header');
  checkString(chunk.text, what, fail, 'text');
  checkStringOrNull(chunk.time, what, fail, 'time');
  checkCount(chunk.order, what, fail, 'order');
  if (!Array.isArray(chunk.turns)) fail(`${what} turns must be an array`);
  chunk.turns.forEach((turn, i) => checkTurn(turn, what, i, fail));
  if (chunk.extraction !== undefined && (typeof chunk.extraction !== 'string' || !Object.hasOwn(EXTRACTIONS, chunk.extraction))) {
    fail(`${what} has unknown extraction ${shown(chunk.extraction)}`);
  }
  if (chunk.textTokens !== undefined) checkCount(chunk.textTokens, what, fail, 'textTokens');
  if (chunk.mentions !== undefined) {
    if (!Array.isArray(chunk.mentions)) fail(`${what} mentions must be an array`);
    chunk.mentions.forEach((mention: unknown, i) => checkMention(mention, `${what} mentions[${i}]`, fail));
  }
}

function checkMention(mention: unknown, what: string, fail: Fail): void {
  if (!isRecord(mention)) fail(`${what} must be an object`);
  checkId(mention.id, what, fail, 'id');
  checkString(mention.name, what, fail, 'name');
  if (typeof mention.type !== 'string' || !Object.hasOwn(ENTITY_TYPES, mention.type)) fail(`${what} has unknown type ${shown(mention.type)}`);
}

export function checkVector(id: string, vector: unknown, dim: number, fail: Fail): asserts vector is Float32Array {
  if (!(vector instanceof Float32Array)) fail(`vector ${shown(id)} must be a Float32Array`);
  if (vector.length !== dim) fail(`vector ${shown(id)} has ${vector.length} dimensions, the memory has ${dim}`, 'DIMENSION_MISMATCH');
  // Indexed, not for…of: a memory's vectors are checked on every load, and the iterator costs 4×.
  for (let i = 0; i < vector.length; i++) {
    if (!Number.isFinite(vector[i])) fail(`vector ${shown(id)} contains ${vector[i]} at ${i}`, 'NON_FINITE_VECTOR');
  }
}

/** A memory as read from outside: records not yet known to be well-formed; a checkpoint's vector list may repeat an id. */
export interface UncheckedMemory {
  meta: unknown;
  nodes: readonly unknown[];
  edges: readonly unknown[];
  chunks: readonly unknown[];
  vectors: Iterable<readonly [unknown, unknown]>;
  hashes: Iterable<unknown>;
  /** Derived edges kept as keys, not in `edges` (a store's working set, `GraphStore.loadWorkingSet`). */
  folded?: FoldedEdgeLists;
  /** FacetPoints held as columns, not in `nodes` (`WorkingSnapshot.facts`). */
  facts?: FactColumns;
}

/**
 * Ids claimed one by one, each answered whether it is new. A store reads a memory's nodes in id
 * order, so while the ids come in ascending order each is only compared with the one before,
 * and they are kept as a sorted list that later ids (its edges') are looked up in by halving:
 * a set of every id was half of an open's check at 100K messages (~0.2 s of ~0.4 s). From the
 * first id out of order on, ids go into a set, and each is looked for in both; in the list only
 * when it lies within the list's first and last: IndexedDB reads the Entities in id order, then
 * the other nodes by chunk, whose ids sort after every Entity's, and halving the Entities' list
 * for each of those was ~35 ms of a profiled cold open at 30K messages of chat.
 */
class IdClaims {
  private readonly ascending: string[] = [];
  private unordered: Set<string> | null = null;

  /** Claims `id`: true when it was not claimed before. */
  claim(id: string): boolean {
    const { ascending } = this;
    const last = ascending[ascending.length - 1];
    if (this.unordered === null && (last === undefined || last < id)) {
      ascending.push(id);
      return true;
    }
    if (this.unordered === null) this.unordered = new Set();
    if (this.unordered.has(id) || (last !== undefined && id <= last && id >= (ascending[0] as string) && sortedHolds(ascending, id))) return false;
    this.unordered.add(id);
    return true;
  }
}

/** Whether `sorted` (ascending, no repeats) holds `id`. */
function sortedHolds(sorted: readonly string[], id: string): boolean {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    const at = sorted[middle] as string;
    if (at === id) return true;
    if (at < id) low = middle + 1;
    else high = middle;
  }
  return false;
}

/**
 * Everything the working set and its vector indexes rely on: well-formed records, unique ids
 * (node and edge ids share the vector namespace), index keys unique across nodes and edges and
 * below `meta.nextKey` (new records take keys from there), chunk orders unique and below
 * `meta.chunkCount` (a new chunk takes that order), vectors of the memory's dimension. Derived
 * edges kept as keys are checked as the edges they stand for. Returns the memory typed; records
 * are shared, not copied.
 */
export function checkMemoryStructure(memory: UncheckedMemory, fail: Fail): MemorySnapshot {
  const { meta } = memory;
  checkMeta(meta, fail);
  const ids = new IdClaims();
  // The facts held as columns have unique ids (`FactColumns.add`, `FactColumns.whole`), so none is
  // claimed one by one (~0.2 s of an open at 100K messages): every other id is looked for among them.
  const facts = memory.facts;
  const claimId = (what: string, id: string) => {
    if (!ids.claim(id) || (facts !== undefined && facts.ordinalOf(id) >= 0)) fail(`${what} id ${shown(id)} occurs twice`);
  };
  // Keys alone, owners named only on failure: an open checks every record's key.
  const taken = takenKeys(meta.nextKey);
  const claimKey = (key: number) => {
    if (key >= meta.nextKey) fail(`${ownersOfKey(memory, key)[0]} has key ${key}, not below meta.nextKey ${meta.nextKey}`);
    if (!taken(key)) fail(`${ownersOfKey(memory, key).slice(0, 2).join(' and ')} share key ${key}`);
  };
  const nodes = memory.nodes.map((node) => {
    checkNode(node, fail);
    claimId('node', node.id);
    claimKey(node.key);
    return node;
  });
  if (facts) claimFactKeys(facts, claimKey);
  const edges = memory.edges.map((edge) => {
    checkEdge(edge, fail);
    claimId('node or edge', edge.id);
    claimKey(edge.key);
    return edge;
  });
  if (memory.folded) checkFoldedEdges(memory.folded, nodes, edges, claimKey, fail, memory.facts);
  const chunkIds = new Set<string>();
  const orders = new Map<number, string>();
  const chunks = memory.chunks.map((chunk) => {
    checkChunk(chunk, fail);
    if (chunkIds.has(chunk.id)) fail(`chunk id ${shown(chunk.id)} occurs twice`);
    chunkIds.add(chunk.id);
    if (chunk.order >= meta.chunkCount) fail(`chunk ${shown(chunk.id)} has order ${chunk.order}, not below meta.chunkCount ${meta.chunkCount}`);
    const other = orders.get(chunk.order);
    if (other !== undefined) fail(`chunks ${shown(other)} and ${shown(chunk.id)} share order ${chunk.order}`);
    orders.set(chunk.order, chunk.id);
    return chunk;
  });
  // A store's table of vectors is checked and kept as it is (its ids are unique); a list is gathered into a table.
  const vectors = memory.vectors instanceof VectorTable ? checkStoredVectors(memory.vectors, meta.dim, fail) : gatheredVectors(memory.vectors, meta.dim, fail);
  const hashes = new Set<string>();
  for (const hash of memory.hashes) {
    checkId(hash, 'hash', fail);
    if (hashes.has(hash)) fail(`hash ${shown(hash)} occurs twice`);
    hashes.add(hash);
  }
  return { meta, nodes, edges, chunks, vectors, hashes };
}

/**
 * The derived edges `folded` stands for, checked as `edges` would be: each runs from a node of
 * the memory that derives it, which keeps one of its type at most, to a node id, under a key of
 * its own; no node or edge has its id. Kept keys have ends without `>` (a store makes any other
 * an edge), so their ids differ from one another.
 */
function checkFoldedEdges(folded: FoldedEdgeLists, nodes: readonly GraphNode[], edges: readonly GraphEdge[], claimKey: (key: number) => void, fail: Fail, facts?: FactColumns): void {
  for (const type of DERIVED_EDGE_TYPES) {
    const { nodes: positions, keys } = folded[type];
    if (positions.length !== keys.length) fail(`the ${type} edges kept as keys list ${positions.length} nodes and ${keys.length} keys`);
    const listed = new Uint8Array(nodes.length);
    for (let i = 0; i < positions.length; i++) {
      const at = positions[i] as number;
      const key = keys[i] as number;
      const node = Number.isInteger(at) && at >= 0 ? nodes[at] : undefined;
      if (node === undefined) return fail('a derived edge runs from a node the memory does not hold');
      if (listed[at] === 1) fail(`node ${shown(node.id)} keeps the keys of two ${type} edges`);
      listed[at] = 1;
      const to = derivedTarget(node, type);
      // The edge is named only when it is bad: an open at 100K messages checks ~650K of them.
      if (!(typeof to === 'string' && to !== '' && !node.id.includes('>') && !to.includes('>') && isCount(key))) {
        const what = `${type} edge of node ${shown(node.id)}`;
        if (to === null) fail(`node ${shown(node.id)} keeps the key of a ${type} edge it does not derive`);
        checkId(to, what, fail, 'endpoint');
        if (node.id.includes('>') || to.includes('>')) fail(`${what} is kept as a key, but its ends hold ">"`);
        checkCount(key, what, fail, 'key');
      }
      claimKey(key);
    }
  }
  // Only a record whose id reads as a derived edge's can meet one: the kept keys are mapped by node id when there is such a record.
  let kept: { keys: KeptKeys; byId: Map<string, GraphNode> } | undefined;
  const clashes = (id: string): boolean => {
    if (derivedEdgeSources(id) === null) return false;
    kept ??= keptKeysById(folded, nodes, facts);
    const { keys, byId } = kept;
    return keptDerivedEdge(id, (type, node) => keys[type].has(node.id), byId) !== undefined;
  };
  // Indexed: every record of an open is walked here once, and an iterator's step was garbage for the collector.
  for (const records of [nodes, edges]) {
    for (let i = 0; i < records.length; i++) {
      const { id } = records[i] as GraphNode | GraphEdge;
      if (clashes(id)) fail(`node or edge id ${shown(id)} occurs twice`);
    }
  }
}

/** The ids of the nodes that keep a derived edge's key, by type. */
type KeptKeys = Record<DerivedEdgeType, Set<string>>;

/** Which nodes `folded` (and `facts`) keep each type's key on, by id, with the nodes by id: a failure's and a rare record's path. */
function keptKeysById(folded: FoldedEdgeLists, nodes: readonly GraphNode[], facts?: FactColumns): { keys: KeptKeys; byId: Map<string, GraphNode> } {
  const keys: KeptKeys = { belongs_to: new Set(), involves_entity: new Set() };
  for (const type of DERIVED_EDGE_TYPES) for (const at of folded[type].nodes) keys[type].add((nodes[at] as GraphNode).id);
  const byId = new Map(nodes.map((node) => [node.id, node]));
  for (let at = 0; at < (facts?.size ?? 0); at++) {
    const columns = facts as FactColumns;
    const id = columns.ids[at] as string;
    // What an edge's id is told from: the fact's id and the ends of the edges it keeps.
    byId.set(id, { id, key: columns.keys[at] as number, layer: 'facetPoint', chunkId: columns.chunkIds[at] as string, episodeId: '', facetId: columns.facetIds[at] as string, content: '', entityId: columns.entityIds[at] as string | null, timeText: null, time: null, dialogIds: [] });
    if ((columns.belongsKeys[at] as number) >= 0) keys.belongs_to.add(id);
    if ((columns.involvesKeys[at] as number) >= 0) keys.involves_entity.add(id);
  }
  return { keys, byId };
}

/**
 * Claims the keys of the facts a working set holds as columns, as `nodes`' and `folded`'s are
 * claimed: each key once, each derived edge's key once (their ids are unique among them, and every
 * other id is looked for among them as it is claimed). Their fields and their edges' ends were
 * checked as they were read (record-codec's `addPlainFact` takes only records whose node would
 * pass `checkNode`, keeping edges with plain ends).
 */
function claimFactKeys(facts: FactColumns, claimKey: (key: number) => void): void {
  for (let at = 0; at < facts.size; at++) claimKey(facts.keys[at] as number);
  // To the facts' count: columns still being added to have room past it.
  for (const keys of [facts.belongsKeys, facts.involvesKeys]) {
    for (let at = 0; at < facts.size; at++) if ((keys[at] as number) >= 0) claimKey(keys[at] as number);
  }
}

/** Largest `meta.nextKey` whose keys are claimed in a bitmap (16 MB); a set takes any larger. */
const KEY_BITMAP_LIMIT = 2 ** 27;

/**
 * Claims keys below `nextKey`: true the first time a key is claimed, false after. A bit a key
 * while they fit in KEY_BITMAP_LIMIT: keys are small integers allocated in order, and a set of
 * a million of them cost an open at 100K messages a second.
 */
function takenKeys(nextKey: number): (key: number) => boolean {
  if (nextKey > KEY_BITMAP_LIMIT) {
    const keys = new Set<number>();
    return (key) => keys.size < keys.add(key).size;
  }
  const bits = new Uint32Array(Math.ceil(nextKey / 32));
  return (key) => {
    const word = key >>> 5;
    const bit = 1 << (key & 31);
    if ((bits[word] as number) & bit) return false;
    bits[word] = (bits[word] as number) | bit;
    return true;
  };
}

/** Who holds `key` in `memory`, as error messages name them (a failure's slow path). */
function ownersOfKey(memory: UncheckedMemory, key: number): string[] {
  const owners: string[] = [];
  const idOf = (record: unknown) => shown((record as { id?: unknown }).id);
  for (const node of memory.nodes) if ((node as { key?: unknown }).key === key) owners.push(`node ${idOf(node)}`);
  const facts = memory.facts;
  for (let at = 0; at < (facts?.size ?? 0); at++) {
    const columns = facts as FactColumns;
    if (columns.keys[at] === key) owners.push(`node ${shown(columns.ids[at])}`);
    if (columns.belongsKeys[at] === key) owners.push(`belongs_to edge of node ${shown(columns.ids[at])}`);
    if (columns.involvesKeys[at] === key) owners.push(`involves_entity edge of node ${shown(columns.ids[at])}`);
  }
  for (const edge of memory.edges) if ((edge as { key?: unknown }).key === key) owners.push(`edge ${idOf(edge)}`);
  for (const type of DERIVED_EDGE_TYPES) {
    const list = memory.folded?.[type];
    list?.keys.forEach((own, i) => {
      if (own === key) owners.push(`${type} edge of node ${idOf(memory.nodes[list.nodes[i] as number])}`);
    });
  }
  return owners;
}

/** `table` once every vector in it is checked: i8 records by their scale, any other decoded. */
export function checkStoredVectors(table: VectorTable, dim: number, fail: Fail): VectorTable {
  table.visitFiniteness(dim, (id, finite) => {
    checkId(id, 'vector id', fail);
    if (!finite) checkVector(id, table.peek(id), dim, fail);
  });
  return table;
}

/** A table of the listed vectors, each checked, an id listed twice refused. */
function gatheredVectors(list: Iterable<readonly [unknown, unknown]>, dim: number, fail: Fail): VectorTable {
  const vectors = new VectorTable();
  for (const [id, vector] of list) {
    checkId(id, 'vector id', fail);
    checkVector(id, vector, dim, fail);
    if (vectors.has(id)) fail(`vector id ${shown(id)} occurs twice`);
    vectors.set(id, vector);
  }
  return vectors;
}

/**
 * The references between records that deletion follows: an edge's endpoints (a node, or a name
 * a chunk mentions: `Chunk.mentions`), a node's chunk (an Entity's chunks), a vector's node or
 * edge, a chunk's ingested hash. The writer keeps them; a record whose reference dangles could
 * never be deleted with its session, so an import refuses it.
 */
export function checkMemoryReferences(memory: MemorySnapshot, fail: Fail): void {
  const chunkIds = new Set(memory.chunks.map((chunk) => chunk.id));
  const nodeIds = new Set(memory.nodes.map((node) => node.id));
  const mentionIds = new Set(memory.chunks.flatMap((chunk) => (chunk.mentions ?? []).map((mention) => mention.id)));
  const edgeIds = new Set(memory.edges.map((edge) => edge.id));
  for (const chunk of memory.chunks) {
    if (!memory.hashes.has(chunk.id)) fail(`chunk ${shown(chunk.id)} has no ingested hash`);
  }
  for (const node of memory.nodes) {
    for (const chunkId of node.layer === 'entity' ? node.chunkIds : [node.chunkId]) {
      if (!chunkIds.has(chunkId)) fail(`node ${shown(node.id)} names chunk ${shown(chunkId)}, which the memory does not hold`);
    }
  }
  for (const edge of memory.edges) {
    for (const end of [edge.from, edge.to]) {
      if (!nodeIds.has(end) && !mentionIds.has(end)) fail(`edge ${shown(edge.id)} ends at node ${shown(end)}, which the memory does not hold`);
    }
  }
  for (const id of memory.vectors.keys()) {
    if (!nodeIds.has(id) && !edgeIds.has(id)) fail(`vector ${shown(id)} belongs to no node or edge`);
  }
}
