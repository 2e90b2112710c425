import { countLines, countTokens } from '../util/tokens.ts';

export { countTokens };

const MIN_UNIT_TOKENS = 6;

/** One piece of evidence offered for the context: an Episode, or finer (the turns under a FacetPoint). */
export interface ContextUnit {
  /** Unique id (Episode id, or `<episodeId>#<dialogId>` for finer units). */
  id: string;
  /** Date header of the unit's session, e.g. `[conv-26 session_3 · 1:56 pm on 8 May, 2023]`. */
  header: string;
  /** The evidence text (turn lines carrying their dialog ids). */
  text: string;
  /** Dialog ids of the turns whose text (for an excerpt of a long turn, its best sentences) is in `text`. */
  dialogIds: string[];
  /** Higher is better. */
  score: number;
  /** ISO time of the session, for chronological ordering of the packed context. */
  time: string | null;
}

export interface PackedContext<U extends ContextUnit = ContextUnit> {
  text: string;
  tokens: number;
  /** Units that made it into the context, in rank order (the objects given, or what `fit` made of them). */
  units: U[];
  /** Dialog ids whose turn text is inside the context. */
  dialogIds: string[];
}

/** How packing counts a unit's tokens. */
export interface UnitTokens<U extends ContextUnit> {
  /** A unit text's token count. */
  of: (unit: U) => number;
  /**
   * Tokens a unit's text has at least, when that is cheaper to know than `of`: a unit whose
   * least is over `room`, the tokens left for it, is not counted. Never more than `of`; once a
   * bound over `room` is known it may be given instead. By default `of` itself.
   */
  least?: (unit: U, room: number) => number;
}

/**
 * Greedy packing in rank order: a unit that does not fit is skipped and smaller, lower-ranked
 * units may still fill the rest. Units sharing a header are grouped under one header line, and
 * groups are written in time order so an answer model reads a chronological record. `counting`
 * counts a unit's text (counted whole by default). `fit`, when given, offers a smaller
 * version of a unit that does not fit whole, within the tokens left (null: none), which is
 * taken in the unit's place: a part of better-ranked evidence before lower-ranked units.
 */
export function packContext<U extends ContextUnit>(
  ranked: readonly U[],
  budget: number,
  counting: UnitTokens<U> = { of: (unit) => countTokens(unit.text) },
  fit?: (unit: U, maxTokens: number) => U | null,
): PackedContext<U> {
  const chosen: U[] = [];
  const headersUsed = new Set<string>();
  let used = 0;
  for (const unit of ranked) {
    // No unit (a dialog id, a speaker and a line) fits in fewer tokens; stop counting the rest.
    if (budget - used < MIN_UNIT_TOKENS) break;
    const headerCost = headersUsed.has(unit.header) ? 0 : countTokens(unit.header) + 1;
    let taken: U | null = unit;
    // The tokens a unit may take under its header: none where a new header alone is over (a
    // long turn met there is then neither counted nor weighed: on chat, most of those packing
    // reads on past a full budget are in sessions not yet in the context).
    const room = budget - used - headerCost - 1;
    // What cannot fit at its least is not counted: it takes the same way as one counted over.
    const fitsAtLeast = room >= 0 && (counting.least === undefined || counting.least(unit, room) <= room);
    let cost = fitsAtLeast ? headerCost + counting.of(unit) + 1 : Infinity;
    if (used + cost > budget) {
      taken = fit && room >= MIN_UNIT_TOKENS ? fit(unit, room) : null;
      if (taken === null) continue;
      cost = headerCost + counting.of(taken) + 1;
      if (used + cost > budget) continue;
    }
    used += cost;
    headersUsed.add(taken.header);
    chosen.push(taken);
  }
  // Per-unit counts can differ by a token or two from the rendered whole (BPE merges across
  // line breaks); drop the lowest-ranked units until the rendered context truly fits.
  let pieces = renderPieces(chosen);
  let tokens = countLines(pieces);
  while (chosen.length > 0 && tokens > budget) {
    chosen.pop();
    pieces = renderPieces(chosen);
    tokens = countLines(pieces);
  }
  const dialogIds = [...new Set(chosen.flatMap((u) => u.dialogIds))];
  return { text: pieces.join(''), tokens, units: chosen, dialogIds };
}

/**
 * The context as lines that join into it: each group's header and unit texts, a line break
 * after each, a blank line between groups. Lines repeat across queries, so `countLines`
 * counts the whole from their remembered counts.
 */
function renderPieces(units: readonly ContextUnit[]): string[] {
  const groups = new Map<string, { time: string | null; lines: string[] }>();
  for (const unit of units) {
    let group = groups.get(unit.header);
    if (!group) groups.set(unit.header, (group = { time: unit.time, lines: [] }));
    group.lines.push(unit.text);
  }
  const sorted = [...groups.entries()].sort(([, a], [, b]) => (a.time ?? '').localeCompare(b.time ?? ''));
  const pieces: string[] = [];
  sorted.forEach(([header, g], i) => {
    const lines = [header, ...g.lines];
    const end = i === sorted.length - 1 ? '' : '\n\n';
    lines.forEach((line, j) => pieces.push(`${line}${j === lines.length - 1 ? end : '\n'}`));
  });
  return pieces;
}
