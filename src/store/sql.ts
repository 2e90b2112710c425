import { PrismError } from '../errors.ts';
import { idRangeOf, isRelationEdgeId, OTHER_ID_RANGES, RELATION_EDGE_TYPES, RELATION_ID_RANGES } from '../graph/derived-edges.ts';
import type { Chunk, GraphEdge, MemoryMeta, MemorySnapshot } from '../graph/types.ts';
import { decodeChunkRow, decodeEdge, decodeNode, encodeChunkRow, encodeEdge } from './record-codec.ts';
import { allStoredEdges, recordReads, planRecords, readStoredRecords, WrittenLists, type RecordPlan, type StoredRow } from './record-plan.ts';
import { ownedRows } from './relation-rows.ts';
import { changesDimension, compareIds, sortById, validateBatch } from './snapshot.ts';
import { dropsDerived, type DerivedState, type GraphStore, type StemVectorGroup, type StoredRelationEdges, type WorkingSnapshot, type WriteBatch } from './types.ts';
import { VectorTable } from '../graph/vector-table.ts';
import { ChunkTextJoiner, type UnjoinedChunk } from '../graph/chunk-text.ts';
import { concatBytes } from '../util/bytes.ts';
import type { FactColumns } from '../graph/fact-columns.ts';
import { FACT_IMAGE, readFactImage } from './fact-image.ts';
import { DEFAULT_VECTOR_PRECISION, encodeVector, type VectorPrecision } from './vector-codec.ts';
import { addKeyedGroups, decodeGroupKeys, decodeVectorGroup, encodeGroupKeys, encodeVectorGroup, memberId, GroupEdits, vectorGroupMembers, vectorGroupOf, type VectorGroup } from './vector-groups.ts';

/** A value SQLite stores; blobs come back as a byte view (Node) or an ArrayBuffer (workerd). */
export type SqlValue = string | number | Uint8Array | ArrayBuffer | null;
export type SqlRow = Record<string, SqlValue>;

/**
 * The narrow synchronous contract `SqlStore` runs on; one small adapter per runtime
 * (better-sqlite3 in Node, `ctx.storage.sql` in a Durable Object). Adapters translate
 * their runtime's failures into `PrismError`s (disk full → STORE_QUOTA_EXCEEDED, a damaged
 * database → CORRUPT_CHECKPOINT) and let `PrismError`s thrown inside `transaction` through.
 */
export interface SqlDriver {
  /** Runs one statement that returns no rows. */
  run(sql: string, params?: readonly SqlValue[]): void;
  /** Runs one statement and returns its rows. */
  all(sql: string, params?: readonly SqlValue[]): SqlRow[];
  /**
   * Runs one statement and hands its rows over one at a time, each read as the caller reaches it
   * (a load decodes a row and drops it, rather than holding every record's JSON at once), as its
   * values in the order the statement names its columns (no object a row: an open reads ~750K
   * rows at 100K messages). The caller runs no other statement until it is done with them.
   */
  each(sql: string, params?: readonly SqlValue[]): Iterable<readonly SqlValue[]>;
  /**
   * Runs one statement and returns its rows at once, each as its values (as `each` hands them):
   * for a read of many rows in pages (`SqlStore.pagedRows`), where stepping row by row costs more
   * than reading them.
   */
  rows(sql: string, params?: readonly SqlValue[]): Array<readonly SqlValue[]>;
  /**
   * Runs `fn` in one transaction: committed when it returns, rolled back when it throws. A
   * `write` transaction takes the write lock up front, so a read inside it can never go stale
   * and fail the upgrade to writing when another connection commits meanwhile.
   */
  transaction<T>(mode: 'read' | 'write', fn: () => T): T;
  /**
   * Runs after a committed delete of text (chunks, a partition, everything): drops the copies
   * of deleted rows the runtime still keeps outside the live database pages (the write-ahead
   * log's older frames), where the runtime lets it. Freed cells and pages are zeroed as they are
   * freed where the connection allows `secure_delete`.
   */
  eraseDeleted(): Promise<void>;
  close(): void;
}

/** For a driver's `each`: the rows of `open`'s iterator, a failure to start or to step reported as `failed` makes it. */
export function* steppedRows(open: () => Iterator<unknown>, failed: (err: unknown) => Error): Iterable<readonly SqlValue[]> {
  let rows: Iterator<unknown>;
  try {
    rows = open();
  } catch (err) {
    throw failed(err);
  }
  try {
    for (;;) {
      let next: IteratorResult<unknown>;
      try {
        next = rows.next();
      } catch (err) {
        throw failed(err);
      }
      if (next.done) return;
      yield next.value as readonly SqlValue[];
    }
  } finally {
    // A caller that stops early (a record it cannot decode) ends the statement, which would keep the connection busy.
    rows.return?.();
  }
}

/**
 * Rows `SqlStore` reads a page at a time: measured on the nodes of 100K messages, pages of 1K–4K
 * rows read in 265–320 ms, of 16K and more in 440–840 ms (a page that big leaves the young generation).
 */
const ROWS_A_PAGE = 2048;

/** The ids of graph building's facts (`fp:…`, fact-columns' `isCanonicalFactIdOf`), from inclusive to exclusive: the rows a fact image stands in for. */
const FACT_ID_RANGE = ['fp:', 'fp;'] as const;

/** A row of `id` and `json` as a record's; CORRUPT_CHECKPOINT where either is not text. The row is the pair itself: no copy of ~750K of them at 100K messages. */
function storedRow(row: readonly SqlValue[]): StoredRow {
  if (typeof row[0] !== 'string' || typeof row[1] !== 'string') throw new PrismError('CORRUPT_CHECKPOINT', `a record's id or JSON is stored as ${typeof row[0]} and ${typeof row[1]}, not text`);
  return row as StoredRow;
}

