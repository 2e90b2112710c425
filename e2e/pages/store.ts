import { openDB } from 'idb';
import { PrismError } from '../../src/errors.ts';
import { MemoryGraph } from '../../src/graph/memory-graph.ts';
import type { GraphEdge, GraphNode, MemorySnapshot } from '../../src/graph/types.ts';
import { deletionBatch } from '../../src/ingest/chunk-removal.ts';
import { DEFAULT_PARTITION } from '../../src/scope.ts';
import { encodeCheckpoint, exportCheckpoint, importCheckpoint } from '../../src/store/checkpoint.ts';
import { IDB_SCHEMA_VERSION, IndexedDbStore } from '../../src/store/idb.ts';
import { DERIVED_OWNER, KeyFolder } from '../../src/store/idb-keys.ts';
import { MemoryStore } from '../../src/store/memory.ts';
import { Memory } from '../../src/memory.ts';
import { snapshotAsBatch } from '../../src/store/snapshot.ts';
import { decodeChunkRow, decodeEdge, encodeChunk, encodeEdge } from '../../src/store/record-codec.ts';
import { splitGroupValues } from '../../src/store/vector-groups.ts';
import { checkMemoryStructure } from '../../src/store/validate-snapshot.ts';
import { encodedBytes } from '../../src/store/vector-codec.ts';
import { packValue, unpacked } from '../../src/store/value-pack.ts';
import { wholeWorkingSet, type GraphStore, type WorkingSnapshot, type WriteBatch } from '../../src/store/types.ts';
import { censusOf, writerBatch } from '../../test/faults/store-records.ts';
import { mulberry32 } from '../../src/eval/stats.ts';
import { foldingBatches, ingestShapedSample, pagingBatches, sampleFollowUp, sampleMemory, sampleVector, vectorGroupBatches } from '../support/sample-memory.ts';
import { sha256Hex } from '../support/site.ts';
import { withStore } from './with-store.ts';
import { isRelationEdgeId } from '../../src/graph/derived-edges.ts';
import type { PartitionHost } from '../../src/memory/partition.ts';
import { loadUsearchWasm } from '../../src/vector/usearch-wasm.ts';
import usearchWasmUrl from '../../wasm/usearch.wasm?url';
import { hashEmbedder } from '../../test/helpers/hash-embedder.ts';
import { relationsAsOpenedSteps, type RelationsAsOpenedSteps } from '../support/graph-view.ts';

/** A PrismError as plain data, to cross from the page to the test. */
export interface Failure {
  code: string;
  message: string;
}

async function failureOf(run: () => Promise<unknown>): Promise<Failure | null> {
  try {
    await run();
    return null;
  } catch (err) {
    if (err instanceof PrismError) return { code: err.code, message: err.message };
    throw err;
  }
}

const P = DEFAULT_PARTITION;
/** A cached LLM reply long enough to pack. */
const LONG_CACHED = JSON.stringify(Array.from({ length: 40 }, (_, i) => ({ fact: `Caroline moved to Boston in ${2000 + (i % 7)} ✓`, confidence: 0.9 })));
const digestOf = async (store: GraphStore, partition = P): Promise<string> => sha256Hex(await exportCheckpoint(store, partition));

