import type { Embedder } from '../embed/types.ts';
import { PrismError } from '../errors.ts';
import { MemoryGraph, type StoredRelations } from '../graph/memory-graph.ts';
import type { FactColumns } from '../graph/fact-columns.ts';
import { VectorTable } from '../graph/vector-table.ts';
import { DERIVED_EDGE_TYPES, derivedEdge, derivedTarget, type DerivedEdgeType } from '../graph/derived-edges.ts';
import { edgeId, type GraphEdge, type GraphNode, type MemoryMeta, type MemorySnapshot } from '../graph/types.ts';
import { applyBatch, type BatchWriter, type MemoryState } from '../ingest/pipeline.ts';
import { scopeOfPartition, type ResolvedScope } from '../scope.ts';
import { dropsDerived, wholeWorkingSet, withLaterVectors, type FoldedEdgeLists, type GraphStore, type KeyedVectorGroup, type LaterVectors, type StoredRelationEdges, type WorkingSnapshot } from '../store/types.ts';
import { withFactsAsNodes } from '../store/record-plan.ts';
import { addKeyedGroups } from '../store/vector-groups.ts';
import { roundVectors } from '../store/vector-codec.ts';
import { checkMemoryStructure, checkRelationEdge, checkStoredVectors, type RelationEdgeContext } from '../store/validate-snapshot.ts';
import { createSerial, type Serial } from '../util/serial.ts';
import { IndexSet } from '../vector/index-set.ts';
import { indexKeyedVectors } from './keyed-vectors.ts';
import { noteCopyDropped, type LexicalState } from './lexical-state.ts';
import { factImageStateOf, noteFactBatch, type FactImageState } from './fact-image.ts';
import type { VectorIndex } from '../vector/types.ts';

export const SCHEMA_VERSION = 1;

/** What every partition of one Memory shares: where it is stored and how it embeds and indexes. */
export interface PartitionHost {
  store: GraphStore;
  embedder: Embedder;
  createIndex: (dim: number) => VectorIndex;
}

/** One scope's memory as this process holds it: the working set and the store revision it reflects. */
export interface Partition {
  readonly name: string;
  readonly scope: ResolvedScope;
  /** Replaced field by field (never swapped) on reload, so an ingest holding it sees the new graph. */
  readonly state: MemoryState;
  /** The store revision `state` reflects. */
  revision: number;
  /** Writes of this process in flight; a search does not reload under them (they catch up under the lock). */
  writing: number;
  /** This process's writes to the partition, one at a time. */
  readonly serial: Serial;
  /** The lexical index, read or built at the first search (see lexical-state.ts). */
  lexical: Promise<LexicalState> | null;
  /** Whether its store holds a fact image of its revision, and can be given one (see fact-image.ts); null where the store reads none. */
  factImage: FactImageState | null;
  /** Reads the relation edges its open left unread (`WorkingSnapshot.relationsRead`), until they are read (see `partitionWhole`). */
  relationsRead: (() => Promise<void>) | null;
}

/**
 * Reads what the partition's open left unread (IndexedDB's relation edges), once: every use of
 * a partition but a search may read or change it, and waits for this first. Rejects with that
 * read's error.
 */
export async function partitionWhole(partition: Partition): Promise<void> {
  const read = partition.relationsRead;
  if (read === null) return;
  await read();
  if (partition.relationsRead === read) partition.relationsRead = null;
}

export function emptySnapshot(embedder: Embedder): MemorySnapshot {
  const meta: MemoryMeta = { schemaVersion: SCHEMA_VERSION, embedderId: embedder.id, dim: embedder.dim, nextKey: 1, chunkCount: 0, settings: {} };
  return { meta, nodes: [], edges: [], chunks: [], vectors: new VectorTable(), hashes: new Set() };
}

/**
 * What a state's later reads of its store compare with as its partition changes (commits move
 * both; a reload assigns the state's fields to the partition's own state object).
 */
