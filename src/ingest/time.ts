import * as chrono from 'chrono-node';
import { WRITTEN_YEAR } from '../util/written-year.ts';

export interface ResolvedTime {
  /** The expression as written. */
  text: string;
  /** ISO-8601 prefix at the precision the expression supports: `2023`, `2023-05` or `2023-05-07`. */
  iso: string;
}

/**
 * Finds the first time expression in `text` and resolves it against the session date
 * ("yesterday", "last Saturday", "next month"), keeping only the precision it really has,
 * so "last year" does not pretend to name a day.
 */
export function resolveTimeExpression(text: string, reference: string | null): ResolvedTime | null {
  // Session times are zone-less wall-clock times: read them, and resolve against them, in UTC
  // so the machine's TZ never moves a date.
  const refDate = reference ? new Date(/Z|[+-]\d\d:\d\d$/.test(reference) ? reference : `${reference}Z`) : undefined;
  const [first] = chrono.parse(text, { instant: refDate ?? new Date(0), timezone: 0 }, { forwardDate: false });
  if (!first) return null;
  const start = first.start;
  const year = start.get('year');
  if (year === null || year === undefined) return null;
  // A bare weekday or time of day without a session date is not a date.
  if (!refDate && !start.isCertain('year')) return null;
  let iso: string;
  if (start.isCertain('day') || (start.isCertain('weekday') && refDate)) iso = isoPrefix(start, 'day');
  else if (start.isCertain('month') || /\bmonth\b/i.test(first.text)) iso = isoPrefix(start, 'month');
  else if (/\byear\b/i.test(first.text) || start.isCertain('year')) iso = String(year);
  else iso = isoPrefix(start, 'day');
  return { text: first.text, iso };
}

/**
 * The dates `text` names outright — a day or a month with its year written ("on 3 June, 2023",
 * "May 3, 2023", "in December 2023") — as ISO prefixes at that precision: `2023-06-03`,
 * `2023-12`. Relative expressions ("last week", "two years ago", "on Tuesday") name no date
 * without a reference and are left out.
 */
export function absoluteDates(text: string): string[] {
  const dates: string[] = [];
  for (const { text: written, start } of chrono.parse(text, { instant: new Date(0), timezone: 0 }, { forwardDate: false })) {
    const year = start.get('year');
    if (!WRITTEN_YEAR.test(written) || year === null || year === undefined) continue;
    if (start.isCertain('day')) dates.push(isoPrefix(start, 'day'));
    else if (start.isCertain('month')) dates.push(isoPrefix(start, 'month'));
  }
  return dates;
}

/** `2023-05-07` (day) or `2023-05` (month) of a parsed date. */
function isoPrefix(start: chrono.ParsedComponents, precision: 'day' | 'month'): string {
  const p = (n: number | null | undefined) => String(n ?? 1).padStart(2, '0');
  const month = `${start.get('year') ?? ''}-${p(start.get('month'))}`;
  return precision === 'day' ? `${month}-${p(start.get('day'))}` : month;
}

/**
 * Definite order of two ISO prefixes: -1 when `a` ends before `b` starts, 1 for the reverse,
 * 0 when they overlap (e.g. `2023` and `2023-05-07`) — overlapping times give no temporal edge.
 */
export function compareTimes(a: string, b: string): -1 | 0 | 1 {
  const n = Math.min(a.length, b.length);
  const pa = a.slice(0, n);
  const pb = b.slice(0, n);
  if (pa === pb) return 0;
  return pa < pb ? -1 : 1;
}

/** Start of an ISO prefix (`2023`, `2023-05`, `2023-05-07`, full date-time) in ms; 0 when absent or unparsable. */
export function isoToMillis(time: string | null): number {
  if (!time) return 0;
  const full = time.length === 4 ? `${time}-01-01` : time.length === 7 ? `${time}-01` : time;
  return Date.parse(full) || 0;
}
