import { describe, expect, it } from 'vitest';
import { decodeVector, encodedBytes, encodeVector, roundVector, type VectorPrecision } from '../src/store/vector-codec.ts';
import { mulberry32 } from '../src/eval/stats.ts';

function unitVectors(count: number, dim: number): Float32Array[] {
  const random = mulberry32(7);
  return Array.from({ length: count }, () => {
    const v = Float32Array.from({ length: dim }, () => random() * 2 - 1);
    const norm = Math.hypot(...v);
    return v.map((x) => x / norm);
  });
}

const dot = (a: Float32Array, b: Float32Array) => a.reduce((sum, x, i) => sum + x * (b[i] ?? 0), 0);

describe('stored vector precision', () => {
  const vectors = unitVectors(200, 384);

  for (const precision of ['f32', 'f16', 'i8'] as const satisfies readonly VectorPrecision[]) {
    it(`${precision}: a rounded vector encodes and decodes to itself, at its byte size`, () => {
      for (const vector of vectors) {
        const rounded = roundVector(vector, precision);
        const bytes = encodeVector(rounded, precision);
        expect(bytes.byteLength).toBe(encodedBytes(384, precision));
        expect(decodeVector(bytes, 384)).toEqual(rounded);
        expect(roundVector(rounded, precision)).toEqual(rounded);
      }
    });
  }

  it('f16 keeps every cosine within 1e-3 and i8 within 1e-2 of f32', () => {
    const [query, ...rest] = vectors;
    for (const vector of rest) {
      const exact = dot(query!, vector);
      expect(Math.abs(dot(query!, roundVector(vector, 'f16')) - exact)).toBeLessThan(1e-3);
      expect(Math.abs(dot(query!, roundVector(vector, 'i8')) - exact)).toBeLessThan(1e-2);
    }
  });

  it('f16 rounds to the nearest half float, including subnormals, overflow and signed zero', () => {
    const cases = Float32Array.from([0, -0, 1, -2, 65504, 70000, 2 ** -24, 2 ** -26, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 0.1]);
    const decoded = decodeVector(encodeVector(cases, 'f16'), cases.length);
    expect([...decoded]).toEqual([0, -0, 1, -2, 65504, Infinity, 2 ** -24, 0, 1, 1 + 2 ** -9, 0.0999755859375]);
  });

  it('a blob whose length fits no precision is CORRUPT_CHECKPOINT', () => {
    expect(() => decodeVector(new Uint8Array(10), 384)).toThrow(expect.objectContaining({ code: 'CORRUPT_CHECKPOINT' }));
  });
});
