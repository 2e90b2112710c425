import type { InputLimits } from '../config.ts';
import { PrismError } from '../errors.ts';
import type { ChunkTurn, JsonValue } from '../graph/types.ts';
import { parseSessionDate } from './conversation.ts';

/** A message as chat logs have it: who said it and what. */
export interface SpeakerMessage {
  speaker: string;
  text: string;
  /** The caller's message id. Re-adding a message whose id the scope already holds is a no-op. */
  id?: string;
  /** When the message was written (ISO-8601 or as written, e.g. `1:56 pm on 8 May, 2023`). */
  date?: string;
  metadata?: Record<string, JsonValue>;
}

/** One part of an OpenAI-style multi-part content array; only `text` parts are remembered. */
export interface ContentPart {
  type: string;
  text?: string;
}

/** An OpenAI chat message. `system`, `developer` and `tool` messages are not remembered (the add report counts them). */
export interface RoleMessage {
  role: 'user' | 'assistant' | 'system' | 'developer' | 'tool';
  content: string | null | readonly ContentPart[];
  /** Used as the speaker when present; otherwise `User` / `Assistant`. */
  name?: string;
  id?: string;
  date?: string;
  metadata?: Record<string, JsonValue>;
}

/** A message `add()` takes: `{ speaker, text }` as chat logs have it, or an OpenAI chat message. */
export type InputMessage = SpeakerMessage | RoleMessage;

/** A message checked and reduced to what a turn stores; `id` only when the caller gave one. */
export interface NormalisedMessage {
  id: string | null;
  speaker: string;
  text: string;
  time: string | null;
  metadata?: Record<string, JsonValue>;
}

const REMEMBERED_ROLES = new Set(['user', 'assistant']);
const SKIPPED_ROLES = new Set(['system', 'developer', 'tool']);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `${typeof value} ${JSON.stringify(value)}`.slice(0, 60);
}

function optionalString(where: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.trim() === '') throw new PrismError('INVALID_INPUT', `${where}: expected a non-empty string, got ${describe(value)}`);
  return value;
}

/** The time of a message's `date`, in UTC; a date that does not parse is an error naming the message. */
export function messageTime(where: string, date: string | undefined): string | null {
  if (date === undefined) return null;
  const time = parseSessionDate(date);
  if (time === null) throw new PrismError('INVALID_INPUT', `${where}.date: not a date: ${JSON.stringify(date)}`);
  return time;
}

function roleText(where: string, content: unknown): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new PrismError('INVALID_INPUT', `${where}.content: expected a string or an array of parts, got ${describe(content)}`);
  return content
    .map((part: unknown) => (isObject(part) && part['type'] === 'text' && typeof part['text'] === 'string' ? part['text'] : ''))
    .filter((text) => text !== '')
    .join('\n');
}

/**
 * Checks a caller's messages and reduces each to speaker, text, id and time. Errors name the
 * message (`messages[3].text: …`). Empty messages and roles that are not remembered are
 * dropped and counted.
 */
export function normaliseMessages(input: unknown, where = 'messages'): { messages: NormalisedMessage[]; skippedRoles: number; emptyMessages: number } {
  if (!Array.isArray(input)) throw new PrismError('INVALID_INPUT', `${where}: expected an array of { speaker, text } or { role, content } messages, got ${describe(input)}`);
  const messages: NormalisedMessage[] = [];
  let skippedRoles = 0;
  let emptyMessages = 0;
  input.forEach((raw: unknown, i) => {
    const at = `${where}[${i}]`;
    if (!isObject(raw)) throw new PrismError('INVALID_INPUT', `${at}: expected { speaker, text } or { role, content }, got ${describe(raw)}`);
    let speaker: string;
    let text: string;
    if ('role' in raw) {
      const role = raw['role'];
      if (typeof role !== 'string' || !(REMEMBERED_ROLES.has(role) || SKIPPED_ROLES.has(role))) {
        throw new PrismError('INVALID_INPUT', `${at}.role: expected user, assistant, system, developer or tool, got ${describe(role)}`);
      }
      if (SKIPPED_ROLES.has(role)) {
        skippedRoles++;
        return;
      }
      text = roleText(at, raw['content']);
      speaker = optionalString(`${at}.name`, raw['name']) ?? (role === 'user' ? 'User' : 'Assistant');
    } else {
      if (typeof raw['speaker'] !== 'string' || raw['speaker'].trim() === '') {
        throw new PrismError('INVALID_INPUT', `${at}.speaker: expected a non-empty string, got ${describe(raw['speaker'])}${'content' in raw ? ' (an OpenAI message needs `role`)' : ''}`);
      }
      if (typeof raw['text'] !== 'string') throw new PrismError('INVALID_INPUT', `${at}.text: expected a string, got ${describe(raw['text'])}`);
      speaker = raw['speaker'];
      text = raw['text'];
    }
    const id = optionalString(`${at}.id`, raw['id']) ?? null;
    const time = messageTime(at, optionalString(`${at}.date`, raw['date']));
    const metadata = raw['metadata'];
    if (metadata !== undefined && !isObject(metadata)) throw new PrismError('INVALID_INPUT', `${at}.metadata: expected an object, got ${describe(metadata)}`);
    if (text.trim() === '') {
      emptyMessages++;
      return;
    }
    messages.push({ id, speaker: speaker.trim(), text, time, ...(metadata ? { metadata: metadata as Record<string, JsonValue> } : {}) });
  });
  return { messages, skippedRoles, emptyMessages };
}

/** Refuses an add whose text is above the hard cap, before anything is parsed further or written. */
export function checkAddSize(messages: readonly NormalisedMessage[], limits: InputLimits): void {
  const chars = messages.reduce((sum, m) => sum + m.text.length, 0);
  if (chars > limits.maxAddChars) {
    throw new PrismError('INPUT_TOO_LARGE', `one add holds ${chars} characters; the limit is ${limits.maxAddChars} (limits.maxAddChars): split it into several adds`);
  }
}

/**
 * Cuts a long text into passages of at most `max` characters, at the last sentence end, else
 * line break, else space inside each window, so no later step (sentence splitting, excerpts,
 * the embedder) ever sees unbounded text.
 */
export function splitPassages(text: string, max: number): string[] {
  const passages: string[] = [];
  let rest = text.trim();
  while (rest.length > max) {
    const window = rest.slice(0, max);
    const cut = lastBoundary(window, /[.!?。！？]\s/g) ?? lastBoundary(window, /\n/g) ?? lastBoundary(window, /\s/g) ?? max;
    passages.push(rest.slice(0, cut).trim());
    rest = rest.slice(cut).trim();
  }
  if (rest !== '') passages.push(rest);
  return passages;
}

/** End (exclusive) of the last match of `pattern` in the second half of `window`, so passages are never tiny. */
function lastBoundary(window: string, pattern: RegExp): number | null {
  let end: number | null = null;
  for (const match of window.matchAll(pattern)) {
    const at = match.index + match[0].length;
    if (at >= window.length / 2) end = at;
  }
  return end;
}

/** `YYYY-MM-DD` of an ISO time (the UTC day the default session of a message is named after). */
export function dayOf(time: string): string {
  return time.slice(0, 10);
}