/** The partition writer lock of one runtime (see `GraphStore.withWriteLock`). */
export interface WriteLock {
  run<T>(partition: string, fn: () => Promise<T>): Promise<T>;
}

/**
 * Schema migrations: entry i upgrades a database from version i to i + 1. Append, never edit.
 *
 * Every memory table is keyed by (partition, id). Records are JSON; the columns beside the
 * JSON are the ones queries select on (chunk ids, for deleting a chunk's records). Vectors are
 * blobs in the vector codec's layout (vector-codec.ts), kept in groups (vector-groups.ts).
 */
export const MIGRATIONS: readonly (readonly MigrationStep[])[] = [
  [
    'CREATE TABLE meta (partition TEXT PRIMARY KEY, json TEXT NOT NULL) WITHOUT ROWID',
    'CREATE TABLE revisions (partition TEXT PRIMARY KEY, revision INTEGER NOT NULL) WITHOUT ROWID',
    'CREATE TABLE nodes (partition TEXT NOT NULL, id TEXT NOT NULL, chunk_id TEXT, json TEXT NOT NULL, PRIMARY KEY (partition, id))',
    'CREATE INDEX nodes_by_chunk ON nodes (partition, chunk_id)',
    'CREATE TABLE edges (partition TEXT NOT NULL, id TEXT NOT NULL, chunk_id TEXT NOT NULL, json TEXT NOT NULL, PRIMARY KEY (partition, id))',
    'CREATE INDEX edges_by_chunk ON edges (partition, chunk_id)',
    'CREATE TABLE chunks (partition TEXT NOT NULL, id TEXT NOT NULL, json TEXT NOT NULL, PRIMARY KEY (partition, id))',
    'CREATE TABLE vectors (partition TEXT NOT NULL, id TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (partition, id))',
    'CREATE TABLE hashes (partition TEXT NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (partition, hash)) WITHOUT ROWID',
    'CREATE TABLE cache (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID',
    'CREATE TABLE cache_tags (tag TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (tag, key)) WITHOUT ROWID',
    'CREATE INDEX cache_tags_by_key ON cache_tags (key)',
  ],
  // A cleared partition leaves no row naming it. Its revision falls back to the store-wide
  // `clear_revision`, set at each clear above every revision any partition had: so a
  // partition's revision never returns to a value a handle saw before (see `bump`).
  [
    'CREATE TABLE clear_revision (revision INTEGER NOT NULL)',
    'INSERT INTO clear_revision (revision) SELECT coalesce(max(revision), 0) FROM revisions',
    'DELETE FROM revisions WHERE partition NOT IN (SELECT partition FROM meta)',
  ],
  // Records keep their chunk id in their JSON only: the `chunk_id` columns and their indexes were
  // never queried and took ~1.3 KB a message of real chat (a 64-digit id twice per record).
  [
    'CREATE TABLE nodes_v3 (partition TEXT NOT NULL, id TEXT NOT NULL, json TEXT NOT NULL, PRIMARY KEY (partition, id))',
    'INSERT INTO nodes_v3 (partition, id, json) SELECT partition, id, json FROM nodes',
    'DROP TABLE nodes',
    'ALTER TABLE nodes_v3 RENAME TO nodes',
    'CREATE TABLE edges_v3 (partition TEXT NOT NULL, id TEXT NOT NULL, json TEXT NOT NULL, PRIMARY KEY (partition, id))',
    'INSERT INTO edges_v3 (partition, id, json) SELECT partition, id, json FROM edges',
    'DROP TABLE edges',
    'ALTER TABLE edges_v3 RENAME TO edges',
  ],
  // Nodes, edges and vectors keyed by (partition, id) alone, WITHOUT ROWID: a rowid table kept
  // the key twice (the table's rows and its primary-key index), ~0.55 KB a message of real chat.
  // Chunks keep their rowid: their rows are a few KB, which a WITHOUT ROWID table stores in
  // overflow pages at a smaller local size, so they took more room, not less.
  [
    ...(['nodes', 'edges'] as const).flatMap((table) => [
      `CREATE TABLE ${table}_v4 (partition TEXT NOT NULL, id TEXT NOT NULL, json TEXT NOT NULL, PRIMARY KEY (partition, id)) WITHOUT ROWID`,
      `INSERT INTO ${table}_v4 (partition, id, json) SELECT partition, id, json FROM ${table}`,
      `DROP TABLE ${table}`,
      `ALTER TABLE ${table}_v4 RENAME TO ${table}`,
    ]),
    'CREATE TABLE vectors_v4 (partition TEXT NOT NULL, id TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (partition, id)) WITHOUT ROWID',
    'INSERT INTO vectors_v4 (partition, id, data) SELECT partition, id, data FROM vectors',
    'DROP TABLE vectors',
    'ALTER TABLE vectors_v4 RENAME TO vectors',
  ],
  // A long Entity chunk list in pages beside its record (see record-codec's ENTITY_PAGE_IDS):
  // an add rewrites a speaker's last page, not the list of every chunk.
  ['CREATE TABLE entity_pages (partition TEXT NOT NULL, id TEXT NOT NULL, page INTEGER NOT NULL, json TEXT NOT NULL, PRIMARY KEY (partition, id, page)) WITHOUT ROWID'],
  // Vectors in groups, a row a chunk's layer (see vector-groups.ts): rows of one vector each were
  // ~1.4× their values on disk. A rowid table: its rows run to tens of KB, which a keyed table
  // would split across its B-tree.
  [
    'CREATE TABLE vector_groups (partition TEXT NOT NULL, stem TEXT NOT NULL, members TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (partition, stem))',
    (driver) => {
      for (const partition of driver.all('SELECT DISTINCT partition FROM vectors').map((row) => text(row, 'partition'))) {
        const rows = driver.all('SELECT id, data FROM vectors WHERE partition = ?', [partition]);
        const groups = new VectorGroupWrites(partition, () => undefined);
        for (const row of rows) groups.put(text(row, 'id'), bytesOf(row['data']), undefined);
        groups.write(driver);
      }
    },
    'DROP TABLE vectors',
  ],
  // Derived state (see `GraphStore.loadDerived`) in pages: a Durable Object refuses a value over 2 MB.
  ['CREATE TABLE derived (partition TEXT NOT NULL, name TEXT NOT NULL, page INTEGER NOT NULL, revision INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (partition, name, page))'],
  // Rows written from here on leave to their key what it names (record-codec's keyed form): a
  // node's id, an edge's type and ends, ~0.25 KB a message of chat. Rows written before keep
  // them and read as they did; the step changes no row, it only keeps an older PRISM, which
  // cannot read the keyed form, from opening the database.
  [],
  // Vectors written from here on are i4 (vector-codec's `i4`: 196 bytes a MiniLM vector instead
  // of i8's 388). Vectors written before keep their precision and read as they did; the step
  // changes no row, it only keeps an older PRISM, which cannot read i4, from opening the database.
  [],
  // Each vector group keeps its members' index keys (vector-groups.ts, `encodeGroupKeys`), so
  // that an open hands the vectors to their indexes by key (`WorkingSnapshot.keyedVectors`).
  // The groups a file holds get theirs from the records' own; a group a member of which names no
  // record that reads (a damaged one) gets none, and is read as before.
  [
    (driver) => {
      // Once only, should a file claim an older schema than its tables have.
      const [table] = driver.all("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'vector_groups'");
      if (!String(table?.['sql']).includes('member_keys')) driver.run('ALTER TABLE vector_groups ADD COLUMN member_keys BLOB');
      for (const partition of driver.all('SELECT DISTINCT partition FROM vector_groups WHERE member_keys IS NULL').map((row) => text(row, 'partition'))) keyGroups(driver, partition);
    },
  ],
  // Chunks written from here on keep their turns' texts in a column of their own (record-codec's
  // `encodeChunkRow`). Chunks written before keep their text in their record and read as they
  // did; the step changes no row, it only keeps an older PRISM, which cannot read such a row,
  // from opening the database.
  [
    (driver) => {
      // Once only, should a file claim an older schema than its tables have.
      const [table] = driver.all("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'chunks'");
      if (!/\btext TEXT\b/.test(String(table?.['sql']))) driver.run('ALTER TABLE chunks ADD COLUMN text TEXT');
    },
  ],
];

