import { readDate } from '../ingest/conversation.ts';
import { PrismError } from '../errors.ts';
import type { MemoryGraph } from '../graph/memory-graph.ts';
import type { EpisodeNode } from '../graph/types.ts';
import { WRITTEN_YEAR } from '../util/written-year.ts';

/**
 * A stretch of time a query points at, [start, end) in milliseconds of wall-clock time read as
 * UTC, the way stored times (`2023-05-08T13:56:00`, zone-less) are read everywhere.
 */
export interface TimeSpan {
  start: number;
  end: number;
}

const DAY = 86_400_000;
const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
const COUNTS: Record<string, number> = { a: 1, an: 1, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10, eleven: 11, twelve: 12, couple: 2, 'a couple of': 2, few: 3, 'a few': 3 };
const COUNT = String.raw`(\d{1,2}|a couple of|a few|couple|few|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)`;
const UNIT = String.raw`(day|week|month|year)s?`;

type Unit = 'day' | 'week' | 'month' | 'year';

/**
 * When a query is asked, as wall-clock milliseconds (see `TimeSpan`): a `Date` at its UTC time,
 * a string in a form `readDate` reads (`2023-05-30T23:40:00`, `30 May 2023`), null for unknown.
 * Anything else is INVALID_INPUT naming `now`.
 */
export function queryInstant(now: Date | string | null): number | null {
  if (now === null) return null;
  if (now instanceof Date) {
    if (Number.isNaN(now.getTime())) throw new PrismError('INVALID_INPUT', 'now: an invalid Date');
    return now.getTime();
  }
  if (typeof now !== 'string') throw new PrismError('INVALID_INPUT', `now: expected a Date, a date string or null, got ${typeof now}`);
  const reading = readDate(now);
  if ('problem' in reading) throw new PrismError('INVALID_INPUT', `now: ${reading.problem}`);
  return storedMillis(reading.time);
}

/**
 * The times a query points at. Dates written outright with their year ("on 3 June, 2023", "in
 * December 2023"; see `absoluteDates`) whatever `now` is; given when the query is asked (`now`,
 * see `relativeSpans`), also the relative ones. The date parser (chrono, part of ingest) is
 * loaded only for a query that writes a year.
 */
export async function queryTimeSpans(query: string, now: number | null): Promise<TimeSpan[]> {
  const relative = now === null ? [] : relativeSpans(query, now);
  if (!WRITTEN_YEAR.test(query)) return relative;
  const { absoluteDates } = await import('../ingest/time.ts');
  return [...absoluteDates(query).map(prefixSpan), ...relative];
}

/**
 * The spans of the relative time expressions of `query`, resolved against `now` (wall-clock ms).
 * Each names the stretch the words mean, at the precision they have:
 *
 * - "yesterday", "today" / "this morning", "the day before yesterday": that day;
 * - "N days ago": that day; "N weeks / months / years ago": the day N units back, give or take
 *   half a unit ("two weeks ago": 14 days back ± 3.5 days); N a number up to 99 or a word
 *   ("a", "two", "a couple of" = 2, "a few" = 3);
 * - "last / this past / on Saturday" (one weekday, not "on Saturdays" or "on Saturday
 *   mornings"): the latest such day before today;
 * - "last / previous week, month, year": the calendar one before the current (weeks start on
 *   Monday); "this week, month, year": from its start to now; "last weekend": the latest
 *   Saturday and Sunday before today (on a weekend day, the one before);
 * - "in the past / last (N) days, weeks, months, years", "over the past month", "the past few
 *   weeks": from N units back to now (N = 1 when not written);
 * - a month named without a year after "in", "during", "since", "until", "by", "before",
 *   "after", "of", "early", "mid", "late" or "between" ("in March", "in March and April"), and a
 *   month and day ("March 5th"): the latest such month or day that has begun by `now`.
 *
 * Not resolved: durations asked for ("how many days since…", "how long ago…", "how many weeks
 * ago did I…": the span is the answer, not the question), "tonight" (mostly what to do, not
 * what was done), habitual days ("on Tuesdays", "on Saturday mornings"),
 * seasons and holidays ("last summer", "at Christmas"), and expressions relative to another
 * event ("the week before the wedding").
 */
