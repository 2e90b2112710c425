import { describe, expect, it } from 'vitest';
import { nodeUsearch } from '../src/node.ts';
import { loadUsearchWasm } from '../src/vector/usearch-wasm.ts';
import { readUsearchWasm } from '../src/vector/wasm-bytes.node.ts';
import { flatIndex } from '../src/vector/flat-index.ts';
import type { VectorIndex } from '../src/vector/types.ts';

/** Seeded unit vectors, packed: the same on every run. */
function unitVectors(count: number, dim: number, seed: number): Float32Array {
  let state = seed;
  const next = () => ((state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32) * 2 - 1;
  const packed = new Float32Array(count * dim);
  for (let r = 0; r < count; r++) {
    let norm = 0;
    for (let d = 0; d < dim; d++) norm += (packed[r * dim + d] = next()) ** 2;
    for (let d = 0; d < dim; d++) packed[r * dim + d]! /= Math.sqrt(norm);
  }
  return packed;
}

describe('flatIndex', () => {
  it('finds what the usearch flat index finds, through adds and removes', async () => {
    const dim = 32;
    const usearch = (await nodeUsearch()).createIndex({ dim });
    const flat = flatIndex(dim);
    const both = (apply: (index: VectorIndex) => void) => [usearch, flat].forEach(apply);
    // More rows than the first capacity, so the storage grows.
    const keys = Array.from({ length: 300 }, (_, i) => i * 3 + 1);
    both((index) => index.add(keys, unitVectors(keys.length, dim, 1)));
    expect([usearch, flat].map((index) => index.remove([4, 10, 898, 4000]))).toEqual([3, 3]);
    expect(flat.remove([4, 4000])).toBe(0);
    both((index) => index.add([2, 5], unitVectors(2, dim, 2)));
    expect(flat.size).toBe(usearch.size);
    const queries = unitVectors(5, dim, 3);
    const [fromUsearch, fromFlat] = [usearch.search(queries, 7), flat.search(queries, 7)];
    expect(fromFlat.map((hits) => hits.map((h) => h.key))).toEqual(fromUsearch.map((hits) => hits.map((h) => h.key)));
    fromFlat.flat().forEach((hit, i) => expect(hit.score).toBeCloseTo(fromUsearch.flat()[i]!.score, 5));
    usearch.dispose();
  });

  it('adds all or nothing: a key it holds, a repeated key or a bad row leaves it as it was', () => {
    const flat = flatIndex(2);
    flat.add([1], Float32Array.of(1, 0));
    expect(() => flat.add([2, 1], Float32Array.of(0, 1, 1, 0))).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    expect(() => flat.add([3, 3], Float32Array.of(0, 1, 1, 0))).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    expect(() => flat.add([4], Float32Array.of(0, Number.NaN))).toThrow(expect.objectContaining({ code: 'NON_FINITE_VECTOR' }));
    expect(() => flat.add([5], Float32Array.of(0, 1, 0))).toThrow(expect.objectContaining({ code: 'DIMENSION_MISMATCH' }));
    expect(flat.size).toBe(1);
    expect(flat.search(Float32Array.of(0, 1), 5)).toEqual([[{ key: 1, score: 0 }]]);
    expect(flatIndex(3).search(Float32Array.of(1, 0, 0), 2)).toEqual([[]]);
    expect(() => flatIndex(0)).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
  });

  it('serializes its row count, dimension, keys and vectors', () => {
    const flat = flatIndex(2);
    flat.add([7, 9], Float32Array.of(1, 0, 0, 1));
    const bytes = flat.serialize();
    const view = new DataView(bytes.buffer);
    expect([view.getUint32(0, true), view.getUint32(4, true)]).toEqual([2, 2]);
    expect(Array.from(new Float64Array(bytes.buffer, 8, 2))).toEqual([7, 9]);
    expect(Array.from(new Float32Array(bytes.buffer, 24, 4))).toEqual([1, 0, 0, 1]);
  });
});

describe('the usearch flat scan, warmed as an index first grows large', () => {
  it('answers every index of the module as before, the ones made before the warm-up and the one that set it off', async () => {
    // A module of its own, so that this index is the first of it to grow past the warm-up's size.
    const usearch = await loadUsearchWasm(await readUsearchWasm());
    const dim = 48;
    const queries = unitVectors(4, dim, 9);
    const small = usearch.createIndex({ dim });
    small.add(Array.from({ length: 500 }, (_, i) => i), unitVectors(500, dim, 7));
    const before = small.search(queries, 5);
    const large = usearch.createIndex({ dim });
    const rows = 25_000;
    const vectors = unitVectors(rows, dim, 8);
    large.add(Array.from({ length: rows }, (_, i) => i), vectors);
    expect(small.search(queries, 5)).toEqual(before);
    const reference = flatIndex(dim);
    reference.add(Array.from({ length: rows }, (_, i) => i), vectors);
    const [found, expected] = [large.search(queries, 10), reference.search(queries, 10)];
    expect(found.map((hits) => hits.map((h) => h.key))).toEqual(expected.map((hits) => hits.map((h) => h.key)));
    small.dispose();
    large.dispose();
  });
});