/** Bytes of derived state a row holds (a Durable Object's limit on one value is 2 MB). */
const DERIVED_PAGE_BYTES = 1 << 20;

/** One step of a migration: a statement, or what SQL alone cannot do (it runs in the same transaction). */
export type MigrationStep = string | ((driver: SqlDriver) => void);

export const SQL_SCHEMA_VERSION = MIGRATIONS.length;

/** Tables holding one partition's memory. */
const MEMORY_TABLES = ['meta', 'nodes', 'edges', 'entity_pages', 'chunks', 'vector_groups', 'hashes', 'derived'] as const;

/**
 * The vector groups one transaction changes (see vector-groups.ts), by stem; `write` writes each
 * once.
 */
class VectorGroupWrites {
  private readonly edits: GroupEdits<string | null>;
  /** Each touched group's members' index keys, as stored and as this write leaves them (undefined: not known). */
  private readonly keys = new Map<string, Map<string | null, number | undefined>>();

  constructor(
    private readonly partition: string,
    stored: (stem: string) => { group: VectorGroup; keys: readonly number[] | null } | undefined,
  ) {
    this.edits = new GroupEdits((stem) => {
      const found = stored(stem);
      const keys = new Map<string | null, number | undefined>();
      if (found) [...found.group.keys()].forEach((member, i) => keys.set(member, found.keys?.[i]));
      this.keys.set(stem, keys);
      return found?.group;
    });
  }

  /** Puts the vector `id`, stored as `bytes`, indexed under `key` where it is known. */
  put(id: string, bytes: Uint8Array, key: number | undefined): void {
    const { stem, member } = vectorGroupOf(id);
    this.edits.group(stem).set(member, bytes);
    this.keys.get(stem)?.set(member, key);
  }

  delete(id: string): void {
    const { stem, member } = vectorGroupOf(id);
    this.edits.group(stem).delete(member);
    this.keys.get(stem)?.delete(member);
  }

  write(driver: SqlDriver): void {
    for (const [stem, group] of this.edits.touched()) {
      if (group.size === 0) {
        driver.run('DELETE FROM vector_groups WHERE partition = ? AND stem = ?', [this.partition, stem]);
        continue;
      }
      const { members, data } = encodeVectorGroup(group);
      const keys = encodeGroupKeys([...group.keys()].map((member) => this.keys.get(stem)?.get(member)));
      // Without keys, the columns every schema since the groups' has (the groups' own migration writes through here).
      if (keys === null) driver.run('INSERT OR REPLACE INTO vector_groups (partition, stem, members, data) VALUES (?, ?, ?, ?)', [this.partition, stem, members, data]);
      else driver.run('INSERT OR REPLACE INTO vector_groups (partition, stem, members, data, member_keys) VALUES (?, ?, ?, ?, ?)', [this.partition, stem, members, data, keys]);
    }
  }
}

