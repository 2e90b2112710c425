import type { InputLimits } from '../config.ts';
import { PrismError } from '../errors.ts';
import type { JsonValue } from '../graph/types.ts';
import { checkLabel, storedTime } from './conversation.ts';

/** A message as chat logs have it: who said it and what. */
export interface SpeakerMessage {
  /** Who said it; at most `limits.labelChars` (200) characters. */
  speaker: string;
  text: string;
  /** The caller's message id, at most `limits.labelChars` characters. Re-adding a message whose id the scope already holds is a no-op. */
  id?: string;
  /**
   * When the message was written, one of (the whole string, any case):
   * `2023-05-08`, `2023-05-08T13:56`, `2023-05-08T13:56:00` (`T` or a space; a fraction of a
   * second is read), each optionally with `Z` or an offset (`+09:00`, `-0500`), converted to UTC;
   * or written out: `8 May 2023`, `8 May, 2023`, `May 8 2023`, `May 8, 2023` (English month
   * names, whole or as three letters), with a time before it (`1:56 pm on 8 May, 2023`) or after
   * it (`May 8, 2023, 1:56 pm`, `8 May 2023 at 13:56`), kept as wall-clock time; a time is
   * `h:mm am|pm` (h 1–12) or `HH:MM` (00–23). The day must exist and the year be within
   * 1970–9999. Relative dates (`yesterday`) and anything else are `INVALID_INPUT`.
   */
  date?: string;
  /**
   * Plain JSON kept with the message: objects, arrays, strings, finite numbers, booleans, null
   * (a key whose value is `undefined` is left out, as JSON does). At most `limits.metadataBytes`
   * (64 KiB) of JSON and `limits.metadataDepth` (32) levels; it counts toward `limits.maxAddChars`.
   */
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
  /** Used as the speaker when present (at most `limits.labelChars` characters); otherwise `User` / `Assistant`. */
  name?: string;
  /** As `SpeakerMessage.id`. */
  id?: string;
  /** As `SpeakerMessage.date`: an ISO or written-out calendar date, optionally with a time. */
  date?: string;
  /** As `SpeakerMessage.metadata`: plain JSON within `limits.metadataBytes` and `limits.metadataDepth`. */
  metadata?: Record<string, JsonValue>;
}

/** A message `add()` takes: `{ speaker, text }` as chat logs have it, or an OpenAI chat message. */
export type InputMessage = SpeakerMessage | RoleMessage;

