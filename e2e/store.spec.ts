import { encodeCheckpoint } from '../src/store/checkpoint.ts';
import { applyBatch } from '../src/store/snapshot.ts';
import { sampleFollowUp, sampleMemory } from './support/sample-memory.ts';
import { sha256Hex } from './support/site.ts';
import { expect, test } from './support/fixtures.ts';

/** The checkpoint digest of sample + follow-up, computed in Node: the browser must match it. */
const expectedDigest = (): Promise<string> => sha256Hex(encodeCheckpoint(applyBatch(sampleMemory(), sampleFollowUp())));

test.beforeEach(async ({ page }) => {
  await page.goto('/store.html');
});

test('a batch written to IndexedDB is read back after a reload', async ({ page }) => {
  await page.evaluate(() => window.storeHarness.write('e2e-reload'));
  await page.reload();
  const read = await page.evaluate(() => window.storeHarness.read('e2e-reload'));
  expect(read.digest).toBe(await expectedDigest());
  expect(read.cached).toBe('hello ✓');
  expect(read.revision).toBe(2);
  // Only the key index a delete needs: no record pays for an index on its layer or type (v7).
  expect(read.raw.nodes.indexes).toEqual(['keyId']);
  expect(read.raw.edges.indexes).toEqual(['keyId']);
  // Nodes but Entities are kept in a record per key (v8), and so are edges (v10): no edge is a record of its own.
  expect(read.raw.nodeGroups.records).toBeGreaterThan(0);
  expect(read.raw.edgeGroups.records).toBeGreaterThan(0);
  expect(read.raw.edges.records).toBe(0);
  // Chunk text and record JSON are packed before they are sealed (value-pack.ts), the vectors not;
  // the digest above is what they unpack to.
  expect(read.packing.chunks.packed).toBeGreaterThan(0);
  expect(read.packing.nodeGroups.packed).toBeGreaterThan(0);
  expect(read.packing.vectorGroups.values).toBeGreaterThan(0);
  expect(read.packing.vectorGroups.packed).toBe(0);
  // A long cached reply is packed too, and reads back as it was; the short one is stored as it is.
  expect(read.longCachedSame).toBe(true);
  expect(read.packing.cache).toEqual({ values: 2, packed: 1 });
});

test('derived edges fold into their nodes, nodes but Entities are kept in a group per key, and every later batch leaves what the reference store holds', async ({ page }) => {
  const result = await page.evaluate(() => window.storeHarness.foldsAsReference('e2e-folds'));
  expect(result.differing).toEqual([]);
  expect(result.reopenedSame).toBe(true);
  // Stored as edges: the two edges of the node deleted alone (point:0), point:1's belongs_to to
  // facet:1 once the node names another Facet, and an edge put without its node (point:2's
  // involves_entity); the rest of that kind are keys in their nodes (the SQL store keeps the same rows).
  expect(result.derivedEdgeRecords).toBe(4);
  // Every stored edge is a member of its key's group (v10), none a record of its own.
  expect(result.edgeRecords).toBe(0);
  expect(result.groupedEdges).toBeGreaterThan(result.derivedEdgeRecords);
  expect(result.edgeGroups).toBeLessThanOrEqual(result.chunks + 1);
  // The nodes sealed under one key are one record (v8), but Entities: at most a group per chunk
  // key and the shared one, and a record for each Entity only.
  expect(result.nodeRecords).toBe(result.entities);
  expect(result.nodeGroups).toBeGreaterThan(0);
  expect(result.nodeGroups).toBeLessThanOrEqual(result.chunks + 1);
});

test('a group whose members name one id twice opens as records of one id: two nodes the structure check refuses, or edge rows of which the later is kept', async ({ page }) => {
  const result = await page.evaluate(() => window.storeHarness.groupMemberNamedTwice('e2e-member-twice'));
  expect(result.nodesOfId).toBe(2);
  expect(result.nodeCheck).toMatchObject({ code: 'CORRUPT_CHECKPOINT', message: expect.stringMatching(/occurs twice/) });
  expect(result.edgesOfId).toBe(1);
});