/**
 * Bytes copied end to end into one allocation of the size they add up to (`expected`; another
 * follows should they not fit): an open holds every keyed group's values until its graph is
 * built (~93 MB at 100K messages). Held as the driver's blob of each row (tens of thousands of
 * small allocations), or in slabs of a few MB, they left a Node process 50–70 MB larger for good
 * (glibc serves allocations below its mmap threshold, which rises as large blocks are freed, from
 * a heap it seldom gives back); one block that large is a mapping of its own, returned whole.
 */
class Slab {
  private slab: Uint8Array;
  private used = 0;

  constructor(expected: number) {
    this.slab = new Uint8Array(expected);
  }

  copy(bytes: Uint8Array): Uint8Array {
    if (this.used + bytes.length > this.slab.length) {
      this.slab = new Uint8Array(bytes.length);
      this.used = 0;
    }
    const copied = this.slab.subarray(this.used, this.used + bytes.length);
    copied.set(bytes);
    this.used += bytes.length;
    return copied;
  }
}

/**
 * Gives `partition`'s vector groups that have none their members' index keys, read from the
 * records of the members' ids (a node's row, or an edge's); a group with a member whose record
 * is missing or does not read keeps none.
 */
function keyGroups(driver: SqlDriver, partition: string): void {
  const keyOf = (table: 'nodes' | 'edges', id: string): number | undefined => {
    const row = driver.all(`SELECT json FROM ${table} WHERE partition = ? AND id = ?`, [partition, id])[0];
    if (!row) return undefined;
    try {
      const json = text(row, 'json');
      const { key } = table === 'nodes' ? decodeNode(json, new Map(), undefined, id).node : decodeEdge(json, id);
      return Number.isSafeInteger(key) ? key : undefined;
    } catch {
      return undefined;
    }
  };
  for (const row of driver.all('SELECT stem, members FROM vector_groups WHERE partition = ? AND member_keys IS NULL', [partition])) {
    const stem = text(row, 'stem');
    let members: Array<string | null>;
    try {
      members = vectorGroupMembers(stem, text(row, 'members'));
    } catch {
      continue;
    }
    const keys = encodeGroupKeys(members.map((member) => memberId(stem, member)).map((id) => keyOf('nodes', id) ?? keyOf('edges', id)));
    if (keys !== null) driver.run('UPDATE vector_groups SET member_keys = ? WHERE partition = ? AND stem = ?', [keys, partition, stem]);
  }
}

/** A group's stored member keys (`encodeGroupKeys`), `count` of them; null where it has none, or they do not read as that many. */
function groupKeysOf(value: SqlValue | undefined, count: number): number[] | null {
  const keys = blobOf(value);
  return keys && decodeGroupKeys(keys, count);
}

/** The chunk of a row's `json` and `text` columns; `join` gives it its text (`decodeChunkRow`). */
function chunkOfRow(json: SqlValue | undefined, joined: SqlValue | undefined, join?: (chunk: UnjoinedChunk) => void): Chunk {
  return decodeChunkRow(textOf(json, 'json'), joined === null || joined === undefined ? null : textOf(joined, 'text'), join);
}

function text(row: SqlRow, column: string): string {
  return textOf(row[column], column);
}

function textOf(value: SqlValue | undefined, column: string): string {
  if (typeof value !== 'string') throw new PrismError('CORRUPT_CHECKPOINT', `column ${column} holds ${typeof value}, not text`);
  return value;
}

function bytesOf(value: SqlValue | undefined): Uint8Array {
  const bytes = blobOf(value);
  if (bytes === null) throw new PrismError('CORRUPT_CHECKPOINT', `a vector is stored as ${typeof value}, not a blob`);
  return bytes;
}

/** A blob's bytes, however the driver hands it over; null for a value of another kind. */
function blobOf(value: SqlValue | undefined): Uint8Array | null {
  if (value instanceof Uint8Array) return value;
  return value instanceof ArrayBuffer ? new Uint8Array(value) : null;
}

/** The stored schema version (0 for a new database); STORE_VERSION when a newer PRISM wrote it. */
function schemaVersion(driver: SqlDriver): number {
  if (driver.all("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'prism_schema'").length === 0) return 0;
  const stored = driver.all('SELECT version FROM prism_schema')[0]?.['version'];
  const version = typeof stored === 'number' ? stored : 0;
  if (version > SQL_SCHEMA_VERSION) {
    throw new PrismError('STORE_VERSION', `the database was written by a newer PRISM (schema ${version}; this build reads up to ${SQL_SCHEMA_VERSION})`);
  }
  return version;
}

/**
 * The graph store over SQL: Node (SQLite file) and Cloudflare Durable Objects share it
 * through `SqlDriver`. Each commit is one transaction whose writes are proportional to the
 * batch; validation runs inside it against the stored meta, so a bad batch changes nothing.
 */
export class SqlStore implements GraphStore {
  /** The long Entity chunk lists this store wrote last (see record-codec's `WrittenList`). */
  private readonly writtenLists = new WrittenLists();
  readonly readsFactImage = true;

  private constructor(
    private readonly driver: SqlDriver,
    private readonly lock: WriteLock,
    readonly vectorPrecision: VectorPrecision,
  ) {}