/** A message checked and reduced to what a turn stores; `id` only when the caller gave one. */
export interface NormalisedMessage {
  /** Where the caller's message was (`messages[3]`), so that checks after normalising name its fields. */
  at: string;
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
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${typeof value === 'string' ? JSON.stringify(value) : String(value)}`.slice(0, 60);
}

function optionalString(where: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.trim() === '') throw new PrismError('INVALID_INPUT', `${where}: expected a non-empty string, got ${describe(value)}`);
  return value;
}

/**
 * An id a caller gives (`sessionId`, `batchId`, a message's `id`): undefined when absent, else a
 * non-empty string (INVALID_INPUT) of at most `limits.labelChars` characters (INPUT_TOO_LARGE),
 * with `where` named in the error. Whatever it lets through, `get` and `delete` accept.
 */
export function checkId(where: string, value: unknown, limits: Pick<InputLimits, 'labelChars'>): string | undefined {
  const id = optionalString(where, value);
  return id === undefined ? undefined : checkLabel(where, id, limits);
}

/**
 * The stored time of a `date` (see `SpeakerMessage.date`), or null when absent; a date that is
 * not a real calendar date and time is INVALID_INPUT naming the field `where` (`messages[3].date`,
 * or the add's own `date`).
 */
export function messageTime(where: string, date: string | undefined): string | null {
  return date === undefined ? null : storedTime(where, date);
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
 * dropped and counted. Sizes, and metadata beyond being an object, are `checkAddSize`'s.
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
    const time = messageTime(`${at}.date`, optionalString(`${at}.date`, raw['date']));
    const metadata = raw['metadata'];
    if (metadata !== undefined && !isObject(metadata)) throw new PrismError('INVALID_INPUT', `${at}.metadata: expected an object, got ${describe(metadata)}`);
    if (text.trim() === '') {
      emptyMessages++;
      return;
    }
    messages.push({ at, id, speaker: speaker.trim(), text, time, ...(metadata ? { metadata: metadata as Record<string, JsonValue> } : {}) });
  });
  return { messages, skippedRoles, emptyMessages };
}

/**
 * Refuses, before anything is embedded or written, an add that breaks the input limits
 * (INPUT_TOO_LARGE naming the field): a speaker or id over `limits.labelChars`, metadata over
 * `limits.metadataBytes` or `limits.metadataDepth`, or more than `limits.maxAddChars` in all
 * (text, speaker, id, time and metadata of every message). Metadata that is not plain JSON is
 * INVALID_INPUT: it is only known by walking it, and the walk stops at the limits.
 */
export function checkAddSize(messages: readonly NormalisedMessage[], limits: InputLimits): void {
  let chars = 0;
  for (const message of messages) {
    checkLabel(`${message.at}.speaker`, message.speaker, limits);
    if (message.id !== null) checkLabel(`${message.at}.id`, message.id, limits);
    const metadataBytes = message.metadata ? jsonBytes(`${message.at}.metadata`, message.metadata, limits) : 0;
    chars += message.text.length + message.speaker.length + (message.id?.length ?? 0) + (message.time?.length ?? 0) + metadataBytes;
  }
  if (chars > limits.maxAddChars) {
    throw new PrismError('INPUT_TOO_LARGE', `one add holds ${chars} characters; the limit is ${limits.maxAddChars} (limits.maxAddChars): split it into several adds`);
  }
}

/**
 * UTF-8 bytes of the JSON of `value`, checked to be plain JSON on the way: objects (plain ones,
 * not class instances, Dates or Maps), arrays without holes or `undefined`, strings, finite
 * numbers, booleans and null. A key whose value is `undefined` is left out, as JSON does.
 * Cycles, BigInt, functions, symbols and non-finite numbers are INVALID_INPUT naming the path;
 * the walk stops with INPUT_TOO_LARGE as soon as it passes `limits.metadataBytes` or
 * `limits.metadataDepth`, so a huge or endlessly nested object costs no more than the limit.
 */
function jsonBytes(where: string, value: unknown, limits: Pick<InputLimits, 'metadataBytes' | 'metadataDepth'>): number {
  const open = new Set<object>();
  let bytes = 0;
  const add = (path: string, n: number) => {
    bytes += n;
    if (bytes > limits.metadataBytes) throw new PrismError('INPUT_TOO_LARGE', `${where}: its JSON passes ${limits.metadataBytes} bytes at ${path} (limits.metadataBytes)`);
  };
  // JSON's escapes only lengthen a string, and UTF-8 takes at least a byte per UTF-16 unit: a
  // string too long for the limit is refused before it is escaped.
  const addString = (path: string, text: string) => {
    add(path, text.length + 2);
    add(path, utf8Bytes(JSON.stringify(text)) - text.length - 2);
  };
  const refuse = (path: string, what: string): never => {
    throw new PrismError('INVALID_INPUT', `${path}: metadata must be plain JSON, got ${what}`);
  };
  const walk = (path: string, item: unknown, depth: number): void => {
    if (typeof item === 'string') return addString(path, item);
    if (typeof item === 'number') return Number.isFinite(item) ? add(path, JSON.stringify(item).length) : refuse(path, String(item));
    if (typeof item === 'boolean') return add(path, item ? 4 : 5);
    if (item === null) return add(path, 4);
    if (typeof item !== 'object') return refuse(path, item === undefined ? 'undefined' : `a ${typeof item}`);
    if (depth > limits.metadataDepth) throw new PrismError('INPUT_TOO_LARGE', `${where}: nested deeper than ${limits.metadataDepth} levels at ${path} (limits.metadataDepth)`);
    if (open.has(item)) refuse(path, 'a cycle');
    open.add(item);
    if (Array.isArray(item)) {
      add(path, 2 + Math.max(0, item.length - 1));
      for (let i = 0; i < item.length; i++) {
        if (!(i in item)) refuse(`${path}[${i}]`, 'a hole in an array');
        walk(`${path}[${i}]`, item[i], depth + 1);
      }
    } else {
      const prototype: unknown = Object.getPrototypeOf(item);
      // A plain object's prototype is some realm's Object.prototype (itself without one), or none.
      if (prototype !== null && Object.getPrototypeOf(prototype) !== null) refuse(path, `a ${item.constructor?.name ?? 'class'} instance`);
      add(path, 1); // {
      let fields = 0;
      const fieldsOf = item as Record<string, unknown>;
      for (const key of Object.keys(fieldsOf)) {
        const field = fieldsOf[key];
        if (field === undefined) continue;
        addString(path, key);
        add(path, 2); // the colon, and the comma or } after the value
        fields++;
        walk(`${path}.${key.length > 40 ? `${key.slice(0, 40)}…` : key}`, field, depth + 1);
      }
      if (fields === 0) add(path, 1); // }
    }
    open.delete(item);
  };
  walk(where, value, 1);
  return bytes;
}

/** Bytes of `text` in UTF-8 (lone surrogates, which JSON escapes, never reach here). */
function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    bytes += unit < 0x80 ? 1 : unit < 0x800 ? 2 : unit >= 0xd800 && unit <= 0xdfff ? 2 : 3;
  }
  return bytes;
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
