import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { integerFlag, parseArgv, UsageError } from '../src/cli/args.ts';
import { parseChatInput, parseChatLog } from '../src/cli/chat-input.ts';
import { PrismError } from '../src/errors.ts';

const SPECS = {
  budget: { type: 'string', value: '<tokens>', description: 'budget' },
  json: { type: 'boolean', description: 'json' },
  help: { type: 'boolean', short: 'h', description: 'help' },
} as const;

describe('parseArgv', () => {
  it('reads --flag value, --flag=value, booleans, short aliases and positionals', () => {
    const parsed = parseArgv(['when', '--budget', '512', 'did', '--json', '-h', 'it', '--', '--not-a-flag'], SPECS, 'prism search');
    expect(parsed.flags).toEqual({ budget: '512', json: true, help: true });
    expect(parsed.positionals).toEqual(['when', 'did', 'it', '--not-a-flag']);
    expect(parseArgv(['--budget=64'], SPECS, 'x').flags.budget).toBe('64');
  });

  it('names the command and the unknown flag, and lists the known ones', () => {
    expect(() => parseArgv(['--budgte', '5'], SPECS, 'prism search')).toThrow(UsageError);
    expect(() => parseArgv(['--budgte', '5'], SPECS, 'prism search')).toThrow(/prism search: unknown option --budgte \(options: --budget, --json, --help\)/);
    expect(() => parseArgv(['-x'], SPECS, 'prism search')).toThrow(/unknown option -x/);
  });

  it('rejects a missing value and a value given to a boolean', () => {
    expect(() => parseArgv(['--budget'], SPECS, 'prism search')).toThrow(/--budget needs a value <tokens>/);
    expect(() => parseArgv(['--budget', '--json'], SPECS, 'prism search')).toThrow(/--budget needs a value/);
    expect(() => parseArgv(['--json=yes'], SPECS, 'prism search')).toThrow(/--json takes no value/);
  });

  it('checks numbers: --budget abc says what was expected', () => {
    expect(integerFlag('budget', '512')).toBe(512);
    expect(integerFlag('budget', undefined)).toBeUndefined();
    for (const bad of ['abc', '1.5', '-3', '0', '', '1e3']) {
      expect(() => integerFlag('budget', bad)).toThrow(`--budget: expected a whole number ≥ 1, got "${bad}"`);
    }
  });
});

describe('chat input', () => {
  it('reads a "Speaker: text" log with continuation lines, comments, dates and colons inside text', () => {
    const log = [
      '# a comment',
      'Sam: I run at 5:30 per km, see https://example.com/plan',
      '  and on Sundays too',
      '',
      '[2025-03-14] Assistant: Noted.',
      'Dr. Lee: Keep the knee exercises.',
    ].join('\n');
    expect(parseChatLog(log, 'chat.txt')).toEqual([
      { speaker: 'Sam', text: 'I run at 5:30 per km, see https://example.com/plan\nand on Sundays too' },
      { speaker: 'Assistant', text: 'Noted.', date: '2025-03-14' },
      { speaker: 'Dr. Lee', text: 'Keep the knee exercises.' },
    ]);
  });

  it('says which line of a log is wrong', () => {
    expect(() => parseChatLog('\nhello there\nSam: hi', 'chat.txt')).toThrow('chat.txt line 2: expected "Speaker: text"');
    expect(() => parseChatLog('Sam: hi\nMaya:\nSam: ok', 'chat.txt')).toThrow('chat.txt line 2: the message of Maya is empty');
    expect(() => parseChatLog('# only a comment\n', 'stdin')).toThrow('stdin: no messages');
  });

  it('guesses JSON from the first character and keeps message lists, OpenAI messages and { messages } objects as given', () => {
    const openai = [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'I moved to Porto.' },
    ];
    expect(parseChatInput(JSON.stringify(openai), 'a.json')).toEqual({ kind: 'messages', messages: openai });
    expect(parseChatInput(JSON.stringify({ sessionId: 's1', date: '2025-01-02', messages: [{ speaker: 'A', text: 'x' }] }), 'b.json')).toEqual({
      kind: 'messages',
      messages: [{ speaker: 'A', text: 'x' }],
      sessionId: 's1',
      date: '2025-01-02',
    });
    expect(parseChatInput('Sam: hi', 'c.txt')).toEqual({ kind: 'messages', messages: [{ speaker: 'Sam', text: 'hi' }] });
  });

  it('reports where JSON is broken, and what shape was expected', () => {
    expect(() => parseChatInput('[\n  {"speaker": "A", "text": "x"},\n  {"speaker": }\n]', 'bad.json')).toThrow(/bad\.json: not valid JSON \(.*"speaker": \}/);
    // V8 gives a position for some syntax errors (e.g. a missing value at the end); it becomes line and column.
    expect(() => parseChatInput('[\n  {"speaker": "A",\n', 'cut.json')).toThrow(/cut\.json: not valid JSON \(.* at line 3 column 1\)/);
    expect(() => parseChatInput('{"turns": []}', 'odd.json')).toThrow(PrismError);
    expect(() => parseChatInput('{"turns": []}', 'odd.json')).toThrow(/odd\.json: expected a JSON array of messages/);
    expect(() => parseChatInput('{"messages": [], "date": 5}', 'd.json')).toThrow('d.json: date: expected a string, got 5');
  });

  it('reads the repository example', async () => {
    const messages = parseChatLog(await readFile(resolve('examples/chat.txt'), 'utf8'), 'examples/chat.txt');
    expect(messages.length).toBeGreaterThanOrEqual(10);
    expect(new Set(messages.map((m) => m.speaker))).toEqual(new Set(['Sam', 'Assistant']));
  });
});

