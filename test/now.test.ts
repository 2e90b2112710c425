import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { LanguageModelV3CallOptions } from '@ai-sdk/provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prismMemoryMiddleware } from '../src/ai-sdk/middleware.ts';
import { resolveConfig } from '../src/config.ts';
import { PrismError } from '../src/errors.ts';
import type { EvalSample } from '../src/eval/benchmark.ts';
import { prismSystem } from '../src/eval/prism-system.ts';
import type { Conversation } from '../src/ingest/conversation.ts';
import { createPrismMcpServer } from '../src/mcp/server.ts';
import { Memory, type SearchOptions, type SearchResult } from '../src/memory.ts';
import { fallsOn, queryInstant, relativeSpans, type TimeSpan } from '../src/retrieve/dates.ts';
import { asksForLatest } from '../src/retrieve/intent.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { testRuntime } from './helpers/runtime.ts';

const utc = (y: number, m: number, d: number, h = 0, min = 0) => Date.UTC(y, m - 1, d, h, min);
const DAY = 86_400_000;
/** Tuesday 30 May 2023, 23:40: when LongMemEval asks many of its questions. */
const NOW = utc(2023, 5, 30, 23, 40);

describe('relative time resolved against now', () => {
  const spans = (query: string) => relativeSpans(query, NOW);
  const day = (y: number, m: number, d: number): TimeSpan => ({ start: utc(y, m, d), end: utc(y, m, d) + DAY });

  it('reads days, weekdays and "N units ago" at the precision they have', () => {
    expect(spans('What did I buy yesterday?')).toEqual([day(2023, 5, 29)]);
    expect(spans('What did I cook this morning?')).toEqual([day(2023, 5, 30)]);
    expect(spans('What did I do the day before yesterday?')).toEqual([day(2023, 5, 28)]);
    expect(spans('Which book did I finish 3 days ago?')).toEqual([day(2023, 5, 27)]);
    // Half a unit either side of the day N units back.
    expect(spans('What gardening activity did I do two weeks ago?')).toEqual([{ start: utc(2023, 5, 16) - 3.5 * DAY, end: utc(2023, 5, 17) + 3.5 * DAY }]);
    expect(spans('What charity event did I join a month ago?')).toEqual([{ start: utc(2023, 4, 30) - 15 * DAY, end: utc(2023, 5, 1) + 15 * DAY }]);
    expect(spans('I mentioned an investment four weeks ago? What did I buy?')).toEqual([{ start: utc(2023, 5, 2) - 3.5 * DAY, end: utc(2023, 5, 3) + 3.5 * DAY }]);
    // The latest such weekday before today (30 May 2023 is a Tuesday).
    expect(spans('I received a piece of jewelry last Saturday from whom?')).toEqual([day(2023, 5, 27)]);
    expect(spans('Who did I meet for lunch last Tuesday?')).toEqual([day(2023, 5, 23)]);
    expect(spans('What did I do on Sunday?')).toEqual([day(2023, 5, 28)]);
  });

  it('reads calendar periods, rolling windows and months named without a year', () => {
    expect(spans('Which pair of shoes did I clean last month?')).toEqual([{ start: utc(2023, 4, 1), end: utc(2023, 5, 1) }]);
    expect(spans('Where did I worship last week?')).toEqual([{ start: utc(2023, 5, 22), end: utc(2023, 5, 29) }]);
    expect(spans('Who came with me last weekend?')).toEqual([{ start: utc(2023, 5, 27), end: utc(2023, 5, 29) }]);
    expect(spans('What did I read last year?')).toEqual([{ start: utc(2022, 1, 1), end: utc(2023, 1, 1) }]);
    expect(spans('How much have I saved this year?')).toEqual([{ start: utc(2023, 1, 1), end: NOW }]);
    expect(spans('Which concerts did I attend in the past two months?')).toEqual([{ start: utc(2023, 3, 30, 23, 40), end: NOW }]);
    expect(spans('What did I bake over the past month?')).toEqual([{ start: utc(2023, 4, 30, 23, 40), end: NOW }]);
    // December has not come yet in 2023: the one before.
    expect(spans('Which airline did I fly in March and April?')).toEqual([
      { start: utc(2023, 3, 1), end: utc(2023, 4, 1) },
      { start: utc(2023, 4, 1), end: utc(2023, 5, 1) },
    ]);
    expect(spans('What did I buy in December?')).toEqual([{ start: utc(2022, 12, 1), end: utc(2023, 1, 1) }]);
    expect(spans('What happened on March 5th?')).toEqual([day(2023, 3, 5)]);
  });

  it('leaves durations asked for, habits and dates written with a year alone', () => {
    for (const query of [
      'How many days ago did I meet Emma?',
      'How many months have passed since I visited a museum?',
      'What time do I wake up on Tuesdays and Thursdays?',
      'What time do I wake up on Saturday mornings?',
      'Can you recommend a show or movie for me to watch tonight?',
      'What did we do on 3 May, 2023?',
      'Where did I go in May 2022?',
      'I may go hiking; where should I go?',
    ]) {
      expect(spans(query), query).toEqual([]);
    }
  });

  it('reads now from a Date, a date string or null, and refuses anything else', () => {
    expect(queryInstant(new Date(NOW))).toBe(NOW);
    expect(queryInstant('2023-05-30T23:40:00')).toBe(NOW);
    expect(queryInstant('11:40 pm on 30 May, 2023')).toBe(NOW);
    expect(queryInstant(null)).toBeNull();
    for (const bad of ['two weeks ago', '2023-02-30', new Date(Number.NaN)]) {
      expect(() => queryInstant(bad)).toThrow(PrismError);
      expect(() => queryInstant(bad)).toThrow(/^now: /);
    }
  });

  it('places session times and facts resolved to a year, month or day inside a span', () => {
    const may = [{ start: utc(2023, 5, 1), end: utc(2023, 6, 1) }];
    expect(fallsOn('2023-05-16T10:00:00', may)).toBe(true);
    expect(fallsOn('2023-06-01T00:00:00', may)).toBe(false);
    expect(fallsOn('2023-05-16', may)).toBe(true);
    expect(fallsOn('2023-05', may)).toBe(true);
    // A fact dated only by its year is not placed in one of its months.
    expect(fallsOn('2023', may)).toBe(false);
    expect(fallsOn(null, may)).toBe(false);
  });

  it('tells questions about the current value from questions about an earlier one', () => {
    for (const query of ['Where do I currently keep my old sneakers?', 'How many followers do I have on Instagram now?', 'What is my latest score?', 'How many videos have I completed so far?', 'Where did I go on my most recent family trip?']) {
      expect(asksForLatest(query), query).toBe(true);
    }
    for (const query of ['What was my previous goal before I updated it?', 'Where did I keep my sneakers?', 'How do I know?']) {
      expect(asksForLatest(query), query).toBe(false);
    }
  });
});

