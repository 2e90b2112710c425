import { PrismError } from '../errors.ts';
import type { MemorySnapshot } from '../graph/types.ts';
import { canonicalSnapshot, inIdOrder, snapshotAsBatch } from './snapshot.ts';
import { MAX_VECTOR_DIM, checkMemoryReferences, checkMemoryStructure, checkMeta, type Fail } from './validate-snapshot.ts';
import type { GraphStore, WriteBatch } from './types.ts';

/**
 * The portable checkpoint: one byte layout that every backend exports and imports.
 *
 *   offset  size  field
 *   0       8     magic  89 'P' 'R' 'S' 'M' 0D 0A 1A
 *   8       4     format version (u32 LE)
 *   12      4     JSON section byte length (u32 LE)
 *   16      4     vector count (u32 LE)
 *   20      4     vector dimension (u32 LE)
 *   24      J     JSON section (UTF-8), zero-padded to a multiple of 4
 *   ...     V     vectors: count × dim f32 LE, in the order of the JSON's `vectorIds`
 *   end-4   4     CRC-32 (IEEE) of every byte before it (u32 LE)
 *
 * The magic borrows PNG's trick: the high byte and CR LF / EOF bytes expose transfers that
 * mangled the file as text. Vectors are raw little-endian f32 — what WebAssembly and every
 * host PRISM targets use — so they copy in and out without per-float conversion. Records
 * are written in canonical id order, so the same memory gives the same bytes on any backend.
 */

export const CHECKPOINT_FORMAT_VERSION = 1;
const MAGIC = Uint8Array.of(0x89, 0x50, 0x52, 0x53, 0x4d, 0x0d, 0x0a, 0x1a);
const HEADER_BYTES = 24;
const TRAILER_BYTES = 4;

interface JsonSection {
  meta: MemorySnapshot['meta'];
  nodes: MemorySnapshot['nodes'];
  edges: MemorySnapshot['edges'];
  chunks: MemorySnapshot['chunks'];
  hashes: string[];
  vectorIds: string[];
}

let crcTable: Uint32Array | undefined;

function crc32(bytes: Uint8Array): number {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  const table = crcTable;
  let crc = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) crc = (table[(crc ^ (bytes[i] as number)) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function corrupt(message: string, cause?: unknown): never {
  throw new PrismError('CORRUPT_CHECKPOINT', `corrupt checkpoint: ${message}`, { cause });
}

/** `Fail` for the records of a checkpoint: whatever check failed, the checkpoint is corrupt. */
const corruptRecord: Fail = (message) => corrupt(message);

const padTo4 = (n: number): number => (n + 3) & ~3;

export function encodeCheckpoint(snapshot: MemorySnapshot): Uint8Array {
  const canonical = canonicalSnapshot(snapshot);
  const vectorIds = [...canonical.vectors.keys()];
  const section: JsonSection = {
    meta: canonical.meta,
    nodes: canonical.nodes,
    edges: canonical.edges,
    chunks: canonical.chunks,
    hashes: [...canonical.hashes],
    vectorIds,
  };
  const json = new TextEncoder().encode(JSON.stringify(section));
  const dim = canonical.meta.dim;
  const vectorsAt = HEADER_BYTES + padTo4(json.length);
  const total = vectorsAt + vectorIds.length * dim * 4 + TRAILER_BYTES;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  out.set(MAGIC, 0);
  view.setUint32(8, CHECKPOINT_FORMAT_VERSION, true);
  view.setUint32(12, json.length, true);
  view.setUint32(16, vectorIds.length, true);
  view.setUint32(20, dim, true);
  out.set(json, HEADER_BYTES);
  let offset = vectorsAt;
  for (const vector of canonical.vectors.values()) {
    out.set(new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength), offset);
    offset += vector.byteLength;
  }
  view.setUint32(total - TRAILER_BYTES, crc32(out.subarray(0, total - TRAILER_BYTES)), true);
  return out;
}

/**
 * Largest JSON section read. V8 holds strings of just under 2^29 UTF-16 units, so no engine
 * PRISM runs on could have written a larger one, and parsing one costs several times its size.
 */
const MAX_JSON_SECTION_BYTES = 2 ** 29;

function parseSection(json: Uint8Array): Partial<Record<keyof JsonSection, unknown>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(json));
  } catch (err) {
    corrupt('the JSON section does not parse', err);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) corrupt('the JSON section is not an object');
  return parsed;
}

function list(section: Partial<Record<keyof JsonSection, unknown>>, key: keyof JsonSection): unknown[] {
  const value = section[key];
  if (!Array.isArray(value)) corrupt(`the JSON section's ${key} is not an array`);
  return value;
}

/**
 * Decodes and verifies a checkpoint before anything reads its content: the header's sizes
 * against the bytes given (so a crafted header allocates nothing), the checksum, then every
 * record (`checkMemoryStructure`, `checkMemoryReferences`). Any damage throws
 * CORRUPT_CHECKPOINT naming the cause.
 */