test('nodes written one record each before v8, edges before v10, and values holding their ids before v9, are read, and a node put or deleted leaves its record, every batch leaving what the reference store holds', async ({ page }) => {
  const result = await page.evaluate(() => window.storeHarness.nodesFromBeforeV8('e2e-nodes-v7'));
  expect(result.differing).toEqual([]);
  expect(result.reopenedSame).toBe(true);
  // Values written from v9 on leave to their key what it names; those written before hold it, and read as well.
  expect(result.unkeyedAtStart).toBeGreaterThan(0);
  expect(result.keyedAtEnd).toBe(true);
  // Edges written one record each before v10 read as well; an edge put again or deleted leaves its record.
  expect(result.edgeRecordsAtStart).toBeGreaterThan(0);
  expect(result.edgeRecordsAtEnd).toBeLessThan(result.edgeRecordsAtStart);
  // All in records at first; the folding batches put and delete some; put again, every node but the Entities leaves its record for a group.
  expect(result.groups[0]).toBe(0);
  expect(result.records[0]).toBeGreaterThan(0);
  expect(result.records[1]).toBeLessThan(result.records[0]!);
  expect(result.records[2]).toBe(result.entities);
  expect(result.groups[2]).toBeGreaterThan(0);
});

test('chunks written with their text in their record before v12 are read as written; put again, a chunk keeps its turns’ texts apart', async ({ page }) => {
  const result = await page.evaluate(() => window.storeHarness.chunksFromBeforeV12('e2e-chunks-v11'));
  expect(result.chunks).toBeGreaterThan(0);
  expect(result.apartAtStart).toBe(result.chunks);
  expect(result.readSame).toBe(true);
  expect(result.putAgainSame).toBe(true);
  expect(result.apartAtEnd).toBe(result.chunks);
});

test('a long Entity chunk list is kept in pages: a batch rewrites only the pages it changes, and every batch leaves what the reference store holds', async ({ page }) => {
  const result = await page.evaluate(() => window.storeHarness.pagesAsReference('e2e-pages'));
  expect(result.differing).toEqual([]);
  expect(result.reopenedSame).toBe(true);
  // The same pages as on SQLite (test/store.test.ts): 600 ids in 3, then 601, 768, 769, 768, 300, 100, 700, deleted.
  expect(result.pageRecords).toEqual([3, 3, 3, 4, 3, 2, 0, 3, 0]);
  expect(result.rewritten).toEqual([[2], [2], [3], [0, 1, 2], [0, 1], [], [0, 1, 2], []]);
});

test('the vectors sealed under one key are one record: put again alone, outliving the chunk that sealed them and deleted, they hold what the reference store holds', async ({ page }) => {
  const result = await page.evaluate(() => window.storeHarness.vectorGroupsAsReference('e2e-vector-groups'));
  expect(result.differing).toEqual([]);
  expect(result.reopenedSame).toBe(true);
  for (const after of result.groups) {
    // Every vector in exactly one group, no group left empty, none written as a record of its own.
    expect(after.members).toBe(after.vectors);
    expect(after.emptyRecords).toBe(0);
    expect(after.single).toBe(0);
  }
  // The sample: a group per chunk key (its nodes' and edges' vectors; Alice's under her first chunk's).
  expect(result.groups[0]!.records).toBe(4);
  // A session deleted takes its group, and Alice's vector, which outlives it, moves to the shared
  // key's group; put again alone it joins her node's key's group (the shared one, empty, goes);
  // it moves again with her next first session, and leaves with her.
  expect(result.groups.map((g) => g.records)).toEqual([4, 4, 4, 3, 3, 2]);
});

test('a key ring kept in memory is read again once another tab wrote it; a ring file without a stamp reads', async ({ page }) => {
  const result = await page.evaluate(() => window.storeHarness.ringsAcrossFolders('e2e-rings'));
  expect(result).toEqual({ seenByOther: true, seenBack: [true, true], legacyRead: true });
});

