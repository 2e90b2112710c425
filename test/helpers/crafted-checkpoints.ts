import Database from 'better-sqlite3';
import { PrismError, type PrismErrorCode } from '../../src/errors.ts';
import { derivedEdgesOf } from '../../src/graph/derived-edges.ts';
import type { Chunk, EntityNode, EpisodeNode, FacetPointNode, GraphEdge, GraphNode, JsonValue, MemoryMeta } from '../../src/graph/types.ts';
import type { Memory } from '../../src/memory.ts';
import { partitionOf, resolveScope, type Scope } from '../../src/scope.ts';
import { decodeChunkRow, decodeNode, encodeNode } from '../../src/store/record-codec.ts';
import { encodedBytes, type VectorPrecision } from '../../src/store/vector-codec.ts';
import { decodeVectorGroup, encodeVectorGroup } from '../../src/store/vector-groups.ts';

/**
 * Checkpoints an attacker with the format spec and a CRC calculator could write: a valid export
 * decoded by hand, one thing changed, and re-encoded with a correct checksum — never through
 * `encodeCheckpoint`, which would refuse most of them. Shared by test/checkpoint.test.ts and
 * the fault row in test/faults/checkpoint.fault.ts.
 */

const MAGIC = Uint8Array.of(0x89, 0x50, 0x52, 0x53, 0x4d, 0x0d, 0x0a, 0x1a);
const HEADER_BYTES = 24;

/** The JSON section as `encodeCheckpoint` writes it. */
export interface CheckpointSection {
  meta: MemoryMeta;
  nodes: GraphNode[];
  edges: GraphEdge[];
  chunks: Chunk[];
  hashes: string[];
  vectorIds: string[];
}

/** A checkpoint taken apart: its JSON section, its vectors (in `vectorIds` order) and the header's dimension. */
export interface RawCheckpoint {
  section: CheckpointSection;
  vectors: Float32Array[];
  dim: number;
}

/** Header fields written in place of the true ones. */
export interface HeaderOverrides {
  jsonBytes?: number;
  vectorCount?: number;
  dim?: number;
}

function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? 0xedb88320 ^ (crc >>> 1) : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

/** Takes a checkpoint apart without checking anything but its layout. */
export function readCheckpoint(bytes: Uint8Array): RawCheckpoint {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const jsonBytes = view.getUint32(12, true);
  const vectorCount = view.getUint32(16, true);
  const dim = view.getUint32(20, true);
  const section = JSON.parse(new TextDecoder().decode(bytes.subarray(HEADER_BYTES, HEADER_BYTES + jsonBytes))) as CheckpointSection;
  const vectorsAt = HEADER_BYTES + ((jsonBytes + 3) & ~3);
  const vectors = Array.from({ length: vectorCount }, (_, i) => {
    const vector = new Float32Array(dim);
    new Uint8Array(vector.buffer).set(bytes.subarray(vectorsAt + i * dim * 4, vectorsAt + (i + 1) * dim * 4));
    return vector;
  });
  return { section, vectors, dim };
}

/** Lays out a JSON section and vectors as a checkpoint with a correct CRC; `header` overrides what the header says. */
export function writeRawCheckpoint(json: Uint8Array, vectors: readonly Float32Array[], dim: number, header: HeaderOverrides = {}): Uint8Array {
  const vectorsAt = HEADER_BYTES + ((json.length + 3) & ~3);
  const floats = vectors.reduce((sum, v) => sum + v.length, 0);
  const out = new Uint8Array(vectorsAt + floats * 4 + 4);
  const view = new DataView(out.buffer);
  out.set(MAGIC, 0);
  view.setUint32(8, 1, true);
  view.setUint32(12, header.jsonBytes ?? json.length, true);
  view.setUint32(16, header.vectorCount ?? vectors.length, true);
  view.setUint32(20, header.dim ?? dim, true);
  out.set(json, HEADER_BYTES);
  let offset = vectorsAt;
  for (const vector of vectors) {
    out.set(new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength), offset);
    offset += vector.byteLength;
  }
  view.setUint32(out.length - 4, crc32(out.subarray(0, out.length - 4)), true);
  return out;
}