export interface PartitionNow {
  /** The partition's name (its scope's), for what an error says. */
  readonly name: string;
  /** The store revision the partition's state reflects (`Partition.revision`). */
  revision(): number;
  /** The partition's meta as of now. */
  meta(): MemoryMeta;
}

/** `PartitionNow` of the partition `partition` gives (one being made, at its open). */
function nowOf(name: string, partition: () => Partition): PartitionNow {
  return { name, revision: () => partition().revision, meta: () => partition().state.meta };
}

/**
 * Builds the in-memory graph and vector indexes from a snapshot (a store's working set keeps
 * derived edges as keys, may leave relation edges in the store, which are read as of `now`, and
 * may hand its vectors over with their index keys, `keyedVectors`, which are trusted only as far
 * as they name the graph's records: else the vectors are found by id, as from any other store).
 */
export function stateFrom(snapshot: MemorySnapshot | WorkingSnapshot, host: PartitionHost, now: PartitionNow): MemoryState {
  if ('vectorsLater' in snapshot && snapshot.vectorsLater) throw new Error('stateFrom takes a working set with its vectors read: see stateAsRead');
  // A store hands out a fresh table per load: the graph takes it over, as re-encoding each vector would cost more than reading it.
  const vectors = snapshot.vectors instanceof VectorTable ? snapshot.vectors : new VectorTable(snapshot.vectors);
  const keyed = 'keyedVectors' in snapshot ? snapshot.keyedVectors : undefined;
  if (keyed) return keyedState(snapshot as WorkingSnapshot & { keyedVectors: readonly KeyedVectorGroup[] }, vectors, host, now) ?? stateById(snapshot as WorkingSnapshot, keyed, host, now);
  return stateOf(snapshot, vectors, host, now);
}

/** `stateFrom` of a working set whose keyed vectors' keys are not to trust: the vectors found by id instead, checked as an open checks them. */
function stateById(snapshot: WorkingSnapshot, keyed: readonly KeyedVectorGroup[], host: PartitionHost, now: PartitionNow): MemoryState {
  const byId = new VectorTable();
  addKeyedGroups(byId, keyed, snapshot.meta.dim);
  checkStoredVectors(byId, snapshot.meta.dim, damaged(now.name));
  const { keyedVectors: _keys, ...rest } = snapshot;
  return stateOf(rest, byId, host, now);
}

/**
 * `stateFrom` of a snapshot as its store handed it over: where the vectors were still being read
 * (`WorkingSnapshot.vectorsLater`), the graph is built meanwhile, then the vectors are handed to
 * its indexes by key once read. Where they do not come keyed alone (none by id, no relation edge
 * with a vector, keys to trust), the snapshot they complete is checked (`checkWhole`) and built as
 * any other.
 */
export async function stateAsRead(snapshot: MemorySnapshot | WorkingSnapshot, host: PartitionHost, now: PartitionNow, checkWhole: (whole: WorkingSnapshot) => void): Promise<MemoryState> {
  if (!('vectorsLater' in snapshot) || !snapshot.vectorsLater) return stateFrom(snapshot, host, now);
  // The graph first, with no vector (the table is empty): the keys name its records.
  const vectors = new VectorTable();
  const state = stateOf(snapshot, vectors, host, now);
  let later: LaterVectors;
  try {
    later = await snapshot.vectorsLater;
  } catch (error) {
    state.indexes.dispose();
    throw error;
  }
  const keyed = later.keyedVectors;
  const keyedAlone = keyed !== undefined && later.edges.length === 0 && later.vectors.size === 0;
  // Refused keys leave the graph's indexes disposed, and the vectors to be found by id, once.
  if (keyedAlone && indexedByKey(state, keyed, vectors)) return state;
  if (!keyedAlone) state.indexes.dispose();
  const whole = withLaterVectors(snapshot, later);
  checkWhole(whole);
  return keyedAlone ? stateById(whole, keyed, host, now) : stateFrom(whole, host, now);
}

/**
 * `stateFrom` of a working set whose vectors are keyed (`indexKeyedVectors`); null, with nothing
 * kept, where their keys are not to trust.
 */
