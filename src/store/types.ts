import type { DerivedEdgeType } from '../graph/derived-edges.ts';
import type { FactColumns } from '../graph/fact-columns.ts';
import type { RelationChanges } from '../graph/memory-graph.ts';
import type { Chunk, EdgeType, GraphEdge, GraphNode, MemoryMeta, MemorySnapshot } from '../graph/types.ts';
import type { VectorPrecision } from './vector-codec.ts';

/**
 * One atomic write. A store applies all of it or none of it, so a crash between two
 * commits leaves the memory at the last committed batch.
 */
export interface WriteBatch {
  putNodes?: GraphNode[];
  deleteNodes?: string[];
  putEdges?: GraphEdge[];
  deleteEdges?: string[];
  putChunks?: Chunk[];
  deleteChunks?: string[];
  putVectors?: Array<[id: string, vector: Float32Array]>;
  deleteVectors?: string[];
  putHashes?: string[];
  deleteHashes?: string[];
  meta?: MemoryMeta;
}

/**
 * A partition's memory as opening it reads it (`GraphStore.loadWorkingSet`): the derived edges
 * its nodes fold in (graph/derived-edges.ts) are kept as keys (`folded`), not in `edges`, and
 * records come in no particular order.
 */
export interface WorkingSnapshot extends MemorySnapshot {
  folded: FoldedEdgeLists;
  /**
   * Where the store read them so (SQL and IndexedDB working sets): every FacetPoint, as columns
   * (`FactColumns`), none of them in `nodes`, each with the keys of the derived edges it keeps
   * (none of them in `folded`). The graph makes a fact's node when something reads it.
   */
  facts?: FactColumns;
  /**
   * Where the store reads a fact image in place of the fact rows (SQL: store/fact-image.ts):
   * `read` where it did (one saved at the revision read), `missing` where it had none to read,
   * which the memory then saves (memory/fact-image.ts). Absent where the store reads none.
   */
  factImage?: 'read' | 'missing';
  /**
   * Where the relation edges (graph/derived-edges.ts's `RELATION_EDGE_TYPES`) are, when the store
   * left them out of `edges` (those with a vector excepted): read synchronously, as the store
   * holds them at the time, or as the open read them and changed since (`asOpened`). Absent
   * where `edges` holds them all.
   */
  relations?: StoredRelationEdges;
  /**
   * The vectors as their groups are stored, where the store can name each member's index key: a
   * SQL store written by this version keeps every group's keys (`StemVectorGroup`), IndexedDB
   * lists its groups' member ids, whose keys are their records' (`ListedVectorGroup`). `vectors`
   * is then empty, and the open hands each vector to its index by key, with no table of vectors
   * by id, once it has checked that the key names the node or edge of the member's id (see
   * memory/keyed-vectors.ts). Absent: the vectors are in `vectors`.
   */
  keyedVectors?: readonly KeyedVectorGroup[];
  /**
   * Present where the store handed the records over before it had read the vectors (IndexedDB's
   * reads come from a worker, the vector groups last): settles with them, or with the read's
   * error. Until then `vectors` is empty, `keyedVectors` absent and `edges` lacks the relation
   * edges with a vector; the open checks and builds the graph meanwhile (`withLaterVectors` makes
   * the snapshot the store would have handed over whole).
   */
  vectorsLater?: Promise<LaterVectors>;
  /**
   * Present where the store has not read the relation edges it leaves (`relations`) yet
   * (IndexedDB's, where its edge groups hold nothing else, since no search reads them): reads
   * them, once, at its first call, and settles once `relations` holds them all, or with the
   * read's error. Nothing may read `relations` before. Read after the open, they may be of a
   * later revision than the records (another writer committed between): the partition is then
   * behind its store, and catches up before any use that reads them.
   */
  relationsRead?: () => Promise<void>;
}

/** What a working set's `vectorsLater` settles with: its `vectors`, its `keyedVectors` where it has them, and the relation edges with a vector (which its `edges` holds as well). */
export interface LaterVectors {
  vectors: MemorySnapshot['vectors'];
  keyedVectors?: readonly KeyedVectorGroup[];
  edges: readonly GraphEdge[];
}