const storeHarness = {
  /** Writes the sample memory, its follow-up batch and a cache entry. */
  async write(name: string): Promise<void> {
    await withStore(name, async (store) => {
      await store.clear();
      await store.commit(P, snapshotAsBatch(sampleMemory()));
      await store.commit(P, sampleFollowUp());
      await store.putCached('greeting', 'hello ✓');
      await store.putCached('long', LONG_CACHED);
    });
  },

  /**
   * What the database holds, read through the store; the raw node and edge stores' record counts
   * and index names; and, of the stores whose values may be packed (and the vectors'), how many
   * values were sealed packed (value-pack.ts), and whether every one unpacks to the text it stored.
   */
  async read(name: string): Promise<{
    digest: string;
    cached: string | undefined;
    longCachedSame: boolean;
    revision: number;
    raw: Record<'nodes' | 'nodeGroups' | 'edges' | 'edgeGroups', { records: number; indexes: string[] }>;
    packing: Record<'chunks' | 'nodes' | 'nodeGroups' | 'edgeGroups' | 'vectorGroups' | 'cache', { values: number; packed: number }>;
  }> {
    const { digest, cached, longCachedSame, revision } = await withStore(name, async (store) => ({
      digest: await digestOf(store),
      cached: await store.getCached('greeting'),
      longCachedSame: (await store.getCached('long')) === LONG_CACHED,
      revision: await store.revision(P),
    }));
    const raw = await openDB(name);
    const keys = await KeyFolder.open(name);
    try {
      const packing = Object.fromEntries(
        await Promise.all(
          (['chunks', 'nodes', 'nodeGroups', 'edgeGroups', 'vectorGroups', 'cache'] as const).map(async (store) => {
            const [recordKeys, values] = await Promise.all([raw.getAllKeys(store), raw.getAll(store)]);
            let packed = 0;
            for (const [i, key] of (recordKeys as Array<[number, string] | string>).entries()) {
              const value = values[i] as { keyId: string; sealed: ArrayBuffer };
              // A record's ring is its partition's; the LLM cache has one of its own.
              const ring = await keys.read(typeof key === 'string' ? 'cache' : `p${key[0]}`);
              const plain = await keys.unseal(ring, value.keyId, value.sealed);
              if (unpacked(plain) !== plain) packed++;
            }
            return [store, { values: values.length, packed }] as const;
          }),
        ),
      ) as Record<'chunks' | 'nodes' | 'nodeGroups' | 'edgeGroups' | 'vectorGroups' | 'cache', { values: number; packed: number }>;
      return {
        digest,
        cached,
        longCachedSame,
        revision,
        packing,
        raw: Object.fromEntries(
          await Promise.all(
            (['nodes', 'nodeGroups', 'edges', 'edgeGroups'] as const).map(async (store) => {
              const tx = raw.transaction(store);
              return [store, { records: await tx.store.count(), indexes: [...tx.store.indexNames] }] as const;
            }),
          ),
        ) as Record<'nodes' | 'nodeGroups' | 'edges' | 'edgeGroups', { records: number; indexes: string[] }>,
      };
    } finally {
      raw.close();
    }
  },

  /**
   * Applies the folding batches (see sample-memory) to IndexedDB and to a MemoryStore, and after
   * each compares what both hold; then counts the edge records of the derived types.
   */
  async foldsAsReference(
    name: string,
  ): Promise<{ differing: number[]; reopenedSame: boolean; derivedEdgeRecords: number; edgeRecords: number; groupedEdges: number; edgeGroups: number; nodeGroups: number; nodeRecords: number; entities: number; chunks: number }> {
    const reference = new MemoryStore();
    const differing: number[] = [];
    await withStore(name, async (store) => {
      await store.clear();
      for (const [i, batch] of foldingBatches(ingestShapedSample()).entries()) {
        await store.commit(P, batch);
        await reference.commit(P, batch);
        if ((await digestOf(store)) !== (await digestOf(reference))) differing.push(i);
      }
    });
    const reopenedSame = (await withStore(name, digestOf)) === (await digestOf(reference));
    // The edges a working set holds as edges are the stored ones (the folded ones come as keys).
    const working = await withStore(name, async (store) => wholeWorkingSet(await store.loadWorkingSet(P)));
    const held = working?.edges ?? [];
    const raw = await openDB(name);
    try {
      const derivedEdgeRecords = held.filter((edge) => edge.type === 'belongs_to' || edge.type === 'involves_entity').length;
      return {
        differing,
        reopenedSame,
        derivedEdgeRecords,
        edgeRecords: await raw.count('edges'),
        groupedEdges: ((await raw.getAll('edgeGroups')) as Array<{ members: unknown[] }>).reduce((sum, group) => sum + group.members.length, 0),
        edgeGroups: await raw.count('edgeGroups'),
        nodeGroups: await raw.count('nodeGroups'),
        nodeRecords: await raw.count('nodes'),
        entities: working?.nodes.filter((node) => node.layer === 'entity').length ?? 0,
        chunks: working?.chunks.length ?? 0,
      };
    } finally {
      raw.close();
    }
  },

  /**
   * Writes the folding batches, then renames the second member of one node group and of one edge
   * group to the first's id (the members are kept beside the sealed values, for the group's index,
   * so no key is needed to change them), and reads the working set again: the node group gives two
   * records of one id, which the open's structure check refuses; the edge group gives edge rows of
   * one id, read as such rows always are (the later kept).
   */
  async groupMemberNamedTwice(name: string): Promise<{ nodesOfId: number; nodeCheck: Failure | null; edgesOfId: number }> {
    await withStore(name, async (store) => {
      await store.clear();
      for (const batch of foldingBatches(ingestShapedSample())) await store.commit(P, batch);
    });
    const raw = await openDB(name);
    const twice: Record<'nodeGroups' | 'edgeGroups', string> = { nodeGroups: '', edgeGroups: '' };
    try {
      for (const groups of ['nodeGroups', 'edgeGroups'] as const) {
        for (const key of (await raw.getAllKeys(groups)) as Array<[number, string]>) {
          const value = (await raw.get(groups, key)) as { members: Array<[number, string]> };
          // Two members of one kind: an edge group's relation edges stay rows, its other edges are decoded.
          const [first, second] = value.members;
          if (!first || !second || isRelationEdgeId(first[1]) !== isRelationEdgeId(second[1])) continue;
          twice[groups] = first[1];
          value.members[1] = first;
          await raw.put(groups, value, key);
          break;
        }
      }
    } finally {
      raw.close();
    }
    const working = await withStore(name, async (store) => wholeWorkingSet(await store.loadWorkingSet(P)));
    if (!working || twice.nodeGroups === '' || twice.edgeGroups === '') throw new Error('no group of two members to change');
    const edges = isRelationEdgeId(twice.edgeGroups) ? (working.relations?.all().edges ?? []) : working.edges;
    return {
      nodesOfId: working.nodes.filter((node) => node.id === twice.nodeGroups).length,
      nodeCheck: await failureOf(async () =>
        checkMemoryStructure(working, (message) => {
          throw new PrismError('CORRUPT_CHECKPOINT', message);
        }),
      ),
      edgesOfId: edges.filter((edge) => edge.id === twice.edgeGroups).length,
    };
  },

  /**
   * Applies the vector-group batches (see sample-memory) to IndexedDB and to a MemoryStore,
   * comparing what both hold after each; after each, the vector group records, the vectors they
   * hold and the vectors the reference holds, and the vector records of one vector each.
   */
  async vectorGroupsAsReference(name: string): Promise<{ differing: number[]; groups: Array<{ records: number; members: number; vectors: number; emptyRecords: number; single: number }>; reopenedSame: boolean }> {
    const reference = new MemoryStore();
    const differing: number[] = [];
    const groups: Array<{ records: number; members: number; vectors: number; emptyRecords: number; single: number }> = [];
    await withStore(name, async (store) => {
      for (const [i, batch] of vectorGroupBatches().entries()) {
        await store.commit(P, batch);
        await reference.commit(P, batch);
        if ((await digestOf(store)) !== (await digestOf(reference))) differing.push(i);
        const raw = await openDB(name);
        try {
          const records = (await raw.getAll('vectorGroups')) as Array<{ members: unknown[] }>;
          groups.push({
            records: records.length,
            members: records.reduce((sum, group) => sum + group.members.length, 0),
            vectors: (await reference.load(P))?.vectors.size ?? 0,
            emptyRecords: records.filter((group) => group.members.length === 0).length,
            single: await raw.count('vectors'),
          });
        } finally {
          raw.close();
        }
      }
    });
    const reopenedSame = (await withStore(name, digestOf)) === (await digestOf(reference));
    return { differing, groups, reopenedSame };
  },

  /**
   * Derived state (`GraphStore.saveDerived`) through its life: saved at the current revision,
   * read back (in this connection and a new one), kept by a commit that only adds, refused for a
   * revision gone by, dropped with its key by a delete and by a clear. Reports what each step saw.
   */
  async derivedState(name: string): Promise<{ steps: Record<string, unknown>; derivedKeyRetired: boolean }> {
    const steps: Record<string, unknown> = {};
    const bytes = Uint8Array.from({ length: 100_000 }, (_, i) => (i * 7919) % 251);
    const sameBytes = (read: { bytes: Uint8Array } | null): boolean => read !== null && read.bytes.length === bytes.length && read.bytes.every((b, i) => b === bytes[i]);
    let derivedKey: string | undefined;
    let revision = 0;
    await withStore(name, async (store) => {
      await store.clear();
      steps['beforeAnyMemory'] = await store.saveDerived(P, 'lexical', 0, bytes);
      revision = await store.commit(P, snapshotAsBatch(sampleMemory()));
      steps['saved'] = await store.saveDerived(P, 'lexical', revision, bytes);
      const read = await store.loadDerived(P, 'lexical');
      steps['readBack'] = read?.revision === revision && sameBytes(read);
      const raw = await openDB(name);
      const [token] = await raw.getAllKeys('meta');
      const [record] = (await raw.getAll('derived')) as Array<{ keyId: string; sealed: ArrayBuffer }>;
      raw.close();
      const ring = await (await KeyFolder.open(name)).read(`p${String(token)}`);
      derivedKey = ring.keyOf(DERIVED_OWNER);
      steps['sealedUnderItsOwnKey'] = derivedKey !== undefined && record?.keyId === derivedKey && derivedKey !== ring.keyOf(null);
    });
    await withStore(name, async (store) => {
      const read = await store.loadDerived(P, 'lexical');
      steps['readByAnotherConnection'] = read?.revision === revision && sameBytes(read);
      const added = await store.commit(P, { putHashes: ['one-more'] });
      steps['keptByAnAdd'] = (await store.loadDerived(P, 'lexical'))?.revision === revision;
      steps['refusedForRevisionGoneBy'] = !(await store.saveDerived(P, 'lexical', revision, bytes));
      steps['savedAgain'] = await store.saveDerived(P, 'lexical', added, bytes);
      await store.commit(P, sampleFollowUp());
      steps['droppedByDelete'] = (await store.loadDerived(P, 'lexical')) === null;
      steps['savedAfterDelete'] = await store.saveDerived(P, 'lexical', await store.revision(P), bytes);
      await store.clear(P);
      steps['droppedByClear'] = (await store.loadDerived(P, 'lexical')) === null;
    });
    const rings = await KeyFolder.open(name);
    const raw = await openDB(name);
    const tokens = await raw.getAllKeys('revisions');
    raw.close();
    const live = await Promise.all(tokens.map(async (token) => (await rings.read(`p${String(token)}`)).ids));
    return { steps, derivedKeyRetired: derivedKey !== undefined && !live.flat().includes(derivedKey) };
  },

  /**
   * Applies the paging batches (see sample-memory) to IndexedDB and to a MemoryStore, comparing
   * what both hold after each; counts the page records, and tells after each batch which pages'
   * sealed bytes changed (a page written again is sealed afresh, under a new IV).
   */
  /**
   * The folding batches over a database whose nodes were written before v8, one record a node,
   * its edges before v10, one record an edge, and before v9, each value holding its id (an edge's,
   * its type and ends): after the first batch, each node and edge group is taken apart into
   * records sealed under its key, and every node and edge value gets back what its key names, as
   * v7 wrote them. Every later batch must leave what
   * the reference store holds, and a node put or deleted leaves its record (none is ever held
   * twice); last, every node is put again, into keyed values (`keyedAtEnd`).
   */
  async nodesFromBeforeV8(
    name: string,
  ): Promise<{ differing: number[]; reopenedSame: boolean; records: number[]; groups: number[]; entities: number; unkeyedAtStart: number; keyedAtEnd: boolean; edgeRecordsAtStart: number; edgeRecordsAtEnd: number }> {
    const reference = new MemoryStore();
    const differing: number[] = [];
    const records: number[] = [];
    const groups: number[] = [];
    const [first, ...rest] = foldingBatches(ingestShapedSample());
    await withStore(name, async (store) => {
      await store.clear();
      await store.commit(P, first!);
      await reference.commit(P, first!);
    });
    const raw = await openDB(name);
    const keys = await KeyFolder.open(name);
    let unkeyedAtStart = 0;
    let edgeRecordsAtStart = 0;
    // A value as v8 and before wrote it: a node array with its id, an edge array with its type and ends.
    const unkeyed = (id: string, bytes: Uint8Array, isEdge = false): Uint8Array<ArrayBuffer> => {
      const values: unknown = JSON.parse(new TextDecoder().decode(bytes));
      if (!Array.isArray(values) || values[1] !== null) return new Uint8Array(bytes);
      unkeyedAtStart++;
      if (isEdge) return new TextEncoder().encode(encodeEdge(decodeEdge(new TextDecoder().decode(bytes), id)));
      values[1] = id;
      return new TextEncoder().encode(JSON.stringify(values));
    };
    try {
      // Each node group, and (before v10) each edge group, taken apart into records sealed under its key.
      for (const [groups, singles] of [['nodeGroups', 'nodes'], ['edgeGroups', 'edges']] as const) {
        for (const [token, keyId] of (await raw.getAllKeys(groups)) as Array<[number, string]>) {
          const value = (await raw.get(groups, [token, keyId])) as { keyId: string; members: Array<[number, string]>; sealed: ArrayBuffer };
          const ring = await keys.read(`p${token}`);
          const values = splitGroupValues(groups, value.members.map(([, id]) => id), unpacked(await keys.unseal(ring, keyId, value.sealed)));
          const sealed = await Promise.all([...values].map(async ([id, bytes]) => [id, { keyId, sealed: await keys.seal(ring, keyId, new Uint8Array(bytes)) }] as const));
          const tx = raw.transaction([singles, groups], 'readwrite');
          await Promise.all([...sealed.map(([id, record]) => tx.objectStore(singles).put(record, [token, id])), tx.objectStore(groups).delete([token, keyId]), tx.done]);
        }
      }
      edgeRecordsAtStart = await raw.count('edges');
      for (const store of ['nodes', 'edges'] as const) {
        for (const [token, id] of (await raw.getAllKeys(store)) as Array<[number, string]>) {
          const value = (await raw.get(store, [token, id])) as { keyId: string; sealed: ArrayBuffer };
          const ring = await keys.read(`p${token}`);
          const plain = unkeyed(id, unpacked(await keys.unseal(ring, value.keyId, value.sealed)), store === 'edges');
          await raw.put(store, { keyId: value.keyId, sealed: await keys.seal(ring, value.keyId, plain) }, [token, id]);
        }
      }
    } finally {
      raw.close();
    }
    const count = async (): Promise<void> => {
      const db = await openDB(name);
      records.push(await db.count('nodes'));
      groups.push(await db.count('nodeGroups'));
      db.close();
    };
    await count();
    // Last, every node put again as it is: each but the Entities leaves its record for its group.
    const again = async (): Promise<WriteBatch> => ({ putNodes: (await reference.load(P))?.nodes ?? [] });
    await withStore(name, async (store) => {
      if ((await digestOf(store)) !== (await digestOf(reference))) differing.push(0);
      for (const [i, batch] of [...rest, null].entries()) {
        if (i === rest.length) await count();
        const next = batch ?? (await again());
        await store.commit(P, next);
        await reference.commit(P, next);
        if ((await digestOf(store)) !== (await digestOf(reference))) differing.push(i + 1);
      }
    });
    await count();
    const reopenedSame = (await withStore(name, digestOf)) === (await digestOf(reference));
    const entities = ((await reference.load(P))?.nodes ?? []).filter((node) => node.layer === 'entity').length;
    // Every node value now in the keyed form, its id left to its key.
    const db = await openDB(name);
    let keyedAtEnd = true;
    let edgeRecordsAtEnd = 0;
    try {
      edgeRecordsAtEnd = await db.count('edges');
      for (const [token, keyId] of (await db.getAllKeys('nodeGroups')) as Array<[number, string]>) {
        const value = (await db.get('nodeGroups', [token, keyId])) as { keyId: string; members: Array<[number, string]>; sealed: ArrayBuffer };
        const ring = await keys.read(`p${token}`);
        const values = splitGroupValues('node group', value.members.map(([, id]) => id), unpacked(await keys.unseal(ring, keyId, value.sealed)));
        for (const bytes of values.values()) keyedAtEnd &&= JSON.parse(new TextDecoder().decode(bytes))[1] === null;
      }
    } finally {
      db.close();
    }
    return { differing, reopenedSame, records, groups, entities, unkeyedAtStart, keyedAtEnd, edgeRecordsAtStart, edgeRecordsAtEnd };
  },

  /**
   * Chunks as v11 and before wrote them, their text in their record: an ingest-shaped memory written,
   * then every chunk value rewritten so (as `encodeChunk` writes it); the store must read it as
   * the reference store holds it, and a chunk put again keeps its turns' texts apart once more
   * (v12: the record, a 0 byte, the texts).
   */
  async chunksFromBeforeV12(name: string): Promise<{ apartAtStart: number; apartAtEnd: number; chunks: number; readSame: boolean; putAgainSame: boolean }> {
    const reference = new MemoryStore();
    // Chunks as ingest makes them, their text the canonical join (a hand-made text stays in its record).
    const sample = ingestShapedSample();
    await withStore(name, async (store) => {
      await store.clear();
      await store.commit(P, snapshotAsBatch(sample));
    });
    await reference.commit(P, snapshotAsBatch(sample));
    const raw = await openDB(name);
    const keys = await KeyFolder.open(name);
    const countApart = async (rewrite: boolean): Promise<number> => {
      let apart = 0;
      for (const [token, id] of (await raw.getAllKeys('chunks')) as Array<[number, string]>) {
        const value = (await raw.get('chunks', [token, id])) as { keyId: string; sealed: ArrayBuffer };
        const ring = await keys.read(`p${token}`);
        const plain = unpacked(await keys.unseal(ring, value.keyId, value.sealed));
        const end = plain.indexOf(0);
        if (end < 0) continue;
        apart++;
        if (!rewrite) continue;
        const chunk = decodeChunkRow(new TextDecoder().decode(plain.subarray(0, end)), new TextDecoder().decode(plain.subarray(end + 1)));
        const before = packValue(new TextEncoder().encode(encodeChunk(chunk)));
        await raw.put('chunks', { keyId: value.keyId, sealed: await keys.seal(ring, value.keyId, before) }, [token, id]);
      }
      return apart;
    };
    try {
      const apartAtStart = await countApart(true);
      const rewritten = await countApart(false);
      if (rewritten !== 0) throw new Error(`${rewritten} chunk values still hold their texts apart`);
      const readSame = (await withStore(name, digestOf)) === (await digestOf(reference));
      await withStore(name, (store) => store.commit(P, { putChunks: sample.chunks }));
      await reference.commit(P, { putChunks: sample.chunks });
      const putAgainSame = (await withStore(name, digestOf)) === (await digestOf(reference));
      return { apartAtStart, apartAtEnd: await countApart(false), chunks: sample.chunks.length, readSame, putAgainSame };
    } finally {
      raw.close();
    }
  },

  async pagesAsReference(name: string): Promise<{ differing: number[]; pageRecords: number[]; rewritten: number[][]; reopenedSame: boolean }> {
    const reference = new MemoryStore();
    const differing: number[] = [];
    const pageRecords: number[] = [];
    const rewritten: number[][] = [];
    const sealedPages = async (): Promise<Map<number, string>> => {
      const raw = await openDB(name);
      try {
        const keys = (await raw.getAllKeys('entityPages')) as Array<[number, string, number]>;
        const values = (await raw.getAll('entityPages')) as Array<{ sealed: ArrayBuffer }>;
        return new Map(keys.map(([, , page], i) => [page, btoa(String.fromCharCode(...new Uint8Array(values[i]!.sealed)))]));
      } finally {
        raw.close();
      }
    };
    await withStore(name, async (store) => {
      await store.clear();
      for (const [i, batch] of pagingBatches().entries()) {
        const before = await sealedPages();
        await store.commit(P, batch);
        await reference.commit(P, batch);
        if ((await digestOf(store)) !== (await digestOf(reference))) differing.push(i);
        const after = await sealedPages();
        pageRecords.push(after.size);
        if (i > 0) rewritten.push([...after].filter(([page, sealed]) => before.get(page) !== sealed).map(([page]) => page));
      }
    });
    const reopenedSame = (await withStore(name, digestOf)) === (await digestOf(reference));
    return { differing, pageRecords, rewritten, reopenedSame };
  },

  /**
   * Two key folders on one database's rings, as two tabs hold them: each reads what the other
   * wrote although it keeps the ring it last read or wrote; a ring file written before rings had a
   * stamp reads too.
   */
  async ringsAcrossFolders(name: string): Promise<{ seenByOther: boolean; seenBack: boolean[]; legacyRead: boolean }> {
    const [first, second] = [await KeyFolder.open(name), await KeyFolder.open(name)];
    const ring = await first.read('shared');
    const a = ring.add('chunk-a');
    await first.write(ring);
    const other = await second.read('shared');
    const b = other.add('chunk-b');
    await second.write(other);
    const back = await first.read('shared');
    const root = await navigator.storage.getDirectory();
    const folder = await root.getDirectoryHandle(`prism-memory-keys-${encodeURIComponent(name)}`);
    const writable = await (await folder.getFileHandle('legacy', { create: true })).createWritable();
    await writable.write(JSON.stringify({ keys: [{ id: 'k1', owner: null, key: btoa('x'.repeat(32)) }] }));
    await writable.close();
    const legacy = await first.read('legacy');
    await Promise.all(['shared', 'legacy'].map((file) => first.remove(file)));
    return { seenByOther: other.has(a), seenBack: [back.has(a), back.has(b)], legacyRead: legacy.has('k1') && legacy.keyOf(null) === 'k1' };
  },

  /**
   * A bulk read (`KeyFolder.bulkRead`) of a database of sealed values (300 single values of ~3 MB
   * in all and 30 groups under partition 7, the values under partitions 6 and 8 too): by the worker, and
   * where no `Worker` exists by the same program on this thread. Each way the values of partition 7
   * alone must come back decoded, in key order, part after part (a part holds ~1 MB; the values
   * are read 256 records a request), each with its key's id, after the values read at one key were
   * handed over, with the keys of a store read keys alone and the groups' member ids; a value sealed under a key
   * added to the ring after the read began is unsealed on this thread under the ring read again;
   * a value altered, or sealed under a key no ring holds, must fail with CORRUPT_CHECKPOINT, and
   * the same folder must read again after; a database upgraded since the page opened it must not
   * be read.
   */
  async bulkReading(name: string): Promise<{ ways: Record<string, { same: boolean; workers: number }>; packedValues: number; lateKey: boolean; altered: Failure | null; badPack: Failure | null; missingKey: Failure | null; readAfterFailure: boolean; upgradedSince: string }> {
    const folder = await KeyFolder.open(name);
    const ring = await folder.read('reading');
    const keys = [ring.add('chunk-a'), ring.add('chunk-b'), ring.add(null)];
    const random = mulberry32(11);
    // Random bytes, which do not pack (so are stored as they are, as values from before packing),
    // and every third value text-like, words drawn from a few, which packs.
    const words = Array.from({ length: 40 }, () => Array.from({ length: 2 + Math.floor(random() * 8) }, () => String.fromCharCode(97 + Math.floor(random() * 26))).join(''));
    const textLike = (length: number) => new TextEncoder().encode(Array.from({ length: Math.ceil(length / 5) }, () => words[Math.floor(random() * words.length)]).join(' ').slice(0, length));
    const plains = Array.from({ length: 300 }, (_, i) => {
      const length = i % 50 === 0 ? 40_000 : 1 + Math.floor(random() * 12_000);
      return i % 3 === 0 ? textLike(length) : Uint8Array.from({ length }, () => Math.floor(random() * 256));
    });
    const packedValues = plains.filter((plain) => packValue(plain) !== plain).length;
    const checksumOf = (plain: Uint8Array) => `${plain.length}:${plain.reduce((sum, byte, i) => (sum * 31 + byte + i) % 1_000_003, 7)}`;
    const id = (i: number) => `v${String(i).padStart(4, '0')}`;
    const database = `${name}-db`;
    const db = await openDB(database, 1, {
      upgrade(db) {
        for (const store of ['meta', 'values', 'groups']) db.createObjectStore(store);
      },
    });
    /** Every value, and a group every 10 values (its members the ids of those values), sealed anew: `keyOf` picks each one's key. */
    const write = async (keyOf: (i: number) => string) => {
      const tx = db.transaction(['meta', 'values', 'groups'], 'readwrite');
      await tx.objectStore('meta').put({ partition: 7 }, 7);
      for (const [i, plain] of plains.entries()) {
        const keyId = keyOf(i);
        for (const token of [6, 7, 8]) await tx.objectStore('values').put({ keyId, sealed: await folder.seal(ring, keyId, packValue(token === 7 ? plain : plain.slice(1))) }, [token, id(i)]);
        if (i % 10 === 0) await tx.objectStore('groups').put({ keyId, sealed: await folder.seal(ring, keyId, packValue(plain)), members: [0, 1, 2].map((m) => [7, id(i + m)]) }, [7, id(i)]);
      }
      await tx.done;
    };
    const expected = JSON.stringify({
      got: [{ partition: 7 }, null],
      ids: plains.map((_, i) => id(i)),
      values: plains.map((plain, i) => `${id(i)}=${checksumOf(plain)}`),
      groups: plains.flatMap((plain, i) => (i % 10 === 0 ? [`${[0, 1, 2].map((m) => id(i + m)).join('|')}#${checksumOf(plain)}`] : [])),
    });
    const read = async (ringNow = ring, ringWith = () => folder.read('reading')) => {
      // The values read at one key are handed over once, before any value is decoded.
      let opened = 0;
      const afterOpened = <T>(decoded: T): T => {
        if (opened !== 1) throw new Error(`a value decoded with the values read at one key handed over ${opened} times`);
        return decoded;
      };
      const reading = folder.bulkRead(
        ringNow,
        { database, version: 1, lower: [7], upper: [7, []], gets: [['meta', 7], ['meta', 9]], keysOf: ['values'], packed: ['values', 'groups'] },
        { values: (plain, value) => afterOpened(`${value.id}=${checksumOf(plain)}`), groups: (plain, group) => afterOpened(`${(group.members ?? []).join('|')}#${checksumOf(plain)}`) },
        ringWith,
        async () => {
          opened++;
        },
      );
      const [got, ids, values, groups] = await Promise.all([reading.got, reading.keys('values'), reading.values.values, reading.values.groups, reading.done]);
      return JSON.stringify({ got: got.map((value) => value ?? null), ids, values, groups });
    };
    // Workers made, counted: the page's thread reads only where none is.
    const RealWorker = globalThis.Worker;
    let workers = 0;
    const counting = class extends RealWorker {
      constructor(...args: ConstructorParameters<typeof Worker>) {
        super(...args);
        workers++;
      }
    };
    const countingWorkers = async <T>(kind: typeof Worker | undefined, run: () => Promise<T>): Promise<{ result: T; workers: number }> => {
      workers = 0;
      Object.defineProperty(globalThis, 'Worker', { value: kind, configurable: true, writable: true });
      try {
        return { result: await run(), workers };
      } finally {
        Object.defineProperty(globalThis, 'Worker', { value: RealWorker, configurable: true, writable: true });
      }
    };
    await write((i) => keys[i % keys.length] as string);
    await folder.write(ring);
    const ways: Record<string, { same: boolean; workers: number }> = {};
    for (const [way, kind] of [['inWorker', counting], ['noWorker', undefined]] as const) {
      const { result, workers: made } = await countingWorkers(kind, () => read());
      ways[way] = { same: result === expected, workers: made };
    }
    // A key the ring handed to the read lacks (added after): its values come back sealed and are unsealed here.
    const before = ring.copy();
    const late = ring.add('chunk-late');
    await write((i) => (i % 7 === 0 ? late : (keys[i % keys.length] as string)));
    await folder.write(ring);
    const lateKey = (await read(before)) === expected;
    const tx = db.transaction('values', 'readwrite');
    const victim = (await tx.store.get([7, id(150)])) as { keyId: string; sealed: ArrayBuffer };
    const scribbled = new Uint8Array(victim.sealed.slice(0));
    scribbled[40] = (scribbled[40] as number) ^ 1;
    await tx.store.put({ keyId: victim.keyId, sealed: scribbled.buffer }, [7, id(150)]);
    await tx.done;
    const altered = await failureOf(() => read());
    // Sealed whole but packed wrong (its stated length one more than its sequences make).
    await write((i) => keys[i % keys.length] as string);
    const misstated = packValue(plains[150 - (150 % 3)] as Uint8Array<ArrayBuffer>).slice();
    misstated[4] = (misstated[4] as number) + 1;
    const misstatedKey = keys[0] as string;
    await db.put('values', { keyId: misstatedKey, sealed: await folder.seal(ring, misstatedKey, misstated) }, [7, id(150 - (150 % 3))]);
    const badPack = await failureOf(() => read());
    await write((i) => keys[i % keys.length] as string);
    const unknown = (await db.get('values', [7, id(7)])) as { keyId: string; sealed: ArrayBuffer };
    await db.put('values', { keyId: 'not-in-the-ring', sealed: unknown.sealed }, [7, id(7)]);
    const missingKey = await failureOf(() => read());
    await write((i) => keys[i % keys.length] as string);
    const readAfterFailure = (await read()) === expected;
    // Upgraded since (another tab's newer build): the read, at the version the page opened, is refused, not read in a schema it does not know.
    db.close();
    (await openDB(database, 2)).close();
    const upgradedSince = await read().then(
      () => 'read',
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );
    await folder.remove('reading');
    return { ways, packedValues, lateKey, altered, badPack, missingKey, readAfterFailure, upgradedSince };
  },

  /**
   * The working set leaves its relation edges as the open read them (`relationsAsOpened`): the
   * graphs built from it against the whole load's, batch after batch, written to as well
   * (`relationsAsOpenedSteps`), and what it holds of those edges against what the whole load holds.
   */
  async relationsAsOpened(name: string): Promise<RelationsAsOpenedSteps & { asOpened: boolean; sameEdges: boolean; sameCounts: boolean; relationEdges: number; heldWithoutVector: number; keyedVectors: number; vectorsById: number; vectorsLater: boolean }> {
    const usearch = await loadUsearchWasm(new URL(usearchWasmUrl, location.href));
    return withStore(name, async (store) => {
      await store.clear();
      const host: PartitionHost = { store, embedder: hashEmbedder(), createIndex: (dim) => usearch.createIndex({ dim }) };
      const steps = await relationsAsOpenedSteps(store, host, async () => (await store.loadWorkingSet(P)) as WorkingSnapshot);
      const read = (await store.loadWorkingSet(P)) as WorkingSnapshot;
      const vectorsLater = read.vectorsLater !== undefined;
      const working = await wholeWorkingSet(read);
      const whole = (await store.load(P)) as MemorySnapshot;
      const rows = (edges: readonly GraphEdge[]) => edges.map((edge) => JSON.stringify(edge)).sort();
      const left = working.relations;
      // The vectors come as IndexedDB's groups, listed by member id, for the open to hand to their indexes by key.
      const vectorIds = new Set([...working.vectors.keys(), ...(working.keyedVectors ?? []).flatMap((group) => ('ids' in group ? group.ids : []))]);
      const wholeRelations = whole.edges.filter((edge) => isRelationEdgeId(edge.id));
      const counted: Record<string, number> = {};
      for (const edge of wholeRelations) counted[edge.type] = (counted[edge.type] ?? 0) + 1;
      const counts = Object.fromEntries(Object.entries(left?.counts() ?? {}).filter(([, count]) => count > 0));
      return {
        ...steps,
        asOpened: left?.asOpened !== undefined,
        sameEdges: JSON.stringify(rows(left?.all().edges ?? [])) === JSON.stringify(rows(wholeRelations)),
        sameCounts: JSON.stringify(Object.entries(counts).sort()) === JSON.stringify(Object.entries(counted).sort()),
        relationEdges: wholeRelations.length,
        heldWithoutVector: working.edges.filter((edge) => isRelationEdgeId(edge.id) && !vectorIds.has(edge.id)).length,
        keyedVectors: working.keyedVectors?.length ?? 0,
        vectorsById: working.vectors.size,
        vectorsLater,
      };
    });
  },

  /**
   * Relation edges left unread by the open (`WorkingSnapshot.relationsRead`): where the edge groups
   * hold nothing else, reading them before that throws, after it they are the whole load's; an edge
   * group holding another edge is read at the open. Through `Memory`: a search of a handle opened so
   * reads none, and a write by another handle before they are read is caught up with (its stats are
   * the writer's).
   */
  async relationsLeftUnread(name: string): Promise<{ later: boolean; earlyThrows: boolean; same: boolean; laterWithOther: boolean; searched: boolean; statsAfterOtherWriter: boolean; relationEdges: number }> {
    const usearch = await loadUsearchWasm(new URL(usearchWasmUrl, location.href));
    const rows = (edges: readonly GraphEdge[]) => JSON.stringify(edges.map((edge) => JSON.stringify(edge)).sort());
    const found = await withStore(name, async (store) => {
      await store.clear();
      const sample = ingestShapedSample();
      await store.commit(P, snapshotAsBatch(sample));
      const first = (await store.loadWorkingSet(P)) as WorkingSnapshot;
      let earlyThrows = false;
      try {
        first.relations?.all();
      } catch {
        earlyThrows = true;
      }
      const working = await wholeWorkingSet(first);
      const whole = (await store.load(P)) as MemorySnapshot;
      const relationEdges = whole.edges.filter((edge) => isRelationEdgeId(edge.id));
      const same = rows(working.relations?.all().edges ?? []) === rows(relationEdges);
      // An edge row of a derived type (a description makes it one graph building does not derive) joins its chunk's edge group.
      const held = sample.edges.find((edge) => edge.type === 'belongs_to') as GraphEdge;
      await store.commit(P, { putEdges: [{ ...held, description: 'held' }] });
      const second = (await store.loadWorkingSet(P)) as WorkingSnapshot;
      await wholeWorkingSet(second);
      return { later: first.relationsRead !== undefined, earlyThrows, same, laterWithOther: second.relationsRead !== undefined, relationEdges: relationEdges.length };
    });
    const memoryName = `${name}-memory`;
    await withStore(memoryName, (store) => store.clear());
    const open = async () => Memory.open({ store: await IndexedDbStore.open({ name: memoryName }), embedder: hashEmbedder(), createIndex: (dim) => usearch.createIndex({ dim }), llm: null });
    const session = (i: number) => [
      { role: 'user' as const, content: `My sister Maya moved to Lisbon in year ${2020 + i} and opened bakery number ${i}.` },
      { role: 'assistant' as const, content: `Lovely: Maya's bakery ${i} in Lisbon sounds wonderful.` },
    ];
    const writer = await open();
    for (let i = 0; i < 3; i++) await writer.add(session(i), { sessionId: `s${i}`, date: `2024-0${i + 1}-01` });
    const reader = await open();
    const searched = (await reader.search('Where did Maya move?', { budget: 256 })).context.includes('Maya');
    await writer.add(session(3), { sessionId: 's3', date: '2024-04-01' });
    const statsAfterOtherWriter = JSON.stringify(await reader.stats()) === JSON.stringify(await writer.stats());
    await Promise.all([reader.close(), writer.close()]);
    return { ...found, searched, statsAfterOtherWriter };
  },

  /** Exports the IndexedDB memory and imports the bytes into a MemoryStore. */
  async exportToMemory(name: string): Promise<{ idbDigest: string; memoryDigest: string; bytes: number }> {
    return withStore(name, async (store) => {
      const bytes = await exportCheckpoint(store, P);
      const memory = new MemoryStore();
      await importCheckpoint(memory, P, bytes);
      return { idbDigest: await sha256Hex(bytes), memoryDigest: await digestOf(memory), bytes: bytes.length };
    });
  },

  /** Partitions, revisions, clear(partition) and the tagged cache, in IndexedDB. */
  async partitions(name: string): Promise<{
    partitions: string[];
    otherRevision: number;
    defaultDigest: string;
    afterClear: { partitions: string[]; otherRevision: number; otherLoaded: boolean; defaultDigest: string };
    cache: Array<string | undefined>;
    afterClearAll: { partitions: string[]; revision: number; cached: string | undefined };
  }> {
    return withStore(name, async (store) => {
      await store.clear();
      const other = 'bob\u001fagent\u001f';
      await store.commit(P, snapshotAsBatch(sampleMemory()));
      await store.commit(other, snapshotAsBatch(sampleMemory({ episodes: 2, seed: 3 })));
      await store.commit(other, { deleteNodes: ['ep:0'] });
      const partitions = (await store.partitions()).sort();
      const otherRevision = await store.revision(other);
      const defaultDigest = await digestOf(store);
      await store.clear(other);
      const afterClear = {
        partitions: await store.partitions(),
        otherRevision: await store.revision(other),
        otherLoaded: (await store.load(other)) !== null,
        defaultDigest: await digestOf(store),
      };
      await store.putCached('a', '1', ['chunk-1']);
      await store.putCached('b', '2', ['chunk-1', 'chunk-2']);
      await store.putCached('c', '3', ['chunk-3']);
      await store.putCached('d', '4');
      await store.deleteCached(['chunk-1']);
      const cache = await Promise.all(['a', 'b', 'c', 'd'].map((key) => store.getCached(key)));
      await store.clear();
      const afterClearAll = { partitions: await store.partitions(), revision: await store.revision(P), cached: await store.getCached('c') };
      return { partitions, otherRevision, defaultDigest, afterClear, cache, afterClearAll };
    });
  },

  /**
   * One tab's writer: `batches` commits to the default partition, each under the Web Lock after
   * a revision check, yielding to the event loop inside the lock so the other tab's writer
   * runs meanwhile. Returns how many times a commit slipped in under the lock (must be 0).
   */
  async writeConcurrently(name: string, writer: string, batches: number): Promise<{ slipped: number }> {
    return withStore(name, async (store) => {
      let slipped = 0;
      for (let i = 0; i < batches; i++) {
        await store.withWriteLock(P, async () => {
          const seen = await store.revision(P);
          await new Promise((resolve) => setTimeout(resolve, 2));
          const revision = await store.commit(P, writerBatch(writer, i, seen === 0));
          if (revision !== seen + 1) slipped++;
        });
      }
      return { slipped };
    });
  },

  /** What the database holds of each writer's batches. */
  async census(name: string, writers: string[]): Promise<{ revision: number; whole: number[]; torn: number[] }> {
    return withStore(name, async (store) => {
      const snapshot = await store.load(P);
      const censuses = writers.map((writer) => censusOf(snapshot, writer));
      return { revision: await store.revision(P), whole: censuses.map((c) => c.whole.size), torn: censuses.map((c) => c.torn) };
    });
  },

  /** Caches one reply tagged `tag` and one untagged. */
  async cacheTwo(name: string, tag: string, tagged: string, untagged: string): Promise<void> {
    await withStore(name, async (store) => {
      await store.putCached('tagged', tagged, [tag]);
      await store.putCached('untagged', untagged);
    });
  },

  /** Forgets the replies tagged `tag`; returns what `cacheTwo`'s two keys then read. */
  async forgetTag(name: string, tag: string): Promise<Array<string | undefined>> {
    return withStore(name, async (store) => {
      await store.deleteCached([tag]);
      return [await store.getCached('tagged'), await store.getCached('untagged')];
    });
  },

  /**
   * The key folder lost (its files removed by hand): what the store still does. Partitions
   * whose keys are gone are unreadable, so listed as none; `clear()` removes them and the
   * store takes new commits.
   */
  async lostKeys(name: string): Promise<{ partitions: string[]; loaded: boolean; afterClear: string[]; reloaded: boolean }> {
    return withStore(name, async (store) => {
      await store.clear();
      await store.commit(P, snapshotAsBatch(sampleMemory()));
      await store.commit('bob', snapshotAsBatch(sampleMemory({ episodes: 2, seed: 3 })));
      const root = await navigator.storage.getDirectory();
      await root.removeEntry(`prism-memory-keys-${encodeURIComponent(name)}`, { recursive: true });
      return withStore(name, async (reopened) => {
        const partitions = await reopened.partitions();
        const loaded = (await reopened.load(P)) !== null;
        await reopened.clear();
        await reopened.commit(P, snapshotAsBatch(sampleMemory()));
        return { partitions, loaded, afterClear: await reopened.partitions(), reloaded: (await reopened.load(P)) !== null };
      });
    });
  },

  /**
   * What sealing costs: the sample memory with `episodes` chunks (two messages each) and two
   * entities per chunk, committed, loaded, one chunk deleted (as `Memory.delete` composes it) and
   * the partition cleared, by the IndexedDB store and by plain IndexedDB puts and reads of the
   * same records (what the store did before values were sealed). Milliseconds, median of `runs`.
   */
  async sealCost(name: string, episodes: number, runs: number): Promise<{ records: number; sealed: SealCost; plain: SealCost; loadedWhole: boolean; sealedAgainByDelete: number }> {
    const memory = withEntities(sampleMemory({ episodes }));
    const records = memory.nodes.length + memory.edges.length + memory.chunks.length + memory.vectors.size;
    const gone = new Set([memory.chunks[Math.floor(episodes / 2)]?.id ?? '']);
    const deletion = deletionBatch(new MemoryGraph(memory), memory.meta, gone);
    const timed = async (run: () => Promise<unknown>): Promise<number> => {
      const start = performance.now();
      await run();
      return performance.now() - start;
    };
    const sealed: SealCost[] = [];
    const plain: SealCost[] = [];
    let loadedWhole = true;
    let sealedAgainByDelete = 0;
    for (let i = 0; i < runs; i++) {
      sealed.push(
        await withStore(`${name}-sealed`, async (store) => {
          await store.clear();
          const commitMs = await timed(() => store.commit(P, snapshotAsBatch(memory)));
          let loaded: MemorySnapshot | null = null;
          const loadMs = await timed(async () => (loaded = await store.load(P)));
          loadedWhole &&= loaded !== null && (await sha256Hex(encodeCheckpoint(loaded))) === (await sha256Hex(encodeCheckpoint(memory)));
          const deleteChunkMs = await timed(() => store.commit(P, deletion));
          sealedAgainByDelete = await recordsUnderSharedKey(`${name}-sealed`);
          const clearMs = await timed(() => store.clear(P));
          return { commitMs, loadMs, deleteChunkMs, clearMs };
        }),
      );
      plain.push(await plainCost(`${name}-plain`, memory, deletion, timed));
    }
    const median = (costs: SealCost[]): SealCost => {
      const of = (key: keyof SealCost): number => costs.map((c) => c[key]).sort((a, b) => a - b)[Math.floor(costs.length / 2)] ?? Number.NaN;
      return { commitMs: of('commitMs'), loadMs: of('loadMs'), deleteChunkMs: of('deleteChunkMs'), clearMs: of('clearMs') };
    };
    return { records, sealed: median(sealed), plain: median(plain), loadedWhole, sealedAgainByDelete };
  },

  /** Holds the writer lock of database `name` until `release()`; a second tab then times out. */
  async holdLock(name: string): Promise<void> {
    const store = await IndexedDbStore.open({ name });
    await new Promise<void>((held) => {
      void store.withWriteLock(P, () => {
        held();
        return new Promise<void>((release) => (window.releaseLock = release));
      });
    });
  },

  async tryLock(name: string, lockTimeoutMs: number): Promise<Failure | null> {
    const store = await IndexedDbStore.open({ name, lockTimeoutMs });
    try {
      return await failureOf(() => store.withWriteLock(P, async () => undefined));
    } finally {
      await store.close();
    }
  },

  async revisionOf(name: string): Promise<number> {
    return withStore(name, (store) => store.revision(P));
  },

  /** A database as PRISM 0.2 wrote it (schema 1), then opened by this build. */
  async migrateV1(name: string): Promise<{ digest: string; expected: string; revision: number; cached: string | undefined; partitions: string[] }> {
    const sample = sampleMemory();
    const v1 = await openDB(name, 1, {
      upgrade(db) {
        db.createObjectStore('nodes', { keyPath: 'id' }).createIndex('layer', 'layer');
        db.createObjectStore('edges', { keyPath: 'id' }).createIndex('type', 'type');
        db.createObjectStore('chunks', { keyPath: 'id' });
        for (const store of ['vectors', 'hashes', 'meta', 'cache']) db.createObjectStore(store);
      },
    });
    const tx = v1.transaction(['nodes', 'edges', 'chunks', 'vectors', 'hashes', 'meta', 'cache'], 'readwrite');
    await Promise.all([
      ...sample.nodes.map((n) => tx.objectStore('nodes').put(n)),
      ...sample.edges.map((e) => tx.objectStore('edges').put(e)),
      ...sample.chunks.map((c) => tx.objectStore('chunks').put(c)),
      ...[...sample.vectors].map(([id, v]) => tx.objectStore('vectors').put(v, id)),
      ...[...sample.hashes].map((h) => tx.objectStore('hashes').put(true, h)),
      tx.objectStore('meta').put(sample.meta, 'meta'),
      tx.objectStore('cache').put('cached reply', 'prompt#1'),
      tx.done,
    ]);
    v1.close();
    return withStore(name, async (store) => ({
      digest: await digestOf(store),
      expected: await sha256Hex(encodeCheckpoint(sample)),
      revision: await store.revision(P),
      cached: await store.getCached('prompt#1'),
      partitions: await store.partitions(),
    }));
  },

  /**
   * A database as PRISM 0.3 wrote it (schema 2: records keyed by partition name, values in the
   * clear) with partition `bob`, the revision of a cleared partition `gone`, and a tagged cache
   * entry; then opened by this build, which seals it. What the store and the raw stores show.
   */
  async migrateV2(name: string): Promise<{
    partitions: string[];
    digest: string;
    expected: string;
    revision: number;
    cached: string | undefined;
    namedKeys: number;
    committed: number;
  }> {
    const sample = sampleMemory({ episodes: 2, seed: 3 });
    const v2 = await openDB(name, 2, {
      upgrade(db) {
        db.createObjectStore('nodes').createIndex('layer', 'layer');
        db.createObjectStore('edges').createIndex('type', 'type');
        for (const store of ['chunks', 'vectors', 'hashes', 'meta', 'revisions']) db.createObjectStore(store);
        db.createObjectStore('cache').createIndex('tags', 'tags', { multiEntry: true });
      },
    });
    const tx = v2.transaction(['nodes', 'edges', 'chunks', 'vectors', 'hashes', 'meta', 'revisions', 'cache'], 'readwrite');
    await Promise.all([
      ...sample.nodes.map((n) => tx.objectStore('nodes').put(n, ['bob', n.id])),
      ...sample.edges.map((e) => tx.objectStore('edges').put(e, ['bob', e.id])),
      ...sample.chunks.map((c) => tx.objectStore('chunks').put(c, ['bob', c.id])),
      ...[...sample.vectors].map(([id, v]) => tx.objectStore('vectors').put(v, ['bob', id])),
      ...[...sample.hashes].map((h) => tx.objectStore('hashes').put(true, ['bob', h])),
      tx.objectStore('meta').put(sample.meta, 'bob'),
      tx.objectStore('revisions').put(2, 'bob'),
      tx.objectStore('revisions').put(5, 'gone'),
      tx.objectStore('cache').put({ value: 'cached reply', tags: ['chunk-3-0'] }, 'prompt#1'),
      tx.done,
    ]);
    v2.close();
    const opened = await withStore(name, async (store) => ({
      partitions: await store.partitions(),
      digest: await digestOf(store, 'bob'),
      expected: await sha256Hex(encodeCheckpoint(sample)),
      revision: await store.revision('bob'),
      cached: await store.getCached('prompt#1'),
      committed: await store.commit('bob', { deleteNodes: ['ep:0'] }),
    }));
    const raw = await openDB(name);
    try {
      const keys = await Promise.all(['nodes', 'meta', 'revisions'].map((store) => raw.getAllKeys(store)));
      const named = keys.flat().filter((key) => typeof key === 'string' || (Array.isArray(key) && typeof key[0] === 'string'));
      return { ...opened, namedKeys: named.length };
    } finally {
      raw.close();
    }
  },

  /** Commits the sample, then a batch of `megabytes` of vectors; reports what happened. */
  async overfill(name: string, megabytes: number): Promise<{ before: string; after: string; failure: Failure | null }> {
    return withStore(name, async (store) => {
      await store.clear();
      const sample = sampleMemory();
      await store.commit(P, snapshotAsBatch(sample));
      const before = await digestOf(store);
      // Vectors of `megabytes` as the store keeps them.
      const count = Math.ceil((megabytes * 1024 * 1024) / encodedBytes(sample.meta.dim, store.vectorPrecision));
      const failure = await failureOf(() =>
        store.commit(P, {
          putVectors: Array.from({ length: count }, (_, i) => [`bulk:${i}`, sampleVector(Math.random, sample.meta.dim)]),
          deleteNodes: ['ep:0'],
        }),
      );
      return { before, after: await digestOf(store), failure };
    });
  },

  /**
   * Another tab opens the database at a newer schema: this connection steps aside (and
   * reports STORE_BLOCKED when used), and this build then refuses the newer database.
   */
  async displace(name: string): Promise<{ displaced: Failure | null; reopened: Failure | null }> {
    const store = await IndexedDbStore.open({ name });
    await store.commit(P, snapshotAsBatch(sampleMemory({ episodes: 1 })));
    const newer = await openDB(name, IDB_SCHEMA_VERSION + 1);
    newer.close();
    const displaced = await failureOf(() => store.load(P));
    const reopened = await failureOf(() => IndexedDbStore.open({ name }));
    return { displaced, reopened };
  },
};