export function writeCheckpoint(raw: RawCheckpoint, header: HeaderOverrides = {}): Uint8Array {
  return writeRawCheckpoint(new TextEncoder().encode(JSON.stringify(raw.section)), raw.vectors, raw.dim, header);
}

/** One kind of crafted checkpoint: what import must answer (a code, or acceptance when harmless) and a word of the message. */
export interface CraftedKind {
  name: string;
  expect: PrismErrorCode | 'accepted';
  /** A fragment the error message must contain: it names what is wrong. */
  mentions?: string;
  craft(valid: RawCheckpoint): Uint8Array;
}

function first<T>(items: readonly T[], what: string): T {
  const item = items[0];
  if (item === undefined) throw new Error(`the valid checkpoint holds no ${what}`);
  return item;
}

function second<T>(items: readonly T[], what: string): T {
  const item = items[1];
  if (item === undefined) throw new Error(`the valid checkpoint holds fewer than two ${what}`);
  return item;
}

function ofLayer<L extends GraphNode['layer']>(section: CheckpointSection, layer: L): Array<Extract<GraphNode, { layer: L }>> {
  return section.nodes.filter((n): n is Extract<GraphNode, { layer: L }> => n.layer === layer);
}

/** Sets a field to a value its type does not allow. */
function poke(record: object, field: string, value: unknown): void {
  (record as Record<string, unknown>)[field] = value;
}

function drop(record: object, field: string): void {
  delete (record as Record<string, unknown>)[field];
}

function copy(raw: RawCheckpoint): RawCheckpoint {
  return { section: structuredClone(raw.section), vectors: raw.vectors.map((v) => v.slice()), dim: raw.dim };
}

/** A kind made by editing a copy of the valid checkpoint's records. */
function edited(name: string, expect: CraftedKind['expect'], mentions: string | undefined, edit: (raw: RawCheckpoint) => void): CraftedKind {
  return {
    name,
    expect,
    ...(mentions !== undefined ? { mentions } : {}),
    craft: (valid) => {
      const raw = copy(valid);
      edit(raw);
      return writeCheckpoint(raw);
    },
  };
}

function nested(depth: number): Record<string, JsonValue> {
  let value: Record<string, JsonValue> = {};
  for (let i = 0; i < depth; i++) value = { deeper: value };
  return value;
}

const CORRUPT = 'CORRUPT_CHECKPOINT';

/**
 * A kind whose edited field holds JSON nested `depth` levels deep: spliced in as text, since
 * `JSON.stringify` (like any recursive walk) overflows the stack long before JSON.parse does.
 */
function deeplyNested(name: string, mentions: string, depth: number, place: (section: CheckpointSection, marker: string) => void): CraftedKind {
  return {
    name,
    expect: CORRUPT,
    mentions,
    craft: (valid) => {
      const raw = copy(valid);
      const marker = 'deeply-nested-marker';
      place(raw.section, marker);
      const json = JSON.stringify(raw.section).replace(`"${marker}"`, `${'['.repeat(depth)}${']'.repeat(depth)}`);
      return writeRawCheckpoint(new TextEncoder().encode(json), raw.vectors, raw.dim);
    },
  };
}