export function relativeSpans(query: string, now: number): TimeSpan[] {
  const text = query.toLowerCase();
  const today = startOfDay(now);
  const spans: TimeSpan[] = [];
  const day = (start: number): TimeSpan => ({ start, end: start + DAY });
  // "Tonight" is left out: a question asks what to do tonight far more than what was done.
  for (const m of text.matchAll(/\b(the day before yesterday|yesterday|today|this (?:morning|afternoon|evening))\b/g)) {
    spans.push(day(today - (m[1] === 'yesterday' ? DAY : m[1] === 'the day before yesterday' ? 2 * DAY : 0)));
  }
  for (const m of text.matchAll(new RegExp(String.raw`\b${COUNT} ${UNIT} ago\b`, 'g'))) {
    const n = countOf(m[1] as string);
    const unit = m[2] as Unit;
    if (unit === 'day') spans.push(day(today - n * DAY));
    else spans.push(around(back(now, unit, n), unit));
  }
  for (const m of text.matchAll(new RegExp(String.raw`\b(?:last|this past|past|previous|on) (${WEEKDAYS.join('|')})\b(?! (?:mornings|afternoons|evenings|nights))`, 'g'))) {
    const weekday = WEEKDAYS.indexOf(m[1] as string);
    const daysBack = (new Date(today).getUTCDay() - weekday + 7) % 7 || 7;
    spans.push(day(today - daysBack * DAY));
  }
  for (const m of text.matchAll(/\b(last|previous|this) (week|month|year)\b/g)) {
    const period = m[2] as Exclude<Unit, 'day'>;
    const current = periodStart(today, period);
    spans.push(m[1] === 'this' ? { start: current, end: now } : { start: periodStart(current - 1, period), end: current });
  }
  if (/\b(?:last|previous|this past) weekend\b/.test(text)) {
    // The latest Saturday and Sunday on or before today; on a weekend day, the one before.
    const weekday = new Date(today).getUTCDay();
    const saturday = today - ((weekday + 1) % 7) * DAY - (weekday === 6 || weekday === 0 ? 7 * DAY : 0);
    spans.push({ start: saturday, end: saturday + 2 * DAY });
  }
  for (const m of text.matchAll(new RegExp(String.raw`\b(?:in|over|during|within|for) the (?:past|last) (?:${COUNT} )?${UNIT}\b`, 'g'))) {
    spans.push({ start: back(now, m[2] as Unit, m[1] === undefined ? 1 : countOf(m[1])), end: now });
  }
  for (const m of text.matchAll(new RegExp(String.raw`\b(?:the past|the last) ${COUNT} ${UNIT}\b`, 'g'))) {
    spans.push({ start: back(now, m[2] as Unit, countOf(m[1] as string)), end: now });
  }
  const months = MONTHS.join('|');
  const namedMonth = String.raw`(${months})\b(?!,? \d{4})(?! \d)`;
  for (const m of text.matchAll(new RegExp(String.raw`\b(?:in|during|since|until|by|before|after|of|early|mid|late|between) ${namedMonth}(?: (?:and|or|to|through) ${namedMonth})?`, 'g'))) {
    for (const name of [m[1], m[2]]) {
      if (name === undefined) continue;
      const start = latestMonthStart(now, MONTHS.indexOf(name));
      spans.push({ start, end: addMonths(start, 1) });
    }
  }
  for (const m of text.matchAll(new RegExp(String.raw`\b(${months}) (\d{1,2})(?:st|nd|rd|th)?\b(?!,? \d{4})`, 'g'))) {
    const start = latestDay(now, MONTHS.indexOf(m[1] as string), Number(m[2]));
    if (start !== null) spans.push(day(start));
  }
  // "In the past two weeks" is read by two patterns; one span is enough.
  return spans.filter((span, i) => spans.findIndex((other) => other.start === span.start && other.end === span.end) === i);
}

function countOf(word: string): number {
  return /^\d+$/.test(word) ? Number(word) : (COUNTS[word] ?? 1);
}

function startOfDay(ms: number): number {
  return Math.floor(ms / DAY) * DAY;
}

function addMonths(ms: number, months: number): number {
  const date = new Date(ms);
  const target = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + months, 1);
  // The same day of the month, or the month's last day when it has fewer ("a month ago" on 31 March is 28 February).
  const lastDay = new Date(Date.UTC(new Date(target).getUTCFullYear(), new Date(target).getUTCMonth() + 1, 0)).getUTCDate();
  return target + (Math.min(date.getUTCDate(), lastDay) - 1) * DAY + (ms - startOfDay(ms));
}

