import { readFile } from 'node:fs/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, resolveConfig } from '../src/config.ts';
import type { Embedder } from '../src/embed/types.ts';
import { PrismError } from '../src/errors.ts';
import { checkConversation, readDate, type Conversation } from '../src/ingest/conversation.ts';
import { checkAddSize, checkId, messageTime, normaliseMessages } from '../src/ingest/input.ts';
import { Memory } from '../src/memory.ts';
import { defaultLocomoPath } from '../src/node.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { testRuntime, type TestRuntime } from './helpers/runtime.ts';

const limits = DEFAULT_CONFIG.limits;

/** The error `run` throws (or null), as `{ code, message }` for matching. */
function thrown(run: () => unknown): { code: string; message: string } | null {
  try {
    run();
    return null;
  } catch (err) {
    if (!(err instanceof PrismError)) throw err;
    return { code: err.code, message: err.message };
  }
}

/** Normalises and size-checks `messages` as `add()` does, before anything is embedded. */
function checkMessages(messages: unknown, overrides: Partial<typeof limits> = {}) {
  const { messages: normalised } = normaliseMessages(messages);
  checkAddSize(normalised, { ...limits, ...overrides });
  return normalised;
}

function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: true };
  for (let i = 1; i < depth; i++) value = { down: value };
  return value;
}

describe('dates', () => {
  it('reads every documented form into the stored zone-less UTC time', () => {
    const forms: Array<[string, string]> = [
      ['2023-05-08', '2023-05-08T00:00:00'],
      ['2023-05-08T13:56', '2023-05-08T13:56:00'],
      ['2023-05-08 13:56:07', '2023-05-08T13:56:07'],
      ['2023-05-08T13:56:07.123456Z', '2023-05-08T13:56:07'],
      ['2023-05-08T10:00:00+09:00', '2023-05-08T01:00:00'],
      ['2023-05-08T23:30:00-0500', '2023-05-09T04:30:00'],
      ['8 May 2023', '2023-05-08T00:00:00'],
      ['8 May, 2023', '2023-05-08T00:00:00'],
      ['May 8 2023', '2023-05-08T00:00:00'],
      ['May 8, 2023', '2023-05-08T00:00:00'],
      ['  8 sept. 2023 ', '2023-09-08T00:00:00'],
      ['1:56 pm on 8 May, 2023', '2023-05-08T13:56:00'],
      ['12:30 am on 1 January, 2024', '2024-01-01T00:30:00'],
      ['12:05 PM on Jan 1, 2024', '2024-01-01T12:05:00'],
      ['13:56 on 8 May, 2023', '2023-05-08T13:56:00'],
      ['May 8, 2023, 1:56 pm', '2023-05-08T13:56:00'],
      ['8 May 2023 at 13:56', '2023-05-08T13:56:00'],
      ['29 February, 2024', '2024-02-29T00:00:00'],
      ['1970-01-01', '1970-01-01T00:00:00'],
      ['9999-12-31T23:59:59', '9999-12-31T23:59:59'],
    ];
    for (const [written, stored] of forms) expect([written, readDate(written)]).toEqual([written, { time: stored }]);
  });

  it('refuses impossible dates and times, naming what is wrong', () => {
    const refused: Array<[string, string]> = [
      ['31 February, 2023', 'February 2023 has 28 days'],
      ['29 February, 2023', 'February 2023 has 28 days'],
      ['2023-02-31', 'February 2023 has 28 days'],
      ['31 Apr 2023', 'April 2023 has 30 days'],
      ['2023-13-01', 'there is no month 13'],
      ['13:99 pm on 8 May, 2023', 'an am/pm hour is 1 to 12'],
      ['0:30 pm on 8 May, 2023', 'an am/pm hour is 1 to 12'],
      ['10:60 on 8 May, 2023', 'hours run 00–23'],
      ['2023-05-08T24:00', 'hours run 00–23'],
      ['2023-05-08T10:00:60', 'minutes and seconds 00–59'],
      ['2023-05-08T10:00:00+24:00', 'offsets run -23:59 to +23:59'],
      ['0000-01-01', 'the year must be within 1970–9999'],
      ['1969-12-31', 'the year must be within 1970–9999'],
      ['1970-01-01T00:30:00+01:00', 'in UTC the year is outside 1970–9999'],
    ];
    for (const [written, problem] of refused) expect([written, readDate(written)]).toEqual([written, { problem: expect.stringContaining(problem) }]);
  });

  it('refuses relative words and anything not wholly a date; nothing read is ever before 1970', () => {
    const notDates = ['yesterday', 'tomorrow', 'today', 'now', 'last week', 'next year', 'two days ago', 'Monday', '5pm', 'May 2023', '2023', '8/5/2023', '2023/05/08', 'on 8 May, 2023 we met', '8 Mayfoo, 2023', '1 Jan 12023', '2023-05-08z', '', 'x'.repeat(5000)];
    for (const text of notDates) expect([text.slice(0, 20), readDate(text)]).toEqual([text.slice(0, 20), { problem: expect.stringMatching(/^not a date: .*relative dates like "yesterday" are not read/) }]);
    // The message quotes at most a line of a long input.
    expect(JSON.stringify(readDate('x'.repeat(5000))).length).toBeLessThan(400);
  });

  it('reads every LoCoMo session date as written', async () => {
    const samples = JSON.parse(await readFile(defaultLocomoPath(), 'utf8')) as Array<{ conversation: Record<string, unknown> }>;
    const written = samples.flatMap((s) => Object.entries(s.conversation).filter(([key]) => key.endsWith('_date_time')).map(([, value]) => String(value)));
    expect(written.length).toBeGreaterThan(100);
    const months = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
    for (const text of written) {
      const reading = readDate(text);
      expect(reading).toHaveProperty('time');
      const time = new Date(`${'time' in reading ? reading.time : ''}Z`);
      const hour = time.getUTCHours();
      const back = `${hour % 12 || 12}:${String(time.getUTCMinutes()).padStart(2, '0')} ${hour < 12 ? 'am' : 'pm'} on ${time.getUTCDate()} ${months[time.getUTCMonth()]}, ${time.getUTCFullYear()}`;
      expect(back).toBe(text);
    }
  });

  it('names the field of a date that is not one', () => {
    expect(thrown(() => messageTime('date', 'yesterday'))).toEqual({ code: 'INVALID_INPUT', message: expect.stringMatching(/^date: not a date: "yesterday"/) });
    expect(thrown(() => checkMessages([{ speaker: 'A', text: 'hi' }, { speaker: 'B', text: 'yo', date: '31 February, 2023' }]))).toEqual({
      code: 'INVALID_INPUT',
      message: expect.stringMatching(/^messages\[1\]\.date: not a date: "31 February, 2023"; February 2023 has 28 days/),
    });
  });
});