test('a bulk read reads and unseals its values in a worker, in key order, part by part; on this thread without workers; a key added since the read began, an altered value and a missing key as before; a database upgraded since is not read', async ({ page }) => {
  const result = await page.evaluate(() => window.storeHarness.bulkReading('e2e-bulk-reading'));
  expect(result.ways).toEqual({
    inWorker: { same: true, workers: 1 },
    noWorker: { same: true, workers: 0 },
  });
  // A third of the values packed (value-pack.ts), the rest stored as they are: both read alike.
  expect(result.packedValues).toBeGreaterThanOrEqual(90);
  expect(result.lateKey).toBe(true);
  expect(result.altered).toMatchObject({ code: 'CORRUPT_CHECKPOINT' });
  expect(result.badPack).toMatchObject({ code: 'CORRUPT_CHECKPOINT' });
  expect(result.badPack?.message).toContain('does not unpack');
  expect(result.altered?.message).toContain('does not decrypt');
  expect(result.missingKey).toMatchObject({ code: 'CORRUPT_CHECKPOINT' });
  expect(result.missingKey?.message).toContain('is missing from key ring');
  expect(result.readAfterFailure).toBe(true);
  expect(result.upgradedSince).toContain('VersionError');
});

test('a working set leaves its relation edges as the open read them, and hands its vectors over after its records: the same graph as the whole load, and the same after each write, which the graph tells them', async ({ page }) => {
  const result = await page.evaluate(() => window.storeHarness.relationsAsOpened('e2e-relations'));
  expect(result.asOpened).toBe(true);
  expect(result.relationEdges).toBeGreaterThan(0);
  expect(result.sameEdges).toBe(true);
  expect(result.sameCounts).toBe(true);
  expect(result.heldWithoutVector).toBe(0);
  // Its vectors come after its records (the graph is built meanwhile), as their groups, each
  // listed by its members' ids, none in a table by id.
  expect(result.vectorsLater).toBe(true);
  expect(result.keyedVectors).toBeGreaterThan(0);
  expect(result.vectorsById).toBe(0);
  expect(result.atOpen.length).toBeGreaterThan(5);
  expect(result.atOpen.every(Boolean)).toBe(true);
  expect(result.afterWrite.every(Boolean)).toBe(true);
  // Rows not told the graph's changes miss what the batches changing relation edges did.
  expect(result.untold.filter((same) => !same).length).toBeGreaterThanOrEqual(2);
});

test('relation edges that the edge groups hold alone are left unread by the open until a use other than a search reads them; another writer meanwhile is caught up with', async ({ page }) => {
  const result = await page.evaluate(() => window.storeHarness.relationsLeftUnread('e2e-relations-unread'));
  expect(result.relationEdges).toBeGreaterThan(0);
  expect(result.later).toBe(true);
  expect(result.earlyThrows).toBe(true);
  expect(result.same).toBe(true);
  // An edge group holding an edge row of another type: read at the open, as before.
  expect(result.laterWithOther).toBe(false);
  expect(result.searched).toBe(true);
  expect(result.statsAfterOtherWriter).toBe(true);
});

test('checkpoint bytes exported from IndexedDB import into a MemoryStore unchanged', async ({ page }) => {
  await page.evaluate(() => window.storeHarness.write('e2e-export'));
  const moved = await page.evaluate(() => window.storeHarness.exportToMemory('e2e-export'));
  expect(moved.bytes).toBeGreaterThan(10_000);
  expect(moved.memoryDigest).toBe(moved.idbDigest);
  expect(moved.idbDigest).toBe(await expectedDigest());
});

test('partitions stay apart; revisions, clear(partition), clear() and the tagged cache behave as in the contract', async ({ page }) => {
  const result = await page.evaluate(() => window.storeHarness.partitions('e2e-partitions'));
  expect(result.partitions).toEqual(['bob\u001fagent\u001f', 'default'].sort());
  expect(result.otherRevision).toBe(2);
  expect(result.defaultDigest).toBe(await sha256Hex(encodeCheckpoint(sampleMemory())));
  expect(result.afterClear).toEqual({ partitions: ['default'], otherRevision: 3, otherLoaded: false, defaultDigest: result.defaultDigest });
  expect(result.cache).toEqual([undefined, undefined, '3', '4']);
  expect(result.afterClearAll).toEqual({ partitions: [], revision: 2, cached: undefined });
});

