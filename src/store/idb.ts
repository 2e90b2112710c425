import { openDB } from 'idb';
import type { DBSchema, IDBPDatabase, IDBPTransaction, StoreNames } from 'idb';
import { PrismError } from '../errors.ts';
import { isRelationEdgeId, OTHER_ID_RANGES } from '../graph/derived-edges.ts';
import type { Chunk, GraphEdge, GraphNode, MemoryMeta, MemorySnapshot } from '../graph/types.ts';
import { DEFAULT_PARTITION } from '../scope.ts';
import { DERIVED_OWNER, KeyFolder, KeyRing } from './idb-keys.ts';
import { DEFAULT_LOCK_TIMEOUT_MS, KeyedMutex, lockTimeoutError } from './lock.ts';
import { changesDimension, compareIds, snapshotAsBatch, sortById, validateBatch } from './snapshot.ts';
import { decodeChunkRow, decodeEdge, decodeNode, encodeChunkRow, encodeEdge } from './record-codec.ts';
import { ChunkTextJoiner, type UnjoinedChunk } from '../graph/chunk-text.ts';
import { allStoredEdges, recordReads, planRecords, StoredRecordsReader, WrittenLists, type RecordPlan, type StoredRow } from './record-plan.ts';
import { relationsAsOpened } from './relation-rows.ts';
import { dropsDerived, withLaterVectors, type DerivedState, type GraphStore, type LaterVectors, type ListedVectorGroup, type WorkingSnapshot, type WriteBatch } from './types.ts';
import { VectorTable } from '../graph/vector-table.ts';
import { DEFAULT_VECTOR_PRECISION, encodeVector, type VectorPrecision } from './vector-codec.ts';
import { packValue } from './value-pack.ts';
import { addKeyedGroups, joinGroupValues, splitGroupTexts, splitGroupValues, GroupEdits, vectorGroupOf, walkGroupValues } from './vector-groups.ts';

/**
 * A partition as the database names it: a random number, never its name, so that clearing a
 * partition leaves nothing on disk that names it (its name is sealed inside its meta).
 */
type Token = number;

/** A record's key: its partition's token, then its own id (or hash). Ids are hashes of the text, never the text. */
type RecordKey = [token: Token, id: string];

/** A page of a long Entity chunk list (see record-codec): the Entity's key, then the page's number. */
type PageKey = [token: Token, id: string, page: number];

/** A value as stored: AES-GCM sealed under key `keyId` of its partition's (or the cache's) key ring. */
interface Sealed {
  keyId: string;
  sealed: ArrayBuffer;
}

/**
 * The vectors (or the nodes) sealed under one key, in one record (see `groupWrites`): their ids
 * in the clear, as every record key is, for the `member` index; their values end to end, sealed.
 */
interface SealedGroup extends Sealed {
  members: RecordKey[];
}

interface SealedCacheEntry extends Sealed {
  tags: string[];
}

/** Derived state (see `GraphStore.loadDerived`), sealed under the partition's derived key (`DERIVED_OWNER`), with the revision it was made at. */
interface SealedDerived extends Sealed {
  revision: number;
}

/** What a partition's sealed meta holds: the partition's name and its memory's meta. */
interface PartitionMeta {
  partition: string;
  meta: MemoryMeta;
}

/**
 * Counters of the whole database. `generation` moves whenever a partition is created or
 * cleared (tabs then re-read which token is whose); `retiredRevision` is the highest revision
 * a cleared partition reached, so a name's next partition starts above every revision the
 * name had; `legacy` is set while values written before v3 wait to be sealed.
 */
type Counter = 'generation' | 'retiredRevision' | 'legacy';

/** A key ring to finish after a crash: remove its file, or drop the keys nothing references. */
type RingCleanup = 'remove' | 'prune';

interface PrismDb extends DBSchema {
  /**
   * Entities, one record each (an add rewrites some of them: the Entities it names); other nodes
   * as v8 and older wrote them, read, deleted and sealed again, never written anew. Values written
   * before v7 also hold the node's layer in the clear, which nothing reads.
   */
  nodes: { key: RecordKey; value: Sealed; indexes: { keyId: string } };
  /** By token and key id: the nodes but Entities sealed under that key (their JSON); `member` finds a node's group. */
  nodeGroups: { key: RecordKey; value: SealedGroup; indexes: { keyId: string; member: RecordKey } };
  /**
   * One record an edge, as v9 and older wrote them; read, deleted and sealed again, never written
   * anew. Values written before v7 also hold the edge's type in the clear, which nothing reads.
   */
  edges: { key: RecordKey; value: Sealed; indexes: { keyId: string } };
  /** By token and key id: the edges sealed under that key (their JSON); `member` finds an edge's group. */
  edgeGroups: { key: RecordKey; value: SealedGroup; indexes: { keyId: string; member: RecordKey } };
  /** Pages of long Entity chunk lists, sealed under their Entity's key. */
  entityPages: { key: PageKey; value: Sealed; indexes: { keyId: string } };
  chunks: { key: RecordKey; value: Sealed; indexes: { keyId: string } };
  /** One record a vector, as v4 and older wrote them; read, deleted and sealed again, never written anew. */
  vectors: { key: RecordKey; value: Sealed; indexes: { keyId: string } };
  /** By token and key id: the vectors sealed under that key; `member` finds a vector's group. */
  vectorGroups: { key: RecordKey; value: SealedGroup; indexes: { keyId: string; member: RecordKey } };
  /** The value carries nothing; the key is the hash. */
  hashes: { key: RecordKey; value: true };
  /** By token and the state's name. */
  derived: { key: RecordKey; value: SealedDerived; indexes: { keyId: string } };
  /** By token; a partition holds a memory exactly when it has meta. */
  meta: { key: Token; value: Sealed; indexes: { keyId: string } };
  /** By token; kept when the partition is cleared, so its revision only grows. */
  revisions: { key: Token; value: number };
  cache: { key: string; value: SealedCacheEntry; indexes: { tags: string; keyId: string } };
  counters: { key: Counter; value: number };
  /** By ring file name: a clear or delete that had not finished with its key ring when the page died. */
  ringCleanups: { key: string; value: RingCleanup };
}

type StoreName = StoreNames<PrismDb>;
type UpgradeTransaction = IDBPTransaction<unknown, string[], 'versionchange'>;

const RECORD_STORES = ['nodes', 'nodeGroups', 'edges', 'edgeGroups', 'entityPages', 'chunks', 'vectors', 'vectorGroups', 'hashes', 'derived'] as const satisfies readonly StoreName[];
/** Stores whose values are sealed, each with an index on the key id. */
const SEALED_STORES = ['nodes', 'nodeGroups', 'edges', 'edgeGroups', 'entityPages', 'chunks', 'vectors', 'vectorGroups', 'derived', 'meta', 'cache'] as const satisfies readonly StoreName[];

/**
 * Stores whose values are packed before they are sealed (value-pack.ts), those written since
 * packing came: text (record JSON, chunks, LLM replies), or a group of record JSON. Not the
 * vectors, whose bytes do not pack; not derived state (binary, read once at a search); not the
 * metas, a few hundred bytes each.
 */
const PACKED_STORES: ReadonlySet<StoreName> = new Set(['nodes', 'nodeGroups', 'edgeGroups', 'entityPages', 'chunks', 'cache'] satisfies StoreName[]);

/** `store`'s value as sealed: packed where the store's values are (`PACKED_STORES`). */
function sealable(store: StoreName, plain: Uint8Array<ArrayBuffer>): Uint8Array<ArrayBuffer> {
  return PACKED_STORES.has(store) ? packValue(plain) : plain;
}

/** The stores that keep the records sealed under one key as one record (see `groupWrites`). */
type GroupStore = 'nodeGroups' | 'edgeGroups' | 'vectorGroups';

/**
 * Each group store's store of single records from before it (read, deleted, sealed again, never
 * written anew), how its ids share stems for a lookup by range, and what its records are.
 */
const GROUP_STORES: Record<GroupStore, { singles: 'nodes' | 'edges' | 'vectors'; kind: string }> = {
  nodeGroups: { singles: 'nodes', kind: 'node' },
  edgeGroups: { singles: 'edges', kind: 'edge' },
  vectorGroups: { singles: 'vectors', kind: 'vector' },
};

/** Groups a write read (`readGroups`): each group's values by member id, by key id; and the ids read that are records of their own. */
interface GroupsRead {
  groups: Map<string, Map<string, Uint8Array>>;
  singles: Set<string>;
}

/** Groups a write has read already, with the ids it read them for: what may hold those ids is among them. */
interface KnownGroups {
  read: GroupsRead;
  ids: ReadonlySet<string>;
}

/** A node a write stores, as its stored JSON and as the node. */
interface NodeWrite {
  id: string;
  json: string;
  node: GraphNode;
}

/**
 * The nodes `plan` writes, each told apart once: the Entities, which stay records of their own,
 * and the rest, which go into groups (`nodeGroupWrites`). A node the plan rewrites without being
 * put (it dropped a folded edge) is read from its JSON.
 */
function nodeWritesOf(plan: RecordPlan, putNodes: ReadonlyMap<string, GraphNode>): { entities: NodeWrite[]; grouped: NodeWrite[] } {
  const entities: NodeWrite[] = [];
  const grouped: NodeWrite[] = [];
  for (const [id, json] of plan.nodes) {
    const node = putNodes.get(id) ?? decodeNode(json, new Map(), undefined, id).node;
    (node.layer === 'entity' ? entities : grouped).push({ id, json, node });
  }
  return { entities, grouped };
}

/** A group record as read: its key's id and its members' ids, in order (a bulk read's `ReadValue` gives them so). */
interface GroupRead {
  keyId: string;
  members: readonly string[] | null;
}

/** The ids of a group record's members, in order. */
function memberIds(group: SealedGroup): string[] {
  return group.members.map(([, id]) => id);
}

/** How errors name a group record. */
function groupName(store: GroupStore, group: GroupRead): string {
  return `${GROUP_STORES[store].kind} group ${group.keyId}`;
}

/** A group record's values by member id, from its unsealed bytes; CORRUPT_CHECKPOINT when its members and values do not match. */
function valuesOfGroup(store: GroupStore, group: GroupRead, plain: Uint8Array): Map<string, Uint8Array> {
  return splitGroupValues(groupName(store, group), group.members ?? [], plain);
}

/** `valuesOfGroup` of a node or edge group, each value its record's JSON. */
function rowsOfGroup(store: 'nodeGroups' | 'edgeGroups', group: GroupRead, plain: Uint8Array): StoredRow[] {
  return splitGroupTexts(groupName(store, group), group.members ?? [], plain);
}

