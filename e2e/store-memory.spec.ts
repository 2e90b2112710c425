import { addFromTwoTabs, tabSessions } from './support/two-tab-memory.ts';
import { expect, test } from './support/fixtures.ts';

// Issue 12: two tabs on one IndexedDB memory, at the Memory level. Writers queue on the Web
// Lock; each add first catches up with the other tab's commits (revision check → reload), and
// each read reloads when the revision moved.

test('two tabs add to one memory at once; each lists every session and finds what the other added', async ({ page, context }) => {
  test.setTimeout(240_000);
  const other = await context.newPage();
  await Promise.all([page.goto('/store-memory.html'), other.goto('/store-memory.html')]);
  const outcome = await addFromTwoTabs({ a: page, b: other }, 'e2e-two-tab-memory');
  expect(outcome.failures).toEqual([]);
  const all = [...tabSessions('a'), ...tabSessions('b')].map((s) => s.sessionId).sort();
  expect([...outcome.acknowledged.a, ...outcome.acknowledged.b].sort()).toEqual(all);
  expect(outcome.listed).toEqual({ a: all, b: all });
  expect(outcome.foundOthers).toEqual({ a: [true, true, true], b: [true, true, true] });
});
