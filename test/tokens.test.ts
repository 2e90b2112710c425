import { describe, expect, it } from 'vitest';
import { countTokens, loadTokenCounter } from '../src/util/tokens.ts';

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