const ALL_STORES = [...RECORD_STORES, 'meta', 'revisions', 'cache', 'counters', 'ringCleanups'] as const satisfies readonly StoreName[];

/** The key ring of the LLM cache: one key per entry, dropped with the entry. */
const CACHE_RING = 'cache';
const ringOf = (token: Token): string => `p${token}`;

/** Every key of one partition: `[p]` sorts before `[p, id]`, and `[p, []]` after (arrays sort after strings). */
function partitionRange(partition: string | Token): IDBKeyRange {
  return IDBKeyRange.bound([partition], [partition, []]);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const jsonBytes = (value: unknown): Uint8Array<ArrayBuffer> => encoder.encode(JSON.stringify(value));
const fromJson = <T>(bytes: Uint8Array): T => JSON.parse(decoder.decode(bytes)) as T;

/**
 * A chunk's value before sealing (since v12): its row as the SQL stores keep it (record-codec's
 * `encodeChunkRow`), the record's UTF-8 and, where its turns' texts are kept apart, a 0 byte and
 * theirs. JSON escapes every control character, so the first 0 byte ends the record; a value
 * written before v12 is a record alone.
 */
function chunkValue(chunk: Chunk): Uint8Array<ArrayBuffer> {
  const { json, text } = encodeChunkRow(chunk);
  if (text === null) return encoder.encode(json);
  const record = encoder.encode(json);
  const words = encoder.encode(text);
  const value = new Uint8Array(record.length + 1 + words.length);
  value.set(record);
  value.set(words, record.length + 1);
  return value;
}

/** The chunk of a value `chunkValue` wrote, or one written before v12; `join` gives it its text (`decodeChunkRow`). */
function chunkOfValue(plain: Uint8Array, join?: (chunk: UnjoinedChunk) => void): Chunk {
  const end = plain.indexOf(0);
  return end < 0 ? decodeChunkRow(decoder.decode(plain), null) : decodeChunkRow(decoder.decode(plain.subarray(0, end)), decoder.decode(plain.subarray(end + 1)), join);
}

/**
 * Schema migrations: entry i upgrades a database from version i to i + 1, so a database at
 * any older version walks the chain up to `IDB_SCHEMA_VERSION`. Append, never edit. Each sees
 * the schema of its own version, so they work on the untyped database.
 */
const MIGRATIONS: ReadonlyArray<(db: IDBPDatabase, tx: UpgradeTransaction) => Promise<void>> = [
  // v1 (PRISM 0.2): one memory per database, records keyed by their own id.
  async (db) => {
    db.createObjectStore('nodes', { keyPath: 'id' }).createIndex('layer', 'layer');
    db.createObjectStore('edges', { keyPath: 'id' }).createIndex('type', 'type');
    db.createObjectStore('chunks', { keyPath: 'id' });
    db.createObjectStore('vectors');
    db.createObjectStore('hashes');
    db.createObjectStore('meta');
    db.createObjectStore('cache');
  },
  // v2: partitions. Every record store is rekeyed by [partition, id]; what v1 held becomes the
  // default partition at revision 1; cache entries gain tags.
  async (db, tx) => {
    const read = async (name: string) => ({ keys: await tx.objectStore(name).getAllKeys(), values: await tx.objectStore(name).getAll() });
    const old = {
      nodes: await read('nodes'),
      edges: await read('edges'),
      chunks: await read('chunks'),
      vectors: await read('vectors'),
      hashes: await read('hashes'),
      cache: await read('cache'),
    };
    const meta: unknown = await tx.objectStore('meta').get('meta');
    for (const name of ['nodes', 'edges', 'chunks', 'vectors', 'hashes', 'meta', 'cache']) db.deleteObjectStore(name);
    db.createObjectStore('nodes').createIndex('layer', 'layer');
    db.createObjectStore('edges').createIndex('type', 'type');
    for (const name of ['chunks', 'vectors', 'hashes', 'meta', 'revisions']) db.createObjectStore(name);
    db.createObjectStore('cache').createIndex('tags', 'tags', { multiEntry: true });
    const writes: Array<Promise<unknown>> = [];
    for (const name of ['nodes', 'edges', 'chunks', 'vectors', 'hashes'] as const) {
      const { keys, values } = old[name];
      keys.forEach((key, i) => writes.push(tx.objectStore(name).put(values[i], [DEFAULT_PARTITION, String(key)])));
    }
    old.cache.keys.forEach((key, i) => writes.push(tx.objectStore('cache').put({ value: old.cache.values[i], tags: [] }, key)));
    if (meta !== undefined) {
      writes.push(tx.objectStore('meta').put(meta, DEFAULT_PARTITION), tx.objectStore('revisions').put(1, DEFAULT_PARTITION));
    }
    await Promise.all(writes);
  },
  // v3 (issue 24): sealed values. Records are keyed by a random partition token instead of the
  // partition's name, and their values are sealed under keys kept in the key folder (OPFS);
  // every sealed store gets an index on the key id. What v2 wrote stays as it is here (sealing
  // needs WebCrypto, which an upgrade transaction cannot wait for): the `legacy` counter
  // tells the first open to seal it (`IndexedDbStore.sealLegacy`).
  async (db, tx) => {
    for (const name of ['nodes', 'edges', 'chunks', 'vectors', 'meta', 'cache']) tx.objectStore(name).createIndex('keyId', 'keyId');
    db.createObjectStore('counters');
    db.createObjectStore('ringCleanups');
    const held = await Promise.all(['meta', 'revisions', 'cache'].map((name) => tx.objectStore(name).count()));
    if (held.some((count) => count > 0)) await tx.objectStore('counters').put(1, 'legacy');
  },
  // v4: long Entity chunk lists in pages beside their record (see record-codec's ENTITY_PAGE_IDS),
  // so that an add rewrites a speaker's last page, not the list of every chunk.
  async (db) => {
    db.createObjectStore('entityPages').createIndex('keyId', 'keyId');
  },
  // v5: the vectors sealed under one key in one record (see `vectorGroupWrites`): a record each
  // cost ~2.9 s of a 161K-vector cold open in Chromium (2,904 groups: 0.55 s). Vectors written
  // before stay as they are until deleted (moving them needs WebCrypto, which an upgrade cannot wait for).
  async (db) => {
    const groups = db.createObjectStore('vectorGroups');
    groups.createIndex('keyId', 'keyId');
    groups.createIndex('member', 'members', { multiEntry: true });
  },
  // v6: derived state beside a partition's records (the lexical index), sealed under a key of its own.
  async (db) => {
    db.createObjectStore('derived').createIndex('keyId', 'keyId');
  },
  // v7: no index on a node's layer or an edge's type. Nothing reads them, and every node and
  // edge record paid an entry in one and its upkeep on every write (10K messages of chat in
  // Chromium: 7.6 KB a message beyond the text with them, 5.6 KB without); the values stop
  // holding the layer and type in the clear.
  async (_db, tx) => {
    tx.objectStore('nodes').deleteIndex('layer');
    tx.objectStore('edges').deleteIndex('type');
  },
  // v8: the nodes sealed under one key in one record, as the vectors since v5 (see `groupWrites`),
  // but Entities (an add rewrites the Entities it names: their chunks' groups would be rewritten
  // whole): ~4.5 node records a message of chat, each read and unsealed at every open. Nodes
  // written before stay records until put again or deleted (moving them needs WebCrypto, which
  // an upgrade cannot wait for).
  async (db) => {
    const groups = db.createObjectStore('nodeGroups');
    groups.createIndex('keyId', 'keyId');
    groups.createIndex('member', 'members', { multiEntry: true });
  },
  // v9: node and edge values written from here on leave to their key what it names (record-codec's
  // keyed form: a node's id, an edge's type and ends), as the SQL stores' rows since schema 8.
  // Values written before keep them and read as they did; the step changes nothing, it only
  // keeps an older PRISM, which cannot read the keyed form, from opening the database.
  async () => {},
  // v10: the edges sealed under one key in one record, as the nodes since v8: a record each was
  // ~2.6 records a message of chat (evolution and temporal edges), each read and unsealed at
  // every open. Edges written before stay records until put again or deleted.
  async (db) => {
    const groups = db.createObjectStore('edgeGroups');
    groups.createIndex('keyId', 'keyId');
    groups.createIndex('member', 'members', { multiEntry: true });
  },
  // v11: vectors written from here on are i4 (vector-codec's `i4`: 196 bytes a MiniLM vector
  // instead of i8's 388). Vectors written before keep their precision and read as they did; the
  // step changes nothing, it only keeps an older PRISM, which cannot read i4, from opening the
  // database.
  async () => {},
  // v12: chunks written from here on keep their turns' texts apart from their record, as the SQL
  // stores' rows since schema 11 (`chunkValue`). Chunks written before read as they did; the step
  // changes nothing, it only keeps an older PRISM, which cannot read such a value, from opening
  // the database.
  async () => {},
];

export const IDB_SCHEMA_VERSION = MIGRATIONS.length;
export const DEFAULT_IDB_NAME = 'prism-memory';

export interface IndexedDbStoreOptions {
  /** Database name; one name per memory. Default `prism-memory`. */
  name?: string;
  /** How long `withWriteLock` waits for a writer in another tab before `STORE_BUSY`. Default 30 000 ms. */
  lockTimeoutMs?: number;
}

function domErrorName(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'name' in err ? String(err.name) : undefined;
}

function storeError(err: unknown, action: string): PrismError {
  if (err instanceof PrismError) return err;
  // DOMExceptions often come with an empty message; the name is then the whole story.
  const reason = err instanceof Error ? [err.name, err.message].filter(Boolean).join(': ') : String(err);
  switch (domErrorName(err)) {
    case 'QuotaExceededError':
      return new PrismError('STORE_QUOTA_EXCEEDED', `${action}: the browser's storage quota is exhausted (${reason})`, { cause: err });
    case 'VersionError':
      return new PrismError('STORE_VERSION', `${action}: the database was written by a newer PRISM (schema above ${IDB_SCHEMA_VERSION}); ${reason}`, { cause: err });
    default:
      return new PrismError('STORE_IO', `${action}: ${reason}`, { cause: err });
  }
}

type WriteTransaction = IDBPTransaction<PrismDb, StoreName[], 'readwrite'>;
type UntypedTransaction<Mode extends IDBTransactionMode> = IDBPTransaction<unknown, string[], Mode>;
/** A store of a readwrite transaction, whichever: sealed values are put back under the key they had. */
type UntypedStore = { put(value: Sealed, key: IDBValidKey): Promise<unknown> };

/** One request of a readwrite transaction, prepared (and sealed) before the transaction opens: WebCrypto cannot run inside one. */
type Write = (tx: WriteTransaction) => Promise<unknown>;

/**
 * Which key seals what, for one batch: a chunk's records under the chunk's key, meta under the
 * partition's shared key. An owner whose key is `retired` gets a fresh one.
 */
function keyAssigner(ring: KeyRing, retired: ReadonlySet<string>): (owner: string | null) => string {
  const fresh = new Map<string | null, string>();
  return (owner) => {
    const current = ring.keyOf(owner);
    if (current !== undefined && !retired.has(current)) return current;
    let id = fresh.get(owner);
    if (id === undefined) {
      id = ring.add(owner);
      fresh.set(owner, id);
    }
    return id;
  };
}

/**
 * The chunk whose key seals a node: its own, or for an Entity the first chunk it lists (the one
 * whose commit made it).
 * An Entity that loses that chunk is written again (with the chunks left), so its name leaves
 * with the last chunk that mentions it; under one shared key instead, every delete had to seal
 * every Entity again (9.4 s of a delete at 30K messages in Chromium).
 */
const ownerOfNode = (node: GraphNode): string | null => (node.layer === 'entity' ? (node.chunkIds[0] ?? null) : node.chunkId);

/** The owner of a stored node's JSON as `ownerOfNode` names it; the shared key's (`null`) for a record too damaged to say. */
function storedOwner(json: string): string | null {
  const node: Partial<Record<string, unknown>> = { ...decodeNode(json, new Map()).node };
  const chunkIds = node['chunkIds'];
  const owner = node['layer'] === 'entity' ? (Array.isArray(chunkIds) ? chunkIds[0] : null) : node['chunkId'];
  return typeof owner === 'string' ? owner : null;
}

/**
 * The browser backend: the memory in IndexedDB, one object store per record kind, keyed by
 * [partition token, id] (vectors, and nodes but Entities: one record for those sealed under one
 * key, keyed by the key's id). Every value is sealed (AES-GCM) under a key in the partition's key
 * ring in the Origin Private File System: one key per chunk for the chunk and the nodes, edges
 * and vectors made from it (an Entity's under its first chunk's), and one shared key for meta.
 * A delete drops the keys of what it deleted (and replaces the shared key), so the copies LevelDB keeps until it compacts
 * are noise; clearing a partition unlinks its ring, and its name, sealed in its meta, goes too.
 *
 * `commit` is one readwrite transaction over every store, so a batch lands whole or not at all —
 * a crash, a quota error or an invalid batch leaves the last committed batch. Tabs share the
 * database: writers serialise on a Web Lock per partition, key rings change under a Web Lock
 * per database, and every tab reads the partition's revision from the database itself, so
 * each sees the others' commits.
 */
export class IndexedDbStore implements GraphStore {
  /** Set when another connection needs a newer schema: this one closes to let it upgrade. */
  private displacedBy: number | null = null;
  /** Serialises writers where the Web Locks API is missing (then only this tab can be held back). */
  private readonly localLocks = new KeyedMutex();
  /** Which token each live partition has, as of the database's `generation` counter. */
  private directory: { generation: number; tokens: Map<string, Token> } | null = null;
  /** The last token each partition name had here, kept once it is cleared: its final revision is the name's. */
  private readonly lastTokens = new Map<string, Token>();
  /** The long Entity chunk lists this store wrote last, by partition token then Entity (see record-codec's `WrittenList`). */
  private readonly writtenLists = new WrittenLists();
  /** Key rings as last read for reading values, by file name. */
  private readonly readRings = new Map<string, KeyRing>();

  /** Vectors are kept as the SQL stores keep them; values of any precision read by their length, so f32 values written before stay readable. */
  readonly vectorPrecision: VectorPrecision = DEFAULT_VECTOR_PRECISION;

  private constructor(
    private readonly db: IDBPDatabase<PrismDb>,
    readonly name: string,
    private readonly lockTimeoutMs: number,
    private readonly keys: KeyFolder,
  ) {}

  /**
   * Opens or creates the database, upgrading an older schema. A newer schema throws
   * STORE_VERSION; an upgrade held up by an older connection in another tab throws
   * STORE_BLOCKED rather than waiting indefinitely. Needs a secure context (OPFS, WebCrypto).
   */
  static async open(options: IndexedDbStoreOptions = {}): Promise<IndexedDbStore> {
    const name = options.name ?? DEFAULT_IDB_NAME;
    let keys: KeyFolder;
    try {
      keys = await KeyFolder.open(name);
    } catch (err) {
      throw storeError(err, `opening the keys of ${name}`);
    }
    let store: IndexedDbStore | undefined;
    let rejectBlocked: (err: PrismError) => void = () => undefined;
    const blocked = new Promise<never>((_, reject) => {
      rejectBlocked = reject;
    });
    const opening = openDB<PrismDb>(name, IDB_SCHEMA_VERSION, {
      upgrade(db, oldVersion, _newVersion, tx) {
        const untyped = db as unknown as IDBPDatabase;
        const untypedTx = tx as unknown as UpgradeTransaction;
        // Only IndexedDB requests are awaited in between, which keeps the upgrade transaction alive.
        void (async () => {
          for (let version = oldVersion; version < IDB_SCHEMA_VERSION; version++) await MIGRATIONS[version]?.(untyped, untypedTx);
        })().catch(() => {
          // A failed migration aborts the upgrade, so the database keeps its old version and
          // content; `openDB` then rejects with the abort.
          try {
            tx.abort();
          } catch {
            // Already aborted.
          }
        });
      },
      blocked(currentVersion) {
        rejectBlocked(
          new PrismError(
            'STORE_BLOCKED',
            `opening ${name}: upgrading the schema from version ${currentVersion} to ${IDB_SCHEMA_VERSION} is blocked by another open connection (another tab?); close it and retry`,
          ),
        );
      },
      blocking(_currentVersion, blockedVersion, event) {
        const db = event.target as IDBDatabase;
        db.close();
        if (store) store.displacedBy = blockedVersion;
      },
    });
    let db: IDBPDatabase<PrismDb>;
    try {
      db = await Promise.race([opening, blocked]);
    } catch (err) {
      // A blocked open may still complete later; close that connection when it does.
      opening.then((db) => db.close(), () => undefined);
      throw storeError(err, `opening ${name}`);
    }
    store = new IndexedDbStore(db, name, options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS, keys);
    // A memory's first load follows an open; the worker is stopped after it, or at `close`.
    keys.prepareReading();
    try {
      await store.withKeys('exclusive', () => store.finishOpening());
    } catch (err) {
      db.close();
      keys.stopWorker();
      throw storeError(err, `opening ${name}`);
    }
    return store;
  }

  private usable(action: string): IDBPDatabase<PrismDb> {
    if (this.displacedBy !== null) {
      throw new PrismError(
        'STORE_BLOCKED',
        `${action}: ${this.name} was closed so another connection could upgrade it to version ${this.displacedBy}; reopen (reload the page)`,
      );
    }
    return this.db;
  }

  /** Runs `fn` holding the Web Lock `name` (or, without Web Locks, this realm's mutex), up to the lock timeout. */
  private async locked<T>(name: string, mode: LockMode, what: string, fn: () => Promise<T>): Promise<T> {
    const locks = globalThis.navigator?.locks;
    if (!locks) return this.localLocks.run(name, fn, { ms: this.lockTimeoutMs, what });
    const signal = AbortSignal.timeout(this.lockTimeoutMs);
    let granted = false;
    try {
      return await locks.request(name, { mode, signal }, () => {
        granted = true;
        return fn();
      });
    } catch (err) {
      if (!granted && signal.aborted) throw lockTimeoutError(what, this.lockTimeoutMs);
      throw err;
    }
  }

  /**
   * The database's key lock: shared by readers that unseal, exclusive for whatever changes a
   * key ring with the records it seals, so no reader meets a record whose key is not yet (or no
   * longer) in its ring. Never held while waiting for a partition's writer lock.
   */
  private withKeys<T>(mode: LockMode, fn: () => Promise<T>): Promise<T> {
    return this.locked(`prism-memory-keys:${this.name}`, mode, `locking the keys of ${this.name}`, fn);
  }

  /** Finishes the key rings a page that died mid-delete left, then seals values written before v3. Hold the key lock. */
  private async finishOpening(): Promise<void> {
    const tx = this.db.transaction('ringCleanups', 'readonly');
    const [rings, cleanups] = await Promise.all([tx.store.getAllKeys(), tx.store.getAll(), tx.done]);
    for (const [i, ring] of rings.entries()) {
      if (cleanups[i] === 'remove') await this.keys.remove(ring);
      else await this.pruneRing(ring);
      await this.db.delete('ringCleanups', ring);
    }
    if ((await this.db.get('counters', 'legacy')) !== undefined) await this.sealLegacy();
  }

  /** Drops the keys of ring `name` that no stored value names. Hold the key lock. */
  private async pruneRing(name: string): Promise<void> {
    const ring = await this.keys.read(name);
    const tx = this.db.transaction(SEALED_STORES, 'readonly');
    const used = await Promise.all(
      ring.ids.map(async (id) => (await Promise.all(SEALED_STORES.map((store) => tx.objectStore(store).index('keyId').count(id)))).some((n) => n > 0)),
    );
    await tx.done;
    if (ring.retain(new Set(ring.ids.filter((_, i) => used[i])))) await this.keys.write(ring);
  }

  /** Ring `name` as last read, or read again when it lacks a key some value names (a newer key). */
  private async ringFor(name: string, values: ReadonlyArray<{ keyId: string }>): Promise<KeyRing> {
    const cached = this.readRings.get(name);
    if (cached && values.every((value) => cached.has(value.keyId))) return cached;
    const ring = await this.keys.read(name);
    this.readRings.set(name, ring);
    return ring;
  }

  /** The live partitions by name; read again (unsealing every meta) only when another writer created or cleared one. Hold the key lock. */
  private async liveTokens(): Promise<Map<string, Token>> {
    const db = this.usable('reading the partitions');
    const generation = (await db.get('counters', 'generation')) ?? 0;
    if (this.directory?.generation === generation) return this.directory.tokens;
    const tx = db.transaction('meta', 'readonly');
    const [tokens, metas] = await Promise.all([tx.store.getAllKeys(), tx.store.getAll(), tx.done]);
    // A meta whose key ring is lost or damaged names no partition anyone can reach by name;
    // `clear()` still removes its records.
    const names = await Promise.all(
      tokens.map((token, i) =>
        this.openMeta(token, metas[i] as Sealed).then(
          ({ partition }) => partition,
          (err: unknown) => {
            if (err instanceof PrismError && err.code === 'CORRUPT_CHECKPOINT') return null;
            throw err;
          },
        ),
      ),
    );
    const live = new Map(names.flatMap((name, i) => (name === null ? [] : [[name, tokens[i] as Token] as const])));
    for (const [name, token] of live) this.lastTokens.set(name, token);
    this.directory = { generation, tokens: live };
    return live;
  }

  private async openMeta(token: Token, sealed: Sealed): Promise<PartitionMeta> {
    const ring = await this.ringFor(ringOf(token), [sealed]);
    return fromJson<PartitionMeta>(await this.keys.unseal(ring, sealed.keyId, sealed.sealed));
  }

  /** A token no partition has had in this database. */
  private async newToken(): Promise<Token> {
    for (;;) {
      const [high = 0, low = 0] = crypto.getRandomValues(new Uint32Array(2));
      const token = (high % 2 ** 21) * 2 ** 32 + low;
      if (token > 0 && (await this.db.count('revisions', token)) === 0) return token;
    }
  }

  async partitions(): Promise<string[]> {
    try {
      return await this.withKeys('shared', async () => [...(await this.liveTokens()).keys()]);
    } catch (err) {
      throw storeError(err, `listing the partitions of ${this.name}`);
    }
  }

  async load(partition: string): Promise<MemorySnapshot | null> {
    const memory = await this.read(partition, 'whole');
    if (memory === null) return null;
    const { folded: _folded, relations: _relations, ...snapshot } = memory;
    return { ...snapshot, edges: sortById(allStoredEdges(memory)) };
  }

  /**
   * The working set leaves the relation edges without a vector undecoded, as the open read them
   * (`WorkingSnapshot.relations`, which the graph tells its changes: `asOpened`): no search
   * lists them by default, and decoding and building ~77K of them was ~0.3 s of a cold open at
   * 30K messages of chat in Chromium. Where its edge groups hold relation edges alone, it leaves
   * them unread (`WorkingSnapshot.relationsRead`), and a group is split into rows only when they
   * are first read.
   */
  async loadWorkingSet(partition: string): Promise<WorkingSnapshot | null> {
    return this.read(partition, 'working');
  }

  /**
   * The partition's records, derived edges as keys: with every edge and vector (`whole`), or
   * (`working`) with the relation edges left as `relationsAsOpened` rows, handed over as soon as
   * every record is decoded, with the vectors still being read (`WorkingSnapshot.vectorsLater`):
   * they are read last, ~0.25 s of a cold open at 30K messages of chat that the page's thread
   * spent waiting, and the open checks and builds the graph meanwhile. The key lock is held until
   * the vectors are read, and taken again to read the relation edges it left unread.
   */
  private read(partition: string, form: 'whole' | 'working'): Promise<WorkingSnapshot | null> {
    const what = `loading ${this.name}`;
    const asStoreError = (err: unknown): never => {
      throw storeError(err, what);
    };
    let handOver!: (snapshot: WorkingSnapshot | null) => void;
    let fail!: (err: unknown) => void;
    const handedOver = new Promise<WorkingSnapshot | null>((resolve, reject) => {
      handOver = resolve;
      fail = reject;
    });
    // Before the hand-over the read's error is the caller's; after it, `vectorsLater` carries it.
    this.withKeys('shared', async () => {
      const token = (await this.liveTokens()).get(partition);
      if (token === undefined) return handOver(null);
      // Every store is read in one transaction off this thread where a worker runs, a piece at a
      // time (`KeyFolder.bulkRead`), and each part of its values is decoded here as it comes
      // while the reads behind it go on: taken only once every read had returned, the values of
      // 30K messages of chat waited ~1.3 s of reads before the first was decoded.
      const { name: database, version } = this.usable('loading');
      const ring = await this.keys.read(ringOf(token));
      this.readRings.set(ringOf(token), ring);
      const text = (plain: Uint8Array): string => decoder.decode(plain);
      // Where the edge groups hold relation edges alone (the default ingest's), a working set
      // leaves them unread until something first needs them (`relationsRead`), which no search
      // does: read at the open they were ~0.2 s of the worker's and ~0.1 s of the page's work at
      // 30K messages of chat, and read after the vectors they slowed the first search as much.
      const relationsLater = form === 'working' && !(await this.edgeGroupsHoldOthers(token));
      // The records are decoded as their parts come, while the stores behind them are read:
      // Entity pages and chunks first, which the nodes' decoding reads, then nodes, then edges.
      const chunks = new Map<string, Chunk>();
      // Their texts joined a batch at a time (`ChunkTextJoiner`), the last batch before the first
      // node is decoded: every chunk is decoded by then, and a node's decoding reads its turns.
      const texts = new ChunkTextJoiner();
      const pages = new Map<string, string[]>();
      const records = new StoredRecordsReader(chunks, pages, form === 'working');
      let opened = null as PartitionMeta | null;
      const table = new VectorTable();
      const vectorRows: Array<[string, Uint8Array]> = [];
      const addVector = (id: string, bytes: Uint8Array): void => {
        if (opened === null) return;
        if (form === 'working') table.addStored(id, bytes, opened.meta.dim);
        else vectorRows.push([id, bytes]);
      };
      // A working set's vector groups as they come, for the open to hand to their indexes by
      // their members' keys (`WorkingSnapshot.keyedVectors`); the relation edges among their members.
      const listed: ListedVectorGroup[] = [];
      const relationVectors = new Set<string>();
      // A working set's relation edges stay rows (`relations` below), in the order read: a grouped
      // row after a record of the same id. A group of relation edges alone stays bytes until they
      // are first read (`relationsAsOpened`), which no search does: splitting them into rows was
      // ~0.1 s of the page's thread at a cold open of 30K messages of chat.
      const relationParts: Array<StoredRow | (() => StoredRow[])> = [];
      // Whole once the edge groups are read, where they are read later: nothing may take them before.
      let relationsWhole = !relationsLater;
      const relations: Iterable<StoredRow> = {
        *[Symbol.iterator]() {
          if (!relationsWhole) throw new Error('the relation edges were read before the open had read them whole (await WorkingSnapshot.relationsRead)');
          for (const part of relationParts) {
            if (typeof part === 'function') yield* part();
            else yield part;
          }
        },
      };
      const addEdgeRows = (rows: readonly StoredRow[]): void => {
        if (form === 'whole') return records.addEdges(rows);
        const others: StoredRow[] = [];
        for (const row of rows) {
          if (isRelationEdgeId(row[0])) relationParts.push(row);
          else others.push(row);
        }
        records.addEdges(others);
      };
      const addEdgeGroup = (plain: Uint8Array, group: GroupRead): void => {
        const members = group.members ?? [];
        if (form === 'whole' || !members.every(isRelationEdgeId)) {
          // Read after the records were handed over, a group must hold what its index said.
          if (relationsLater) throw new PrismError('CORRUPT_CHECKPOINT', `${groupName('edgeGroups', group)} holds an edge that is no relation edge, which its member index does not list`);
          return addEdgeRows(rowsOfGroup('edgeGroups', group, plain));
        }
        // Its members and values are matched now, as an open refuses a group where they are not.
        const name = groupName('edgeGroups', group);
        walkGroupValues(name, members, plain, () => true);
        relationParts.push(() => splitGroupTexts(name, members, plain));
      };
      const reading = this.keys.bulkRead(
        ring,
        { database, version, lower: [token], upper: [token, []], gets: [['meta', token], ['revisions', token]], keysOf: ['hashes'], packed: [...PACKED_STORES] },
        {
          // Keys sort by Entity id, then page number: each Entity's pages come in order.
          entityPages: (plain, page) => {
            const list = pages.get(page.id) ?? [];
            list.push(text(plain));
            pages.set(page.id, list);
          },
          chunks: (plain) => {
            const chunk = chunkOfValue(plain, texts.join);
            chunks.set(chunk.id, chunk);
          },
          // Each record with its key's id: a record keeps out of its JSON what the key names (record-codec's keyed form).
          nodes: (plain, record) => {
            texts.flush();
            records.addNodes([[record.id, text(plain)]]);
          },
          nodeGroups: (plain, group) => {
            texts.flush();
            records.addNodes(rowsOfGroup('nodeGroups', group, plain));
          },
          edges: (plain, record) => addEdgeRows([[record.id, text(plain)]]),
          ...(relationsLater ? {} : { edgeGroups: addEdgeGroup }),
          // A working set's vector groups are kept as they come (`listed`), its single vectors go
          // to the table; the whole memory's vectors go to the table in id order, as the other
          // stores hand them over, whichever record kept them (a sort of ~160K ids was ~50 ms of a
          // cold open at 30K messages of chat). Singles, written before v5, after the groups.
          vectorGroups: (plain, group) => {
            if (form === 'whole') {
              for (const [id, bytes] of valuesOfGroup('vectorGroups', group, plain)) addVector(id, bytes);
              return;
            }
            const ids = group.members ?? [];
            listed.push({ name: groupName('vectorGroups', group), ids, data: plain });
            for (const id of ids) if (isRelationEdgeId(id)) relationVectors.add(id);
          },
          vectors: (plain, record) => addVector(record.id, plain),
        },
        (values) => this.ringFor(ringOf(token), values),
        // The meta first, whose dimension the vectors are read at.
        async ([sealed]) => {
          opened = sealed === undefined ? null : await this.openMeta(token, sealed as Sealed);
        },
      );
      const revision = reading.got.then(([revision]) => revision as number | undefined);
      const hashKeys = reading.keys('hashes');
      // Every record, in the order the stores are decoded: the vector stores come last.
      const [hashes, openRevision] = await Promise.all([hashKeys, revision, form === 'whole' ? reading.done : relationsLater ? reading.values.edges : reading.values.edgeGroups]);
      // A partition cleared since its token was read has no meta: what was read of it is dropped.
      if (opened === null) {
        handOver(null);
        return reading.done;
      }
      const { meta } = opened;
      // A partition of chunks and no nodes has its last texts joined here.
      texts.flush();
      const loaded = records.finish();
      // As a SQL store's working set: `relations` holds every relation edge.
      const left = form === 'working' ? relationsAsOpened(relations, openRevision ?? 0) : null;
      // The edge groups read in a transaction of their own. Where another writer committed since
      // the open, they may not be the open's: the partition is then behind the store, and catches up
      // (reloads) before any use but a search, each of which waits for these first (`partitionWhole`).
      // Hold the key lock.
      const readRelations = async (): Promise<void> => {
        const { name: database, version } = this.usable('loading');
        const read = this.keys.bulkRead(
          ring,
          { database, version, lower: [token], upper: [token, []], gets: [], keysOf: [], packed: [...PACKED_STORES] },
          { edgeGroups: addEdgeGroup },
          (values) => this.ringFor(ringOf(token), values),
          async () => undefined,
        );
        await read.done;
        relationsWhole = true;
      };
      let relationsReading: Promise<void> | null = null;
      const relationsRead = (): Promise<void> => (relationsReading ??= this.withKeys('shared', readRelations).catch(asStoreError));
      const vectorsRead = async (): Promise<LaterVectors> => {
        await reading.done;
        if (form === 'whole') for (const [id, bytes] of vectorRows.sort((a, b) => compareIds(a[0], b[0]))) table.addStored(id, bytes, meta.dim);
        // Single vector records (written before v5) go by id, and the groups with them.
        const keyed = table.size === 0 && listed.length > 0;
        if (!keyed) addKeyedGroups(table, listed, meta.dim);
        // The relation edges with a vector are held as any edge too (an index names their keys).
        // Few or none: a relation edge keeps a vector only where one was embedded (an LLM's causal
        // and semantic edges, `ingest.edgeVectors: 'embedded'`); the later of two rows of one id wins, as in `edges`.
        // None has one where no vector is kept by id and no group names one (split no group for it then).
        const mayHaveVector = table.size > 0 || relationVectors.size > 0;
        // Under the open's lock still: read now, without taking it again (a writer waiting for it would wait for this).
        if (mayHaveVector && relationsLater) await (relationsReading ??= readRelations().catch(asStoreError));
        const withVector = mayHaveVector ? [...relations].filter(([id]) => table.has(id) || relationVectors.has(id)) : [];
        const indexed = [...new Map(withVector)];
        return { vectors: table, edges: indexed.map(([id, json]) => decodeEdge(json, id)), ...(keyed ? { keyedVectors: listed } : {}) };
      };
      const snapshot: WorkingSnapshot = {
        meta,
        ...loaded,
        chunks: [...chunks.values()],
        vectors: new VectorTable(),
        hashes: new Set(hashes),
        ...(left ? { relations: left } : {}),
      };
      if (form === 'whole') return handOver(withLaterVectors(snapshot, await vectorsRead()));
      const vectorsLater = vectorsRead().catch(asStoreError);
      // Awaited by the open; a caller that stops before (a damaged record) leaves it unheard.
      vectorsLater.catch(() => undefined);
      handOver({ ...snapshot, vectorsLater, ...(relationsLater ? { relationsRead } : {}) });
      await vectorsLater;
    }).catch((err: unknown) => fail(storeError(err, what)));
    return handedOver;
  }

  /**
   * Whether an edge group of partition `token` holds an edge that is not a relation edge (a
   * derived edge kept as a row: one with a vector, or one its node does not derive), told by
   * the groups' `member` index. Hold the key lock, so that no commit lands before the read.
   */
  private async edgeGroupsHoldOthers(token: Token): Promise<boolean> {
    const db = this.usable('loading');
    const counts = await Promise.all(
      OTHER_ID_RANGES.map(([from, to]) => db.countFromIndex('edgeGroups', 'member', IDBKeyRange.bound(from === null ? [token] : [token, from], to === null ? [token, []] : [token, to], false, to !== null))),
    );
    return counts.some((count) => count > 0);
  }

  async revision(partition: string): Promise<number> {
    try {
      return await this.withKeys('shared', async () => {
        const token = (await this.liveTokens()).get(partition) ?? this.lastTokens.get(partition);
        return token === undefined ? 0 : ((await this.usable('reading the revision').get('revisions', token)) ?? 0);
      });
    } catch (err) {
      throw storeError(err, `reading the revision of ${this.name}`);
    }
  }

  /** The lock is a Web Lock named after the database and partition, shared by every tab of the origin. */
  withWriteLock<T>(partition: string, fn: () => Promise<T>): Promise<T> {
    return this.locked(`prism-memory:${this.name}:${partition}`, 'exclusive', `locking ${this.name} for partition ${JSON.stringify(partition)}`, fn);
  }

  async commit(partition: string, batch: WriteBatch): Promise<number> {
    try {
      return await this.withKeys('exclusive', () => this.commitLocked(partition, batch));
    } catch (err) {
      throw storeError(err, `committing to ${this.name}`);
    }
  }

  /**
   * Reads what the batch is judged against, validates it, seals its values (new keys are
   * written to the ring first), applies it in one transaction, and — when it deleted chunks —
   * drops the retired keys from the ring. Everything happens under the exclusive key lock,
   * which every writer of the database holds, so the reads still hold when the write lands.
   */
  private async commitLocked(partition: string, batch: WriteBatch): Promise<number> {
    const db = this.usable('committing');
    const live = await this.liveTokens();
    const existing = live.get(partition);
    const token = existing ?? (await this.newToken());
    const ring = await this.keys.read(ringOf(token));
    const before = new Set(ring.ids);

    const state = db.transaction(['meta', 'revisions', 'counters'], 'readonly');
    const [sealedMeta, storedRevision = 0, retiredRevision = 0, generation = 0] = await Promise.all([
      existing === undefined ? undefined : state.objectStore('meta').get(existing),
      existing === undefined ? undefined : state.objectStore('revisions').get(existing),
      state.objectStore('counters').get('retiredRevision'),
      state.objectStore('counters').get('generation'),
      state.done,
    ]);
    const current = sealedMeta === undefined ? null : (await this.openMeta(token, sealedMeta)).meta;
    const storedVectorIds = changesDimension(current, batch)
      ? [
          ...(await db.getAllKeys('vectors', partitionRange(token))).map(([, id]) => id),
          ...(await db.getAll('vectorGroups', partitionRange(token))).flatMap(memberIds),
        ]
      : [];
    const meta = validateBatch(batch, current, storedVectorIds);

    // Deleting chunks retires their keys and the shared key, and dropping derived state its key:
    // every copy of what those sealed, wherever LevelDB still keeps it, turns to noise once they leave the ring.
    const deletedChunks = batch.deleteChunks ?? [];
    const retired = new Set(deletedChunks.length === 0 ? [] : [...deletedChunks, null].flatMap((owner) => ring.keyOf(owner) ?? []));
    const dropped = existing !== undefined && dropsDerived(batch);
    const derivedKey = dropped ? ring.keyOf(DERIVED_OWNER) : undefined;
    if (derivedKey !== undefined) retired.add(derivedKey);
    const keyFor = keyAssigner(ring, retired);
    const { plan, nodesRead } = await this.planRecords(token, ring, batch);
    const { writes: resealed, vectorKeys } = await this.resealSurvivors(token, ring, batch, plan, retired, keyFor);
    const records = await this.recordWrites(token, ring, batch, plan, { keyFor, retired }, vectorKeys, nodesRead);
    const writes: Write[] = [...deletionsOf(token, batch), ...records, ...resealed];
    if (dropped) writes.push((tx) => tx.objectStore('derived').delete(partitionRange(token)));
    if (batch.meta !== undefined || current === null || retired.size > 0) writes.push(await this.sealMeta(token, ring, keyFor(null), partition, meta));
    const revision = (existing === undefined ? retiredRevision : storedRevision) + 1;
    writes.push((tx) => tx.objectStore('revisions').put(revision, token));
    if (existing === undefined) writes.push((tx) => tx.objectStore('counters').put(generation + 1, 'generation'));
    if (retired.size > 0) writes.push((tx) => tx.objectStore('ringCleanups').put('prune', ring.name));

    if (ring.ids.some((id) => !before.has(id))) await this.keys.write(ring);
    try {
      await applyWrites(db, writes);
    } catch (err) {
      // The batch is not there, so neither are the keys made for it.
      ring.retain(before);
      await (before.size === 0 ? this.keys.remove(ring.name) : this.keys.write(ring)).catch(() => undefined);
      throw err;
    }
    if (retired.size > 0) {
      ring.retain(new Set(ring.ids.filter((id) => !retired.has(id))));
      await this.keys.write(ring);
      await db.delete('ringCleanups', ring.name);
    }
    if (existing === undefined) {
      live.set(partition, token);
      this.lastTokens.set(partition, token);
      this.directory = { generation: generation + 1, tokens: live };
    }
    return revision;
  }

  /**
   * The node, edge and Entity page records `batch` writes, in their stored forms (see record-plan);
   * and the node groups read for it, which the node group writes start from. Hold the key lock.
   */
  private async planRecords(token: Token, ring: KeyRing, batch: WriteBatch): Promise<{ plan: RecordPlan; nodesRead: KnownGroups }> {
    const reads = recordReads(batch);
    const tx = this.db.transaction(['nodes', 'chunks'], 'readonly');
    const [nodes, chunks, grouped] = await Promise.all([
      Promise.all(reads.nodeIds.map((id) => tx.objectStore('nodes').get([token, id]))),
      Promise.all(reads.chunkIds.map((id) => tx.objectStore('chunks').get([token, id]))),
      this.readGroups('nodeGroups', token, ring, reads.nodeIds, []),
      tx.done,
    ]);
    const openBytes = (store: StoreName, value: Sealed): Promise<Uint8Array> => this.keys.unseal(ring, value.keyId, value.sealed, PACKED_STORES.has(store));
    const openText = async (store: StoreName, value: Sealed): Promise<string> => decoder.decode(await openBytes(store, value));
    const storedNodes = new Map<string, string>();
    for (const id of reads.nodeIds) {
      for (const values of grouped.groups.values()) {
        const bytes = values.get(id);
        if (bytes !== undefined) storedNodes.set(id, decoder.decode(bytes));
      }
    }
    const storedChunks = new Map<string, Chunk>();
    await Promise.all([
      ...reads.nodeIds.map(async (id, i) => {
        const value = nodes[i];
        if (value !== undefined) storedNodes.set(id, await openText('nodes', value));
      }),
      ...reads.chunkIds.map(async (id, i) => {
        const value = chunks[i];
        if (value !== undefined) storedChunks.set(id, chunkOfValue(await openBytes('chunks', value)));
      }),
    ]);
    return { plan: planRecords(batch, storedNodes, storedChunks, this.writtenLists.of(token)), nodesRead: { read: grouped, ids: new Set(reads.nodeIds) } };
  }

  /**
   * What the batch writes of its records, sealed: its puts (`sealPuts`) and the node and vector
   * groups it changes. `nodesRead`: the node groups planning read, if any.
   */
  private async recordWrites(
    token: Token,
    ring: KeyRing,
    batch: WriteBatch,
    plan: RecordPlan,
    keys: { keyFor: (owner: string | null) => string; retired: ReadonlySet<string> },
    vectorKeys: Map<string, string>,
    nodesRead?: KnownGroups,
  ): Promise<Write[]> {
    const putNodes = new Map((batch.putNodes ?? []).map((node) => [node.id, node]));
    const { entities, grouped } = nodeWritesOf(plan, putNodes);
    const puts = await this.sealPuts(token, ring, batch, plan, { putNodes, entities }, keys.keyFor, vectorKeys);
    const groups = await Promise.all([
      this.nodeGroupWrites(token, ring, batch, plan, grouped, keys, nodesRead),
      this.edgeGroupWrites(token, ring, batch, plan, keys),
      this.vectorGroupWrites(token, ring, batch, vectorKeys, keys.keyFor, keys.retired),
    ]);
    return [...puts, ...groups.flat()];
  }

  /**
   * Records the batch leaves in place although their key retires (those of the shared key,
   * and any a deleted chunk's key sealed), sealed again: a node under its owner's key, anything
   * else under the shared key; and the key of every stored node or edge a put vector belongs to.
   */
  private async resealSurvivors(
    token: Token,
    ring: KeyRing,
    batch: WriteBatch,
    plan: RecordPlan,
    retired: ReadonlySet<string>,
    keyFor: (owner: string | null) => string,
  ): Promise<{ writes: Write[]; vectorKeys: Map<string, string> }> {
    const touched = {
      nodes: new Set([...(batch.deleteNodes ?? []), ...plan.nodes.keys()]),
      edges: new Set([...(batch.deleteEdges ?? []), ...plan.edges.map((e) => e.id), ...plan.folded]),
      // An Entity's pages go with it, or stay under its key: that key changes only when its first
      // chunk does, and then every page is written again (the stored list is no longer a prefix).
      entityPages: new Set([...(batch.deleteNodes ?? []), ...(batch.putNodes ?? []).map((n) => n.id)]),
      chunks: new Set([...(batch.deleteChunks ?? []), ...(batch.putChunks ?? []).map((c) => c.id)]),
      vectors: new Set([...(batch.deleteVectors ?? []), ...(batch.putVectors ?? []).map(([id]) => id)]),
    };
    const strayVectors = (batch.putVectors ?? []).map(([id]) => id).filter((id) => !touched.nodes.has(id) && !touched.edges.has(id));
    const stores = ['nodes', 'edges', 'entityPages', 'chunks', 'vectors'] as const;
    const tx = this.db.transaction([...stores, 'nodeGroups', 'edgeGroups'], 'readonly');
    // A stray vector's key is its node's or edge's: a record's, or its group's (named by its key).
    const ownerKey = async (id: string): Promise<string | undefined> =>
      ((await tx.objectStore('nodes').get([token, id])) ?? (await tx.objectStore('edges').get([token, id])))?.keyId ??
      (await tx.objectStore('nodeGroups').index('member').getKey([token, id]))?.[1] ??
      (await tx.objectStore('edgeGroups').index('member').getKey([token, id]))?.[1];
    const [owners, survivors] = await Promise.all([
      Promise.all(strayVectors.map(ownerKey)),
      Promise.all(
        [...retired].flatMap((keyId) =>
          stores.map(async (store) => {
            const index = tx.objectStore(store).index('keyId');
            const [keys, values] = await Promise.all([index.getAllKeys(keyId), index.getAll(keyId)]);
            return keys.flatMap((key, i) => (touched[store].has(key[1]) ? [] : [{ store, key, value: values[i] as Sealed }]));
          }),
        ),
      ),
      tx.done,
    ]);
    const vectorKeys = new Map<string, string>();
    strayVectors.forEach((id, i) => {
      const keyId = owners[i];
      vectorKeys.set(id, keyId === undefined || retired.has(keyId) ? keyFor(null) : keyId);
    });
    const writes = await Promise.all(
      survivors.flat().map(async ({ store, key, value }): Promise<Write> => {
        // Sealed again as it was, packed or not.
        const plain = await this.keys.unseal(ring, value.keyId, value.sealed);
        // An Entity an earlier version sealed under the shared key moves to its own chunk's.
        const keyId = keyFor(store === 'nodes' ? storedOwner(decoder.decode(this.keys.unpack(ring, value.keyId, plain))) : null);
        const resealed = { ...value, keyId, sealed: await this.keys.seal(ring, keyId, plain) };
        return (tx) => (tx.objectStore(store) as unknown as UntypedStore).put(resealed, key);
      }),
    );
    return { writes, vectorKeys };
  }

  /**
   * The batch's puts as `plan` writes them, sealed: a chunk's records under its key, an Entity
   * under its first chunk's; and, in `vectorKeys`, the key of each put node's and edge's vector
   * (its own; `nodeGroupWrites` writes the nodes but Entities, `edgeGroupWrites` the edges,
   * `vectorGroupWrites` the vectors).
   * `nodes`: the batch's put nodes by id, and the Entities the plan writes (`nodeWritesOf`).
   */
  private async sealPuts(
    token: Token,
    ring: KeyRing,
    batch: WriteBatch,
    plan: RecordPlan,
    nodes: { putNodes: ReadonlyMap<string, GraphNode>; entities: readonly NodeWrite[] },
    keyFor: (owner: string | null) => string,
    vectorKeys: Map<string, string>,
  ): Promise<Write[]> {
    const key = (id: string): RecordKey => [token, id];
    const seal = (keyId: string, plain: Uint8Array<ArrayBuffer>): Promise<ArrayBuffer> => this.keys.seal(ring, keyId, plain);
    for (const node of batch.putNodes ?? []) vectorKeys.set(node.id, keyFor(ownerOfNode(node)));
    for (const edge of batch.putEdges ?? []) vectorKeys.set(edge.id, keyFor(edge.chunkId));
    const { putNodes, entities } = nodes;
    const writes = await Promise.all([
      ...entities.map(async ({ id, json, node }): Promise<Write> => {
        const keyId = keyFor(ownerOfNode(node));
        const value: Sealed = { keyId, sealed: await seal(keyId, sealable('nodes', encoder.encode(json))) };
        return (tx) => tx.objectStore('nodes').put(value, key(id));
      }),
      // A folded edge leaves its group (`edgeGroupWrites`), or its record from before v10.
      ...plan.folded.map(async (id): Promise<Write> => (tx) => tx.objectStore('edges').delete(key(id))),
      ...plan.pages.flatMap(({ id, put, dropFrom }) => {
        const node = putNodes.get(id);
        const keyId = keyFor(node ? ownerOfNode(node) : null);
        const dropped: Array<Promise<Write>> = dropFrom === null ? [] : [Promise.resolve((tx) => tx.objectStore('entityPages').delete(IDBKeyRange.bound([token, id, dropFrom], [token, id, Infinity])))];
        const written = put.map(async ([page, json]): Promise<Write> => {
          const value: Sealed = { keyId, sealed: await seal(keyId, sealable('entityPages', encoder.encode(json))) };
          return (tx) => tx.objectStore('entityPages').put(value, [token, id, page]);
        });
        return [...dropped, ...written];
      }),
      ...(batch.putChunks ?? []).map(async (chunk): Promise<Write> => {
        const keyId = keyFor(chunk.id);
        const value: Sealed = { keyId, sealed: await seal(keyId, sealable('chunks', chunkValue(chunk))) };
        return (tx) => tx.objectStore('chunks').put(value, key(chunk.id));
      }),
    ]);
    for (const hash of batch.putHashes ?? []) writes.push((tx) => tx.objectStore('hashes').put(true, key(hash)));
    return writes;
  }

  /** The vector groups the batch changes (`groupWrites`): a put vector joins its node's or edge's key's group (`vectorKeys`), else the shared key's. */
  private vectorGroupWrites(
    token: Token,
    ring: KeyRing,
    batch: WriteBatch,
    vectorKeys: ReadonlyMap<string, string>,
    keyFor: (owner: string | null) => string,
    retired: ReadonlySet<string>,
  ): Promise<Write[]> {
    const puts = batch.putVectors ?? [];
    return this.groupWrites('vectorGroups', token, ring, {
      changed: [...(batch.deleteVectors ?? []), ...puts.map(([id]) => id)],
      puts: puts.map(([id, vector]) => [id, encodeVector(vector, this.vectorPrecision)] as const),
      targets: new Map(puts.map(([id]) => [id, vectorKeys.get(id) ?? keyFor(null)])),
    }, { keyFor, retired });
  }

  /**
   * The edge groups the batch changes (`groupWrites`): an edge the plan writes joins its chunk's
   * key's group as its stored JSON (keyed form); one deleted, or folded into its node, leaves its group.
   */
  private edgeGroupWrites(token: Token, ring: KeyRing, batch: WriteBatch, plan: RecordPlan, keys: { keyFor: (owner: string | null) => string; retired: ReadonlySet<string> }): Promise<Write[]> {
    const { keyFor, retired } = keys;
    return this.groupWrites('edgeGroups', token, ring, {
      changed: [...(batch.deleteEdges ?? []), ...plan.folded, ...plan.edges.map((edge) => edge.id)],
      puts: plan.edges.map((edge) => [edge.id, encoder.encode(encodeEdge(edge, true))] as const),
      targets: new Map(plan.edges.map((edge) => [edge.id, keyFor(edge.chunkId)])),
    }, { keyFor, retired });
  }

  /**
   * The node groups the batch changes (`groupWrites`): a node the plan writes (but an Entity,
   * which stays a record) joins its owner's key's group as its stored JSON; one deleted, or put
   * as an Entity, leaves its group. What a retiring key's group keeps moves to its own owner's key.
   * `grouped`: the nodes the plan writes but Entities (`nodeWritesOf`).
   */
  private nodeGroupWrites(
    token: Token,
    ring: KeyRing,
    batch: WriteBatch,
    plan: RecordPlan,
    grouped: readonly NodeWrite[],
    keys: { keyFor: (owner: string | null) => string; retired: ReadonlySet<string> },
    nodesRead?: KnownGroups,
  ): Promise<Write[]> {
    const { keyFor, retired } = keys;
    return this.groupWrites(
      'nodeGroups',
      token,
      ring,
      {
        changed: [...(batch.deleteNodes ?? []), ...plan.nodes.keys()],
        puts: grouped.map(({ id, json }) => [id, encoder.encode(json)] as const),
        targets: new Map(grouped.map(({ id, node }) => [id, keyFor(ownerOfNode(node))])),
      },
      { keyFor, retired, survivorKey: (_id, bytes) => keyFor(storedOwner(decoder.decode(bytes))) },
      nodesRead,
    );
  }

  /**
   * The groups of `store` that may hold one of `ids`, and those of `keyIds`, unsealed by key id;
   * and which of `ids` are records of their own, from before the store kept groups. The groups
   * are found by one range of the `member` index per id stem (a chunk's ids share a few; the
   * range from `stem` up to `stem;` holds every id `vectorGroupOf` gives that stem), not by a lookup per
   * id, which LevelDB pays for in full when the id is new (most are); the single records by one
   * range of keys per stem. Hold the key lock.
   */
  private async readGroups(store: GroupStore, token: Token, ring: KeyRing, ids: readonly string[], keyIds: Iterable<string>): Promise<GroupsRead> {
    const { singles } = GROUP_STORES[store];
    const read = this.db.transaction([store, singles], 'readonly');
    const groupStore = read.objectStore(store);
    const stemRange = (stem: string) => IDBKeyRange.bound([token, stem], [token, `${stem};`], false, true);
    const stems = [...new Set(ids.map((id) => vectorGroupOf(id).stem))];
    const [[held, found], singleKeys] = await Promise.all([
      (async () => {
        const holders = await Promise.all(stems.map((stem) => groupStore.index('member').getAllKeys(stemRange(stem))));
        const held = [...new Set([...holders.flat().map(([, keyId]) => keyId), ...keyIds])];
        return [held, await Promise.all(held.map((keyId) => groupStore.get([token, keyId])))] as const;
      })(),
      Promise.all(stems.map((stem) => read.objectStore(singles).getAllKeys(stemRange(stem)))),
      read.done,
    ]);
    const groups = new Map<string, Map<string, Uint8Array>>();
    await Promise.all(
      held.map(async (keyId, i) => {
        const group = found[i];
        if (group) groups.set(keyId, valuesOfGroup(store, { keyId, members: memberIds(group) }, await this.keys.unseal(ring, keyId, group.sealed, PACKED_STORES.has(store))));
      }),
    );
    const wanted = new Set(ids);
    return { groups, singles: new Set(singleKeys.flat().map(([, id]) => id).filter((id) => wanted.has(id))) };
  }

  /**
   * The groups of `store` a write changes, sealed: the records sealed under one key are one
   * record, keyed by the key's id, so a chunk's are read, written and dropped together and its
   * key still shreds them. Each `changed` id leaves the group that holds it, each put joins the
   * group of its key in `targets`, and what a retiring key's group keeps moves to the key
   * `survivorKey` names for it (the shared key's, by default), as the records of any retiring key
   * do. A put also drops its id's record from before the store kept groups. `known`: groups this
   * write has read already (`readGroups`), with the ids it read them for.
   */
  private async groupWrites(
    store: GroupStore,
    token: Token,
    ring: KeyRing,
    change: { changed: readonly string[]; puts: ReadonlyArray<readonly [string, Uint8Array]>; targets: ReadonlyMap<string, string> },
    keys: { keyFor: (owner: string | null) => string; retired: ReadonlySet<string>; survivorKey?: (id: string, bytes: Uint8Array) => string },
    known?: KnownGroups,
  ): Promise<Write[]> {
    const { puts, targets } = change;
    const { keyFor, retired } = keys;
    const changed = [...new Set(change.changed)];
    if (changed.length === 0 && retired.size === 0) return [];
    const survivorKey = keys.survivorKey ?? (() => keyFor(null));
    const stored = new Map(known?.read.groups);
    const singles = new Set(known?.read.singles);
    const readMore = async (ids: readonly string[], keyIds: Iterable<string>): Promise<void> => {
      const unread = [...new Set(keyIds)].filter((keyId) => !stored.has(keyId));
      if (ids.length === 0 && unread.length === 0) return;
      const read = await this.readGroups(store, token, ring, ids, unread);
      for (const [keyId, values] of read.groups) stored.set(keyId, values);
      for (const id of read.singles) singles.add(id);
    };
    await readMore(
      changed.filter((id) => !known?.ids.has(id)),
      [...targets.values(), ...retired],
    );
    // What a retiring key's group keeps (but for the records that change) moves; the groups it
    // moves to are read first, so what they hold stays.
    const leaving = new Set(changed);
    const moves = [...retired].flatMap((keyId) => [...(stored.get(keyId) ?? [])].filter(([id]) => !leaving.has(id)).map(([id, bytes]) => ({ id, bytes, to: survivorKey(id, bytes) })));
    await readMore([], new Set(moves.map((move) => move.to)));
    const edits = new GroupEdits<string>((keyId) => stored.get(keyId));
    // Each changed record leaves the group holding it.
    for (const [keyId, values] of stored) for (const id of values.keys()) if (leaving.has(id)) edits.group(keyId).delete(id);
    for (const keyId of retired) edits.group(keyId).clear();
    for (const { id, bytes, to } of moves) edits.group(to).set(id, bytes);
    for (const [id, bytes] of puts) edits.group(targets.get(id) as string).set(id, bytes);
    const { singles: singleStore } = GROUP_STORES[store];
    const stale = puts.filter(([id]) => singles.has(id)).map(([id]): Write => (tx) => tx.objectStore(singleStore).delete([token, id]));
    const sealedGroups = await Promise.all(
      [...edits.touched()].map(async ([keyId, values]): Promise<Write> => {
        if (values.size === 0) return (tx) => tx.objectStore(store).delete([token, keyId]);
        const value: SealedGroup = { keyId, members: [...values.keys()].map((id): RecordKey => [token, id]), sealed: await this.keys.seal(ring, keyId, sealable(store, joinGroupValues(values.values()))) };
        return (tx) => tx.objectStore(store).put(value, [token, keyId]);
      }),
    );
    return [...stale, ...sealedGroups];
  }

  private async sealMeta(token: Token, ring: KeyRing, keyId: string, partition: string, meta: MemoryMeta): Promise<Write> {
    const opened: PartitionMeta = { partition, meta };
    const value: Sealed = { keyId, sealed: await this.keys.seal(ring, keyId, jsonBytes(opened)) };
    return (tx) => tx.objectStore('meta').put(value, token);
  }

  async loadDerived(partition: string, name: string): Promise<DerivedState | null> {
    try {
      return await this.withKeys('shared', async () => {
        const token = (await this.liveTokens()).get(partition);
        const value = token === undefined ? undefined : await this.usable('reading derived state').get('derived', [token, name]);
        if (token === undefined || value === undefined) return null;
        const ring = await this.ringFor(ringOf(token), [value]);
        try {
          return { revision: value.revision, bytes: await this.keys.unseal(ring, value.keyId, value.sealed) };
        } catch (err) {
          // Damaged or sealed under a key gone: derived state is rebuilt from the records, never needed.
          if (err instanceof PrismError && err.code === 'CORRUPT_CHECKPOINT') return null;
          throw err;
        }
      });
    } catch (err) {
      throw storeError(err, `reading derived state of ${this.name}`);
    }
  }

  async saveDerived(partition: string, name: string, revision: number, bytes: Uint8Array): Promise<boolean> {
    try {
      // Exclusive: no commit (each holds this lock) lands between the revision check and the put.
      return await this.withKeys('exclusive', async () => {
        const db = this.usable('saving derived state');
        const token = (await this.liveTokens()).get(partition);
        if (token === undefined || (await db.get('revisions', token)) !== revision) return false;
        const ring = await this.keys.read(ringOf(token));
        let keyId = ring.keyOf(DERIVED_OWNER);
        const fresh = keyId === undefined;
        keyId ??= ring.add(DERIVED_OWNER);
        const value: SealedDerived = { keyId, revision, sealed: await this.keys.seal(ring, keyId, new Uint8Array(bytes)) };
        if (fresh) await this.keys.write(ring);
        try {
          await applyWrites(db, [(tx) => tx.objectStore('derived').put(value, [token, name])]);
        } catch (err) {
          if (fresh) await this.dropKeys(ring, [keyId]).catch(() => undefined);
          throw err;
        }
        return true;
      });
    } catch (err) {
      throw storeError(err, `saving derived state of ${this.name}`);
    }
  }

  async clear(partition?: string): Promise<void> {
    try {
      await this.withKeys('exclusive', () => (partition === undefined ? this.clearAll() : this.clearPartition(partition)));
    } catch (err) {
      throw storeError(err, `clearing ${this.name}`);
    }
  }

  private async clearPartition(partition: string): Promise<void> {
    const live = await this.liveTokens();
    const token = live.get(partition);
    if (token === undefined) return;
    const rings = [ringOf(token)];
    const generation = await this.retire([token], rings, (tx) => [
      ...RECORD_STORES.map((name) => tx.objectStore(name).delete(partitionRange(token))),
      tx.objectStore('meta').delete(token),
    ]);
    live.delete(partition);
    this.directory = { generation, tokens: live };
    await this.removeRings(rings);
  }

  private async clearAll(): Promise<void> {
    const tokens = await this.usable('clearing').getAllKeys('meta');
    const rings = [...tokens.map(ringOf), CACHE_RING];
    const generation = await this.retire(tokens, rings, (tx) => [...RECORD_STORES, 'meta', 'cache'].map((name) => tx.objectStore(name as StoreName).clear()));
    this.directory = { generation, tokens: new Map() };
    await this.removeRings(rings);
  }

  /**
   * One transaction: `clear`'s requests, each of `tokens` retired (its revision bumped and kept,
   * `retiredRevision` raised to it), the generation moved, and `rings` journaled for removal
   * (the journal finishes them if the page dies before `removeRings`). Returns the new generation.
   */
  private async retire(tokens: readonly Token[], rings: readonly string[], clear: (tx: WriteTransaction) => Array<Promise<unknown>>): Promise<number> {
    const tx = this.usable('clearing').transaction([...ALL_STORES], 'readwrite');
    try {
      const revisions = tx.objectStore('revisions');
      const counters = tx.objectStore('counters');
      const [generation = 0, retiredRevision = 0, ...current] = await Promise.all([
        counters.get('generation'),
        counters.get('retiredRevision'),
        ...tokens.map((token) => revisions.get(token)),
      ]);
      const finals = tokens.map((_, i) => (current[i] ?? 0) + 1);
      await Promise.all([
        tx.done,
        ...clear(tx),
        ...tokens.map((token, i) => revisions.put(finals[i] ?? 1, token)),
        counters.put(generation + 1, 'generation'),
        counters.put(Math.max(retiredRevision, ...finals), 'retiredRevision'),
        ...rings.map((ring) => tx.objectStore('ringCleanups').put('remove', ring)),
      ]);
      return generation + 1;
    } catch (err) {
      abortQuietly(tx);
      throw tx.error ?? err;
    }
  }

  /** Unlinks the rings' files (and with them their keys), then clears their journal entries. */
  private async removeRings(rings: readonly string[]): Promise<void> {
    for (const ring of rings) {
      await this.keys.remove(ring);
      this.readRings.delete(ring);
    }
    const tx = this.db.transaction('ringCleanups', 'readwrite');
    await Promise.all([...rings.map((ring) => tx.store.delete(ring)), tx.done]);
  }

  async getCached(key: string): Promise<string | undefined> {
    try {
      const entry = await this.usable('reading the cache').get('cache', key);
      if (!entry) return undefined;
      const ring = await this.ringFor(CACHE_RING, [entry]);
      // Deleted by another tab since it was read: a miss, as it would be a moment later.
      if (!ring.has(entry.keyId)) return undefined;
      return decoder.decode(await this.keys.unseal(ring, entry.keyId, entry.sealed, PACKED_STORES.has('cache')));
    } catch (err) {
      throw storeError(err, `reading the cache of ${this.name}`);
    }
  }

  /** Each entry is sealed under a key of its own, dropped from the cache ring when the entry goes. */
  async putCached(key: string, value: string, tags: readonly string[] = []): Promise<void> {
    try {
      await this.withKeys('exclusive', async () => {
        const ring = await this.keys.read(CACHE_RING);
        const keyId = ring.add(null);
        const entry: SealedCacheEntry = { keyId, tags: [...tags], sealed: await this.keys.seal(ring, keyId, sealable('cache', encoder.encode(value))) };
        await this.keys.write(ring);
        const tx = this.usable('writing the cache').transaction('cache', 'readwrite');
        let replaced: SealedCacheEntry | undefined;
        try {
          [replaced] = await Promise.all([tx.store.get(key), tx.store.put(entry, key), tx.done]);
        } catch (err) {
          abortQuietly(tx);
          await this.dropKeys(ring, [keyId]).catch(() => undefined);
          throw tx.error ?? err;
        }
        if (replaced) await this.dropKeys(ring, [replaced.keyId]);
      });
    } catch (err) {
      throw storeError(err, `writing the cache of ${this.name}`);
    }
  }

  async deleteCached(tags: readonly string[]): Promise<void> {
    try {
      await this.withKeys('exclusive', async () => {
        const tx = this.usable('deleting from the cache').transaction(['cache', 'ringCleanups'], 'readwrite');
        let dropped: string[];
        try {
          const cache = tx.objectStore('cache');
          const keys = [...new Set((await Promise.all(tags.map((tag) => cache.index('tags').getAllKeys(tag)))).flat())];
          const entries = await Promise.all(keys.map((key) => cache.get(key)));
          dropped = entries.flatMap((entry) => (entry ? [entry.keyId] : []));
          await Promise.all([
            tx.done,
            ...keys.map((key) => cache.delete(key)),
            ...(dropped.length > 0 ? [tx.objectStore('ringCleanups').put('prune', CACHE_RING)] : []),
          ]);
        } catch (err) {
          abortQuietly(tx);
          throw tx.error ?? err;
        }
        if (dropped.length === 0) return;
        await this.dropKeys(await this.keys.read(CACHE_RING), dropped);
        await this.db.delete('ringCleanups', CACHE_RING);
      });
    } catch (err) {
      throw storeError(err, `deleting from the cache of ${this.name}`);
    }
  }

  private async dropKeys(ring: KeyRing, ids: readonly string[]): Promise<void> {
    const dropped = new Set(ids);
    if (ring.retain(new Set(ring.ids.filter((id) => !dropped.has(id))))) await this.keys.write(ring);
  }

  /**
   * Seals what a v2 database holds (the v3 migration could not: an upgrade transaction cannot
   * wait for WebCrypto): each partition moves from its name to a new token, every value is
   * sealed, and the revisions that named cleared partitions go. All in one transaction; LevelDB
   * keeps the v2 bytes until it compacts. Hold the key lock.
   */
  private async sealLegacy(): Promise<void> {
    const raw = this.db as unknown as IDBPDatabase;
    const read = raw.transaction([...RECORD_STORES, 'meta', 'revisions', 'cache'], 'readonly');
    const [metaNames, revisionNames, cacheKeys, cacheValues] = await Promise.all([
      read.objectStore('meta').getAllKeys(),
      read.objectStore('revisions').getAllKeys(),
      read.objectStore('cache').getAllKeys(),
      read.objectStore('cache').getAll(),
    ]);
    const legacy = await Promise.all(
      metaNames.filter((name): name is string => typeof name === 'string').map(async (name) => ({ name, ...(await readLegacyPartition(read, name)) })),
    );
    await read.done;

    const writes: Write[] = [];
    const rings: KeyRing[] = [];
    for (const { name, snapshot, revision } of legacy) {
      const token = await this.newToken();
      const ring = new KeyRing(ringOf(token));
      const keyFor = keyAssigner(ring, new Set());
      const batch = snapshotAsBatch(snapshot);
      const plan = planRecords(batch, new Map(), new Map());
      const vectorKeys = new Map<string, string>();
      writes.push(...(await this.recordWrites(token, ring, batch, plan, { keyFor, retired: new Set() }, vectorKeys)), await this.sealMeta(token, ring, keyFor(null), name, snapshot.meta));
      writes.push((tx) => tx.objectStore('revisions').put(revision, token));
      rings.push(ring);
    }
    const cacheRing = await this.keys.read(CACHE_RING);
    const cacheWrites = await Promise.all(
      cacheKeys.map(async (key, i): Promise<Write> => {
        const { value, tags } = cacheValues[i] as { value: string; tags: string[] };
        const keyId = cacheRing.add(null);
        const entry: SealedCacheEntry = { keyId, tags, sealed: await this.keys.seal(cacheRing, keyId, sealable('cache', encoder.encode(value))) };
        return (tx) => tx.objectStore('cache').put(entry, key as string);
      }),
    );
    rings.push(cacheRing);
    const generation = (await this.db.get('counters', 'generation')) ?? 0;
    for (const ring of rings) await this.keys.write(ring);
    try {
      await applyWrites(this.db, [
        // The v2 records, keyed by partition name, go before the sealed ones come.
        (tx) => {
          const untyped = tx as unknown as UntypedTransaction<'readwrite'>;
          return Promise.all([
            ...legacy.flatMap(({ name }) => [...RECORD_STORES.map((store) => untyped.objectStore(store).delete(partitionRange(name))), untyped.objectStore('meta').delete(name)]),
            ...revisionNames.filter((name) => typeof name === 'string').map((name) => untyped.objectStore('revisions').delete(name)),
          ]);
        },
        ...writes,
        ...cacheWrites,
        (tx) => tx.objectStore('counters').put(generation + 1, 'generation'),
        (tx) => tx.objectStore('counters').delete('legacy'),
      ]);
    } catch (err) {
      for (const ring of rings) await (ring === cacheRing ? this.pruneRing(CACHE_RING) : this.keys.remove(ring.name)).catch(() => undefined);
      throw err;
    }
  }

  async close(): Promise<void> {
    this.db.close();
    this.keys.stopWorker();
  }
}

/** The batch's deletions, which a transaction applies before its puts (so a batch can replace a record). */
function deletionsOf(token: Token, batch: WriteBatch): Write[] {
  const key = (id: string): RecordKey => [token, id];
  return [
    ...(batch.deleteNodes ?? []).map((id): Write => (tx) => tx.objectStore('nodes').delete(key(id))),
    ...(batch.deleteEdges ?? []).map((id): Write => (tx) => tx.objectStore('edges').delete(key(id))),
    ...(batch.deleteChunks ?? []).map((id): Write => (tx) => tx.objectStore('chunks').delete(key(id))),
    ...(batch.deleteVectors ?? []).map((id): Write => (tx) => tx.objectStore('vectors').delete(key(id))),
    ...(batch.deleteHashes ?? []).map((hash): Write => (tx) => tx.objectStore('hashes').delete(key(hash))),
  ];
}

/** Runs `writes`, in order, in one readwrite transaction over every store: all land, or none. */
async function applyWrites(db: IDBPDatabase<PrismDb>, writes: readonly Write[]): Promise<void> {
  const tx = db.transaction([...ALL_STORES], 'readwrite');
  try {
    // A write that throws at once (not only one whose request fails) rejects here too, so every request's failure is awaited.
    await Promise.all([tx.done, ...writes.map(async (write) => write(tx))]);
  } catch (err) {
    abortQuietly(tx);
    // A failed request aborts the transaction; its own error (e.g. QuotaExceededError)
    // names the cause better than the AbortError the other requests report.
    throw tx.error ?? err;
  }
}

/** One partition as a v2 database holds it, under its name. */
async function readLegacyPartition(tx: UntypedTransaction<'readonly'>, name: string): Promise<{ snapshot: MemorySnapshot; revision: number }> {
  const range = partitionRange(name);
  const [meta, nodes, edges, chunks, vectorKeys, vectors, hashKeys, revision] = await Promise.all([
    tx.objectStore('meta').get(name) as Promise<MemoryMeta>,
    tx.objectStore('nodes').getAll(range) as Promise<GraphNode[]>,
    tx.objectStore('edges').getAll(range) as Promise<GraphEdge[]>,
    tx.objectStore('chunks').getAll(range) as Promise<Chunk[]>,
    tx.objectStore('vectors').getAllKeys(range) as Promise<Array<[string, string]>>,
    tx.objectStore('vectors').getAll(range) as Promise<Float32Array[]>,
    tx.objectStore('hashes').getAllKeys(range) as Promise<Array<[string, string]>>,
    tx.objectStore('revisions').get(name) as Promise<number | undefined>,
  ]);
  return {
    snapshot: {
      meta,
      nodes,
      edges,
      chunks,
      vectors: new Map(vectorKeys.map(([, id], i) => [id, vectors[i] as Float32Array])),
      hashes: new Set(hashKeys.map(([, hash]) => hash)),
    },
    revision: revision ?? 1,
  };
}

/** Aborts a transaction that may already have finished or aborted on its own. */
function abortQuietly(tx: { done: Promise<void>; abort(): void }): void {
  // The caller reports the failure; `done` rejecting too must not surface as unhandled.
  tx.done.catch(() => undefined);
  try {
    tx.abort();
  } catch {
    // InvalidStateError: the transaction is already done — nothing left to undo.
  }
}
