import type { InputLimits } from '../config.ts';
import { PrismError } from '../errors.ts';

/**
 * A conversation as PRISM ingests it: sessions of speaker turns, each turn with a dialog id. Ids,
 * speakers and `dateText` are at most `limits.labelChars` characters.
 */
export interface ConversationTurn {
  /** LoCoMo-style dialog id, e.g. `D3:12`; generated as `D<session>:<turn>` when absent. */
  dialogId: string;
  speaker: string;
  text: string;
}

/** One session of a conversation: its turns and when it took place (as written, and as a stored time). */
export interface ConversationSession {
  /** Stable id within the conversation, e.g. `session_3`. */
  id: string;
  /** The session's date/time as written (e.g. `1:56 pm on 8 May, 2023`), if any; shown in the session's header. */
  dateText: string | null;
  /**
   * When it took place, the time that orders and dates the session: a date in one of the forms
   * `readDate` reads (`SpeakerMessage.date` lists them), stored as `2023-05-08T13:56:00` (UTC).
   */
  time: string | null;
  turns: ConversationTurn[];
}

/** A whole multi-session conversation, for `addConversation` (e.g. an imported chat history). */
export interface Conversation {
  id: string;
  sessions: ConversationSession[];
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/** Longer than any accepted form (`12:30 pm on 30 September, 2023`, an ISO time with nine fraction digits and an offset): not read further. */
const MAX_DATE_CHARS = 64;
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;
const CLOCK = String.raw`(\d{1,2}):(\d{2})(?:\s*([ap])\.?m\.?)?`;
const CLOCK_BEFORE = new RegExp(`^${CLOCK}\\s+on\\s+`, 'i');
const CLOCK_AFTER = new RegExp(`(?:\\s*,\\s*|\\s+at\\s+|\\s+)${CLOCK}$`, 'i');
const DAY_MONTH_YEAR = /^(\d{1,2})\s+([a-z]+)\.?,?\s+(\d{4})$/i;
const MONTH_DAY_YEAR = /^([a-z]+)\.?\s+(\d{1,2}),?\s+(\d{4})$/i;
/** Earlier years are a failed parse or a zero value (`0000-01-01`, the epoch minus a day), not a conversation. */
const FIRST_YEAR = 1970;
const LAST_YEAR = 9999;

/** A date read from text: its stored form, or why it is not a calendar date and time. */
export type DateReading = { time: string } | { problem: string };

/**
 * Reads a date as callers write it into the stored form, a zone-less ISO date-time
 * (`2023-05-08T13:56:00`) read the same on every machine. The whole text (trimmed) must be one
 * of these forms, else it is not a date:
 *
 * - ISO 8601: `2023-05-08`, `2023-05-08T13:56`, `2023-05-08T13:56:00` (a space for `T`, and a
 *   fraction of a second, are read too), optionally with `Z` or an offset (`+09:00`, `-0500`):
 *   a time with a zone is converted to UTC, one without keeps its wall-clock time.
 * - Written: `8 May 2023`, `8 May, 2023`, `May 8 2023`, `May 8, 2023` (an English month name,
 *   whole or as three letters: `Sep`, `Sep.`, `Sept`), with a time before it as LoCoMo writes it
 *   (`1:56 pm on 8 May, 2023`) or after it (`May 8, 2023, 1:56 pm`, `8 May 2023 at 13:56`). A
 *   time is `h:mm am|pm` (h 1–12; `pm`, `p.m.`, `PM`) or `HH:MM` (00–23). No zone: wall-clock time.
 *
 * The day must exist (`31 February` does not), hours and minutes must be on the clock, and the
 * year (after a zone's conversion) within 1970–9999. Relative words (`yesterday`, `last week`)
 * are not dates: they need a reference the text does not give.
 */
export function readDate(written: string): DateReading {
  const text = written.trim();
  const shown = JSON.stringify(written.length > MAX_DATE_CHARS ? `${written.slice(0, MAX_DATE_CHARS)}…` : written);
  if (text.length <= MAX_DATE_CHARS) {
    const iso = ISO_DATE.exec(text);
    if (iso) {
      const [, year, month, day, hour = '0', minute = '0', second = '0', zone = 'Z'] = iso;
      return calendarTime(shown, { year: Number(year), month: Number(month), day: Number(day) }, { hour: Number(hour), minute: Number(minute), second: Number(second) }, zone);
    }
    let rest = text;
    let clock = CLOCK_BEFORE.exec(rest);
    if (clock) rest = rest.slice(clock[0].length);
    else if ((clock = CLOCK_AFTER.exec(rest))) rest = rest.slice(0, clock.index);
    const date = writtenDate(rest);
    if (date) {
      const time = clock ? clockTime(shown, clock) : { hour: 0, minute: 0, second: 0 };
      return 'problem' in time ? time : calendarTime(shown, date, time, 'Z');
    }
  }
  return {
    problem: `not a date: ${shown}; write the day itself, as 2023-05-08, 2023-05-08T13:56:00Z, 8 May 2023, May 8, 2023 or 1:56 pm on 8 May, 2023 (relative dates like "yesterday" are not read)`,
  };
}

/** The stored time of a date as written (see `readDate`), or null when it is not one. */
export function parseSessionDate(text: string): string | null {
  const reading = readDate(text);
  return 'time' in reading ? reading.time : null;
}

interface CalendarDay {
  year: number;
  month: number;
  day: number;
}

interface ClockTime {
  hour: number;
  minute: number;
  second: number;
}

/** `8 May, 2023` or `May 8, 2023` (see `readDate`); null for anything else. */
function writtenDate(text: string): CalendarDay | null {
  const dayFirst = DAY_MONTH_YEAR.exec(text);
  const monthFirst = MONTH_DAY_YEAR.exec(text);
  const [day, name, year] = dayFirst ? dayFirst.slice(1) : monthFirst ? [monthFirst[2], monthFirst[1], monthFirst[3]] : [];
  const word = name?.toLowerCase();
  const month = MONTHS.findIndex((m) => word === m.toLowerCase() || word === m.slice(0, 3).toLowerCase() || (m === 'September' && word === 'sept'));
  return month < 0 ? null : { year: Number(year), month: month + 1, day: Number(day) };
}

/** A clock match (`h:mm am|pm`, or `HH:MM`) as a 24-hour time, or why an am/pm hour is off the clock. */
function clockTime(shown: string, clock: RegExpExecArray): ClockTime | { problem: string } {
  const hour = Number(clock[1]);
  const minute = Number(clock[2]);
  const half = clock[3]?.toLowerCase();
  if (half === undefined) return { hour, minute, second: 0 };
  if (hour < 1 || hour > 12) return { problem: `not a time: ${shown}; an am/pm hour is 1 to 12` };
  return { hour: (hour % 12) + (half === 'p' ? 12 : 0), minute, second: 0 };
}

/** The stored form of a calendar day and wall-clock time in `zone` (`Z`, `+09:00`, `-0500`), or why there is no such time. */
function calendarTime(shown: string, { year, month, day }: CalendarDay, { hour, minute, second }: ClockTime, zone: string): DateReading {
  const outOfRange = (y: number) => y < FIRST_YEAR || y > LAST_YEAR;
  if (outOfRange(year)) return { problem: `not a date: ${shown}; the year must be within ${FIRST_YEAR}–${LAST_YEAR}` };
  if (month < 1 || month > 12) return { problem: `not a date: ${shown}; there is no month ${month}` };
  const days = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day < 1 || day > days) return { problem: `not a date: ${shown}; ${MONTHS[month - 1] ?? ''} ${year} has ${days} days` };
  if (hour > 23 || minute > 59 || second > 59) return { problem: `not a time: ${shown}; hours run 00–23, minutes and seconds 00–59` };
  const [, sign = '+', zoneHours = '0', zoneMinutes = '0'] = /^([+-])(\d{2}):?(\d{2})$/.exec(zone) ?? [];
  if (Number(zoneHours) > 23 || Number(zoneMinutes) > 59) return { problem: `not a time zone: ${shown}; offsets run -23:59 to +23:59` };
  const offset = (sign === '-' ? -1 : 1) * (Number(zoneHours) * 60 + Number(zoneMinutes));
  const utc = new Date(Date.UTC(year, month - 1, day, hour, minute, second) - offset * 60_000);
  if (outOfRange(utc.getUTCFullYear())) return { problem: `not a date: ${shown}; in UTC the year is outside ${FIRST_YEAR}–${LAST_YEAR}` };
  return { time: utc.toISOString().slice(0, 19) };
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

/** A label (id, speaker, date as written) within `limits.labelChars`, else INPUT_TOO_LARGE naming the field. */
export function checkLabel(where: string, value: string, limits: Pick<InputLimits, 'labelChars'>): string {
  if (value.length > limits.labelChars) {
    throw new PrismError('INPUT_TOO_LARGE', `${where}: ${value.length} characters; the limit is ${limits.labelChars} (limits.labelChars)`);
  }
  return value;
}

/** The shape check, by hand: it runs on every add, and a schema library would weigh on every page. */
function parseConversation(input: unknown, limits: InputLimits): Conversation {
  const root = record('conversation', input);
  const label = (from: Record<string, unknown>, where: string, key: string, nonEmpty: boolean) => checkLabel(`${where}.${key}`, text(from, where, key, nonEmpty), limits);
  return {
    id: label(root, 'conversation', 'id', true),
    sessions: list('sessions', root['sessions']).map((raw, i) => {
      const at = `sessions.${i}`;
      const session = record(at, raw);
      const dateText = textOrNull(session, at, 'dateText');
      const time = textOrNull(session, at, 'time');
      return {
        id: label(session, at, 'id', true),
        dateText: dateText === null ? null : checkLabel(`${at}.dateText`, dateText, limits),
        time: time === null ? null : storedTime(`${at}.time`, time),
        turns: list(`${at}.turns`, session['turns']).map((rawTurn, j) => {
          const turnAt = `${at}.turns.${j}`;
          const turn = record(turnAt, rawTurn);
          return { dialogId: label(turn, turnAt, 'dialogId', true), speaker: label(turn, turnAt, 'speaker', false), text: text(turn, turnAt, 'text', false) };
        }),
      };
    }),
  };
}

/** The stored form of a date (see `readDate`); INVALID_INPUT naming the field when it is not a real calendar date and time. */
export function storedTime(where: string, written: string): string {
  const reading = readDate(written);
  if ('problem' in reading) throw new PrismError('INVALID_INPUT', `${where}: ${reading.problem}`);
  return reading.time;
}

/** Characters of everything a conversation stores: ids, dates, speakers and texts. */
function conversationChars(conversation: Conversation): number {
  let chars = conversation.id.length;
  for (const session of conversation.sessions) {
    chars += session.id.length + (session.dateText?.length ?? 0) + (session.time?.length ?? 0);
    for (const turn of session.turns) chars += turn.dialogId.length + turn.speaker.length + turn.text.length;
  }
  return chars;
}

/**
 * Checks a conversation handed in from outside (plain JS callers, parsed JSON) before anything
 * is written: wrong shapes, a session `time` that is not a real date and time, and a
 * conversation without one non-empty turn are INVALID_INPUT; an id, speaker or `dateText` over
 * `limits.labelChars`, or a conversation over `limits.maxAddChars`, is INPUT_TOO_LARGE. Session
 * times come back in the stored form (`2023-05-08T13:56:00`, UTC). Returns how many empty turns
 * will be skipped, for the ingest report.
 */
export function checkConversation(input: unknown, limits: InputLimits): { conversation: Conversation; emptyTurns: number } {
  const conversation = parseConversation(input, limits);
  const chars = conversationChars(conversation);
  if (chars > limits.maxAddChars) {
    throw new PrismError('INPUT_TOO_LARGE', `conversation ${conversation.id} holds ${chars} characters; the limit is ${limits.maxAddChars} (limits.maxAddChars): add its sessions in several conversations`);
  }
  const turns = conversation.sessions.flatMap((s) => s.turns);
  const emptyTurns = turns.filter((t) => t.text.trim() === '').length;
  if (emptyTurns === turns.length) {
    throw new PrismError('INVALID_INPUT', `nothing to add to ${conversation.id}: ${turns.length === 0 ? 'no messages' : 'every message is empty'}`);
  }
  return { conversation, emptyTurns };
}
