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
  // The sample has 4 episodes, one deleted by the follow-up; 3 temporal edges.
  expect(read.episodesByIndex).toBe(3);
  expect(read.temporalByIndex).toBe(3);
});

test('checkpoint bytes exported from IndexedDB import into a MemoryStore unchanged', async ({ page }) => {
  await page.evaluate(() => window.storeHarness.write('e2e-export'));
  const moved = await page.evaluate(() => window.storeHarness.exportToMemory('e2e-export'));
  expect(moved.bytes).toBeGreaterThan(10_000);
  expect(moved.memoryDigest).toBe(moved.idbDigest);
  expect(moved.idbDigest).toBe(await expectedDigest());
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