describe('message fields', () => {
  it('caps speaker names and ids at limits.labelChars, naming the message', () => {
    const long = 'N'.repeat(limits.labelChars + 1);
    expect(checkMessages([{ speaker: 'N'.repeat(limits.labelChars), text: 'hi', id: 'i'.repeat(limits.labelChars) }])).toHaveLength(1);
    expect(thrown(() => checkMessages([{ speaker: 'A', text: '' }, { speaker: 'A', text: 'hi' }, { speaker: long, text: 'hi' }]))).toEqual({
      code: 'INPUT_TOO_LARGE',
      message: `messages[2].speaker: ${limits.labelChars + 1} characters; the limit is ${limits.labelChars} (limits.labelChars)`,
    });
    expect(thrown(() => checkMessages([{ role: 'user', name: long, content: 'hi' }]))).toMatchObject({ code: 'INPUT_TOO_LARGE', message: expect.stringMatching(/^messages\[0\]\.speaker: /) });
    expect(thrown(() => checkMessages([{ speaker: 'A', text: 'hi', id: long }]))).toMatchObject({ code: 'INPUT_TOO_LARGE', message: expect.stringMatching(/^messages\[0\]\.id: /) });
    expect(thrown(() => checkMessages([{ speaker: 'A', text: 'hi' }], { labelChars: 0 }))).toMatchObject({ code: 'INPUT_TOO_LARGE', message: expect.stringContaining('(limits.labelChars)') });
  });

  it('checks ids a caller gives: a non-empty string within limits.labelChars', () => {
    expect(checkId('sessionId', undefined, limits)).toBeUndefined();
    expect(checkId('sessionId', 'chat-1', limits)).toBe('chat-1');
    for (const odd of ['', '  ', 5, { a: 1 }, null, 5n, ['s']]) {
      expect(thrown(() => checkId('sessionId', odd, limits))).toEqual({ code: 'INVALID_INPUT', message: expect.stringMatching(/^sessionId: expected a non-empty string, got /) });
    }
    expect(thrown(() => checkId('batchId', 'b'.repeat(20_000), limits))).toEqual({ code: 'INPUT_TOO_LARGE', message: 'batchId: 20000 characters; the limit is 200 (limits.labelChars)' });
  });

  it('counts speaker, id, time and metadata toward limits.maxAddChars', () => {
    const message = { speaker: 'Speaker', id: 'id-1', text: 'hello', date: '2023-05-08', metadata: { tag: 'é' } };
    const chars = 'hello'.length + 'Speaker'.length + 'id-1'.length + '2023-05-08T00:00:00'.length + Buffer.byteLength(JSON.stringify(message.metadata));
    expect(checkMessages([message], { maxAddChars: chars })).toHaveLength(1);
    expect(thrown(() => checkMessages([message], { maxAddChars: chars - 1 }))).toEqual({
      code: 'INPUT_TOO_LARGE',
      message: `one add holds ${chars} characters; the limit is ${chars - 1} (limits.maxAddChars): split it into several adds`,
    });
  });

  it('measures metadata as the UTF-8 bytes of its JSON, keys of undefined values left out', () => {
    const metadata = { plain: 'ascii', accents: 'café ñ', emoji: '🦉 owl', escapes: 'quote " backslash \\ newline \n tab \t nul \u0000', list: [1, -0, 2.5e-7, true, false, null, [], {}], nested: { deeper: { n: 1e21 } }, gone: undefined };
    const bytes = Buffer.byteLength(JSON.stringify(metadata));
    expect(checkMessages([{ speaker: 'A', text: 'hi', metadata }], { metadataBytes: bytes })).toHaveLength(1);
    expect(thrown(() => checkMessages([{ speaker: 'A', text: 'hi', metadata }], { metadataBytes: bytes - 1 }))).toMatchObject({ code: 'INPUT_TOO_LARGE', message: expect.stringMatching(/^messages\[0\]\.metadata: its JSON passes \d+ bytes at .* \(limits\.metadataBytes\)$/) });
    // One object reached twice (not inside itself) is JSON, written twice.
    const shared = { city: 'Porto' };
    const twice = { home: shared, work: shared };
    expect(checkMessages([{ speaker: 'A', text: 'hi', metadata: twice }], { metadataBytes: Buffer.byteLength(JSON.stringify(twice)) })).toHaveLength(1);
  });

  it('refuses metadata that is not plain JSON, naming the path', () => {
    const cyclic: Record<string, unknown> = { a: { b: 1 } };
    (cyclic['a'] as Record<string, unknown>)['back'] = cyclic;
    class Point {
      x = 1;
    }
    const odd: Array<[unknown, string]> = [
      [cyclic, 'messages[0].metadata.a.back: metadata must be plain JSON, got a cycle'],
      [{ n: 10n }, 'messages[0].metadata.n: metadata must be plain JSON, got a bigint'],
      [{ f: () => 1 }, 'messages[0].metadata.f: metadata must be plain JSON, got a function'],
      [{ s: Symbol('s') }, 'messages[0].metadata.s: metadata must be plain JSON, got a symbol'],
      [{ list: [1, undefined] }, 'messages[0].metadata.list[1]: metadata must be plain JSON, got undefined'],
      // eslint-disable-next-line no-sparse-arrays
      [{ list: [1, , 3] }, 'messages[0].metadata.list[1]: metadata must be plain JSON, got a hole in an array'],
      [{ x: Number.NaN }, 'messages[0].metadata.x: metadata must be plain JSON, got NaN'],
      [{ x: -Infinity }, 'messages[0].metadata.x: metadata must be plain JSON, got -Infinity'],
      [{ when: new Date(0) }, 'messages[0].metadata.when: metadata must be plain JSON, got a Date instance'],
      [{ map: new Map([[1, 2]]) }, 'messages[0].metadata.map: metadata must be plain JSON, got a Map instance'],
      [{ point: new Point() }, 'messages[0].metadata.point: metadata must be plain JSON, got a Point instance'],
    ];
    for (const [metadata, message] of odd) expect(thrown(() => checkMessages([{ speaker: 'A', text: 'hi', metadata }]))).toEqual({ code: 'INVALID_INPUT', message });
    expect(checkMessages([{ speaker: 'A', text: 'hi', metadata: Object.assign(Object.create(null) as object, { ok: 1 }) }])).toHaveLength(1);
    expect(thrown(() => checkMessages([{ speaker: 'A', text: 'hi', metadata: [1] }]))).toEqual({ code: 'INVALID_INPUT', message: 'messages[0].metadata: expected an object, got an array' });
  });

  it('stops walking metadata at the depth and size limits: deep, huge and wide objects are refused fast', () => {
    expect(checkMessages([{ speaker: 'A', text: 'hi', metadata: nested(limits.metadataDepth) }])).toHaveLength(1);
    for (const depth of [limits.metadataDepth + 1, 10_000, 200_000]) {
      expect(thrown(() => checkMessages([{ speaker: 'A', text: 'hi', metadata: nested(depth) }]))).toEqual({
        code: 'INPUT_TOO_LARGE',
        message: expect.stringMatching(/^messages\[0\]\.metadata: nested deeper than 32 levels at messages\[0\]\.metadata(\.down){32} \(limits\.metadataDepth\)$/),
      });
    }
    const tooLarge = { code: 'INPUT_TOO_LARGE', message: expect.stringContaining('(limits.metadataBytes)') };
    for (const metadata of [{ blob: 'x'.repeat(50_000_000) }, { list: new Array<number>(5_000_000).fill(1) }, { holes: new Array<number>(1e9) }]) {
      const started = performance.now();
      expect(thrown(() => checkMessages([{ speaker: 'A', text: 'hi', metadata }]))).toMatchObject(tooLarge);
      expect(performance.now() - started).toBeLessThan(100);
    }
    // Many keys: listing them is the one step that grows with the object.
    expect(thrown(() => checkMessages([{ speaker: 'A', text: 'hi', metadata: Object.fromEntries(Array.from({ length: 200_000 }, (_, i) => [`k${i}`, 'value'])) }]))).toMatchObject(tooLarge);
  });
});