function keyedState(snapshot: WorkingSnapshot & { keyedVectors: readonly KeyedVectorGroup[] }, vectors: VectorTable, host: PartitionHost, now: PartitionNow): MemoryState | null {
  // The graph first, with no vector (the table is empty): the keys name its records.
  const state = stateOf(snapshot, vectors, host, now);
  return indexedByKey(state, snapshot.keyedVectors, vectors) ? state : null;
}

/** Hands `keyed` to the indexes of `state` (built with `vectors`, empty) by key: false, its indexes disposed, where their keys are not to trust. */
function indexedByKey(state: MemoryState, keyed: readonly KeyedVectorGroup[], vectors: VectorTable): boolean {
  try {
    if (indexKeyedVectors(state, keyed, vectors)) return true;
  } catch (error) {
    // A value an index refuses (an i4 half byte that names no level), or one the table meets twice.
    if (!(error instanceof PrismError) || (error.code !== 'INVALID_INPUT' && error.code !== 'CORRUPT_CHECKPOINT')) throw error;
  }
  state.indexes.dispose();
  return false;
}

/** The graph and the indexes of `snapshot`, whose vectors are in `vectors` (all of them where the store read them by id). */
function stateOf(snapshot: MemorySnapshot | WorkingSnapshot, vectors: VectorTable, host: PartitionHost, now: PartitionNow): MemoryState {
  // Vectors found by id are indexed as their nodes are put (`applyBatch`): facts read as columns are made nodes for that.
  if (vectors.size > 0 && 'facts' in snapshot && snapshot.facts) return stateOf(withFactsAsNodes(snapshot), vectors, host, now);
  const graph = new MemoryGraph({ nodes: [], edges: [], chunks: [], vectors });
  const state: MemoryState = { graph, indexes: new IndexSet(snapshot.meta.dim, host.createIndex), meta: snapshot.meta, hashes: new Set(), version: 0 };
  // Keys are allocated in ingestion order: replaying records by key rebuilds maps and indexes in
  // the order an uninterrupted ingest built them, so ties (same name, same cosine) resolve alike
  // and reopen-and-continue grows the same graph.
  const nodes = inKeyOrder(snapshot.nodes);
  const derived = 'folded' in snapshot ? derivedInKeyOrder(snapshot.nodes, snapshot.folded, vectors) : null;
  applyBatch(state, {
    putChunks: [...snapshot.chunks].sort((a, b) => a.order - b.order),
    putNodes: nodes,
    putEdges: inKeyOrder(derived ? [...snapshot.edges, ...derived.indexed] : snapshot.edges),
    putHashes: [...snapshot.hashes],
    meta: snapshot.meta,
  }, {
    has: (id) => vectors.has(id),
    get: (id) => vectors.peek(id),
    recordPlace: (id) => vectors.recordPlace(id),
    copyRecords: (places, target, form) => vectors.copyRecords(places, target, form),
    lend: (ids, keys, rows, places) => vectors.lend(ids, keys, rows, places),
  });
  // Apart from the held edges, and after them: the two kinds never share an id (a store's edge row replaces the folded edge it names).
  for (const { type, from, keys } of derived?.kept ?? []) graph.putDerivedEdges(type, from, keys);
  if ('facts' in snapshot && snapshot.facts) putFacts(graph, snapshot.facts);
  if ('relations' in snapshot && snapshot.relations) graph.leaveRelations(checkedRelations(snapshot.relations, graph, now));
  return state;
}

/**
 * Hands the facts a working set read as columns to `graph` (which holds its chunks and other
 * nodes), in key order, then the derived edges they keep, each type's in key order: the order
 * `putDerivedEdges` files a node's, into lists that hold no other node's (a Facet's facts, an
 * Entity's; a store reads all of a partition's facts as columns or none).
 */