/** `snapshot` as a store hands it over whole, with the vectors read after its records (`WorkingSnapshot.vectorsLater`). */
export function withLaterVectors(snapshot: WorkingSnapshot, later: LaterVectors): WorkingSnapshot {
  const { vectorsLater: _later, keyedVectors: _keyed, ...records } = snapshot;
  return {
    ...records,
    edges: later.edges.length === 0 ? records.edges : [...records.edges, ...later.edges],
    vectors: later.vectors,
    ...(later.keyedVectors ? { keyedVectors: later.keyedVectors } : {}),
  };
}

/** A working set read whole, its vectors and relation edges: `snapshot` itself where they came with its records. */
export async function wholeWorkingSet<T extends MemorySnapshot | WorkingSnapshot | null>(snapshot: T): Promise<T> {
  if (snapshot === null || !('folded' in snapshot)) return snapshot;
  const { relationsRead, ...records }: WorkingSnapshot = snapshot;
  await relationsRead?.();
  return (records.vectorsLater ? withLaterVectors(records, await records.vectorsLater) : records) as T;
}

/** One stored vector group whose members' index keys an open can name (`WorkingSnapshot.keyedVectors`). */
export type KeyedVectorGroup = StemVectorGroup | ListedVectorGroup;

/**
 * A SQL store's vector group (store/vector-groups.ts) with the index key of each member, as
 * stored: read when the open hands the group to its index, so that no list of names or keys is
 * held for every group at once (at 100K messages ~464K names).
 */
export interface StemVectorGroup {
  stem: string;
  /** The members' names, in order, as stored (`vectorGroupMembers` reads them). */
  members: string;
  /** Their keys, in the same order, as stored (`decodeGroupKeys` reads them). */
  keys: Uint8Array;
  /** Their values end to end, each after its length (`joinGroupValues`). */
  data: Uint8Array;
}

/**
 * An IndexedDB vector group as read: its members' ids, whose index keys are those of the
 * records of those ids (the graph holds them by id when the vectors are handed over).
 */
export interface ListedVectorGroup {
  /** How errors name the group. */
  name: string;
  /** The members' ids, in order. */
  ids: readonly string[];
  /** Their values end to end, each after its length (`joinGroupValues`). */
  data: Uint8Array;
}

/**
 * The relation edges of a partition, read from its store when asked, not at its open (a SQL
 * store's: ~280K at 100K messages). Each read sees the store as it is then, committed writes only.
 */
export interface StoredRelationEdges {
  /**
   * Present where these are the edges as the open read them, kept undecoded (a store whose reads
   * cannot wait, IndexedDB's), which the store's later commits do not reach: the graph tells them
   * each relation edge it puts or deletes after the open, so that they stay what the store holds.
   * Absent: read from the store as it is at each call (a SQL store's).
   */
  readonly asOpened?: RelationChanges;
  /** Every relation edge the partition holds, as decoded (unchecked), in no particular order, and the revision they were read at. */
  all(): { revision: number; edges: GraphEdge[] };
  /** The relation edge `id` as decoded (unchecked), when the partition holds it, and the revision it was read at. */
  get(id: string): { revision: number; edge: GraphEdge | undefined };
  /** The relation edges (decoded, unchecked) of a chunk of `chunkIds` or with an end in `nodeIds`, and the revision they were read at: what deleting them takes along. */
  owned(chunkIds: ReadonlySet<string>, nodeIds: ReadonlySet<string>): { revision: number; edges: GraphEdge[] };
  /** How many relation edges of each relation type the partition holds. */
  counts(): Partial<Record<EdgeType, number>>;
}

/**
 * The derived edges of a working set's nodes, type by type, as the read met them: the position in
 * the working set's `nodes` of the node each runs from, and its key. Positions, not maps by node
 * id: an open at 100K messages reads ~650K of them, and its check and its graph building each
 * looked every one up by id (~1.2 s of the open).
 */
export type FoldedEdgeLists = Record<DerivedEdgeType, FoldedEdges>;

export interface FoldedEdges {
  /** Positions in the working set's `nodes`. */
  nodes: number[];
  /** The key of the edge each of those nodes derives, in the same order. */
  keys: number[];
}

export function noFoldedEdges(): FoldedEdgeLists {
  return { belongs_to: { nodes: [], keys: [] }, involves_entity: { nodes: [], keys: [] } };
}

/** Derived state as a store keeps it (see `GraphStore.loadDerived`). */
export interface DerivedState {
  revision: number;
  bytes: Uint8Array;
}

/** Whether committing `batch` drops the partition's derived state: it deletes a node (its text) or a chunk. */
export function dropsDerived(batch: WriteBatch): boolean {
  return (batch.deleteNodes?.length ?? 0) > 0 || (batch.deleteChunks?.length ?? 0) > 0;
}