  /**
   * Creates or upgrades the schema and returns the store. A database written by a newer
   * PRISM throws STORE_VERSION and is left untouched. A current schema is only read, so a
   * read-only connection opens it.
   */
  static open(driver: SqlDriver, lock: WriteLock, vectorPrecision: VectorPrecision = DEFAULT_VECTOR_PRECISION): SqlStore {
    if (schemaVersion(driver) < SQL_SCHEMA_VERSION) {
      driver.transaction('write', () => {
        // Again under the write lock: another connection may have upgraded meanwhile.
        const version = schemaVersion(driver);
        if (version === SQL_SCHEMA_VERSION) return;
        driver.run('CREATE TABLE IF NOT EXISTS prism_schema (version INTEGER NOT NULL)');
        for (const step of MIGRATIONS.slice(version).flat()) {
          if (typeof step === 'string') driver.run(step);
          else step(driver);
        }
        driver.run('DELETE FROM prism_schema');
        driver.run('INSERT INTO prism_schema (version) VALUES (?)', [SQL_SCHEMA_VERSION]);
      });
    }
    return new SqlStore(driver, lock, vectorPrecision);
  }

  async partitions(): Promise<string[]> {
    return this.driver.all('SELECT partition FROM meta').map((row) => text(row, 'partition'));
  }

  async load(partition: string): Promise<MemorySnapshot | null> {
    const memory = this.read(partition, 'whole');
    if (memory === null) return null;
    // Sorted in JavaScript: SQLite orders text by UTF-8 bytes, the other stores by UTF-16 code units.
    return {
      meta: memory.meta,
      nodes: sortById(memory.nodes),
      edges: sortById(allStoredEdges(memory)),
      chunks: sortById(memory.chunks),
      vectors: memory.vectors,
      hashes: new Set([...memory.hashes].sort()),
    };
  }

  /** The working set leaves the relation edges without a vector here (`WorkingSnapshot.relations`): no search or add lists them by default. */
  async loadWorkingSet(partition: string): Promise<WorkingSnapshot | null> {
    const working = this.read(partition, 'working');
    return working && { ...working, relations: this.relationEdges(partition) };
  }

  /** The rows of a query of `id` and `json` (in that order), read as the caller reaches each. */
  private *keyedRows(sql: string, params: readonly SqlValue[]): Iterable<StoredRow> {
    for (const row of this.driver.each(sql, params)) yield storedRow(row);
  }

  /**
   * The `id` and `json` rows of a partition's records of `table` in id order, read a page of
   * `ROWS_A_PAGE` at a time, each page after the last id of the one before: an open reads every
   * node (~464K rows at 100K messages), and stepping them one by one took ~0.4 s of it where
   * pages take ~0.27 s. The pages are read in the caller's transaction, so they are of one snapshot.
   * With `skipped`, the rows whose ids are in that range (from inclusive, to exclusive) are not read.
   */
  private *pagedRows(table: 'nodes' | 'edges', partition: string, skipped?: readonly [from: string, to: string]): Iterable<StoredRow> {
    if (skipped) {
      yield* this.pagedRowsIn(table, partition, null, skipped[0]);
      yield* this.pagedRowsIn(table, partition, skipped[1], null);
      return;
    }
    yield* this.pagedRowsIn(table, partition, null, null);
  }

  /** `pagedRows` of the ids from `from` (inclusive) to `to` (exclusive), null where unbounded. */
  private *pagedRowsIn(table: 'nodes' | 'edges', partition: string, from: string | null, to: string | null): Iterable<StoredRow> {
    let after: string | null = null;
    const below = to === null ? '' : ' AND id < ?';
    for (;;) {
      const start = after === null ? (from === null ? '' : ' AND id >= ?') : ' AND id > ?';
      const params = [partition, ...(after === null ? (from === null ? [] : [from]) : [after]), ...(to === null ? [] : [to])];
      const rows = this.driver.rows(`SELECT id, json FROM ${table} WHERE partition = ?${start}${below} ORDER BY id LIMIT ${ROWS_A_PAGE}`, params);
      for (const row of rows) yield storedRow(row);
      if (rows.length < ROWS_A_PAGE) return;
      after = (rows[rows.length - 1] as StoredRow)[0];
    }
  }

  /**
   * The partition's facts as its fact image holds them (store/fact-image.ts), where one was saved
   * at its current revision, reads whole and checks against `chunks`, and holds as many facts as
   * the rows of fact ids: an open then reads no fact row. Null otherwise: the rows are read.
   */
  private factImage(partition: string, chunks: ReadonlyMap<string, Chunk>): FactColumns | null {
    const saved = this.derivedState(partition, FACT_IMAGE);
    if (saved === null || saved.revision !== this.currentRevision(partition)) return null;
    const facts = readFactImage(saved.bytes, chunks);
    if (facts === null) return null;
    const [from, to] = FACT_ID_RANGE;
    const rows = this.driver.all('SELECT count(*) AS count FROM nodes WHERE partition = ? AND id >= ? AND id < ?', [partition, from, to])[0]?.['count'];
    return Number(rows) === facts.size ? facts : null;
  }

  /** The partition's edge rows whose ids are `relations` (a relation type's, see `RELATION_ID_RANGES`) or not, read as the caller reaches each. */
  private *edgeRows(partition: string, relations: boolean): Iterable<StoredRow> {
    for (const [from, to] of relations ? RELATION_ID_RANGES : OTHER_ID_RANGES) {
      const where = ['partition = ?'];
      const params = [partition];
      if (from !== null) {
        where.push('id >= ?');
        params.push(from);
      }
      if (to !== null) {
        where.push('id < ?');
        params.push(to);
      }
      yield* this.keyedRows(`SELECT id, json FROM edges WHERE ${where.join(' AND ')}`, params);
    }
  }

