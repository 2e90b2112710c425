/**
 * Odd fields in `add()`: each row runs a table of odd inputs against a real Memory on SQLite with
 * the real MiniLM (one embedder, loaded once, for every run). Each odd add must fail with a typed
 * INVALID_INPUT or INPUT_TOO_LARGE whose message starts with the field it names, before anything
 * is written (the store's revision and the session list unchanged), and the scope must work after:
 * an add, a search, the list, and a reopen still holding every message added before (records
 * lost counts those that vanished). Each run takes the table in another order. The last row
 * times a new process's first search over messages whose speaker name is as long as allowed.
 */
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { DEFAULT_CONFIG } from '../../src/config.ts';
import { PrismError, type PrismErrorCode } from '../../src/errors.ts';
import type { Conversation } from '../../src/ingest/conversation.ts';
import { Memory } from '../../src/memory.ts';
import { nodeEmbedder, nodeUsearch } from '../../src/node.ts';
import { DEFAULT_PARTITION } from '../../src/scope.ts';
import { openSqliteStore } from '../../src/store/sqlite.node.ts';
import type { GraphStore } from '../../src/store/types.ts';
import { countTokens } from '../../src/util/tokens.ts';
import { inTempDir, type Fault, type FaultOutcome } from './fault.ts';

const repoRoot = resolve(import.meta.dirname, '..', '..');
const searchScript = join(repoRoot, 'test', 'faults', 'input-search.ts');
const LABEL = DEFAULT_CONFIG.limits.labelChars;

interface OddInput {
  name: string;
  /** The field the error names: its message starts with `<field>:`. */
  field: string;
  code: Extract<PrismErrorCode, 'INVALID_INPUT' | 'INPUT_TOO_LARGE'>;
  add(memory: Memory): Promise<unknown>;
}

const HUGE = 'S'.repeat(20_000);
const say = (extra: object = {}) => [{ speaker: 'Ana', text: 'I moved the piano upstairs.', ...extra }];

function cyclic(): Record<string, never> {
  const object: Record<string, unknown> = { note: 'x' };
  object['self'] = object;
  return object as Record<string, never>;
}

function nested(depth: number): Record<string, never> {
  let value: Record<string, unknown> = { leaf: true };
  for (let i = 1; i < depth; i++) value = { down: value };
  return value as Record<string, never>;
}

function conversation(session: Partial<Conversation['sessions'][number]> = {}, turn: { speaker?: string; dialogId?: string } = {}, id = 'imported'): Conversation {
  return { id, sessions: [{ id: 's1', dateText: null, time: null, ...session, turns: [{ dialogId: 'D1:1', speaker: 'Ana', text: 'I moved the piano upstairs.', ...turn }] }] };
}

