import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../src/eval/stats.ts';
import { packValue, unpacked } from '../src/store/value-pack.ts';

const encoder = new TextEncoder();
const random = mulberry32(20261205);

/** Bytes drawn at random (they do not pack). */
function noise(length: number): Uint8Array<ArrayBuffer> {
  return Uint8Array.from({ length }, () => Math.floor(random() * 256));
}

/** Text-like bytes: words drawn from a small vocabulary, which pack. */
function wordy(length: number, vocabulary = 50): Uint8Array<ArrayBuffer> {
  const words = Array.from({ length: vocabulary }, (_, i) => `w${i.toString(36)}${'xyz'.slice(0, i % 4)}`);
  let text = '';
  while (text.length < length) text += `${words[Math.floor(random() * words.length)]} `;
  return encoder.encode(text.slice(0, length));
}

function roundTrips(plain: Uint8Array<ArrayBuffer>): Uint8Array<ArrayBuffer> {
  const packed = packValue(plain);
  expect(Array.from(unpacked(packed))).toEqual(Array.from(plain));
  return packed;
}

describe('packValue / unpacked', () => {
  it('round-trips text, records, runs and noise of every size, and packs what repeats', () => {
    const record = encoder.encode(JSON.stringify(Array.from({ length: 200 }, (_, i) => [i, null, `id${i % 17}`, 'place', ['737c1069a3e3fb44', '017706dfa90d6f93']])));
    // Each case with the most its packed bytes may be of its own (1: left as it is).
    const cases: Array<[string, Uint8Array<ArrayBuffer>, number]> = [
      ['empty', new Uint8Array(0), 1],
      ['short', encoder.encode('hello hello hello'), 1],
      ['records', record, 0.2],
      ['one byte repeated (overlapping matches)', new Uint8Array(100_000).fill(7), 0.01],
      ['a long literal run, then a long match', (() => {
        const head = noise(5_000);
        const out = new Uint8Array(15_000);
        out.set(head);
        out.set(head, 5_000);
        out.set(head, 10_000);
        return out;
      })(), 0.4],
      ['a repeat further back than the window', (() => {
        const head = noise(1_000);
        const out = new Uint8Array(70_000 + 1_000);
        out.set(head);
        out.set(noise(69_000), 1_000);
        out.set(head, 70_000);
        return out;
      })(), 1],
      ['noise', noise(12_000), 1],
      ...[64, 65, 300].map((length): [string, Uint8Array<ArrayBuffer>, number] => [`words, ${length} bytes`, wordy(length), 1]),
      ...[4_096, 40_000, 250_000].map((length): [string, Uint8Array<ArrayBuffer>, number] => [`words, ${length} bytes`, wordy(length), 0.6]),
    ];
    for (const [what, plain, most] of cases) {
      const packed = roundTrips(plain);
      expect(packed.length, what).toBeLessThanOrEqual(plain.length * most);
      // What does not pack by an eighth is kept as it is: the same bytes, which read back unchanged.
      if (packed.length > plain.length * 0.875) expect(packed, what).toBe(plain);
      if (packed === plain) expect(unpacked(packed), what).toBe(plain);
    }
  });

  it('round-trips many values in a row (the match finder keeps nothing of one value into the next)', () => {
    const shared = wordy(3_000);
    for (let i = 0; i < 300; i++) {
      const plain = i % 2 === 0 ? shared.slice(0, 500 + i * 7) : wordy(200 + i * 31, 5 + (i % 40));
      roundTrips(plain);
    }
  });

  it('leaves unpacked values as they are: UTF-8 text, and group values led by their u32 length', () => {
    const text = encoder.encode('{"a":"ÿ is written in two bytes"}');
    expect(unpacked(text)).toBe(text);
    const group = new Uint8Array(260);
    new DataView(group.buffer).setUint32(0, 0xff_ff_ff, true);
    expect(unpacked(group)).toBe(group);
  });

  it('throws on a packed value whose sequences do not make its stated length, and never reads or writes out of bounds', () => {
    const plain = wordy(20_000);
    const packed = packValue(plain);
    expect(packed.length).toBeLessThan(plain.length);
    const withLength = (length: number) => {
      const copy = packed.slice();
      new DataView(copy.buffer).setUint32(4, length, true);
      return copy;
    };
    expect(() => unpacked(withLength(plain.length + 1))).toThrow(/damaged/);
    expect(() => unpacked(withLength(plain.length - 1))).toThrow(/damaged/);
    expect(() => unpacked(withLength(0xffff_fff0))).toThrow(/damaged/);
    expect(() => unpacked(packed.slice(0, packed.length - 1))).toThrow(/damaged/);
    const trailing = new Uint8Array(packed.length + 1);
    trailing.set(packed);
    expect(() => unpacked(trailing)).toThrow(/damaged/);
    // Every byte after the head flipped in turn (a sample of them): it throws, or makes bytes of the stated length.
    let threw = 0;
    for (let at = 8; at < packed.length; at += 13) {
      const altered = packed.slice();
      altered[at] = (altered[at] as number) ^ 0x5a;
      try {
        expect(unpacked(altered).length).toBe(plain.length);
      } catch (error) {
        expect(String(error)).toMatch(/damaged/);
        threw++;
      }
    }
    expect(threw).toBeGreaterThan(0);
    // A match that reaches back before the first byte.
    const before = new Uint8Array([0xff, 0xff, 0xff, 0xff, 20, 0, 0, 0, 0x10, 0x41, 0x05, 0x00]);
    expect(() => unpacked(before)).toThrow(/starts before/);
  });
});
