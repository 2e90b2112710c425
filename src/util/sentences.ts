import { isAscii } from './ascii.ts';

/**
 * Text split into sentences as the platform's Unicode segmenter splits it (`Intl.Segmenter`,
 * granularity `sentence`: the sentence boundaries of UAX #29), each trimmed, empty ones dropped.
 *
 * Text whose characters all have a class in the table below (ASCII, Latin-1's letters and signs,
 * the common dashes, quotes and spaces: all of 99% of LongMemEval's long turns) is split by the
 * UAX #29 rules written out in `tabledSentenceEnds`, which give the segmenter's boundaries
 * (test/sentences.test.ts holds them to it) at a fraction of its cost: a search splits every long
 * turn it weighs for excerpts, and the segmenter was ~3 ms of a search at 30K messages of chat.
 * Any other text goes to the segmenter.
 */
export function splitSentences(text: string): string[] {
  const ends = isTabled(text) ? tabledSentenceEnds(text) : segmenterEnds(text);
  const sentences: string[] = [];
  let start = 0;
  for (const end of ends) {
    const sentence = text.slice(start, end).trim();
    if (sentence.length > 0) sentences.push(sentence);
    start = end;
  }
  return sentences.length > 0 ? sentences : [text];
}

let segmenter: Intl.Segmenter | undefined;

/** Where each of the segmenter's sentences ends. */
function segmenterEnds(text: string): number[] {
  segmenter ??= new Intl.Segmenter(undefined, { granularity: 'sentence' });
  const ends: number[] = [];
  for (const { index, segment } of segmenter.segment(text)) ends.push(index + segment.length);
  return ends;
}

/**
 * UAX #29's Sentence_Break classes (SentenceBreakProperty.txt) of the characters this file splits
 * itself, by code point below `TABLED_BELOW` (0: not tabled). Other is a class, not a default:
 * a character outside the table (a letter of another script, an emoji's variation selector, a
 * soft hyphen, a C1 control) sends its text to the segmenter.
 */
const UNTABLED = 0;
const OTHER = 1;
const CR = 2;
const LF = 3;
const SP = 4;
const LOWER = 5;
const UPPER = 6;
const NUMERIC = 7;
const A_TERM = 8;
const S_TERM = 9;
const CLOSE = 10;
const S_CONTINUE = 11;
const TABLED_BELOW = 0x2030;

const CLASSES: Uint8Array = (() => {
  const classes = new Uint8Array(TABLED_BELOW);
  const range = (from: number, to: number, sb: number) => classes.fill(sb, from, to + 1);
  const each = (chars: string, sb: number) => {
    for (const char of chars) classes[char.charCodeAt(0)] = sb;
  };
  range(0x00, 0x7f, OTHER);
  each('\r', CR);
  each('\n', LF);
  each('\t\v\f \u00a0\u202f', SP);
  each('abcdefghijklmnopqrstuvwxyz', LOWER);
  each('ABCDEFGHIJKLMNOPQRSTUVWXYZ', UPPER);
  each('0123456789', NUMERIC);
  each('.', A_TERM);
  each('!?', S_TERM);
  each('"\'()[]{}\u2018\u2019\u201c\u201d', CLOSE);
  each(',-:;\u2013\u2014', S_CONTINUE);
  // Latin-1: its signs (but ª µ º are lower-case letters, « » closing marks, and the soft hyphen
  // U+00AD is Format: untabled), then its letters, among which × and ÷ are signs. • and … are signs too.
  range(0xa1, 0xbf, OTHER);
  classes[0xad] = UNTABLED;
  each('\u00aa\u00b5\u00ba', LOWER);
  each('\u00ab\u00bb', CLOSE);
  range(0xc0, 0xde, UPPER);
  range(0xdf, 0xff, LOWER);
  each('\u00d7\u00f7\u2022\u2026', OTHER);
  return classes;
})();

/** Whether every character of `text` has a class in the table. */
function isTabled(text: string): boolean {
  if (isAscii(text)) return true;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= TABLED_BELOW || CLASSES[code] === UNTABLED) return false;
  }
  return true;
}

/** Where a break may follow: a terminator or a line end (the table has no others). */
const TERMINATOR_OR_LINE_END = /[.!?\r\n]/g;

/**
 * Where each sentence of tabled `text` ends, by the rules of UAX #29 (SB1–SB11, SB998) over the
 * classes the table has (no Extend, Format, Sep or OLetter, so SB5 never applies):
 * - SB3/SB4: a break after a line end, CR LF being one;
 * - SB6/SB7: no break after "." before a digit ("3.14"), nor between letters ("U.S.A");
 * - SB8: no break after "." and its closing marks and spaces when, past any characters that are
 *   neither letters, line ends nor terminators, a lower-case letter comes ("e.g. the", "etc. 5 apples");
 * - SB8a: no break before ",", "-", ":", ";", a dash or another terminator ("?!", "...");
 * - SB9–SB11: otherwise a break after a terminator, its closing marks, its spaces and one line end.
 */
function tabledSentenceEnds(text: string): number[] {
  const n = text.length;
  const ends: number[] = [];
  const sbAt = (at: number) => CLASSES[text.charCodeAt(at)] as number;
  /** Past the line end at `at` (CR LF as one). */
  const pastLineEnd = (at: number) => (text.charCodeAt(at) === 0x0d && text.charCodeAt(at + 1) === 0x0a ? at + 2 : at + 1);
  const finder = new RegExp(TERMINATOR_OR_LINE_END);
  for (let found = finder.exec(text); found !== null; found = finder.exec(text)) {
    const at = found.index;
    const here = sbAt(at);
    let next = at + 1;
    if (here === CR || here === LF) {
      ends.push((finder.lastIndex = pastLineEnd(at)));
      continue;
    }
    if (here === A_TERM && next < n) {
      const after = sbAt(next);
      const before = at > 0 ? sbAt(at - 1) : OTHER;
      if (after === NUMERIC || (after === UPPER && (before === UPPER || before === LOWER))) continue;
    }
    while (next < n && sbAt(next) === CLOSE) next += 1;
    while (next < n && sbAt(next) === SP) next += 1;
    if (next >= n) break;
    const after = sbAt(next);
    if (after === CR || after === LF) {
      ends.push((finder.lastIndex = pastLineEnd(next)));
      continue;
    }
    finder.lastIndex = next;
    if (after === S_CONTINUE || after === A_TERM || after === S_TERM || (here === A_TERM && lowerFollows(text, next))) continue;
    ends.push(next);
  }
  if (ends.at(-1) !== n && n > 0) ends.push(n);
  return ends;
}

/** SB8's look-ahead: whether the first letter, line end or terminator from `at` on is a lower-case letter. */
function lowerFollows(text: string, at: number): boolean {
  for (let i = at; i < text.length; i++) {
    const here = CLASSES[text.charCodeAt(i)];
    if (here === LOWER) return true;
    if (here === UPPER || here === CR || here === LF || here === A_TERM || here === S_TERM) return false;
  }
  return false;
}
