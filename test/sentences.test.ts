import { describe, expect, it } from 'vitest';
import { splitSentences } from '../src/util/sentences.ts';

const segmenter = new Intl.Segmenter(undefined, { granularity: 'sentence' });

/** What `splitSentences` must give: the platform segmenter's sentences, trimmed, empty ones dropped. */
function segmenterSentences(text: string): string[] {
  const sentences = [...segmenter.segment(text)].map(({ segment }) => segment.trim()).filter((s) => s.length > 0);
  return sentences.length > 0 ? sentences : [text];
}

/** A seeded generator (LCG), so a failure names a string that can be run again. */
function randomTexts(seed: number, count: number, maxLength: number, alphabet: string): string[] {
  let state = seed;
  const next = (below: number) => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return Math.floor((state / 0x80000000) * below);
  };
  return Array.from({ length: count }, () => {
    let text = '';
    for (let i = 0, length = 1 + next(maxLength); i < length; i++) text += alphabet[next(alphabet.length)];
    return text;
  });
}

describe('splitSentences', () => {
  it('splits chat text where the platform segmenter does', () => {
    const texts = [
      'I moved to Berlin in 2019. It was cold! Did you like it? Yes.',
      'Prices rose 3.5% in the U.S.A. Then they fell.',
      'See e.g. the manual, etc. 5 apples remain. OK?! Sure... fine.',
      'He said "Stop." She left. (Really.) Then: nothing.',
      'Line one\nLine two\r\nLine three\r',
      'Trailing spaces.   \n\n  Next paragraph.',
      'No terminator at all',
      '',
      '   ',
      'A.b. C',
      'Wait. "no, really." ok',
      'café. Next one — with a dash. Straße!',
    ];
    for (const text of texts) expect(splitSentences(text), JSON.stringify(text)).toEqual(segmenterSentences(text));
  });

  it('agrees with the segmenter on random text, every character class mixed (seeded)', () => {
    // Letters, digits, terminators, closing marks, spaces, line ends and continuers: where the rules
    // meet; with Latin-1's letters and signs, dashes, curly quotes, and some the table leaves out.
    const classes = 'aB. !?"\')([]{},-:;\n\r\t\v\f1#xYéÉ°’“–—\u00a0\u202f…«ª×';
    const untabled = '\u00ad\u0085\ufe0fشΩ😀\u2028';
    const latin = Array.from({ length: 0x180 }, (_, code) => String.fromCharCode(code)).join('');
    const texts = [
      ...randomTexts(7, 20_000, 16, classes),
      ...randomTexts(11, 5_000, 48, classes),
      ...randomTexts(13, 10_000, 12, latin),
      ...randomTexts(17, 5_000, 16, classes + untabled),
    ];
    const disagreeing = texts.filter((text) => JSON.stringify(splitSentences(text)) !== JSON.stringify(segmenterSentences(text)));
    expect(disagreeing.slice(0, 5)).toEqual([]);
  });
});