const FIELDS: OddInput[] = [
  { name: '20,000-character speaker', field: 'messages[0].speaker', code: 'INPUT_TOO_LARGE', add: (m) => m.add(say({ speaker: HUGE })) },
  { name: 'speaker one over the cap', field: 'messages[1].speaker', code: 'INPUT_TOO_LARGE', add: (m) => m.add([...say(), ...say({ speaker: 'N'.repeat(LABEL + 1) })]) },
  { name: '20,000-character OpenAI name', field: 'messages[0].speaker', code: 'INPUT_TOO_LARGE', add: (m) => m.add([{ role: 'user', name: HUGE, content: 'I moved the piano.' }]) },
  { name: '20,000-character message id', field: 'messages[0].id', code: 'INPUT_TOO_LARGE', add: (m) => m.add(say({ id: HUGE })) },
  { name: '20,000-character v0.2 dialogId', field: 'messages[0].id', code: 'INPUT_TOO_LARGE', add: (m) => m.add({ sessionId: 's', messages: [{ speaker: 'Ana', text: 'hi', dialogId: HUGE }] }) },
  { name: 'numeric message id', field: 'messages[0].id', code: 'INVALID_INPUT', add: (m) => m.add(say({ id: 5 })) },
  { name: 'circular metadata', field: 'messages[0].metadata.self', code: 'INVALID_INPUT', add: (m) => m.add(say({ metadata: cyclic() })) },
  { name: 'BigInt metadata', field: 'messages[0].metadata.n', code: 'INVALID_INPUT', add: (m) => m.add(say({ metadata: { n: 10n } })) },
  { name: 'function metadata', field: 'messages[0].metadata.f', code: 'INVALID_INPUT', add: (m) => m.add(say({ metadata: { f: () => 1 } })) },
  { name: 'NaN metadata', field: 'messages[0].metadata.x', code: 'INVALID_INPUT', add: (m) => m.add(say({ metadata: { x: Number.NaN } })) },
  { name: 'undefined in a metadata array', field: 'messages[0].metadata.tags[1]', code: 'INVALID_INPUT', add: (m) => m.add(say({ metadata: { tags: ['a', undefined] } })) },
  { name: 'Date in metadata', field: 'messages[0].metadata.when', code: 'INVALID_INPUT', add: (m) => m.add(say({ metadata: { when: new Date() } })) },
  { name: 'metadata an array', field: 'messages[0].metadata', code: 'INVALID_INPUT', add: (m) => m.add(say({ metadata: ['a'] })) },
  { name: '10,000-deep metadata', field: 'messages[0].metadata', code: 'INPUT_TOO_LARGE', add: (m) => m.add(say({ metadata: nested(10_000) })) },
  { name: '50 MB metadata string', field: 'messages[0].metadata', code: 'INPUT_TOO_LARGE', add: (m) => m.add(say({ metadata: { blob: 'x'.repeat(50_000_000) } })) },
  { name: '1M-entry metadata array', field: 'messages[0].metadata', code: 'INPUT_TOO_LARGE', add: (m) => m.add(say({ metadata: { list: Array.from({ length: 1_000_000 }, (_, i) => `item ${i}`) } })) },
];

const IDS: OddInput[] = [
  { name: "sessionId ''", field: 'sessionId', code: 'INVALID_INPUT', add: (m) => m.add(say(), { sessionId: '' }) },
  { name: "sessionId '   '", field: 'sessionId', code: 'INVALID_INPUT', add: (m) => m.add(say(), { sessionId: '   ' }) },
  { name: 'sessionId 5 (v0.2 form)', field: 'sessionId', code: 'INVALID_INPUT', add: (m) => m.add({ sessionId: 5 as never, messages: say() }) },
  { name: 'sessionId {a: 1}', field: 'sessionId', code: 'INVALID_INPUT', add: (m) => m.add(say(), { sessionId: { a: 1 } as never }) },
  { name: '20,000-character sessionId', field: 'sessionId', code: 'INPUT_TOO_LARGE', add: (m) => m.add(say(), { sessionId: HUGE }) },
  { name: 'batchId 5', field: 'batchId', code: 'INVALID_INPUT', add: (m) => m.add(say(), { batchId: 5 as never }) },
  { name: '20,000-character batchId', field: 'batchId', code: 'INPUT_TOO_LARGE', add: (m) => m.add(say(), { batchId: HUGE }) },
];

const DATES: OddInput[] = [
  { name: "'31 February, 2023'", field: 'messages[0].date', code: 'INVALID_INPUT', add: (m) => m.add(say({ date: '31 February, 2023' })) },
  { name: "'13:99 pm on 8 May, 2023'", field: 'messages[0].date', code: 'INVALID_INPUT', add: (m) => m.add(say({ date: '13:99 pm on 8 May, 2023' })) },
  { name: "'0000-01-01'", field: 'messages[0].date', code: 'INVALID_INPUT', add: (m) => m.add(say({ date: '0000-01-01' })) },
  { name: "'1969-12-31'", field: 'messages[0].date', code: 'INVALID_INPUT', add: (m) => m.add(say({ date: '1969-12-31' })) },
  { name: "add date 'yesterday'", field: 'date', code: 'INVALID_INPUT', add: (m) => m.add(say(), { date: 'yesterday' }) },
  { name: "add date 'tomorrow'", field: 'date', code: 'INVALID_INPUT', add: (m) => m.add(say(), { date: 'tomorrow' }) },
  { name: "message date 'last week'", field: 'messages[0].date', code: 'INVALID_INPUT', add: (m) => m.add(say({ date: 'last week' })) },
  { name: "v0.2 date '2023-02-31'", field: 'date', code: 'INVALID_INPUT', add: (m) => m.add({ sessionId: 's', date: '2023-02-31', messages: say() }) },
  { name: '20,000-character date', field: 'messages[0].date', code: 'INVALID_INPUT', add: (m) => m.add(say({ date: `8 May 2023${' '.repeat(20_000)}x` })) },
];

