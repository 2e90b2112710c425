import * as chrono from 'chrono-node';
import { PrismError } from '../errors.ts';

/** A conversation as PRISM ingests it: sessions of speaker turns, each turn with a dialog id. */
export interface ConversationTurn {
  /** LoCoMo-style dialog id, e.g. `D3:12`; generated as `D<session>:<turn>` when absent. */
  dialogId: string;
  speaker: string;
  text: string;
}

/** One session of a conversation: its turns and when it took place (as written, and as ISO time when it parses). */
export interface ConversationSession {
  /** Stable id within the conversation, e.g. `session_3`. */
  id: string;
  /** The session's date/time as written (e.g. `1:56 pm on 8 May, 2023`), if any. */
  dateText: string | null;
  /** The same, normalised to ISO-8601, when it parses. */
  time: string | null;
  turns: ConversationTurn[];
}

/** A whole multi-session conversation, for `addConversation` (e.g. an imported chat history). */
export interface Conversation {
  id: string;
  sessions: ConversationSession[];
}

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];

/**
 * Parses LoCoMo's `1:56 pm on 8 May, 2023`, ISO strings and other written dates into an
 * ISO date-time without a zone, read the same on every machine: a date with an explicit zone
 * or offset is converted to UTC, one without keeps its wall-clock time (the data gives no
 * zone, and a date must never move by a day with the machine's `TZ`).
 */
export function parseSessionDate(text: string): string | null {
  const m = /(?:(\d{1,2}):(\d{2})\s*([ap]m)\s*on\s*)?(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})/i.exec(text);
  if (m) {
    const month = MONTHS.findIndex((name) => name.startsWith((m[5] ?? '').toLowerCase().slice(0, 3)));
    if (month >= 0) {
      let hour = m[1] ? Number(m[1]) % 12 : 0;
      if (m[3]?.toLowerCase() === 'pm') hour += 12;
      const minute = m[2] ? Number(m[2]) : 0;
      return isoLocal(Number(m[6]), month + 1, Number(m[4]), hour, minute);
    }
  }
  const [parsed] = chrono.parse(text, { instant: new Date(0), timezone: 0 });
  const start = parsed?.start;
  if (!start || !start.isCertain('year')) return null;
  if (start.isCertain('timezoneOffset')) return start.date().toISOString().slice(0, 19);
  return isoLocal(start.get('year') ?? 1970, start.get('month') ?? 1, start.get('day') ?? 1, start.isCertain('hour') ? (start.get('hour') ?? 0) : 0, start.isCertain('minute') ? (start.get('minute') ?? 0) : 0);
}

function isoLocal(y: number, mo: number, d: number, h: number, mi: number): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${y}-${p(mo)}-${p(d)}T${p(h)}:${p(mi)}:00`;
}

function fail(where: string, expected: string, value: unknown): never {
  const got = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'string' ? JSON.stringify(value).slice(0, 40) : typeof value;
  throw new PrismError('INVALID_INPUT', `${where}: expected ${expected}, got ${got}`);
}

function text(record: Record<string, unknown>, where: string, key: string, nonEmpty: boolean): string {
  const value = record[key];
  if (typeof value !== 'string' || (nonEmpty && value.length === 0)) fail(`${where}.${key}`, nonEmpty ? 'a non-empty string' : 'a string', value);
  return value;
}

function textOrNull(record: Record<string, unknown>, where: string, key: string): string | null {
  const value = record[key];
  if (value === null || value === undefined) return null;
  if (typeof value !== 'string') fail(`${where}.${key}`, 'a string or null', value);
  return value;
}

function record(where: string, value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(where, 'an object', value);
  return value as Record<string, unknown>;
}

function list(where: string, value: unknown): unknown[] {
  if (!Array.isArray(value)) fail(where, 'an array', value);
  return value;
}

/** The shape check, by hand: it runs on every add, and a schema library would weigh on every page. */
function parseConversation(input: unknown): Conversation {
  const root = record('conversation', input);
  return {
    id: text(root, 'conversation', 'id', true),
    sessions: list('sessions', root['sessions']).map((raw, i) => {
      const at = `sessions.${i}`;
      const session = record(at, raw);
      return {
        id: text(session, at, 'id', true),
        dateText: textOrNull(session, at, 'dateText'),
        time: textOrNull(session, at, 'time'),
        turns: list(`${at}.turns`, session['turns']).map((rawTurn, j) => {
          const turnAt = `${at}.turns.${j}`;
          const turn = record(turnAt, rawTurn);
          return { dialogId: text(turn, turnAt, 'dialogId', true), speaker: text(turn, turnAt, 'speaker', false), text: text(turn, turnAt, 'text', false) };
        }),
      };
    }),
  };
}

/**
 * Checks a conversation handed in from outside (plain JS callers, parsed JSON) before anything
 * is written: wrong shapes and a conversation without one non-empty turn are INVALID_INPUT.
 * Returns how many empty turns will be skipped, for the ingest report.
 */
export function checkConversation(input: unknown): { conversation: Conversation; emptyTurns: number } {
  const conversation = parseConversation(input);
  const turns = conversation.sessions.flatMap((s) => s.turns);
  const emptyTurns = turns.filter((t) => t.text.trim() === '').length;
  if (emptyTurns === turns.length) {
    throw new PrismError('INVALID_INPUT', `nothing to add to ${conversation.id}: ${turns.length === 0 ? 'no messages' : 'every message is empty'}`);
  }
  return { conversation, emptyTurns };
}