/**
 * The command as a user runs it: a real process on a store in a temporary directory. One
 * process per command, as in a shell; `search` must answer from what `add` stored before.
 */
describe('prism (spawned)', () => {
  const run = promisify(execFile);
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'prism-cli-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function prism(args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
    const child = run(process.execPath, ['--import', 'tsx', resolve('test/helpers/prism-cli.ts'), ...args], { timeout: 120_000 });
    if (input !== undefined) {
      child.child.stdin?.end(input);
    }
    try {
      const { stdout, stderr } = await child;
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code?: number; stdout?: string; stderr?: string };
      return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
    }
  }

  it('answers --help with exit 0, --version with the package version, and bad calls with exit 2 and a reason', async () => {
    const help = await prism(['--help']);
    expect(help.code).toBe(0);
    for (const name of ['add', 'search', 'list', 'delete', 'export', 'import', 'stats', 'mcp', 'eval']) expect(help.stdout).toContain(`  ${name} `);
    const version = await prism(['--version']);
    expect(version.stdout.trim()).toBe(JSON.parse(await readFile('package.json', 'utf8')).version);
    const budget = await prism(['search', 'when?', '--budget', 'abc', '--dir', dir]);
    expect(budget.code).toBe(2);
    expect(budget.stderr).toContain('prism search: --budget: expected a whole number ≥ 1, got "abc"');
    const unknown = await prism(['list', '--usr', 'x']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('prism list: unknown option --usr');
  }, 60_000);

  it('adds the example chat, searches it without ingesting, lists, exports, imports and deletes', async () => {
    const added = await prism(['add', 'examples/chat.txt', '--date', '2025-03-14', '--dir', dir, '--json']);
    expect(added.code, added.stderr).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ chunksAdded: 1 });
    // The same file again is the same batch: stored once.
    const again = await prism(['add', 'examples/chat.txt', '--date', '2025-03-14', '--dir', dir, '--json']);
    expect(JSON.parse(again.stdout)).toMatchObject({ chunksAdded: 0, chunksSkipped: 1 });

    const search = await prism(['search', 'What is the name of the dog?', '--dir', dir]);
    expect(search.code, search.stderr).toBe(0);
    expect(search.stdout).toContain('intent routing is off by default');
    expect(search.stdout).toMatch(/Sam: .*Biscuit/);
    const json = JSON.parse((await prism(['search', 'Where does Maya live?', '--dir', dir, '--json', '--budget', '128'])).stdout) as {
      context: string;
      tokens: number;
      units: Array<{ turns: Array<{ speaker: string; sessionId: string }> }>;
    };
    expect(json.context).toContain('Porto');
    expect(json.tokens).toBeLessThanOrEqual(128);
    expect(json.units[0]?.turns[0]?.sessionId).toBe('2025-03-14');

    // Another user's memory is empty, and searching it adds nothing.
    const other = await prism(['search', 'What is the name of the dog?', '--dir', dir, '--user', 'maya', '--json']);
    expect(JSON.parse(other.stdout).units).toEqual([]);
    expect(JSON.parse((await prism(['list', '--dir', dir, '--user', 'maya', '--json'])).stdout)).toEqual([]);

    const list = await prism(['list', '--dir', dir]);
    expect(list.stdout).toMatch(/2025-03-14\s+2025-03-14\S*\s+11\s+\d+/);
    const session = await prism(['list', '--session', '2025-03-14', '--dir', dir]);
    expect(session.stdout).toContain('Sam: Guess what, I finally adopted a dog on Saturday!');

    const file = join(dir, 'backup.prism');
    expect((await prism(['export', file, '--dir', dir])).code).toBe(0);
    const imported = await prism(['import', file, '--dir', dir, '--user', 'copy', '--json']);
    expect(imported.code, imported.stderr).toBe(0);
    expect(JSON.parse(imported.stdout)).toMatchObject({ chunks: 1 });
    const stats = await prism(['stats', '--dir', dir]);
    expect(stats.stdout).toContain('user default: 1 chunk');
    expect(stats.stdout).toContain('user copy');

    const missing = await prism(['delete', '--session', 'no-such-day', '--dir', dir]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('[NOT_FOUND]');
    const deleted = await prism(['delete', '--session', '2025-03-14', '--dir', dir, '--json']);
    expect(JSON.parse(deleted.stdout)).toEqual({ chunksDeleted: 1 });
    expect(JSON.parse((await prism(['list', '--dir', dir, '--json'])).stdout)).toEqual([]);
  }, 300_000);

  it('reads OpenAI messages from stdin, and says which message is wrong', async () => {
    const messages = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'I moved to Utrecht and work at the botanical garden.' },
      { role: 'assistant', content: 'Congratulations on the new job!' },
    ];
    const added = await prism(['add', '-', '--dir', dir, '--user', 'alex', '--session', 'move', '--json'], JSON.stringify(messages));
    expect(added.code, added.stderr).toBe(0);
    const session = JSON.parse((await prism(['list', '--session', 'move', '--dir', dir, '--user', 'alex', '--json'])).stdout) as {
      messages: Array<{ speaker: string }>;
    };
    expect(session.messages.map((m) => m.speaker)).toEqual(['User', 'Assistant']);

    const bad = await prism(['add', '-', '--dir', dir], JSON.stringify([{ speaker: 'A', text: 'fine' }, { speaker: 'B' }]));
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/\b1\b.*text|text.*\b1\b/);
    const log = await prism(['add', '-', '--dir', dir], 'Sam: hi\nthis line has no speaker\n');
    expect(log.code).toBe(0);
    const broken = await prism(['add', '-', '--dir', dir], 'no speaker on the first line\nSam: hi\n');
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain('stdin line 1: expected "Speaker: text"');
  }, 300_000);
});