/** `now` moved back `n` units (months and years by the calendar). */
function back(now: number, unit: Unit, n: number): number {
  if (unit === 'day') return now - n * DAY;
  if (unit === 'week') return now - 7 * n * DAY;
  return addMonths(now, -(unit === 'month' ? n : 12 * n));
}

/** The day of `center`, widened by half a unit each side. */
function around(center: number, unit: Exclude<Unit, 'day'>): TimeSpan {
  const day = startOfDay(center);
  const half = unit === 'week' ? 3.5 * DAY : unit === 'month' ? 15 * DAY : 182.5 * DAY;
  return { start: day - half, end: day + DAY + half };
}

/** Start of the week (Monday), month or year holding `ms`. */
function periodStart(ms: number, period: Exclude<Unit, 'day'>): number {
  const date = new Date(ms);
  switch (period) {
    case 'week':
      return startOfDay(ms) - ((date.getUTCDay() + 6) % 7) * DAY;
    case 'month':
      return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
    case 'year':
      return Date.UTC(date.getUTCFullYear(), 0, 1);
  }
}

/** The first day of the latest `month` (0–11) that has begun by `now`. */
function latestMonthStart(now: number, month: number): number {
  const year = new Date(now).getUTCFullYear();
  const thisYear = Date.UTC(year, month, 1);
  return thisYear <= now ? thisYear : Date.UTC(year - 1, month, 1);
}

/** The latest `month` (0–11) `day` that has begun by `now`; null when no year has that day (30 February). */
function latestDay(now: number, month: number, day: number): number | null {
  const year = new Date(now).getUTCFullYear();
  for (const y of [year, year - 1, year - 2, year - 3, year - 4]) {
    const start = Date.UTC(y, month, day);
    if (new Date(start).getUTCDate() === day && start <= now) return start;
  }
  return null;
}

/** A stored time (`2023-05-08T13:56:00`) or an ISO prefix (`2023`, `2023-05`, `2023-05-08`) as the span it covers; null when it is neither. */
function timeSpan(time: string): TimeSpan | null {
  if (/^\d{4}(-\d{2}(-\d{2})?)?$/.test(time)) return prefixSpan(time);
  const start = storedMillis(time);
  return Number.isNaN(start) ? null : { start, end: start + 1 };
}

/** The span of an ISO prefix: its year, month or day. */
function prefixSpan(prefix: string): TimeSpan {
  const [year = 1970, month = 1, day = 1] = prefix.split('-').map(Number);
  const start = Date.UTC(year, month - 1, day);
  const end = prefix.length === 4 ? Date.UTC(year + 1, 0, 1) : prefix.length === 7 ? Date.UTC(year, month, 1) : start + DAY;
  return { start, end };
}

/** A zone-less stored time read as UTC wall-clock milliseconds (a zoned one at its instant). */
function storedMillis(time: string): number {
  return Date.parse(/Z|[+-]\d\d:?\d\d$/.test(time) ? time : `${time}Z`);
}

/**
 * Does a time (a session's date-time, or a fact's resolved date: a year, month or day) lie
 * within one of `spans`? A fact resolved to a month lies within a span of that month or a
 * longer one, not within one of its days.
 */
export function fallsOn(time: string | null, spans: readonly TimeSpan[]): boolean {
  if (time === null || spans.length === 0) return false;
  const own = timeSpan(time);
  return own !== null && spans.some((span) => span.start <= own.start && own.end <= span.end);
}

/** The session time of an Episode: its own, else its chunk's. */
export function episodeTime(graph: MemoryGraph, episode: EpisodeNode): string | null {
  return episode.time ?? graph.chunks.get(episode.chunkId)?.time ?? null;
}

/**
 * The Episodes whose session falls in one of `spans`, among `within` when given (the speaker
 * scope), except those in `excluded`.
 */
export function episodesOn(graph: MemoryGraph, spans: readonly TimeSpan[], within: ReadonlySet<string> | null, excluded: ReadonlySet<string>): Set<string> {
  const found = new Set<string>();
  if (spans.length === 0) return found;
  for (const episode of graph.nodesOfLayer('episode')) {
    if (excluded.has(episode.id) || (within && !within.has(episode.id))) continue;
    if (fallsOn(episodeTime(graph, episode), spans)) found.add(episode.id);
  }
  return found;
}
