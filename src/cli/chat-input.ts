/**
 * What `prism add` reads: a JSON message list (`{ speaker, text }` or OpenAI `{ role, content }`
 * messages), `{ messages, sessionId?, date? }`, a LoCoMo file, or a plain-text chat log with one
 * `Speaker: text` message per line. Errors name the source and the line or message at fault.
 */
import { PrismError } from '../errors.ts';
import type { Conversation } from '../ingest/conversation.ts';
import { parseLocomo } from '../ingest/locomo.ts';
import type { InputMessage } from '../ingest/input.ts';

export type ChatInput =
  | { kind: 'messages'; messages: InputMessage[]; sessionId?: string; date?: string }
  /** A LoCoMo file: whole multi-session conversations, added with `addConversation`. */
  | { kind: 'conversations'; conversations: Conversation[] };

export type ChatFormat = 'json' | 'text';

/** Parses `text` read from `source` (a file name, or `stdin`); the format is guessed from the first character unless given. */
export function parseChatInput(text: string, source: string, format?: ChatFormat): ChatInput {
  const chosen = format ?? (/^\s*[[{]/.test(text) ? 'json' : 'text');
  return chosen === 'json' ? parseJsonInput(text, source) : { kind: 'messages', messages: parseChatLog(text, source) };
}

function parseJsonInput(text: string, source: string): ChatInput {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new PrismError('INVALID_INPUT', `${source}: not valid JSON (${jsonErrorPlace(text, cause)})`, { cause });
  }
  if (Array.isArray(json)) {
    if (json.length > 0 && json.every(isLocomoSample)) return { kind: 'conversations', conversations: parseLocomo(json).map((s) => s.conversation) };
    return { kind: 'messages', messages: json as InputMessage[] };
  }
  if (typeof json === 'object' && json !== null && 'messages' in json && Array.isArray(json.messages)) {
    const sessionId = 'sessionId' in json ? optionalString(json.sessionId, `${source}: sessionId`) : undefined;
    const date = 'date' in json ? optionalString(json.date, `${source}: date`) : undefined;
    return {
      kind: 'messages',
      messages: json.messages as InputMessage[],
      ...(sessionId === undefined ? {} : { sessionId }),
      ...(date === undefined ? {} : { date }),
    };
  }
  throw new PrismError(
    'INVALID_INPUT',
    `${source}: expected a JSON array of messages ({ speaker, text } or { role, content }), an object { messages: [...] }, or a LoCoMo file`,
  );
}

function optionalString(value: unknown, what: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new PrismError('INVALID_INPUT', `${what}: expected a string, got ${JSON.stringify(value)}`);
  return value;
}

function isLocomoSample(value: unknown): boolean {
  return typeof value === 'object' && value !== null && 'conversation' in value && 'qa' in value;
}

/** `line L column C` from the position V8 reports in a JSON syntax error, else its message. */
function jsonErrorPlace(text: string, cause: unknown): string {
  const message = cause instanceof Error ? cause.message : String(cause);
  const position = /position (\d+)/.exec(message);
  if (!position) return message;
  const before = text.slice(0, Number(position[1]));
  const line = before.split('\n').length;
  const column = before.length - before.lastIndexOf('\n');
  return `${message.replace(/ in JSON at position \d+.*$/, '')} at line ${line} column ${column}`;
}

/**
 * `[date] ` is an optional per-message date prefix. The speaker is up to 48 characters without
 * a colon, followed by `: ` — so `https://…` or `10:30` inside a line never starts a message.
 */
const MESSAGE_LINE = /^(?:\[([^\]]+)\]\s*)?([^\s:][^:]{0,47}?):(?:\s+(.*))?$/;

/**
 * A chat log: one `Speaker: text` message per line (optionally `[date] Speaker: text`); a line
 * without a speaker continues the message above it; blank lines and `#` comments are skipped.
 */
export function parseChatLog(text: string, source: string): Array<{ speaker: string; text: string; date?: string }> {
  const messages: Array<{ speaker: string; text: string; date?: string; line: number }> = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const match = MESSAGE_LINE.exec(line);
    if (match) {
      const [, date, speaker, body] = match;
      messages.push({ speaker: (speaker as string).trim(), text: body?.trim() ?? '', line: index + 1, ...(date ? { date: date.trim() } : {}) });
      return;
    }
    const previous = messages.at(-1);
    if (!previous) {
      throw new PrismError(
        'INVALID_INPUT',
        `${source} line ${index + 1}: expected "Speaker: text" (e.g. "Sam: I adopted a puppy"), got "${truncate(line)}"`,
      );
    }
    previous.text = previous.text === '' ? line : `${previous.text}\n${line}`;
  });
  if (messages.length === 0) throw new PrismError('INVALID_INPUT', `${source}: no messages (expected lines of "Speaker: text")`);
  const empty = messages.find((m) => m.text === '');
  if (empty) throw new PrismError('INVALID_INPUT', `${source} line ${empty.line}: the message of ${empty.speaker} is empty`);
  return messages.map(({ line: _line, ...message }) => message);
}

function truncate(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