describe('conversations', () => {
  const conversation = (session: Record<string, unknown>, turn: Record<string, unknown> = {}): Conversation =>
    ({ id: 'c', sessions: [{ id: 's1', dateText: null, time: null, ...session, turns: [{ dialogId: 'D1:1', speaker: 'Ana', text: 'hi', ...turn }] }] }) as Conversation;

  it('caps ids, speakers and dates as written at limits.labelChars, naming the field', () => {
    const long = 'x'.repeat(limits.labelChars + 1);
    const cases: Array<[unknown, string]> = [
      [{ ...conversation({}), id: long }, 'conversation.id'],
      [conversation({ id: long }), 'sessions.0.id'],
      [conversation({ dateText: long }), 'sessions.0.dateText'],
      [conversation({}, { dialogId: long }), 'sessions.0.turns.0.dialogId'],
      [conversation({}, { speaker: long }), 'sessions.0.turns.0.speaker'],
    ];
    for (const [input, field] of cases) expect(thrown(() => checkConversation(input, limits))).toEqual({ code: 'INPUT_TOO_LARGE', message: `${field}: ${limits.labelChars + 1} characters; the limit is ${limits.labelChars} (limits.labelChars)` });
  });

  it('reads session times as dates, into the stored form, and refuses what is not one', () => {
    expect(checkConversation(conversation({ time: '2023-05-08T10:00:00+09:00' }), limits).conversation.sessions[0]?.time).toBe('2023-05-08T01:00:00');
    expect(checkConversation(conversation({ dateText: 'the day after the party', time: null }), limits).conversation.sessions[0]).toMatchObject({ dateText: 'the day after the party', time: null });
    for (const time of ['31 February, 2023', 'yesterday', '0000-01-01']) {
      expect(thrown(() => checkConversation(conversation({ time }), limits))).toEqual({ code: 'INVALID_INPUT', message: expect.stringMatching(/^sessions\.0\.time: not a (date|time)/) });
    }
  });

  it('refuses a conversation over limits.maxAddChars', () => {
    const small = resolveConfig({ limits: { maxAddChars: 10 } }).limits;
    expect(thrown(() => checkConversation(conversation({}, { text: 'a longer text' }), small))).toMatchObject({ code: 'INPUT_TOO_LARGE', message: expect.stringContaining('(limits.maxAddChars)') });
  });
});