function putFacts(graph: MemoryGraph, facts: FactColumns): void {
  graph.putFactColumns(facts, keyOrder(facts.keys));
  for (const type of DERIVED_EDGE_TYPES) {
    const edgeKeys = type === 'belongs_to' ? facts.belongsKeys : facts.involvesKeys;
    const ordinals: number[] = [];
    const keys: number[] = [];
    for (let ordinal = 0; ordinal < facts.size; ordinal++) {
      const key = edgeKeys[ordinal] as number;
      if (key < 0) continue;
      ordinals.push(ordinal);
      keys.push(key);
    }
    graph.putFactEdges(type, keyOrder(keys).map((i) => ordinals[i] as number));
  }
}

/**
 * The relation edges a working set left in its store, as its graph reads them: checked as the
 * open checks records (`checkRelationEdge`), a damaged one CORRUPT_CHECKPOINT as at an open, and
 * all of them in key order. Read after another writer committed (the store past the revision of
 * `now`, before this process caught up), an edge that fails the check is one that writer added
 * (its key beyond this partition's `meta.nextKey`): it is left out, and the partition reloads at
 * its next read.
 */
function checkedRelations(stored: StoredRelationEdges, graph: MemoryGraph, now: PartitionNow): StoredRelations {
  const checked = (read: { revision: number; edges: GraphEdge[] }): GraphEdge[] => {
    // Edges as the open read them move with the graph (`asOpened`): never another writer's.
    const stale = stored.asOpened === undefined && read.revision !== now.revision();
    const keys = new Map<number, string>();
    const fail = damaged(now.name);
    const check: RelationEdgeContext = {
      holdsNode: (id) => graph.nodes.has(id),
      keyOwner: (key) => keys.get(key) ?? graph.idForKey(key),
      nextKey: now.meta().nextKey,
    };
    const edges: GraphEdge[] = [];
    for (const edge of read.edges) {
      try {
        checkRelationEdge(edge, check, fail);
      } catch (err) {
        if (stale) continue;
        throw err;
      }
      keys.set(edge.key, edge.id);
      edges.push(edge);
    }
    return inKeyOrder(edges);
  };
  return {
    ...(stored.asOpened ? { asOpened: stored.asOpened } : {}),
    all: () => checked(stored.all()),
    owned: (chunkIds, nodeIds) => checked(stored.owned(chunkIds, nodeIds)),
    get: (id) => {
      const { revision, edge } = stored.get(id);
      return checked({ revision, edges: edge ? [edge] : [] })[0];
    },
    counts: () => stored.counts(),
  };
}

/** How a damaged record of partition `name` fails: CORRUPT_CHECKPOINT, naming the memory and the way out. */
function damaged(name: string): (message: string) => never {
  return (message) => {
    throw new PrismError('CORRUPT_CHECKPOINT', `memory ${JSON.stringify(name)} is damaged: ${message}; import a checkpoint over it or delete it whole`);
  };
}

/**
 * `records` in key order, records of equal keys (none a checked memory holds) in their order.
 */
export function inKeyOrder<T extends { key: number }>(records: readonly T[]): T[] {
  return Array.from(keyOrder(records.map(({ key }) => key)), (i) => records[i] as T);
}

/**
 * The positions of `keys` in ascending key order, equal keys in their order. A memory's keys are
 * integers below 2^32, so two stable passes of a radix sort, by their low and then their high 16
 * bits, order them without comparing: a comparator sort of the nodes and edges was ~180 ms of an
 * open at 100K messages, and a table of slots by key, which this replaces, fell back to that sort
 * where keys were sparse (the ~150K nodes that are not facts, among ~1.3M keys). Keys that are not
 * such integers (none a checked memory holds) are sorted by comparison.
 */
function keyOrder(keys: ArrayLike<number>): Int32Array {
  // A pass counts into 65,536 buckets: for a few records (a write's relation edges) comparing is cheaper.
  if (keys.length < RADIX_FROM) return comparedOrder(keys);
  // Indexed loops here and below: each runs over every record of an open once, and an iterator's
  // step left garbage for the collector before the loop was optimized.
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as number;
    if (!Number.isInteger(key) || key < 0 || key > 0xffff_ffff) return comparedOrder(keys);
  }
  const byLow = radixPass(keys, null, 0);
  return radixPass(keys, byLow, 16);
}