export interface SealCost {
  commitMs: number;
  loadMs: number;
  deleteChunkMs: number;
  clearMs: number;
}

/** Nodes and vectors of the database's one partition sealed under the key its meta is sealed under (the shared key), in records or groups. */
async function recordsUnderSharedKey(name: string): Promise<number> {
  const raw = await openDB(name);
  try {
    const [meta] = (await raw.getAll('meta')) as Array<{ keyId: string }>;
    if (meta === undefined) return 0;
    const counts = await Promise.all(['nodes', 'edges', 'vectors'].map((store) => raw.countFromIndex(store, 'keyId', meta.keyId)));
    // Nodes, edges and vectors sealed under one key share a record: count its members.
    const groups = (await Promise.all(['nodeGroups', 'edgeGroups', 'vectorGroups'].map((store) => raw.getAllFromIndex(store, 'keyId', meta.keyId)))).flat() as Array<{ members: unknown[] }>;
    return counts.reduce((a, b) => a + b, 0) + groups.reduce((sum, group) => sum + group.members.length, 0);
  } finally {
    raw.close();
  }
}

/** The sample with two more entities per chunk (and their vectors): the records a chunk delete seals again. */
function withEntities(memory: MemorySnapshot): MemorySnapshot {
  let key = memory.meta.nextKey;
  const random = mulberry32(11);
  const entities: GraphNode[] = memory.chunks.flatMap((chunk, i) =>
    [0, 1].map((k): GraphNode => ({ layer: 'entity', id: `entity:${i}:${k}`, key: key++, name: `Person ${i}-${k}`, entityType: 'person', chunkIds: [chunk.id] })),
  );
  const vectors = new Map(memory.vectors);
  for (const entity of entities) vectors.set(entity.id, sampleVector(random, memory.meta.dim));
  return { ...memory, nodes: [...memory.nodes, ...entities], vectors, meta: { ...memory.meta, nextKey: key } };
}

