import { bytesFound, deleteOnDisk, KEPT_CACHE_WORD } from './support/delete-on-disk.ts';
import { expect, test } from './support/fixtures.ts';

// Issue 24: once `delete` returns, none of the deleted text nor the deleted scope's name is in any
// file of the Chromium profile (IndexedDB's LevelDB files, the key rings in OPFS, everything),
// with the page open and after the browser closed. The first test launches its own Chromium on
// a profile directory it owns (e2e/support/delete-on-disk.ts records that browser's page errors
// and external requests itself).

test("delete({ sessionId }), delete({ userId }), deleteCached and delete('all') leave no deleted bytes and no retired key in the profile", async ({ baseURL }) => {
  test.setTimeout(240_000);
  const outcome = await deleteOnDisk(baseURL ?? '');
  console.log(`delete on disk: ${outcome.retiredKeyCount} keys retired by the deletes, ${outcome.liveKeysFound}/${outcome.liveKeys} live keys found in the profile`);
  expect(outcome.problems).toEqual([]);
  // Values are sealed: not even live text is on disk in the clear.
  expect(outcome.keptBeforeDeletes).toEqual([]);
  // Each scope's saved lexical index had a key of its own, and the deletes retired both.
  expect(outcome.derivedKeys).toBe(2);
  expect(outcome.derivedKeysRetired).toBe(2);
  // The deletes retired keys (the session's chunk keys, the replaced shared key, the reply's key,
  // the user's whole ring), and the search does reach the ring files: every live key is found.
  expect(outcome.retiredKeyCount).toBeGreaterThanOrEqual(5);
  expect(outcome.liveKeys).toBeGreaterThanOrEqual(2);
  expect(outcome.liveKeysFound).toBe(outcome.liveKeys);
  expect(outcome.afterDeletesOpen).toEqual({ words: [], retiredKeys: [] });
  expect(outcome.afterDeletesClosed).toEqual({ words: [], retiredKeys: [] });
  expect(outcome.cacheReads).toEqual([undefined, `Reply: ${KEPT_CACHE_WORD} is fine.`]);
  // What was not deleted is all there after a reopen: the memory is unsealed at load.
  expect(outcome.reopened).toEqual({ sessions: ['session-kept'], foundKept: true, otherUserSessions: [] });
  expect(bytesFound(outcome.afterDeleteAllOpen)).toBe(0);
  expect(bytesFound(outcome.afterDeleteAllClosed)).toBe(0);
});

test('a PRISM 0.3 database (schema 2) opens sealed: its partition under a token, revisions kept, the cleared partition\'s name gone', async ({ page }) => {
  await page.goto('/store.html');
  const result = await page.evaluate(() => window.storeHarness.migrateV2('e2e-migrate-v2'));
  expect(result.digest).toBe(result.expected);
  expect(result).toMatchObject({ partitions: ['bob'], revision: 2, cached: 'cached reply', committed: 3, namedKeys: 0 });
});

test('a lost key folder leaves its partitions unreadable, not the database: none listed, clear() removes them, new commits work', async ({ page }) => {
  await page.goto('/store.html');
  const result = await page.evaluate(() => window.storeHarness.lostKeys('e2e-lost-keys'));
  expect(result).toEqual({ partitions: [], loaded: false, afterClear: ['default'], reloaded: true });
});

test('what sealing costs: commit, load, chunk delete and clear of 300 chunks (600 messages), sealed and plain', async ({ page }) => {
  test.setTimeout(240_000);
  await page.goto('/store.html');
  const cost = await page.evaluate(() => window.storeHarness.sealCost('e2e-seal-cost', 300, 3));
  const row = (name: string, c: typeof cost.sealed): string =>
    `${name}: commit ${c.commitMs.toFixed(0)} ms, load ${c.loadMs.toFixed(0)} ms, chunk delete ${c.deleteChunkMs.toFixed(0)} ms, clear ${c.clearMs.toFixed(0)} ms`;
  console.log(`seal cost, ${cost.records} records (median of 3):\n  ${row('sealed', cost.sealed)}\n  ${row('plain ', cost.plain)}`);
  expect(cost.loadedWhole).toBe(true);
  // A chunk delete replaces the shared key, which seals only meta: no Entity (each under its first
  // chunk's key) or vector had to be sealed again under the new one.
  expect(cost.sealedAgainByDelete).toBe(0);
});