const CONVERSATIONS: OddInput[] = [
  { name: '20,000-character turn speaker', field: 'sessions.0.turns.0.speaker', code: 'INPUT_TOO_LARGE', add: (m) => m.add(conversation({}, { speaker: HUGE })) },
  { name: '20,000-character dialogId', field: 'sessions.0.turns.0.dialogId', code: 'INPUT_TOO_LARGE', add: (m) => m.add(conversation({}, { dialogId: HUGE })) },
  { name: '20,000-character session id', field: 'sessions.0.id', code: 'INPUT_TOO_LARGE', add: (m) => m.add(conversation({ id: HUGE })) },
  { name: '20,000-character conversation id', field: 'conversation.id', code: 'INPUT_TOO_LARGE', add: (m) => m.add(conversation({}, {}, HUGE)) },
  { name: '20,000-character dateText', field: 'sessions.0.dateText', code: 'INPUT_TOO_LARGE', add: (m) => m.add(conversation({ dateText: HUGE })) },
  { name: "session time '31 February, 2023'", field: 'sessions.0.time', code: 'INVALID_INPUT', add: (m) => m.add(conversation({ time: '31 February, 2023' })) },
  { name: "session time 'yesterday'", field: 'sessions.0.time', code: 'INVALID_INPUT', add: (m) => m.add(conversation({ time: 'yesterday' })) },
  { name: 'session id 5', field: 'sessions.0.id', code: 'INVALID_INPUT', add: (m) => m.add(conversation({ id: 5 as never })) },
];

async function openMemory(path: string): Promise<{ memory: Memory; store: GraphStore }> {
  const [embedder, usearch] = await Promise.all([nodeEmbedder('int8'), nodeUsearch()]);
  const store = await openSqliteStore(path);
  return { memory: await Memory.open({ store, embedder, createIndex: (dim) => usearch.createIndex({ dim }) }), store };
}


function describeError(error: unknown): string {
  if (error === null) return 'the add resolved';
  if (error instanceof PrismError) return `${error.code} ${error.message.slice(0, 120)}`;
  return error instanceof Error ? `untyped ${error.name}: ${error.message.slice(0, 120)}` : String(error);
}

/** One run over `table` (from row `i % table.length` on): every odd add refused as promised, nothing written, the scope working after. */
function oddRun(table: readonly OddInput[], i: number): Promise<FaultOutcome> {
  return inTempDir(async (dir) => {
    const path = join(dir, 'memory.sqlite');
    let { memory, store } = await openMemory(path);
    const kept = ['keep-1', 'keep-2', 'after'];
    await memory.add(
      [
        { speaker: 'Ana', text: 'My sister Lena moved to Porto last spring.', id: 'keep-1' },
        { speaker: 'Ben', text: 'I restored an old green rowing boat.', id: 'keep-2' },
      ],
      { sessionId: 'kept', date: '2024-03-01' },
    );
    const failures: string[] = [];
    for (const odd of [...table.slice(i % table.length), ...table.slice(0, i % table.length)]) {
      const before = JSON.stringify({ revision: await store.revision(DEFAULT_PARTITION), sessions: await memory.list() });
      const error = await odd.add(memory).then(
        () => null,
        (err: unknown) => err,
      );
      const named = error instanceof PrismError && error.code === odd.code && error.message.startsWith(`${odd.field}:`);
      const unchanged = JSON.stringify({ revision: await store.revision(DEFAULT_PARTITION), sessions: await memory.list() }) === before;
      if (!named || !unchanged) failures.push(`${odd.name}: expected ${odd.code} naming ${odd.field}, got ${describeError(error)}${unchanged ? '' : '; the store changed'}`);
    }
    await memory.add([{ speaker: 'Cy', text: `Run ${i}: I planted a quince tree by the gate.`, id: 'after' }], { sessionId: 'after', date: '2024-03-02' });
    const searched = (await memory.search('Where did Lena move?', { budget: 256 })).context.includes('Porto') && (await memory.search('What did Cy plant by the gate?', { budget: 256 })).context.includes('quince');
    await memory.close();
    ({ memory, store } = await openMemory(path));
    const lost = (await Promise.all(kept.map((id) => memory.get(id)))).filter((record) => record === null).length;
    const sessions = (await memory.list()).map((s) => s.sessionId);
    await memory.close();
    if (!searched) failures.push('a search after the odd adds missed what the scope holds');
    if (sessions.join() !== 'kept,after') failures.push(`sessions after reopen: ${sessions.map((id) => JSON.stringify(id.slice(0, 20))).join(', ')}`);
    for (const failure of failures) process.stderr.write(`  ${failure.slice(0, 300)}\n`);
    return { survived: failures.length === 0 && lost === 0, recordsLost: lost };
  });
}