/** The same work as plain IndexedDB puts, reads and deletes of structured clones, keyed by [partition, id] as before sealing. */
async function plainCost(name: string, memory: MemorySnapshot, deletion: WriteBatch, timed: (run: () => Promise<unknown>) => Promise<number>): Promise<SealCost> {
  const stores = ['nodes', 'edges', 'chunks', 'vectors', 'meta'] as const;
  const db = await openDB(name, 1, { upgrade: (db) => stores.forEach((store) => db.createObjectStore(store)) });
  try {
    await Promise.all(stores.map((store) => db.clear(store)));
    const range = IDBKeyRange.bound([P], [P, []]);
    const commitMs = await timed(async () => {
      const tx = db.transaction(stores, 'readwrite');
      await Promise.all([
        ...memory.nodes.map((n) => tx.objectStore('nodes').put(n, [P, n.id])),
        ...memory.edges.map((e) => tx.objectStore('edges').put(e, [P, e.id])),
        ...memory.chunks.map((c) => tx.objectStore('chunks').put(c, [P, c.id])),
        ...[...memory.vectors].map(([id, v]) => tx.objectStore('vectors').put(v, [P, id])),
        tx.objectStore('meta').put(memory.meta, P),
        tx.done,
      ]);
    });
    const loadMs = await timed(() => Promise.all([...stores.filter((s) => s !== 'meta').map((store) => db.getAll(store, range)), db.get('meta', P)]));
    const deleteChunkMs = await timed(async () => {
      const tx = db.transaction(stores, 'readwrite');
      await Promise.all([
        ...(deletion.deleteNodes ?? []).map((id) => tx.objectStore('nodes').delete([P, id])),
        ...(deletion.deleteEdges ?? []).map((id) => tx.objectStore('edges').delete([P, id])),
        ...(deletion.deleteChunks ?? []).map((id) => tx.objectStore('chunks').delete([P, id])),
        ...(deletion.deleteVectors ?? []).map((id) => tx.objectStore('vectors').delete([P, id])),
        ...(deletion.putNodes ?? []).map((n) => tx.objectStore('nodes').put(n, [P, n.id])),
        tx.objectStore('meta').put(memory.meta, P),
        tx.done,
      ]);
    });
    const clearMs = await timed(async () => {
      const tx = db.transaction(stores, 'readwrite');
      await Promise.all([...stores.filter((s) => s !== 'meta').map((store) => tx.objectStore(store).delete(range)), tx.objectStore('meta').delete(P), tx.done]);
    });
    return { commitMs, loadMs, deleteChunkMs, clearMs };
  } finally {
    db.close();
  }
}

declare global {
  interface Window {
    storeHarness: typeof storeHarness;
    releaseLock?: () => void;
  }
}

window.storeHarness = storeHarness;