/** Every kind, rejected ones first. The valid checkpoint needs two chunks and two Episodes, a FacetPoint, an Entity and an edge. */
export const CRAFTED_KINDS: readonly CraftedKind[] = [
  edited('meta.nextKey = 1 with nodes present', CORRUPT, 'meta.nextKey 1', ({ section }) => {
    section.meta.nextKey = 1;
  }),
  edited('meta.nextKey = 2^53', CORRUPT, 'meta.nextKey', ({ section }) => {
    section.meta.nextKey = 2 ** 53;
  }),
  edited('two Episodes share a key', CORRUPT, 'share key', ({ section }) => {
    const [a, b] = [first(ofLayer(section, 'episode'), 'Episode'), second(ofLayer(section, 'episode'), 'Episodes')];
    b.key = a.key;
  }),
  edited('a node and an edge share a key', CORRUPT, 'share key', ({ section }) => {
    first(section.edges, 'edge').key = first(section.nodes, 'node').key;
  }),
  edited('a negative key', CORRUPT, 'key must be a non-negative integer', ({ section }) => {
    first(section.nodes, 'node').key = -1;
  }),
  edited('a fractional key', CORRUPT, 'key must be a non-negative integer', ({ section }) => {
    first(section.nodes, 'node').key = 1.5;
  }),
  edited('two nodes with one id', CORRUPT, 'occurs twice', ({ section }) => {
    section.nodes.push({ ...first(section.nodes, 'node'), key: section.meta.nextKey });
    section.meta.nextKey++;
  }),
  edited('a node and an edge with one id', CORRUPT, 'occurs twice', ({ section }) => {
    first(section.edges, 'edge').id = first(section.nodes, 'node').id;
  }),
  edited('two chunks with one id', CORRUPT, 'occurs twice', ({ section }) => {
    section.chunks.push({ ...first(section.chunks, 'chunk'), order: section.meta.chunkCount, text: 'A replacement for session one.' });
    section.meta.chunkCount++;
  }),
  edited('two vectors with one id', CORRUPT, 'occurs twice', ({ section }) => {
    section.vectorIds[1] = first(section.vectorIds, 'vector');
  }),
  edited('a hash listed twice', CORRUPT, 'occurs twice', ({ section }) => {
    section.hashes.push(first(section.hashes, 'hash'));
  }),
  edited('a chunk without turns', CORRUPT, 'turns must be an array', ({ section }) => {
    drop(first(section.chunks, 'chunk'), 'turns');
  }),
  edited('a turn without a speaker', CORRUPT, 'speaker', ({ section }) => {
    drop(first(first(section.chunks, 'chunk').turns, 'turn'), 'speaker');
  }),
  edited('a turn that is a string', CORRUPT, 'turns[0] must be an object', ({ section }) => {
    poke(first(section.chunks, 'chunk').turns, '0', 'hello');
  }),
  edited('turn metadata nested 300 levels deep', CORRUPT, 'nested deeper', ({ section }) => {
    first(first(section.chunks, 'chunk').turns, 'turn').metadata = nested(300);
  }),
  deeplyNested('turn metadata nested 100,000 levels deep', 'nested deeper', 100_000, (section, marker) => {
    first(first(section.chunks, 'chunk').turns, 'turn').metadata = { notes: marker };
  }),
  deeplyNested('a node layer that is an array nested 100,000 levels deep', 'unknown layer an array', 100_000, (section, marker) => {
    poke(first(section.nodes, 'node'), 'layer', marker);
  }),
  edited('chunk mentions that are not an array', CORRUPT, 'mentions must be an array', ({ section }) => {
    poke(first(section.chunks, 'chunk'), 'mentions', 'Luna');
  }),
  edited('a mention of an unknown type', CORRUPT, 'mentions[0] has unknown type', ({ section }) => {
    const mention = { id: 'en:crafted:0', name: 'Luna', type: 'other' as const };
    first(section.chunks, 'chunk').mentions = [mention];
    poke(mention, 'type', 'alien');
  }),
  edited('two chunks share an order', CORRUPT, 'share order', ({ section }) => {
    second(section.chunks, 'chunks').order = first(section.chunks, 'chunk').order;
  }),
  edited('meta.chunkCount below a chunk order', CORRUPT, 'meta.chunkCount', ({ section }) => {
    section.meta.chunkCount = 1;
  }),
  edited('a node of an unknown layer', CORRUPT, 'unknown layer', ({ section }) => {
    poke(first(section.nodes, 'node'), 'layer', 'paragraph');
  }),
  edited('an Episode without a summary', CORRUPT, 'summary', ({ section }) => {
    drop(first(ofLayer(section, 'episode'), 'Episode'), 'summary');
  }),
  edited('FacetPoint dialogIds that are not an array', CORRUPT, 'dialogIds', ({ section }) => {
    poke(first<FacetPointNode>(ofLayer(section, 'facetPoint'), 'FacetPoint'), 'dialogIds', 'D1:1');
  }),
  edited('an Entity of an unknown type', CORRUPT, 'entityType', ({ section }) => {
    poke(first<EntityNode>(ofLayer(section, 'entity'), 'Entity'), 'entityType', 'alien');
  }),
  edited('an edge to a node the memory does not hold', CORRUPT, 'ghost-node', ({ section }) => {
    first(section.edges, 'edge').to = 'ghost-node';
  }),
  edited('an edge of an unknown type', CORRUPT, 'unknown type', ({ section }) => {
    poke(first(section.edges, 'edge'), 'type', 'teleports');
  }),
  edited('an edge whose confidence is a string', CORRUPT, 'confidence', ({ section }) => {
    poke(first(section.edges, 'edge'), 'confidence', 'high');
  }),
  edited('a vector of no node or edge', CORRUPT, 'ghost-vector', ({ section }) => {
    section.vectorIds[0] = 'ghost-vector';
  }),
  edited('NaN in a vector', CORRUPT, 'NaN', ({ vectors }) => {
    first(vectors, 'vector')[5] = Number.NaN;
  }),
  edited('a node naming a chunk the memory does not hold', CORRUPT, 'ghost-chunk', ({ section }) => {
    first<EpisodeNode>(ofLayer(section, 'episode'), 'Episode').chunkId = 'ghost-chunk';
  }),
  edited('a chunk without its hash', CORRUPT, 'no ingested hash', ({ section }) => {
    const chunk = first(section.chunks, 'chunk');
    section.hashes = section.hashes.filter((hash) => hash !== chunk.id);
  }),
  edited('meta.settings holding an object', CORRUPT, 'meta.settings', ({ section }) => {
    poke(section.meta.settings, 'mode', { nested: true });
  }),
  edited('meta.dim 383 under a 384 header', CORRUPT, 'meta.dim is 383', ({ section }) => {
    section.meta.dim = 383;
  }),
  edited('meta.dim 383 with 383-float vectors (consistent, wrong for the embedder)', 'EMBEDDER_MISMATCH', '383 dimensions', (raw) => {
    raw.section.meta.dim = 383;
    raw.dim = 383;
    raw.vectors = raw.vectors.map((v) => v.slice(0, 383));
  }),
  edited('another embedder', 'EMBEDDER_MISMATCH', 'embedded with other/model', ({ section }) => {
    section.meta.embedderId = 'other/model';
  }),
  edited('a newer schema version', 'STORE_VERSION', 'schema version 2', ({ section }) => {
    section.meta.schemaVersion = 2;
  }),
  {
    name: 'a header promising a 4 GiB JSON section',
    expect: CORRUPT,
    mentions: 'JSON section',
    craft: (valid) => writeCheckpoint(valid, { jsonBytes: 0xffff_ffff }),
  },
  { name: 'a header with vector dimension 0', expect: CORRUPT, mentions: 'dimension 0', craft: (valid) => writeCheckpoint(valid, { dim: 0 }) },
  {
    name: 'a header with vector dimension 2^20',
    expect: CORRUPT,
    mentions: 'dimension 1048576',
    craft: (valid) => writeCheckpoint(valid, { dim: 2 ** 20 }),
  },
  {
    name: 'a header counting one vector fewer than vectorIds',
    expect: CORRUPT,
    mentions: 'vectors',
    craft: (valid) => writeCheckpoint({ ...valid, vectors: valid.vectors.slice(1) }),
  },
  {
    name: 'a JSON section that is an array',
    expect: CORRUPT,
    mentions: 'not an object',
    craft: (valid) => writeRawCheckpoint(new TextEncoder().encode('[]'), [], valid.dim),
  },
  edited('nodes that are not an array', CORRUPT, 'nodes is not an array', ({ section }) => {
    poke(section, 'nodes', {});
  }),
  {
    name: 'a JSON section that is not UTF-8',
    expect: CORRUPT,
    mentions: 'does not parse',
    craft: (valid) => writeRawCheckpoint(Uint8Array.of(0x7b, 0xff, 0xfe, 0x7d), valid.vectors, valid.dim),
  },
  edited('records in reverse order', 'accepted', undefined, (raw) => {
    const { section } = raw;
    section.nodes.reverse();
    section.edges.reverse();
    section.chunks.reverse();
    section.hashes.reverse();
    section.vectorIds.reverse();
    raw.vectors.reverse();
  }),
  edited('meta.nextKey raised far above the keys', 'accepted', undefined, ({ section }) => {
    section.meta.nextKey += 1_000_000;
  }),
];