const execFileAsync = promisify(execFile);

/** A new process's first search over the store at `path`: its time, and how many units it found. */
async function firstSearch(path: string): Promise<{ ms: number; units: number }> {
  const { stdout } = await execFileAsync(process.execPath, ['--import', 'tsx', searchScript, path, 'Where did the piano go?'], { cwd: repoRoot });
  return JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as { ms: number; units: number };
}

/** 40 messages in two sessions, said by two speakers named `names`. */
async function storeSaidBy(path: string, names: readonly [string, string]): Promise<void> {
  const { memory } = await openMemory(path);
  for (const [s, date] of ['2024-04-01', '2024-04-02'].entries()) {
    const messages = Array.from({ length: 20 }, (_, k) => ({ speaker: names[k % 2] ?? 'Ana', text: `Note ${s}-${k}: we moved the piano to room ${k} and the ${k % 3 === 0 ? 'lamp' : 'chair'} too.` }));
    await memory.add(messages, { sessionId: `s${s}`, date });
  }
  await memory.close();
}

export const faults: Fault[] = [
  { name: 'odd fields (speaker, ids, metadata: huge, circular, BigInt, deep)', runs: 3, run: (i) => oddRun(FIELDS, i) },
  { name: 'odd fields (session and batch ids)', runs: 3, run: (i) => oddRun(IDS, i) },
  { name: 'odd fields (impossible and relative dates)', runs: 3, run: (i) => oddRun(DATES, i) },
  { name: 'odd fields (conversation form)', runs: 3, run: (i) => oddRun(CONVERSATIONS, i) },
  {
    name: 'odd fields (longest allowed speaker names: first search of a new process)',
    runs: 3,
    run: () =>
      inTempDir(async (dir) => {
        // One word (o200k's pre-tokenizer starts a word at a capital): the byte-pair merge's worst case.
        const longest = (name: string) => `${name}${name.toLowerCase().repeat(Math.ceil(LABEL / name.length))}`.slice(0, LABEL);
        await storeSaidBy(join(dir, 'short.sqlite'), ['Ana', 'Ben']);
        await storeSaidBy(join(dir, 'long.sqlite'), [longest('Anastasia'), longest('Benedikt')]);
        const short = await firstSearch(join(dir, 'short.sqlite'));
        const long = await firstSearch(join(dir, 'long.sqlite'));
        // A name never counted before (the tokenizer remembers the words it merged).
        const lineMs = (chars: number) => {
          const name = `A${Array.from({ length: chars - 1 }, () => String.fromCharCode(97 + Math.floor(Math.random() * 26))).join('')}`;
          const started = performance.now();
          countTokens(`(s0:1) ${name}: Note 0-1: we moved the piano.`);
          return performance.now() - started;
        };
        const longLineMs = lineMs(LABEL);
        const refusedLineMs = lineMs(20_000);
        process.stderr.write(
          `  first search of a new process: ${long.ms.toFixed(0)} ms with ${LABEL}-character speaker names, ${short.ms.toFixed(0)} ms with short ones; ` +
            `counting one line: ${longLineMs.toFixed(2)} ms at ${LABEL} characters, ${refusedLineMs.toFixed(0)} ms at 20,000 (now refused)\n`,
        );
        // Before the cap, 20,000-character names cost a new process's first search 2.4 s more.
        return { survived: long.ms < short.ms + 1000 && long.units > 0 && short.units > 0, recordsLost: 0 };
      }),
  },
];