export function decodeCheckpoint(bytes: Uint8Array): MemorySnapshot {
  if (bytes.length < MAGIC.length && MAGIC.subarray(0, bytes.length).every((b, i) => b === bytes[i])) {
    corrupt(`truncated: ${bytes.length} bytes`);
  }
  if (!MAGIC.every((b, i) => b === bytes[i])) corrupt('not a PRISM checkpoint (wrong magic bytes)');
  if (bytes.length < HEADER_BYTES + TRAILER_BYTES) corrupt(`truncated: ${bytes.length} bytes, shorter than the header`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint32(8, true);
  if (version !== CHECKPOINT_FORMAT_VERSION) {
    corrupt(`unsupported format version ${version}; this build reads version ${CHECKPOINT_FORMAT_VERSION}`);
  }
  const jsonBytes = view.getUint32(12, true);
  const vectorCount = view.getUint32(16, true);
  const dim = view.getUint32(20, true);
  if (jsonBytes > MAX_JSON_SECTION_BYTES) corrupt(`the header gives a ${jsonBytes}-byte JSON section; at most ${MAX_JSON_SECTION_BYTES} are read`);
  if (dim === 0 || dim > MAX_VECTOR_DIM) corrupt(`the header gives vector dimension ${dim}; it must be between 1 and ${MAX_VECTOR_DIM}`);
  const vectorsAt = HEADER_BYTES + padTo4(jsonBytes);
  // Below 2^32 × 2^16 × 4 = 2^50: exact in a double, so a product that overflowed cannot match.
  const expected = vectorsAt + vectorCount * dim * 4 + TRAILER_BYTES;
  if (bytes.length < expected) corrupt(`truncated: ${bytes.length} bytes, the header promises ${expected}`);
  if (bytes.length > expected) corrupt(`${bytes.length - expected} unexpected bytes after the end`);
  const stored = view.getUint32(expected - TRAILER_BYTES, true);
  const computed = crc32(bytes.subarray(0, expected - TRAILER_BYTES));
  if (stored !== computed) {
    corrupt(`checksum mismatch (stored ${stored.toString(16)}, computed ${computed.toString(16)}): the bytes were altered`);
  }

  const section = parseSection(bytes.subarray(HEADER_BYTES, HEADER_BYTES + jsonBytes));
  checkMeta(section.meta, corruptRecord);
  if (section.meta.dim !== dim) corrupt(`the header gives vector dimension ${dim}, meta.dim is ${section.meta.dim}`);
  const vectorIds = list(section, 'vectorIds');
  if (vectorIds.length !== vectorCount) corrupt(`the header counts ${vectorCount} vectors, the JSON section names ${vectorIds.length}`);
  const vectors = vectorIds.map((id, i): [unknown, Float32Array] => {
    const start = vectorsAt + i * dim * 4;
    // Copy byte-wise into a fresh vector: the input may sit at any offset (and a Node
    // Buffer's slice() would alias its pool rather than copy).
    const vector = new Float32Array(dim);
    new Uint8Array(vector.buffer).set(bytes.subarray(start, start + dim * 4));
    return [id, vector];
  });
  const snapshot = checkMemoryStructure(
    { meta: section.meta, nodes: list(section, 'nodes'), edges: list(section, 'edges'), chunks: list(section, 'chunks'), vectors, hashes: list(section, 'hashes') },
    corruptRecord,
  );
  checkMemoryReferences(snapshot, corruptRecord);
  return inIdOrder(snapshot);
}

/** One partition's memory as checkpoint bytes; an empty partition has nothing to export. */
export async function exportCheckpoint(store: GraphStore, partition: string): Promise<Uint8Array> {
  const snapshot = await store.load(partition);
  if (!snapshot) throw new PrismError('INVALID_INPUT', `partition ${JSON.stringify(partition)} is empty: there is no memory to export`);
  return encodeCheckpoint(snapshot);
}

/**
 * Replaces one partition's memory with `incoming` (a decoded checkpoint) in one commit: every
 * record the partition holds is deleted by the same batch that puts the new ones (deletes go
 * first), so an interrupted import leaves the old memory, never a mix. What the partition
 * holds is read from the store as it is: a memory too damaged to open is replaced all the
 * same. Other partitions and the cache area are left as they are. Returns the partition's new
 * revision. Callers that share the store hold its writer lock around this.
 */
export async function replacePartition(store: GraphStore, partition: string, incoming: MemorySnapshot): Promise<number> {
  const current = await store.load(partition);
  const batch: WriteBatch = {
    ...(current
      ? {
          deleteNodes: current.nodes.map((n) => n.id),
          deleteEdges: current.edges.map((e) => e.id),
          deleteChunks: current.chunks.map((c) => c.id),
          deleteVectors: [...current.vectors.keys()],
          deleteHashes: [...current.hashes],
        }
      : {}),
    ...snapshotAsBatch(incoming),
  };
  return store.commit(partition, batch);
}

/** `replacePartition` with checkpoint bytes; bad bytes throw CORRUPT_CHECKPOINT and change nothing. */
export async function importCheckpoint(store: GraphStore, partition: string, bytes: Uint8Array): Promise<number> {
  return replacePartition(store, partition, decodeCheckpoint(bytes));
}