test('two tabs writing one database under the Web Lock lose nothing and see each other\'s revisions', async ({ page, context }) => {
  const other = await context.newPage();
  await other.goto('/store.html');
  const name = 'e2e-two-tabs';
  const batches = 40;
  const [a, b] = await Promise.all([
    page.evaluate(({ name, batches }) => window.storeHarness.writeConcurrently(name, 'tab-a', batches), { name, batches }),
    other.evaluate(({ name, batches }) => window.storeHarness.writeConcurrently(name, 'tab-b', batches), { name, batches }),
  ]);
  expect([a.slipped, b.slipped]).toEqual([0, 0]);
  const census = await other.evaluate((name) => window.storeHarness.census(name, ['tab-a', 'tab-b']), name);
  expect(census).toEqual({ revision: 2 * batches, whole: [batches, batches], torn: [0, 0] });

  // One tab holds the lock: the other waits, then gives up with STORE_BUSY.
  await page.evaluate((name) => window.storeHarness.holdLock(name), name);
  const busy = await other.evaluate((name) => window.storeHarness.tryLock(name, 300), name);
  expect(busy?.code).toBe('STORE_BUSY');
  await page.evaluate(() => window.releaseLock?.());
  expect(await other.evaluate((name) => window.storeHarness.tryLock(name, 5_000), name)).toBeNull();

  // A commit in one tab is visible to the other by revision.
  const before = await other.evaluate((name) => window.storeHarness.revisionOf(name), name);
  await page.evaluate(({ name }) => window.storeHarness.writeConcurrently(name, 'tab-a-more', 1), { name });
  expect(await other.evaluate((name) => window.storeHarness.revisionOf(name), name)).toBe(before + 1);
});

test('a PRISM 0.2 database (schema 1) opens with its memory in the default partition', async ({ page }) => {
  const result = await page.evaluate(() => window.storeHarness.migrateV1('e2e-migrate'));
  expect(result.digest).toBe(result.expected);
  expect(result.revision).toBe(1);
  expect(result.cached).toBe('cached reply');
  expect(result.partitions).toEqual(['default']);
});

test('a full quota fails the batch with STORE_QUOTA_EXCEEDED and keeps what was committed', async ({ page }) => {
  const cdp = await page.context().newCDPSession(page);
  const origin = new URL(page.url()).origin;
  await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: 4 * 1024 * 1024 });
  try {
    const result = await page.evaluate(() => window.storeHarness.overfill('e2e-quota', 16));
    expect(result.failure?.code).toBe('STORE_QUOTA_EXCEEDED');
    expect(result.failure?.message).toMatch(/quota is exhausted \(QuotaExceededError/);
    expect(result.after).toBe(result.before);
  } finally {
    await cdp.send('Storage.overrideQuotaForOrigin', { origin });
  }
});

test('a newer schema opened elsewhere displaces this connection; this build refuses it', async ({ page }) => {
  const result = await page.evaluate(() => window.storeHarness.displace('e2e-version'));
  expect(result.displaced?.code).toBe('STORE_BLOCKED');
  expect(result.reopened?.code).toBe('STORE_VERSION');
});

test('derived state is kept at its revision under a key of its own, kept by an add, refused for a revision gone by, and dropped with its key by a delete and a clear', async ({ page }) => {
  const result = await page.evaluate(() => window.storeHarness.derivedState('e2e-derived'));
  expect(result.steps).toEqual({
    beforeAnyMemory: false,
    saved: true,
    readBack: true,
    sealedUnderItsOwnKey: true,
    readByAnotherConnection: true,
    keptByAnAdd: true,
    refusedForRevisionGoneBy: true,
    savedAgain: true,
    droppedByDelete: true,
    savedAfterDelete: true,
    droppedByClear: true,
  });
  expect(result.derivedKeyRetired).toBe(true);
});
