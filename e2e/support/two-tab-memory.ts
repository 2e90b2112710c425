import type { Page } from 'playwright-core';
import type { HarnessMessage } from '../pages/store-memory.ts';

/**
 * Two tabs, one IndexedDB memory (e2e/pages/store-memory.html open in both): each tab adds its
 * own sessions while the other does, one `add()` at a time; then each tab lists and searches.
 * Shared by e2e/store-memory.spec.ts and the fault suite's "two tabs" row.
 */

export type Tab = 'a' | 'b';

interface SessionScript {
  sessionId: string;
  date: string;
  messages: HarnessMessage[];
  /** A question only this session answers, and the message that answers it. */
  query: string;
  evidence: string;
}

const FACTS: Record<Tab, ReadonlyArray<[speaker: string, fact: string, query: string]>> = {
  a: [
    ['Ann', 'I keep my bicycle in the blue shed behind the bakery.', 'Where does Ann keep her bicycle?'],
    ['Ann', 'My grandmother taught me to knit scarves every winter.', 'Who taught Ann to knit scarves?'],
    ['Ann', 'We adopted a grey kitten called Pepper last spring.', 'What is the name of the kitten Ann adopted?'],
  ],
  b: [
    ['Ben', 'I am training for the Lisbon marathon in October.', 'Which marathon is Ben training for?'],
    ['Ben', 'My brother repairs old valve radios in his garage.', 'What does Ben\'s brother repair?'],
    ['Ben', 'I planted tomatoes and basil on the balcony.', 'What did Ben plant on the balcony?'],
  ],
};

/** The sessions tab `tab` adds: one fact and a reply each, on a day of its own. */
export function tabSessions(tab: Tab): SessionScript[] {
  return FACTS[tab].map(([speaker, fact, query], i) => ({
    sessionId: `${tab}-${i}`,
    date: `2024-0${tab === 'a' ? 3 : 4}-0${i + 1}T10:00:00`,
    messages: [
      { speaker, text: fact, id: `${tab}${i}:1` },
      { speaker: 'Friend', text: 'That sounds lovely, tell me more next time.', id: `${tab}${i}:2` },
    ],
    query,
    evidence: `${tab}${i}:1`,
  }));
}

export interface TwoTabOutcome {
  /** Per tab, the sessions whose `add()` resolved. */
  acknowledged: Record<Tab, string[]>;
  /** Errors of `add()` calls, as the page reported them. */
  failures: string[];
  /** Per tab, the session ids its `list()` shows afterwards. */
  listed: Record<Tab, string[]>;
  /** Per tab, whether searching each of the other tab's questions finds that tab's evidence. */
  foundOthers: Record<Tab, boolean[]>;
}

/** Opens the memory `dbName` in both pages, adds concurrently, then lists and searches in each. */
export async function addFromTwoTabs(pages: Record<Tab, Page>, dbName: string): Promise<TwoTabOutcome> {
  const tabs: Tab[] = ['a', 'b'];
  await Promise.all(tabs.map((tab) => pages[tab].evaluate((name) => window.memoryHarness.open(name), dbName)));
  const acknowledged: Record<Tab, string[]> = { a: [], b: [] };
  const failures: string[] = [];
  await Promise.all(
    tabs.map(async (tab) => {
      for (const { sessionId, date, messages } of tabSessions(tab)) {
        try {
          await pages[tab].evaluate((args) => window.memoryHarness.add(args.sessionId, args.date, args.messages), { sessionId, date, messages });
          acknowledged[tab].push(sessionId);
        } catch (err) {
          failures.push(`${tab}/${sessionId}: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
    }),
  );
  const listed = { a: [] as string[], b: [] as string[] };
  const foundOthers = { a: [] as boolean[], b: [] as boolean[] };
  for (const tab of tabs) {
    listed[tab] = (await pages[tab].evaluate(() => window.memoryHarness.list())).map((s) => s.sessionId).sort();
    for (const { query, evidence } of tabSessions(tab === 'a' ? 'b' : 'a')) {
      const found = await pages[tab].evaluate((q) => window.memoryHarness.search(q), query);
      foundOthers[tab].push(found.dialogIds.includes(evidence));
    }
  }
  await Promise.all(tabs.map((tab) => pages[tab].evaluate(() => window.memoryHarness.close())));
  return { acknowledged, failures, listed, foundOthers };
}