/** The message ids a scope holds, session by session. */
export async function messageIds(memory: Memory, scope: Scope): Promise<string[]> {
  const ids: string[] = [];
  for (const session of await memory.list(scope)) {
    const record = await memory.get(session.sessionId, scope);
    if (record?.kind === 'session') ids.push(...record.messages.map((m) => m.id));
  }
  return ids;
}

async function failure(name: string, run: () => Promise<boolean>): Promise<string[]> {
  try {
    return (await run()) ? [] : [`${name}: wrong result`];
  } catch (err) {
    return [`${name}: ${err instanceof Error ? err.message : String(err)}`];
  }
}

/**
 * Runs add, list, search, delete of a session, delete({ userId }), import of a valid checkpoint
 * and delete('all') on `scope`, and leaves every scope in `restore` as its bytes hold it.
 * Returns what failed (empty when everything worked).
 */
export async function exerciseScope(memory: Memory, scope: Scope, restore: ReadonlyArray<readonly [Scope, Uint8Array]>): Promise<string[]> {
  const failed: string[] = [];
  const probe = { ...scope, sessionId: 'probe-session' };
  const restoreAll = async () => {
    for (const [where, bytes] of restore) await memory.import(bytes, where);
    return true;
  };
  failed.push(
    ...(await failure('add', async () => (await memory.add([{ speaker: 'Probe', text: 'The probe note mentions a lighthouse on the cliff.' }], probe)).chunksAdded === 1)),
    ...(await failure('list', async () => (await memory.list(scope)).some((s) => s.sessionId === probe.sessionId))),
    ...(await failure('search', async () => (await memory.search('Where is the lighthouse?', scope)).context.includes('lighthouse'))),
    ...(await failure('delete a session', async () => (await memory.delete(probe)).chunksDeleted === 1)),
    ...(await failure('delete({ userId })', async () => (await memory.delete(scope)).chunksDeleted > 0 && (await memory.list(scope)).length === 0)),
    ...(await failure('import a valid checkpoint', restoreAll)),
    ...(await failure("delete('all')", async () => (await memory.delete('all')).chunksDeleted > 0 && (await memory.scopes()).length === 0)),
    ...(await failure('import after delete', restoreAll)),
  );
  return failed;
}