  /**
   * The partition's records as stored, derived edges as keys: the whole memory, its vectors in id
   * order (as the other stores hand them to `load`), or the working set, its vectors as stored,
   * group by group, each copied into the table and dropped (an open's: at 100K messages the groups
   * were ~200 MB, held at once to be sorted), and of the relation edges only those with a vector.
   */
  private read(partition: string, form: 'whole' | 'working'): WorkingSnapshot | null {
    // One read transaction: a commit by another connection lands wholly before or after it.
    return this.driver.transaction('read', () => {
      const meta = this.readMeta(partition);
      if (meta === null) return null;
      const chunks = this.chunks(partition);
      const chunksById = new Map(chunks.map((chunk) => [chunk.id, chunk]));
      const facts = form === 'working' ? this.factImage(partition, chunksById) : null;
      const vectors = new VectorTable();
      const sorted: Array<[string, Uint8Array]> = [];
      const indexedRelations: string[] = [];
      // A working set's groups as they are, while every one has its keys; the first without turns them all into the table.
      let keyed: StemVectorGroup[] | null = form === 'working' ? [] : null;
      // Counted before the rows are stepped (a statement is not run within another's): made only when a group has keys.
      const groupBytes = form === 'working' ? Number(this.driver.all('SELECT coalesce(sum(length(data)), 0) AS bytes FROM vector_groups WHERE partition = ?', [partition])[0]?.['bytes'] ?? 0) : 0;
      let slab: Slab | null = null;
      for (const [stemValue, membersValue, data, keysValue] of this.driver.each('SELECT stem, members, data, member_keys FROM vector_groups WHERE partition = ?', [partition])) {
        const stem = textOf(stemValue, 'stem');
        const members = textOf(membersValue, 'members');
        // A group's ids share its stem, and so their prefix.
        const ofRelations = form === 'working' && isRelationEdgeId(stem);
        if (ofRelations) indexedRelations.push(...vectorGroupMembers(stem, members).map((member) => memberId(stem, member)));
        const keys = keyed && blobOf(keysValue);
        if (keyed && keys) {
          slab ??= new Slab(groupBytes);
          keyed.push({ stem, members, keys, data: slab.copy(bytesOf(data)) });
          continue;
        }
        if (keyed) addKeyedGroups(vectors, keyed, meta.dim);
        keyed = null;
        for (const [member, bytes] of decodeVectorGroup(stem, { members, data: bytesOf(data) })) {
          if (form === 'whole') sorted.push([memberId(stem, member), bytes]);
          else vectors.addStored(memberId(stem, member), bytes, meta.dim);
        }
      }
      for (const [id, bytes] of sorted.sort((a, b) => compareIds(a[0], b[0]))) vectors.addStored(id, bytes, meta.dim);
      const edgeRows = form === 'whole' ? this.pagedRows('edges', partition) : this.workingEdgeRows(partition, indexedRelations);
      const records = readStoredRecords(
        facts ? this.pagedRows('nodes', partition, FACT_ID_RANGE) : this.pagedRows('nodes', partition),
        edgeRows,
        chunksById,
        this.entityPages(partition),
        form === 'working' && (facts ?? true),
      );
      const hashes = this.driver.all('SELECT hash FROM hashes WHERE partition = ?', [partition]).map((row) => text(row, 'hash'));
      return {
        meta,
        ...records,
        chunks,
        vectors,
        hashes: new Set(hashes),
        ...(keyed && keyed.length > 0 ? { keyedVectors: keyed } : {}),
        ...(form === 'working' ? { factImage: facts ? ('read' as const) : ('missing' as const) } : {}),
      };
    });
  }

  /**
   * The partition's chunks, stepped row by row and their texts joined a batch at a time
   * (`ChunkTextJoiner`): read whole first, every row's text lived through the collections the
   * read took (~128 MB at 100K messages of chat, copied twice as it was kept).
   */
  private chunks(partition: string): Chunk[] {
    const joiner = new ChunkTextJoiner();
    const chunks: Chunk[] = [];
    for (const [json, joined] of this.driver.each('SELECT json, text FROM chunks WHERE partition = ?', [partition])) {
      chunks.push(chunkOfRow(json, joined, joiner.join));
    }
    joiner.flush();
    return chunks;
  }

  /** The edge rows a working set reads: all but the relation edges', and of those the rows of `indexed` (ids with a vector). */
  private *workingEdgeRows(partition: string, indexed: readonly string[]): Iterable<StoredRow> {
    yield* this.edgeRows(partition, false);
    for (const id of indexed) yield* this.keyedRows('SELECT id, json FROM edges WHERE partition = ? AND id = ?', [partition, id]);
  }