/** Records a key order is made of by radix passes from; below it, by comparison. */
const RADIX_FROM = 4096;

/** `keyOrder` by a comparator sort (stable, as the radix passes are). */
function comparedOrder(keys: ArrayLike<number>): Int32Array {
  return Int32Array.from(Array.from({ length: keys.length }, (_, i) => i).sort((a, b) => (keys[a] as number) - (keys[b] as number)));
}

/** The positions `from` lists (all, in order, where null) stably ordered by bits `shift`…`shift + 15` of their keys. */
function radixPass(keys: ArrayLike<number>, from: Int32Array | null, shift: 0 | 16): Int32Array {
  const digitOf = (i: number) => ((keys[i] as number) >>> shift) & 0xffff;
  const starts = new Int32Array(0x10001);
  for (let i = 0; i < keys.length; i++) {
    const digit = digitOf(i) + 1;
    starts[digit] = (starts[digit] as number) + 1;
  }
  for (let digit = 1; digit <= 0x10000; digit++) starts[digit] = (starts[digit] as number) + (starts[digit - 1] as number);
  const order = new Int32Array(keys.length);
  for (let at = 0; at < keys.length; at++) {
    const i = from === null ? at : (from[at] as number);
    const digit = digitOf(i);
    const place = starts[digit] as number;
    starts[digit] = place + 1;
    order[place] = i;
  }
  return order;
}

/** One type's derived edges kept as keys: their nodes and keys, in key order. */
interface KeptDerivedEdges {
  type: DerivedEdgeType;
  from: GraphNode[];
  keys: number[];
}

/**
 * A working set's derived edges, type by type in key order (the order graph building made them,
 * which the graph's lists keep), from the working set's `nodes` (as read: `folded` names them by
 * position); an edge with a vector is made an edge (`indexed`), which the graph holds and its
 * index takes.
 */
function derivedInKeyOrder(nodes: readonly GraphNode[], folded: FoldedEdgeLists, vectors: VectorTable): { kept: KeptDerivedEdges[]; indexed: GraphEdge[] } {
  const indexed: GraphEdge[] = [];
  const kept = DERIVED_EDGE_TYPES.map((type): KeptDerivedEdges => {
    const list = folded[type];
    const from: GraphNode[] = [];
    const keys: number[] = [];
    // Only an involves_entity edge may be indexed (`belongs_to` never is): ids are made only when some vector is one's.
    const mayBeIndexed = type !== 'belongs_to' && vectors.hasIdStartingWith(`${type}:`);
    const order = keyOrder(list.keys);
    for (let at = 0; at < order.length; at++) {
      const i = order[at] as number;
      const node = nodes[list.nodes[i] as number] as GraphNode;
      const key = list.keys[i] as number;
      const to = derivedTarget(node, type);
      if (to === null) continue;
      if (mayBeIndexed && vectors.has(edgeId(type, node.id, to))) indexed.push(derivedEdge(node, type, key) as GraphEdge);
      else {
        from.push(node);
        keys.push(key);
      }
    }
    return { type, from, keys };
  });
  return { kept, indexed };
}

/**
 * A memory is used only with the embedder it was written with, same id and dimension (else
 * EMBEDDER_MISMATCH), and its schema (else STORE_VERSION). `what` names the memory in the error.
 */
export function checkCompatible(meta: MemoryMeta, embedder: Embedder, what: string): void {
  // Vectors of two embedders live in different spaces: mixing them would rank by noise.
  if (meta.embedderId !== embedder.id || meta.dim !== embedder.dim) {
    throw new PrismError(
      'EMBEDDER_MISMATCH',
      `${what} was embedded with ${meta.embedderId} (${meta.dim} dimensions); open it with that embedder, not ${embedder.id} (${embedder.dim} dimensions)`,
    );
  }
  if (meta.schemaVersion !== SCHEMA_VERSION) {
    throw new PrismError('STORE_VERSION', `${what} has schema version ${meta.schemaVersion}; this version of PRISM reads ${SCHEMA_VERSION}`);
  }
}