/** What one crafted import did to a scope. */
export interface CraftedOutcome {
  /** What import threw; null when it accepted the checkpoint. */
  error: unknown;
  /** Message ids the scope held before the import and not after it. */
  lost: string[];
  /** The scope's export is the same bytes after the import as before it. */
  unchanged: boolean;
  /** Operations on the scope that failed afterwards (`exerciseScope`). */
  failed: string[];
}

/** Imports one crafted checkpoint into `scope` (holding `valid`), then exercises the scope. */
export async function importCrafted(
  memory: Memory,
  scope: Scope,
  valid: Uint8Array,
  kind: CraftedKind,
  restore: ReadonlyArray<readonly [Scope, Uint8Array]>,
): Promise<CraftedOutcome> {
  const before = await messageIds(memory, scope);
  const exported = await memory.export(scope);
  const error = await memory.import(kind.craft(readCheckpoint(valid)), scope).then(
    () => null,
    (err: unknown) => err,
  );
  // A scope the import left unreadable has lost everything it held.
  const after = new Set(await messageIds(memory, scope).catch(() => []));
  const unchanged = await memory.export(scope).then(
    (bytes) => Buffer.from(bytes).equals(Buffer.from(exported)),
    () => false,
  );
  return { error, lost: before.filter((id) => !after.has(id)), unchanged, failed: await exerciseScope(memory, scope, restore) };
}