  /** The partition's relation edges as `WorkingSnapshot.relations` reads them, each read a statement (or a transaction) of its own. */
  private relationEdges(partition: string): StoredRelationEdges {
    // The rows `mayKeep` (told from the row) passes are decoded, and those `keep` passes kept.
    const read = (keep: (edge: GraphEdge) => boolean, mayKeep: (id: string, json: string) => boolean = () => true) =>
      this.driver.transaction('read', () => {
        const edges: GraphEdge[] = [];
        for (const [id, json] of this.edgeRows(partition, true)) {
          if (!mayKeep(id, json)) continue;
          const edge = decodeEdge(json, id);
          if (keep(edge)) edges.push(edge);
        }
        return { revision: this.currentRevision(partition), edges };
      });
    return {
      all: () => read(() => true),
      owned: (chunkIds, nodeIds) => {
        const { mayOwn, owns } = ownedRows(chunkIds, nodeIds);
        return read(owns, mayOwn);
      },
      get: (id) =>
        this.driver.transaction('read', () => {
          const row = isRelationEdgeId(id) ? this.driver.all('SELECT json FROM edges WHERE partition = ? AND id = ?', [partition, id])[0] : undefined;
          return { revision: this.currentRevision(partition), edge: row && decodeEdge(text(row, 'json'), id) };
        }),
      counts: () =>
        Object.fromEntries(
          RELATION_EDGE_TYPES.map((type) => {
            const [from, to] = idRangeOf(type);
            return [type, Number(this.driver.all('SELECT count(*) AS count FROM edges WHERE partition = ? AND id >= ? AND id < ?', [partition, from, to])[0]?.['count'] ?? 0)];
          }),
        ),
    };
  }

  async revision(partition: string): Promise<number> {
    return this.currentRevision(partition);
  }

  private currentRevision(partition: string): number {
    const row = this.driver.all(
      'SELECT coalesce((SELECT revision FROM revisions WHERE partition = ?), (SELECT revision FROM clear_revision)) AS revision',
      [partition],
    )[0];
    return Number(row?.['revision']);
  }

  withWriteLock<T>(partition: string, fn: () => Promise<T>): Promise<T> {
    return this.lock.run(partition, fn);
  }

  async commit(partition: string, batch: WriteBatch): Promise<number> {
    const { driver } = this;
    const revision = driver.transaction('write', () => {
      const current = this.readMeta(partition);
      const storedVectorIds = changesDimension(current, batch)
        ? driver.all('SELECT stem, members FROM vector_groups WHERE partition = ?', [partition]).flatMap((row) => {
            const stem = text(row, 'stem');
            return vectorGroupMembers(stem, text(row, 'members')).map((member) => memberId(stem, member));
          })
        : [];
      const meta = validateBatch(batch, current, storedVectorIds);
      const remove = (table: (typeof MEMORY_TABLES)[number], column: string, ids: readonly string[] | undefined): void => {
        for (const id of ids ?? []) driver.run(`DELETE FROM ${table} WHERE partition = ? AND ${column} = ?`, [partition, id]);
      };
      const plan = this.planRecords(partition, batch);
      if (dropsDerived(batch)) driver.run('DELETE FROM derived WHERE partition = ?', [partition]);
      remove('nodes', 'id', batch.deleteNodes);
      remove('edges', 'id', batch.deleteEdges);
      remove('chunks', 'id', batch.deleteChunks);
      const vectorGroups = new VectorGroupWrites(partition, (stem) => {
        const row = driver.all('SELECT members, data, member_keys FROM vector_groups WHERE partition = ? AND stem = ?', [partition, stem])[0];
        if (!row) return undefined;
        const group = decodeVectorGroup(stem, { members: text(row, 'members'), data: bytesOf(row['data']) });
        return { group, keys: groupKeysOf(row['member_keys'], group.size) };
      });
      for (const id of batch.deleteVectors ?? []) vectorGroups.delete(id);
      remove('hashes', 'hash', batch.deleteHashes);
      for (const chunk of batch.putChunks ?? []) {
        const row = encodeChunkRow(chunk);
        driver.run('INSERT OR REPLACE INTO chunks (partition, id, json, text) VALUES (?, ?, ?, ?)', [partition, chunk.id, row.json, row.text]);
      }
      for (const [id, json] of plan.nodes) driver.run('INSERT OR REPLACE INTO nodes (partition, id, json) VALUES (?, ?, ?)', [partition, id, json]);
      for (const { id, put, dropFrom } of plan.pages) {
        if (dropFrom !== null) driver.run('DELETE FROM entity_pages WHERE partition = ? AND id = ? AND page >= ?', [partition, id, dropFrom]);
        for (const [page, json] of put) driver.run('INSERT OR REPLACE INTO entity_pages (partition, id, page, json) VALUES (?, ?, ?, ?)', [partition, id, page, json]);
      }
      remove('edges', 'id', plan.folded);
      for (const edge of plan.edges) driver.run('INSERT OR REPLACE INTO edges (partition, id, json) VALUES (?, ?, ?)', [partition, edge.id, encodeEdge(edge, true)]);
      const keyOf = new Map<string, number>([...(batch.putNodes ?? []), ...(batch.putEdges ?? [])].map(({ id, key }) => [id, key]));
      for (const [id, vector] of batch.putVectors ?? []) vectorGroups.put(id, encodeVector(vector, this.vectorPrecision), keyOf.get(id));
      vectorGroups.write(driver);
      for (const hash of batch.putHashes ?? []) driver.run('INSERT OR IGNORE INTO hashes (partition, hash) VALUES (?, ?)', [partition, hash]);
      if (batch.meta !== undefined || current === null) {
        driver.run('INSERT OR REPLACE INTO meta (partition, json) VALUES (?, ?)', [partition, JSON.stringify(meta)]);
      }
      return this.bump(partition);
    });
    // A chunk holds the text; a batch deleting chunks is a delete the caller expects gone from disk.
    if ((batch.deleteChunks?.length ?? 0) > 0) await driver.eraseDeleted();
    return revision;
  }