/**
 * The narrow persistence contract every backend implements (SQLite in Node, a SQLite-backed
 * Durable Object in workerd, IndexedDB in browsers, memory for tests).
 *
 * A store holds many **partitions**: one per scope (`userId` / `agentId` / `runId`), each a
 * whole memory graph of its own. Partition names are opaque non-empty strings chosen by the
 * caller; a store never mixes the records of two partitions.
 *
 * Several writers (processes, tabs, requests) may share one store. Each holds the partition's
 * writer lock around its read-modify-commit cycle and first compares the partition's
 * `revision` with the one it last saw, reloading when another writer committed in between.
 */
export interface GraphStore {
  /**
   * The precision the store keeps vectors in (default `f32`). A memory rounds every vector to
   * it before committing, so what a reopened memory reads is exactly what the writing one held.
   */
  readonly vectorPrecision?: VectorPrecision;
  /**
   * True where `loadWorkingSet` reads the partition's fact image (store/fact-image.ts, which a
   * memory saves with `saveDerived`) in place of its fact rows, when one of its revision is there
   * (`WorkingSnapshot.factImage`). A memory saves none for a store without it.
   */
  readonly readsFactImage?: boolean;
  /** Partitions that hold a memory, in no particular order. */
  partitions(): Promise<string[]>;
  /** Loads one partition's whole memory, or `null` when it holds none. */
  load(partition: string): Promise<MemorySnapshot | null>;
  /**
   * `load` as opening a memory uses it: the derived edges the store folds into their nodes stay
   * keys (three in four edges of a chat memory, which the working graph keeps as keys too), a
   * store that reads synchronously may leave the relation edges where they are (`relations`),
   * and nothing is sorted. Optional: a memory opens with `load` from a store without it.
   */
  loadWorkingSet?(partition: string): Promise<WorkingSnapshot | null>;
  /**
   * The partition's revision, changed by every `commit` and `clear` from any writer (this one,
   * another process, another tab): 0 in a new store, then only growing, never back to a value
   * a reader saw before. Compare it for equality only (a store may also change the revision of
   * a partition it holds nothing for). Cheap enough to read before every search.
   */
  revision(partition: string): Promise<number>;
  /**
   * Runs `fn` holding the partition's exclusive writer lock, which spans processes (Node),
   * tabs (browsers) and requests (a Durable Object). A second writer waits, without blocking
   * its event loop, up to the store's lock timeout and then fails with `STORE_BUSY`. A writer
   * that dies releases the lock. Not reentrant.
   */
  withWriteLock<T>(partition: string, fn: () => Promise<T>): Promise<T>;
  /** Applies `batch` atomically and durably (all or nothing) and returns the new revision. */
  commit(partition: string, batch: WriteBatch): Promise<number>;
  /** Removes one partition (and bumps its revision), or, with none given, everything including the cache. */
  clear(partition?: string): Promise<void>;
  /**
   * Derived state a memory keeps beside a partition's records so that opening it does less
   * work (the lexical index, see `LexicalIndex.toBytes`): the bytes last saved under `name`,
   * and the revision they were saved at; null when there are none. It is never part of the
   * memory: `load`, `export` and checkpoints do not carry it, and a reader that cannot use it
   * builds the same state from the records. Optional: a store without it has a memory rebuild
   * such state at every open.
   *
   * A commit that deletes any node or chunk drops the partition's derived state in the same
   * transaction (`dropsDerived`), as `clear` does: it may hold the words of what was deleted.
   */
  loadDerived?(partition: string, name: string): Promise<DerivedState | null>;
  /**
   * Saves derived state made from the partition at `revision`, replacing what `name` held; false,
   * writing nothing, when the partition is no longer at that revision (or holds no memory): a
   * commit since may have deleted what the state was made from.
   */
  saveDerived?(partition: string, name: string, revision: number, bytes: Uint8Array): Promise<boolean>;
  /** A small key-value area for caches (e.g. LLM responses); values are strings. */
  getCached(key: string): Promise<string | undefined>;
  /** `tags` (e.g. the chunk ids a reply was made for) let `deleteCached` forget the entry with them. */
  putCached(key: string, value: string, tags?: readonly string[]): Promise<void>;
  /** Removes every cache entry carrying any of `tags`. */
  deleteCached(tags: readonly string[]): Promise<void>;
  close(): Promise<void>;
}