/** True when the outcome is what the kind expects: the right typed error naming the fault (or a harmless acceptance), nothing lost, every operation working. */
export function outcomeHolds(kind: CraftedKind, outcome: CraftedOutcome): boolean {
  const answered =
    kind.expect === 'accepted'
      ? outcome.error === null
      : outcome.error instanceof PrismError && outcome.error.code === kind.expect && outcome.error.message.includes(kind.mentions ?? '') && outcome.unchanged;
  return answered && outcome.lost.length === 0 && outcome.failed.length === 0;
}

/** Damage an older PRISM could leave in a stored scope (it imported crafted checkpoints unchecked), written into the SQLite file directly. */
export interface StoredDamage {
  name: string;
  damage(db: Database.Database, partition: string): void;
  /** What reads of the damaged scope fail with, when not CORRUPT_CHECKPOINT. */
  code?: PrismErrorCode;
}

function storedRows(db: Database.Database, table: 'nodes' | 'chunks', partition: string): Array<{ id: string; json: string }> {
  return db.prepare(`SELECT id, json FROM ${table} WHERE partition = ? ORDER BY id`).all(partition) as Array<{ id: string; json: string }>;
}

/** The scope's chunks as the store reads them. */
function storedChunks(db: Database.Database, partition: string): Map<string, Chunk> {
  const rows = db.prepare('SELECT id, json, text FROM chunks WHERE partition = ? ORDER BY id').all(partition) as Array<{ id: string; json: string; text: string | null }>;
  return new Map(rows.map((row) => [row.id, decodeChunkRow(row.json, row.text)]));
}

/** Edits the chunks' stored records (a turn's text there is its length where the chunk keeps its text apart). */
function editChunks(db: Database.Database, partition: string, edit: (chunks: Chunk[]) => void): void {
  const rows = storedRows(db, 'chunks', partition);
  const records = rows.map((row) => JSON.parse(row.json) as Chunk);
  edit(records);
  const update = db.prepare('UPDATE chunks SET json = ? WHERE partition = ? AND id = ?');
  rows.forEach((row, i) => update.run(JSON.stringify(records[i]), partition, row.id));
}

/** Edits the nodes as the store reads them, and writes them back in the store's compact forms. */
function editNodes(db: Database.Database, partition: string, edit: (nodes: GraphNode[]) => void): void {
  const chunks = storedChunks(db, partition);
  const rows = storedRows(db, 'nodes', partition);
  const decoded = rows.map((row) => decodeNode(row.json, chunks, undefined, row.id));
  edit(decoded.map((d) => d.node));
  const update = db.prepare('UPDATE nodes SET json = ? WHERE partition = ? AND id = ?');
  rows.forEach((row, i) => {
    const { node, edgeKeys } = decoded[i]!;
    update.run(encodeNode(node, derivedEdgesOf(node, edgeKeys), 'chunkId' in node ? chunks.get(node.chunkId) : undefined, undefined, true).json, partition, row.id);
  });
}