/**
 * A stored memory this process can work on: written for its embedder, and whole. A damaged one
 * (left by an older version, say) is CORRUPT_CHECKPOINT on every read and write; `import` and
 * a whole-scope `delete` still replace it, since they do not load it.
 */
function checkStored(snapshot: MemorySnapshot | null, host: PartitionHost, name: string): void {
  if (!snapshot) return;
  checkCompatible(snapshot.meta, host.embedder, `memory ${JSON.stringify(name)}`);
  checkMemoryStructure(snapshot, damaged(name));
}

/** What opening a partition reads: its working set where the store gives one (derived edges as keys), else its whole memory. */
function loadWorkingSet(store: GraphStore, name: string): Promise<MemorySnapshot | WorkingSnapshot | null> {
  return store.loadWorkingSet ? store.loadWorkingSet(name) : store.load(name);
}

/** Loads a partition (empty when the store holds none under that name). */
export async function loadPartition(host: PartitionHost, name: string): Promise<Partition> {
  // Revision first: a commit landing between the two reads makes the next check reload, never miss it.
  const revision = await host.store.revision(name);
  const snapshot = await loadWorkingSet(host.store, name);
  checkStored(snapshot, host, name);
  // What the state reads of the partition (its revision and meta, when it reads what the graph
  // left in the store) is read after the partition is made, never while the state is built.
  let partition: Partition | null = null;
  const state = await stateAsRead(snapshot ?? emptySnapshot(host.embedder), host, nowOf(name, () => partition as Partition), (whole) => checkStored(whole, host, name));
  partition = {
    name,
    scope: scopeOfPartition(name),
    state,
    revision,
    writing: 0,
    serial: createSerial(),
    lexical: null,
    factImage: factImageStateOf(host.store, snapshot),
    relationsRead: (snapshot && 'relationsRead' in snapshot && snapshot.relationsRead) || null,
  };
  return partition;
}

/** Reloads the partition when another writer (process, tab) committed since this one last looked. */
export async function catchUp(host: PartitionHost, partition: Partition): Promise<void> {
  const revision = await host.store.revision(partition.name);
  if (revision === partition.revision) return;
  const snapshot = await wholeWorkingSet(await loadWorkingSet(host.store, partition.name));
  checkStored(snapshot, host, partition.name);
  replaceState(host, partition, snapshot, revision);
}

/** Swaps in a new working set, keeping the `state` object callers hold. */
export function replaceState(host: PartitionHost, partition: Partition, snapshot: MemorySnapshot | null, revision: number): void {
  const version = partition.state.version;
  partition.state.indexes.dispose();
  Object.assign(partition.state, stateFrom(snapshot ?? emptySnapshot(host.embedder), host, nowOf(partition.name, () => partition)));
  partition.state.version = version + 1;
  partition.revision = revision;
  partition.factImage = factImageStateOf(host.store, snapshot);
  // Its relation edges came whole with the snapshot (`wholeWorkingSet`), or it holds none.
  partition.relationsRead = null;
}

/**
 * Commits go to the partition's store and then into its working set; `locked` catches up
 * first. With `lockHeld` the caller already holds the partition's writer lock (and caught up
 * under it), so `locked` runs its task at once: the lock is not reentrant.
 */
export function writerFor(host: PartitionHost, partition: Partition, lockHeld = false): BatchWriter {
  return {
    locked: (task) =>
      lockHeld
        ? task()
        : host.store.withWriteLock(partition.name, async () => {
            await catchUp(host, partition);
            return task();
          }),
    commit: async (written) => {
      // Rounded to the store's precision first: the working set then holds what a reload reads.
      const batch = written.putVectors ? { ...written, putVectors: roundVectors(written.putVectors, host.store.vectorPrecision) } : written;
      partition.revision = await host.store.commit(partition.name, batch);
      applyBatch(partition.state, batch);
      noteFactBatch(partition, batch);
      if (dropsDerived(batch)) noteCopyDropped(partition);
    },
  };
}