describe('search with now', () => {
  let memory: Memory;
  const session = (n: number, time: string, user: string, assistant: string) => ({
    id: `session_${n}`,
    dateText: null,
    time,
    turns: [
      { dialogId: `D${n}:1`, speaker: 'user', text: user },
      { dialogId: `D${n}:2`, speaker: 'assistant', text: assistant },
    ],
  });
  const garden: Conversation = {
    id: 'garden',
    sessions: [
      session(1, '2023-05-02T10:00:00', 'I repotted the basil on the balcony this morning.', 'Basil likes a lot of sun.'),
      session(2, '2023-05-16T10:00:00', 'I planted twelve tomato saplings in the garden today.', 'Tomatoes need stakes to climb.'),
      session(3, '2023-05-29T10:00:00', 'I pruned the rose bushes in the front yard.', 'Roses bloom better after pruning.'),
    ],
  };
  const sneakers: Conversation = {
    id: 'sneakers',
    sessions: [
      session(1, '2023-05-10T12:00:00', 'I keep my old sneakers under the bed for now.', 'That works until you find a better spot.'),
      session(2, '2023-05-20T08:30:00', 'I moved my old sneakers to a shoe rack in my closet.', 'A shoe rack keeps them tidy.'),
    ],
  };

  beforeAll(async () => {
    const runtime = await testRuntime();
    memory = await Memory.open({ store: new MemoryStore(), embedder: runtime.embedder, createIndex: runtime.createIndex, llm: null });
    await memory.addConversation(garden, { userId: 'garden' });
    await memory.addConversation(sneakers, { userId: 'sneakers' });
  });
  afterAll(async () => {
    await memory.close();
  });

  const scoreOf = (result: SearchResult, dialogId: string) => result.units.find((u) => u.dialogIds.includes(dialogId))?.score;

  it('lifts the session the relative time points at, by the date term, and nothing else', async () => {
    // Compared on the structure route: unresolved, the query may take the meaning route, which ranks by cosine alone.
    const ask = (query: string, options: SearchOptions) =>
      memory.search(query, { userId: 'garden', budget: 2048, ...options, config: { ...options.config, flags: { ...options.config?.flags, meaningRoute: false } } });
    const query = 'What gardening activity did I do two weeks ago?';
    const asked = await ask(query, { now: '2023-05-30T23:40:00' });
    // A query naming a date keeps to the structure route whether the meaning route is on or not.
    expect((await memory.search(query, { userId: 'garden', budget: 2048, now: '2023-05-30T23:40:00' })).units).toEqual(asked.units);
    const unknown = await ask(query, { now: null });
    expect(asked.units[0]?.dialogIds).toEqual(['D2:1']);
    expect(scoreOf(asked, 'D2:1')! - scoreOf(unknown, 'D2:1')!).toBeCloseTo(memory.config.retrieval.turnScore.date, 12);
    expect(scoreOf(asked, 'D1:1')).toBe(scoreOf(unknown, 'D1:1'));
    expect(scoreOf(asked, 'D3:1')).toBe(scoreOf(unknown, 'D3:1'));
    // A Date is the same instant; asked a week later, "two weeks ago" is the roses' week, not the tomatoes'.
    expect((await ask(query, { now: new Date(NOW) })).units).toEqual(asked.units);
    const later = await ask(query, { now: '2023-06-12T09:00:00' });
    expect(scoreOf(later, 'D3:1')! - scoreOf(unknown, 'D3:1')!).toBeCloseTo(memory.config.retrieval.turnScore.date, 12);
    expect(scoreOf(later, 'D2:1')).toBe(scoreOf(unknown, 'D2:1'));
    // Without now: the clock, years after these sessions, so nothing is lifted; the date focus ablation never resolves.
    expect((await ask(query, {})).units).toEqual(unknown.units);
    expect((await ask(query, { now: '2023-05-30T23:40:00', config: { flags: { relativeDates: false } } })).units).toEqual(unknown.units);
    await expect(ask(query, { now: 'two weeks ago' })).rejects.toThrow(/^now: not a date/);
  });

  it('prefers the latest statement for a question about the current value', async () => {
    const search = (query: string, recency: number) =>
      memory.search(query, { userId: 'sneakers', budget: 2048, now: '2023-06-01T10:00:00', config: { retrieval: { turnScore: { recency } } } });
    const query = 'Where do I currently keep my old sneakers?';
    const [off, on] = await Promise.all([search(query, 0), search(query, 0.5)]);
    // Two sessions: the older gains nothing, the newer the whole weight.
    expect(scoreOf(on, 'D2:1')! - scoreOf(off, 'D2:1')!).toBeCloseTo(0.5, 12);
    expect(scoreOf(on, 'D1:1')).toBe(scoreOf(off, 'D1:1'));
    const order = (result: SearchResult) => result.units.flatMap((u) => u.dialogIds).filter((id) => id.endsWith(':1'));
    expect(order(on)).toEqual(['D2:1', 'D1:1']);
    // A question about an earlier value has no cue: the weight does nothing.
    const earlier = 'Where did I keep my old sneakers at first?';
    expect((await search(earlier, 0.5)).units).toEqual((await search(earlier, 0)).units);
  });

  it('is asked at the question\'s time in the eval harness, and at no time where the benchmark gives none', async () => {
    const asked: Array<SearchOptions['now']> = [];
    // The harness's memories hold one conversation in the default scope; this one's is the garden user's.
    const watched = Object.assign(Object.create(memory) as Memory, {
      search: (query: string, options?: SearchOptions) => (asked.push(options?.now), memory.search(query, { ...options, userId: 'garden' })),
    });
    const system = await prismSystem({ variant: 'prism', memories: { key: 'test', open: async () => watched }, baseConfig: resolveConfig(), version: 'test', llmModels: null });
    const sample: EvalSample = { conversation: garden, sessionLabels: null, questions: [] };
    await system.prepare(sample);
    const query = 'What gardening activity did I do two weeks ago?';
    const result = await system.retrieve(query, { budget: 2048, askedAt: '2023-05-30T23:40:00' });
    expect(result.units[0]?.dialogIds).toEqual(['D2:1']);
    await system.retrieve(query, { budget: 2048, askedAt: null });
    expect(asked).toEqual(['2023-05-30T23:40:00', null]);
  });

  it('passes now through MCP search_memory and the AI SDK middleware', async () => {
    const server = createPrismMcpServer(memory);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'now-test', version: '1.0.0' });
    await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
    try {
      const call = async (args: Record<string, unknown>) => (await client.callTool({ name: 'search_memory', arguments: args })) as CallToolResult;
      const found = await call({ query: 'What gardening activity did I do two weeks ago?', userId: 'garden', now: '2023-05-30T23:40:00' });
      const units = (found.structuredContent as { units: Array<{ turns: Array<{ id: string }> }> }).units;
      expect(units[0]?.turns.map((t) => t.id)).toContain('D2:1');
      const refused = await call({ query: 'What did I plant?', userId: 'garden', now: 'soon' });
      expect(refused.isError).toBe(true);
      expect(JSON.stringify(refused.content)).toContain('now: not a date');
    } finally {
      await client.close();
      await server.close();
    }

    const seen: Array<SearchOptions['now']> = [];
    const watched = { add: memory.add.bind(memory), search: (query: string, options?: SearchOptions) => (seen.push(options?.now), memory.search(query, options)) };
    const middleware = prismMemoryMiddleware({ memory: watched, userId: 'garden', store: false, now: () => '2023-05-30T23:40:00' });
    const params = { prompt: [{ role: 'user', content: [{ type: 'text', text: 'What gardening activity did I do two weeks ago?' }] }] } as LanguageModelV3CallOptions;
    const transformed = await middleware.transformParams!({ params, type: 'generate', model: {} as never });
    expect(seen).toEqual(['2023-05-30T23:40:00']);
    const system = transformed.prompt.find((m) => m.role === 'system');
    expect(system?.content).toContain('tomato');
  });
});