describe('Memory.add refuses odd fields before embedding anything', () => {
  let runtime: TestRuntime;
  beforeAll(async () => {
    runtime = await testRuntime();
  });

  it('names the field, embeds nothing, writes nothing, and the scope works after', async () => {
    let embedded = 0;
    const counting: Embedder = {
      ...runtime.embedder,
      embed: (texts, options) => {
        embedded += texts.length;
        return runtime.embedder.embed(texts, options);
      },
    };
    const store = new MemoryStore();
    const memory = await Memory.open({ store, embedder: counting, createIndex: runtime.createIndex });
    await memory.add([{ speaker: 'Ana', text: 'My sister Lena moved to Porto last spring.', id: 'keep-1' }], { sessionId: 'kept', date: '2024-03-01' });
    const before = { list: await memory.list(), revision: await store.revision('default') };
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    const odd: Array<[string, () => Promise<unknown>, string, RegExp]> = [
      ['20,000-character speaker', () => memory.add([{ speaker: 'S'.repeat(20_000), text: 'hello there' }]), 'INPUT_TOO_LARGE', /^messages\[0\]\.speaker: 20000 characters/],
      ['circular metadata', () => memory.add([{ speaker: 'A', text: 'hi', metadata: cyclic as never }]), 'INVALID_INPUT', /^messages\[0\]\.metadata\.self: .*cycle/],
      ['BigInt metadata', () => memory.add([{ speaker: 'A', text: 'hi', metadata: { n: 1n } as never }]), 'INVALID_INPUT', /^messages\[0\]\.metadata\.n: .*bigint/],
      ['10,000-deep metadata', () => memory.add([{ speaker: 'A', text: 'hi', metadata: nested(10_000) as never }]), 'INPUT_TOO_LARGE', /^messages\[0\]\.metadata: nested deeper/],
      ['50 MB metadata', () => memory.add([{ speaker: 'A', text: 'hi', metadata: { blob: 'x'.repeat(50_000_000) } }]), 'INPUT_TOO_LARGE', /^messages\[0\]\.metadata: its JSON passes/],
      ['31 February', () => memory.add([{ speaker: 'A', text: 'hi', date: '31 February, 2023' }]), 'INVALID_INPUT', /^messages\[0\]\.date: not a date/],
      ['13:99 pm', () => memory.add([{ speaker: 'A', text: 'hi' }], { date: '13:99 pm on 8 May, 2023' }), 'INVALID_INPUT', /^date: not a time/],
      ['year 0', () => memory.add({ sessionId: 's', date: '0000-01-01', messages: [{ speaker: 'A', text: 'hi' }] }), 'INVALID_INPUT', /^date: not a date/],
      ['yesterday', () => memory.add([{ speaker: 'A', text: 'hi', date: 'yesterday' }]), 'INVALID_INPUT', /^messages\[0\]\.date: not a date: "yesterday"/],
      ['conversation time', () => memory.add(conversationWith({ time: 'tomorrow' })), 'INVALID_INPUT', /^sessions\.0\.time: not a date/],
      ['conversation speaker', () => memory.add(conversationWith({}, 'S'.repeat(20_000))), 'INPUT_TOO_LARGE', /^sessions\.0\.turns\.0\.speaker: 20000 characters/],
    ];
    for (const [name, add, code, message] of odd) {
      embedded = 0;
      const error = await add().then(
        () => null,
        (err: unknown) => err,
      );
      expect([name, error]).toEqual([name, expect.any(PrismError)]);
      expect([name, (error as PrismError).code, (error as PrismError).message]).toEqual([name, code, expect.stringMatching(message)]);
      expect([name, embedded]).toEqual([name, 0]);
    }
    expect({ list: await memory.list(), revision: await store.revision('default') }).toEqual(before);
    await memory.add([{ speaker: 'Ben', text: 'I bought a red bicycle in Oslo.', id: 'keep-2' }], { sessionId: 'after', date: '2024-03-02' });
    expect((await memory.list()).map((s) => s.sessionId)).toEqual(['kept', 'after']);
    expect((await memory.search('Where did Lena move?', { budget: 256 })).context).toContain('Porto');
    expect((await memory.search('What did Ben buy?', { budget: 256 })).context).toContain('bicycle');
  });
});

function conversationWith(session: Record<string, unknown>, speaker = 'Ana'): Conversation {
  return { id: 'imported', sessions: [{ id: 's1', dateText: null, time: null, ...session, turns: [{ dialogId: 'D1:1', speaker, text: 'I moved to Porto.' }] }] } as Conversation;
}