function editMeta(db: Database.Database, partition: string, edit: (meta: MemoryMeta) => void): void {
  const row = db.prepare('SELECT json FROM meta WHERE partition = ?').get(partition) as { json: string } | undefined;
  if (!row) throw new Error(`the store holds no memory ${partition}`);
  const meta = JSON.parse(row.json) as MemoryMeta;
  edit(meta);
  db.prepare('UPDATE meta SET json = ? WHERE partition = ?').run(JSON.stringify(meta), partition);
}

/** Every precision a store may have written a vector at. */
const VECTOR_PRECISIONS = ['f32', 'f16', 'i8', 'i4'] as const satisfies readonly VectorPrecision[];

export const STORED_DAMAGE: readonly StoredDamage[] = [
  {
    name: 'meta.nextKey = 1',
    damage: (db, partition) =>
      editMeta(db, partition, (meta) => {
        meta.nextKey = 1;
      }),
  },
  {
    name: 'two Episodes share a key',
    damage: (db, partition) =>
      editNodes(db, partition, (nodes) => {
        const episodes = nodes.filter((n) => n.layer === 'episode');
        second(episodes, 'Episodes').key = first(episodes, 'Episode').key;
      }),
  },
  {
    name: 'a chunk without turns',
    damage: (db, partition) => editChunks(db, partition, (chunks) => drop(first(chunks, 'chunk'), 'turns')),
  },
  {
    name: "a chunk whose stored text is shorter than its turns' lengths",
    damage: (db, partition) => {
      const [row] = storedRows(db, 'chunks', partition);
      if (!row) throw new Error('the scope holds no chunk');
      db.prepare('UPDATE chunks SET text = substr(text, 2) WHERE partition = ? AND id = ?').run(partition, row.id);
    },
  },
  {
    name: 'a chunk whose kept token count is negative',
    damage: (db, partition) =>
      editChunks(db, partition, (chunks) => {
        first(chunks, 'chunk').textTokens = -1;
      }),
  },
  {
    name: "a turn whose kept line token count is not a count",
    damage: (db, partition) =>
      editChunks(db, partition, (chunks) => {
        const turn = first(chunks, 'chunk').turns[0];
        if (turn) turn.lineTokens = 1.5;
      }),
  },
  {
    name: 'meta.dim 383 with 383-float vectors',
    // Whole, but written for another embedder's dimension.
    code: 'EMBEDDER_MISMATCH',
    damage: (db, partition) => {
      editMeta(db, partition, (meta) => {
        meta.dim = 383;
      });
      // Each value keeps its precision: the first bytes of a 384-d value are the 383-d value of its
      // first 383 dimensions (an i8 or i4 value is its scale, then its codes in dimension order).
      const groups = db.prepare('SELECT stem, members, data FROM vector_groups WHERE partition = ?').all(partition) as Array<{ stem: string; members: string; data: Uint8Array }>;
      for (const { stem, members, data } of groups) {
        const group = decodeVectorGroup(stem, { members, data });
        for (const [member, bytes] of group) {
          const precision = VECTOR_PRECISIONS.find((p) => encodedBytes(384, p) === bytes.length);
          if (!precision) throw new Error(`a ${bytes.length}-byte vector fits no precision of 384 dimensions`);
          group.set(member, bytes.subarray(0, encodedBytes(383, precision)));
        }
        const shorter = encodeVectorGroup(group);
        db.prepare('UPDATE vector_groups SET members = ?, data = ? WHERE partition = ? AND stem = ?').run(shorter.members, shorter.data, partition, stem);
      }
    },
  },
];

/** Writes `damage` into the scope's rows of the SQLite store at `path` and bumps its revision, so open handles reload it. */
export function damageStoredScope(path: string, scope: Scope, damage: StoredDamage): void {
  const db = new Database(path);
  try {
    const partition = partitionOf(resolveScope(scope));
    db.transaction(() => {
      damage.damage(db, partition);
      db.prepare('UPDATE revisions SET revision = revision + 1 WHERE partition = ?').run(partition);
    })();
  } finally {
    db.close();
  }
}