  async clear(partition?: string): Promise<void> {
    const { driver } = this;
    driver.transaction('write', () => {
      // Before the rows go: the new clear revision must exceed the cleared partitions' own.
      driver.run('UPDATE clear_revision SET revision = max(revision, coalesce((SELECT max(revision) FROM revisions), 0)) + 1');
      if (partition !== undefined) {
        for (const table of [...MEMORY_TABLES, 'revisions']) driver.run(`DELETE FROM ${table} WHERE partition = ?`, [partition]);
        return;
      }
      for (const table of [...MEMORY_TABLES, 'revisions', 'cache', 'cache_tags']) driver.run(`DELETE FROM ${table}`);
    });
    await driver.eraseDeleted();
  }

  async loadDerived(partition: string, name: string): Promise<DerivedState | null> {
    return this.driver.transaction('read', () => this.derivedState(partition, name));
  }

  /** `loadDerived` within the caller's transaction. */
  private derivedState(partition: string, name: string): DerivedState | null {
    const rows = this.driver.all('SELECT page, revision, data FROM derived WHERE partition = ? AND name = ? ORDER BY page', [partition, name]);
    const revision = rows[0]?.['revision'];
    // Pages of one save share its revision and run 0, 1, 2…; anything else is not one save whole.
    if (typeof revision !== 'number' || rows.some((row, i) => row['page'] !== i || row['revision'] !== revision)) return null;
    return { revision, bytes: concatBytes(rows.map((row) => bytesOf(row['data']))) };
  }

  async saveDerived(partition: string, name: string, revision: number, bytes: Uint8Array): Promise<boolean> {
    const { driver } = this;
    return driver.transaction('write', () => {
      if (this.readMeta(partition) === null || this.currentRevision(partition) !== revision) return false;
      driver.run('DELETE FROM derived WHERE partition = ? AND name = ?', [partition, name]);
      for (let page = 0; page * DERIVED_PAGE_BYTES < bytes.length || page === 0; page++) {
        const data = bytes.subarray(page * DERIVED_PAGE_BYTES, (page + 1) * DERIVED_PAGE_BYTES);
        driver.run('INSERT INTO derived (partition, name, page, revision, data) VALUES (?, ?, ?, ?, ?)', [partition, name, page, revision, data]);
      }
      return true;
    });
  }

  async getCached(key: string): Promise<string | undefined> {
    const row = this.driver.all('SELECT value FROM cache WHERE key = ?', [key])[0];
    return row && text(row, 'value');
  }

  async putCached(key: string, value: string, tags: readonly string[] = []): Promise<void> {
    const { driver } = this;
    driver.transaction('write', () => {
      driver.run('DELETE FROM cache_tags WHERE key = ?', [key]);
      driver.run('INSERT OR REPLACE INTO cache (key, value) VALUES (?, ?)', [key, value]);
      for (const tag of tags) driver.run('INSERT OR IGNORE INTO cache_tags (tag, key) VALUES (?, ?)', [tag, key]);
    });
  }

  async deleteCached(tags: readonly string[]): Promise<void> {
    const { driver } = this;
    driver.transaction('write', () => {
      // One statement per tag and key: a Durable Object binds at most 100 parameters per query.
      for (const tag of tags) {
        for (const row of driver.all('SELECT key FROM cache_tags WHERE tag = ?', [tag])) {
          const key = text(row, 'key');
          driver.run('DELETE FROM cache WHERE key = ?', [key]);
          driver.run('DELETE FROM cache_tags WHERE key = ?', [key]);
        }
      }
    });
  }

  async close(): Promise<void> {
    this.driver.close();
  }

  /** The node, edge and Entity page rows a batch writes (see record-plan), reading what it needs inside the commit's transaction, before its deletes. */
  private planRecords(partition: string, batch: WriteBatch): RecordPlan {
    const { driver } = this;
    const reads = recordReads(batch);
    const storedNodes = new Map<string, string>();
    for (const id of reads.nodeIds) {
      const row = driver.all('SELECT json FROM nodes WHERE partition = ? AND id = ?', [partition, id])[0];
      if (row) storedNodes.set(id, text(row, 'json'));
    }
    const storedChunks = new Map<string, Chunk>();
    for (const id of reads.chunkIds) {
      const row = driver.all('SELECT json, text FROM chunks WHERE partition = ? AND id = ?', [partition, id])[0];
      if (row) storedChunks.set(id, chunkOfRow(row['json'], row['text']));
    }
    return planRecords(batch, storedNodes, storedChunks, this.writtenLists.of(partition));
  }

  /** Each paged Entity's pages in order, by Entity id. */
  private entityPages(partition: string): Map<string, string[]> {
    const pages = new Map<string, string[]>();
    for (const row of this.driver.all('SELECT id, json FROM entity_pages WHERE partition = ? ORDER BY id, page', [partition])) {
      const id = text(row, 'id');
      const list = pages.get(id);
      if (list) list.push(text(row, 'json'));
      else pages.set(id, [text(row, 'json')]);
    }
    return pages;
  }

  private readMeta(partition: string): MemoryMeta | null {
    const row = this.driver.all('SELECT json FROM meta WHERE partition = ?', [partition])[0];
    return row ? (JSON.parse(text(row, 'json')) as MemoryMeta) : null;
  }

  /**
   * The partition's next revision: one above its current one, which for a partition without a
   * row is the clear revision. Each partition's revisions only grow, across clears too, so a
   * handle that saw revision r never mistakes a later state for it.
   */
  private bump(partition: string): number {
    const row = this.driver.all(
      'INSERT INTO revisions (partition, revision) SELECT ?, revision + 1 FROM clear_revision WHERE true ON CONFLICT (partition) DO UPDATE SET revision = revision + 1 RETURNING revision',
      [partition],
    )[0];
    return Number(row?.['revision']);
  }
}
