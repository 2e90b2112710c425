import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../src/eval/stats.ts';
import { Memory } from '../src/memory.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { countKeptTokens, countSpaced, countTokens, defaultCounterTokens, isSpacedPart, loadTokenCounter, spacedParts } from '../src/util/tokens.ts';
import { flatIndex } from '../src/vector/flat-index.ts';
import { hashEmbedder } from './helpers/hash-embedder.ts';

describe('counting text joined at spaces from its parts (o200k_base)', () => {
  // Runs first in this file, while the default counter that test/setup.ts loads is installed.
  const random = mulberry32(11);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const WORDS = ['painted', 'sunrise', "Melanie's", "don't", 'I', 'a', 'Caroline', 'LGBTQ', 'über', 'café', '日本語', 'Привет', '🎉', '👍🏽', 'e.g.', 'http://example.com/a?b=1', 'x/y', '2023', '12345', '3.5', '$40', '#tag', '@me', '(see', 'this)', '"quoted"', '…', '—', '--', '!!', '?', ';', ':', '...', "'s", 'ALL', 'CAPS', 'mixedCase', 'tab\there', 'two  spaces', 'line\nbreak', 'end.\n\nNew', '<|endoftext|>', '１２３', 'ß', 'İ'];
  const sentence = (): string => {
    const words = Array.from({ length: 1 + Math.floor(random() * 14) }, () => pick(WORDS).replace(/\\t/g, '\t').replace(/\\n/g, '\n'));
    return `${words.join(pick([' ', ' ', ' ', '', ', ']))}${pick(['.', '!', '?', '', '…', ':)', '"', '/'])}`.trim();
  };

  it('gives the count of the joined text, for the parts excerpts are made of', () => {
    let compared = 0;
    for (let n = 0; n < 3000; n++) {
      const parts = [`(D${n}:1) ${pick(['Melanie', 'user', 'A B', '李'])}:`];
      for (let k = 0; k < 1 + Math.floor(random() * 6); k++) parts.push(random() < 0.2 ? ' …' : ` ${sentence()}`);
      if (parts.some((part, i) => i > 0 && !/^ \S/u.test(part))) continue;
      expect(countSpaced(parts), JSON.stringify(parts)).toBe(countTokens(parts.join('')));
      compared++;
    }
    expect(compared).toBeGreaterThan(2500);
  });

  it('counts text that spells a special token as the text it is', () => {
    expect(countTokens('pasted: <|endoftext|> and <|im_start|>')).toBeGreaterThan(5);
  });

  it('tells a text that makes such a part after a space without making the part (isSpacedPart)', () => {
    for (const text of ['b', 'b c', 'b ', ' b', '', '\nb', 'b\n', 'b\nc', 'é', '…', '\t', 'a\u00a0']) {
      expect(isSpacedPart(text), JSON.stringify(text)).toBe(spacedParts(['a', ` ${text}`]));
    }
    for (let n = 0; n < 500; n++) {
      const text = sentence();
      expect(isSpacedPart(text)).toBe(spacedParts(['a', ` ${text}`]));
    }
  });

  it('counts the joined text when a part is not of that shape', () => {
    for (const parts of [['a ', ' b'], ['a', '  b'], ['a', 'b'], ['a', ' b '], ['a', ' \nb'], ['', ' b']]) {
      expect(countSpaced(parts)).toBe(countTokens(parts.join('')));
    }
  });
});

describe('counts a record keeps (Chunk.textTokens)', () => {
  it('are the default counter\'s, and are read only while it is installed', async () => {
    await loadTokenCounter();
    const text = '[s1 · 8 May 2023]\nUser: I painted a sunrise.\nAssistant: Lovely!';
    expect(defaultCounterTokens(text)).toBe(countTokens(text));
    expect(countKeptTokens(text, 1_000)).toBe(1_000);
    expect(countKeptTokens(text, undefined)).toBe(countTokens(text));
    await loadTokenCounter((t) => t.length);
    expect(defaultCounterTokens(text)).toBeUndefined();
    expect(countKeptTokens(text, 1_000)).toBe(text.length);
  });
});

describe('remembered token counts', () => {
  it('keep the texts searches keep reaching when more text than the bound comes through', async () => {
    const calls: string[] = [];
    await loadTokenCounter((text) => {
      calls.push(text.slice(0, 8));
      return text.length;
    });
    const hot = `hot ${'a'.repeat(1_000)}`;
    const cold = `cold ${'b'.repeat(1_000)}`;
    expect([countTokens(cold), countTokens(hot)]).toEqual([cold.length, hot.length]);
    // 8 million characters pass through a bound of 4 million; the hot text is reached in between.
    for (let i = 0; i < 8; i++) {
      countTokens(`${i} ${'c'.repeat(1_000_000)}`);
      countTokens(hot);
    }
    calls.length = 0;
    expect([countTokens(hot), countTokens(cold)]).toEqual([hot.length, cold.length]);
    // The hot text was never counted again; the cold one, least recently used, was.
    expect(calls).toEqual([cold.slice(0, 8)]);
  });
});

describe('the token counter Memory.open loads while it reads the default scope', () => {
  it('is installed once the memory is open, and one that is not a function fails the open as INVALID_INPUT', async () => {
    const open = (countTokens: unknown) =>
      Memory.open({ store: new MemoryStore(), embedder: hashEmbedder(16), createIndex: flatIndex, llm: null, countTokens: countTokens as (text: string) => number });
    await expect(open('o200k')).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    const memory = await open((text: string) => 3 * text.length);
    expect(countTokens('four')).toBe(12);
    await memory.close();
  });
});
