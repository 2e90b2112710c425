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
