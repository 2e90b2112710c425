import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUnitVectors } from '../bench/index.bench.ts';
import { PrismError, type PrismErrorCode } from '../src/errors.ts';
import { decodeStoredVector, decodeVector, encodeVector, roundVector } from '../src/store/vector-codec.ts';
import { bruteForceSearch } from '../src/vector/brute-force.ts';
import { IndexSet } from '../src/vector/index-set.ts';
import { recordBytes, type SearchHit, type VectorIndex } from '../src/vector/types.ts';
import { loadUsearchWasm, type UsearchIndex, type UsearchWasm } from '../src/vector/usearch-wasm.ts';
import { readUsearchWasm } from '../src/vector/wasm-bytes.node.ts';

const SCORE_TOLERANCE = 1e-5;

let wasmBytes: Uint8Array;
let wasm: UsearchWasm;

beforeAll(async () => {
  wasmBytes = await readUsearchWasm();
  wasm = await loadUsearchWasm(wasmBytes);
});

function keysFrom(start: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => start + i);
}

function rowOf(vectors: Float32Array, dim: number, row: number): Float32Array {
  return vectors.subarray(row * dim, (row + 1) * dim);
}

/** A vector's floats as their bit patterns, so −0 and NaN compare exactly. */
function bits(v: Float32Array | undefined): number[] | undefined {
  return v && [...new Uint32Array(v.buffer, v.byteOffset, v.length)];
}

function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}

/**
 * Same top-k as the reference: scores rank by rank within tolerance, every hit's score is the true
 * inner product of its key, and every reference key that is not tied with the k-th score is present
 * (which of several tied keys fills the last places is the index's choice).
 */
function expectSameTopK(
  actual: SearchHit[][],
  reference: SearchHit[][],
  vectorOf: (key: number) => Float32Array,
  queries: Float32Array,
  dim: number,
): void {
  expect(actual.length).toBe(reference.length);
  reference.forEach((expectedHits, q) => {
    const hits = actual[q]!;
    const query = rowOf(queries, dim, q);
    expect(hits.length).toBe(expectedHits.length);
    expectedHits.forEach((expected, rank) => {
      expect(Math.abs(hits[rank]!.score - expected.score)).toBeLessThanOrEqual(SCORE_TOLERANCE);
    });
    for (const hit of hits) {
      expect(Math.abs(hit.score - dot(vectorOf(hit.key), query))).toBeLessThanOrEqual(SCORE_TOLERANCE);
    }
    const last = expectedHits[expectedHits.length - 1]!.score;
    const found = new Set(hits.map((hit) => hit.key));
    for (const expected of expectedHits) {
      if (expected.score > last + SCORE_TOLERANCE) expect(found.has(expected.key)).toBe(true);
    }
  });
}

function expectPrismError(run: () => unknown, code: PrismErrorCode): void {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(PrismError);
  expect((caught as PrismError).code).toBe(code);
}

async function expectPrismRejection(promise: Promise<unknown>, code: PrismErrorCode): Promise<void> {
  const caught = await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(caught).toBeInstanceOf(PrismError);
  expect((caught as PrismError).code).toBe(code);
}

/** A flat index holding `count` seeded random unit vectors keyed from `firstKey`. */
function filledIndex(dim: number, count: number, seed: number, firstKey = 0) {
  const vectors = randomUnitVectors(count, dim, seed);
  const keys = keysFrom(firstKey, count);
  const index = wasm.createIndex({ dim });
  index.add(keys, vectors);
  return { index, vectors, keys, vectorOf: (key: number) => rowOf(vectors, dim, key - firstKey) };
}

describe('bruteForceSearch', () => {
  it('ranks by inner product, best first, ties by the smaller key', () => {
    const vectors = new Float32Array([1, 0, 0, 1, 1, 0, 0.6, 0.8]);
    const hits = bruteForceSearch(vectors, 2, [7, 3, 5, 9], new Float32Array([1, 0]), 3);
    expect(hits).toEqual([
      [
        { key: 5, score: 1 },
        { key: 7, score: 1 },
        { key: 9, score: expect.closeTo(0.6, 6) as number },
      ],
    ]);
  });

  it('returns every row when k exceeds the store', () => {
    const hits = bruteForceSearch(new Float32Array([1, 0, 0, 1]), 2, [1, 2], new Float32Array([0, 1]), 5);
    expect(hits[0]!.map((hit) => hit.key)).toEqual([2, 1]);
  });
});

describe('flat usearch WASM index', () => {
  it.each([
    { dim: 384, count: 1_500, queries: 20, k: 10 },
    { dim: 48, count: 4_000, queries: 40, k: 25 },
  ])('equals brute force on $count × $dim random vectors', ({ dim, count, queries: queryCount, k }) => {
    const { index, vectors, keys, vectorOf } = filledIndex(dim, count, 11, 1_000);
    const queries = randomUnitVectors(queryCount, dim, 12);
    expect(index.size).toBe(count);
    expect(index.kind).toBe('flat');
    expectSameTopK(index.search(queries, k), bruteForceSearch(vectors, dim, keys, queries, k), vectorOf, queries, dim);
    index.dispose();
  });

  it('finds a stored vector as its own nearest neighbour with score 1', () => {
    const dim = 32;
    const { index, vectors } = filledIndex(dim, 500, 3, 0);
    const hits = index.search(vectors.subarray(0, 8 * dim), 1);
    expect(hits.map((h) => h[0]!.key)).toEqual(keysFrom(0, 8));
    for (const h of hits) expect(h[0]!.score).toBeCloseTo(1, 5);
    index.dispose();
  });

  it('breaks exact ties by the smaller key, at the cut too', () => {
    const dim = 16;
    const duplicate = randomUnitVectors(1, dim, 5);
    const others = randomUnitVectors(50, dim, 6);
    const vectors = new Float32Array(55 * dim);
    vectors.set(others);
    for (let i = 0; i < 5; i++) vectors.set(duplicate, (50 + i) * dim);
    const keys = [...keysFrom(100, 50), 14, 12, 10, 13, 11];
    const index = wasm.createIndex({ dim });
    index.add(keys, vectors);
    const [hits] = index.search(duplicate, 3);
    expect(hits!.map((h) => h.score)).toEqual([hits![0]!.score, hits![0]!.score, hits![0]!.score]);
    expect(hits![0]!.score).toBeCloseTo(1, 5);
    // Five keys tie for three places: the three smallest win, whatever order they were added in.
    expect(hits!.map((h) => h.key)).toEqual([10, 11, 12]);
    const [all] = index.search(duplicate, 5);
    expect(all!.map((h) => h.key)).toEqual([10, 11, 12, 13, 14]);
    index.dispose();
  });

  it('returns at most size hits, and none from an empty index', () => {
    const dim = 8;
    const index = wasm.createIndex({ dim });
    expect(index.search(randomUnitVectors(2, dim, 1), 5)).toEqual([[], []]);
    index.add([4, 2], randomUnitVectors(2, dim, 2));
    const hits = index.search(randomUnitVectors(1, dim, 3), 10);
    expect(hits[0]!.map((h) => h.key).sort()).toEqual([2, 4]);
    expect(index.search(new Float32Array(0), 3)).toEqual([]);
    index.dispose();
  });

  it('round-trips the largest safe integer key', () => {
    const index = wasm.createIndex({ dim: 4 });
    index.add([Number.MAX_SAFE_INTEGER, 0], new Float32Array([1, 0, 0, 0, 0, 1, 0, 0]));
    expect(index.search(new Float32Array([1, 0, 0, 0]), 1)[0]![0]!.key).toBe(Number.MAX_SAFE_INTEGER);
    index.dispose();
  });

  it('removes keys, never returns them, and reuses their slots', () => {
    const dim = 24;
    const count = 2_000;
    const { index, vectors, keys, vectorOf } = filledIndex(dim, count, 21);
    const removedKeys = keys.filter((key) => key % 3 === 0);
    expect(index.remove([...removedKeys, 10_000_000])).toBe(removedKeys.length);
    expect(index.size).toBe(count - removedKeys.length);
    expect(index.remove(removedKeys.slice(0, 5))).toBe(0);

    const keptRows = keys.filter((key) => key % 3 !== 0);
    const keptVectors = new Float32Array(keptRows.length * dim);
    keptRows.forEach((key, i) => keptVectors.set(vectorOf(key), i * dim));
    const queries = vectors.subarray(0, 30 * dim); // includes removed rows as queries
    const hits = index.search(queries, 10);
    for (const h of hits) for (const hit of h) expect(hit.key % 3).not.toBe(0);
    expectSameTopK(hits, bruteForceSearch(keptVectors, dim, keptRows, queries, 10), vectorOf, queries, dim);

    index.add([0], vectorOf(0));
    expect(index.size).toBe(count - removedKeys.length + 1);
    expect(index.search(vectorOf(0), 1)[0]![0]!.key).toBe(0);
    index.dispose();
  });

  it('equals brute force over several row blocks, through removes that move rows across blocks, and a reload', () => {
    // 384 dims: a block holds 2,730 rows (4 MB), so 7,000 rows span three blocks.
    const dim = 384;
    const count = 7_000;
    const { index, keys, vectorOf } = filledIndex(dim, count, 61, 1);
    // Every fifth key, and a run at the end of the last block, so removals pull rows from other blocks.
    const removed = keys.filter((key) => key % 5 === 0 || key > 6_900);
    expect(index.remove(removed)).toBe(removed.length);
    const readded = removed.filter((key) => key % 10 === 0).slice(0, 200);
    index.add(readded, packRows(readded.map(vectorOf), dim));
    const kept = keys.filter((key) => !removed.includes(key) || readded.includes(key));
    expect(index.size).toBe(kept.length);

    const queries = randomUnitVectors(12, dim, 62);
    const reference = bruteForceSearch(packRows(kept.map(vectorOf), dim), dim, kept, queries, 15);
    expectSameTopK(index.search(queries, 15), reference, vectorOf, queries, dim);
    const restored = wasm.loadIndex(index.serialize());
    expect(restored.search(queries, 15)).toEqual(index.search(queries, 15));
    index.dispose();
    restored.dispose();
  });
});

/**
 * `rounded` (rows an i8 record rebuilds exactly) under `keys` 1…n in two indexes: one keeping i8
 * rows, and its twin widened to f32 rows by `widener`, a vector no i8 record rebuilds (added
 * first under n + 1, then removed).
 */
function i8AndWideIndexes(dim: number, keys: number[], rounded: Float32Array, widener: Float32Array): { narrow: UsearchIndex; wide: UsearchIndex } {
  const narrow = wasm.createIndex({ dim });
  narrow.add(keys, rounded);
  expect(narrow.bytesPerVector).toBe(dim + 4);
  return { narrow, wide: widenedTwin(dim, keys, rounded, widener, 'f32') };
}

/** `rounded` under `keys` in an index whose rows `widener` (added first under n + 1, then removed) made `form`. */
function widenedTwin(dim: number, keys: number[], rounded: Float32Array, widener: Float32Array, form: 'i8' | 'f32'): UsearchIndex {
  const twin = wasm.createIndex({ dim });
  twin.add([keys.length + 1], widener);
  expect(twin.rowForm).toBe(form);
  twin.add(keys, rounded);
  twin.remove([keys.length + 1]);
  return twin;
}

describe('flat usearch WASM index over store-rounded vectors', () => {
  it('keeps i8 rows that score exactly as their floats, and widens every row to f32 at the first vector without an exact i8 encoding', () => {
    // 12,000 i8 rows of 388 bytes span two 4 MB blocks; as f32 rows, three.
    const dim = 384;
    const count = 12_000;
    const raw = randomUnitVectors(count, dim, 71);
    const rounded = packRows(
      keysFrom(0, count).map((row) => roundVector(rowOf(raw, dim, row), 'i8')),
      dim,
    );
    // Exact ties at the cut: 100 copies of row 50.
    for (let row = 100; row < 200; row++) rounded.set(rowOf(rounded, dim, 50), row * dim);
    const keys = keysFrom(1, count);
    const { narrow, wide } = i8AndWideIndexes(dim, keys, rounded, rowOf(raw, dim, 0));

    const removed = keys.filter((key) => key % 7 === 0);
    narrow.remove(removed);
    wide.remove(removed);
    const random = randomUnitVectors(8, dim, 72);
    const queries = packRows([...keysFrom(0, 8).map((q) => rowOf(random, dim, q)), rowOf(rounded, dim, 50)], dim);
    const hits = narrow.search(queries, 20);
    // Bit for bit: the same keys in the same order with the same f32 scores.
    expect(hits).toEqual(wide.search(queries, 20));
    const kept = keys.filter((key) => key % 7 !== 0);
    const vectorOf = (key: number) => rowOf(rounded, dim, key - 1);
    expectSameTopK(hits, bruteForceSearch(packRows(kept.map(vectorOf), dim), dim, kept, queries, 20), vectorOf, queries, dim);

    // Serialized as floats and encoded again on load: still i8, same answers.
    const restored = wasm.loadIndex(narrow.serialize());
    expect(restored.bytesPerVector).toBe(dim + 4);
    expect(restored.search(queries, 20)).toEqual(hits);

    // −0, which no i8 record decodes to, widens the rows without changing an answer.
    const negativeZero = new Float32Array(rowOf(rounded, dim, 1));
    negativeZero[3] = -0;
    narrow.add([count + 2], negativeZero);
    expect(narrow.bytesPerVector).toBe(dim * 4);
    narrow.remove([count + 2]);
    expect(narrow.search(queries, 20)).toEqual(hits);
    for (const index of [narrow, wide, restored]) index.dispose();
  });

  it('scores i8 rows four at a time and one at a time alike, whatever the dimensions and however many rows a block holds', () => {
    // 16-multiple dimensions go four rows at a time, the last one to three of each block one at a
    // time; 20 and 40 dimensions, every row one at a time. Each i8 index answers as its f32 twin.
    for (const [dim, count] of [[16, 4_003], [20, 1_001], [40, 1_002], [384, 2_733]] as const) {
      const raw = randomUnitVectors(count, dim, 80 + dim);
      const rounded = packRows(keysFrom(0, count).map((row) => roundVector(rowOf(raw, dim, row), 'i8')), dim);
      const keys = keysFrom(1, count);
      const { narrow, wide } = i8AndWideIndexes(dim, keys, rounded, rowOf(raw, dim, 0));
      const queries = randomUnitVectors(5, dim, 90 + dim);
      const hits = narrow.search(queries, 12);
      expect(hits).toEqual(wide.search(queries, 12));
      const vectorOf = (key: number) => rowOf(rounded, dim, key - 1);
      expectSameTopK(hits, bruteForceSearch(rounded, dim, keys, queries, 12), vectorOf, queries, dim);
      narrow.dispose();
      wide.dispose();
    }
  });

  it('keeps i4 rows that score exactly as their i8 and f32 twins, eight at a time and one at a time, through removes, widening and a reload', () => {
    // 32-multiple dimensions go eight rows at a time, the last one to seven of each block one at a
    // time; 16, 20 and 40 dimensions, every row one at a time. 22,003 i4 rows of 384 dimensions
    // (196 bytes) span two 4 MB blocks.
    for (const [dim, count] of [[16, 1_003], [20, 1_001], [40, 1_002], [64, 3_007], [384, 22_003]] as const) {
      const raw = randomUnitVectors(count, dim, 180 + dim);
      const rounded = packRows(keysFrom(0, count).map((row) => roundVector(rowOf(raw, dim, row), 'i4')), dim);
      // Exact ties at the cut: 40 copies of row 50.
      for (let row = 100; row < 140; row++) rounded.set(rowOf(rounded, dim, 50), row * dim);
      const keys = keysFrom(1, count);
      const narrow = wasm.createIndex({ dim });
      narrow.add(keys, rounded);
      expect(narrow.rowForm).toBe('i4');
      expect(narrow.bytesPerVector).toBe(4 + Math.ceil(dim / 2));
      const twins = [widenedTwin(dim, keys, rounded, roundVector(rowOf(raw, dim, 0), 'i8'), 'i8'), widenedTwin(dim, keys, rounded, rowOf(raw, dim, 0), 'f32')];
      const removed = keys.filter((key) => key % 7 === 0);
      for (const index of [narrow, ...twins]) index.remove(removed);
      const queries = packRows([...keysFrom(0, 5).map((q) => rowOf(randomUnitVectors(5, dim, 190 + dim), dim, q)), rowOf(rounded, dim, 50)], dim);
      const hits = narrow.search(queries, 12);
      for (const twin of twins) expect(hits).toEqual(twin.search(queries, 12));
      const kept = keys.filter((key) => key % 7 !== 0);
      const vectorOf = (key: number) => rowOf(rounded, dim, key - 1);
      expectSameTopK(hits, bruteForceSearch(packRows(kept.map(vectorOf), dim), dim, kept, queries, 12), vectorOf, queries, dim);
      // Serialized as floats and encoded again on load: still i4, same answers.
      const restored = wasm.loadIndex(narrow.serialize());
      expect(restored.rowForm).toBe('i4');
      expect(restored.search(queries, 12)).toEqual(hits);
      // A vector with no i4 record widens the rows to i8 without changing an answer.
      narrow.add([count + 2], roundVector(rowOf(raw, dim, 1), 'i8'));
      expect(narrow.rowForm).toBe('i8');
      narrow.remove([count + 2]);
      expect(narrow.search(queries, 12)).toEqual(hits);
      for (const index of [narrow, restored, ...twins]) index.dispose();
    }
  });

  it('takes i8 records as they are, answering as their decoded floats do, in every kind of index', () => {
    const dim = 48;
    const count = 3_000;
    const raw = randomUnitVectors(count, dim, 74);
    const records = new Uint8Array(count * (dim + 4));
    const floats = new Float32Array(count * dim);
    for (let row = 0; row < count; row++) {
      const record = encodeVector(rowOf(raw, dim, row), 'i8');
      records.set(record, row * (dim + 4));
      floats.set(decodeVector(record, dim), row * dim);
    }
    const keys = keysFrom(1, count);
    const queries = randomUnitVectors(6, dim, 75);
    for (const kind of ['flat', 'hnsw'] as const) {
      const fromRecords = wasm.createIndex({ dim, kind });
      const fromFloats = wasm.createIndex({ dim, kind });
      fromRecords.addRecords(keys, records);
      fromFloats.add(keys, floats);
      expect(fromRecords.search(queries, 10)).toEqual(fromFloats.search(queries, 10));
      fromRecords.dispose();
      fromFloats.dispose();
    }
    // An index already widened to f32 decodes them.
    const wide = wasm.createIndex({ dim });
    wide.add([count + 1], rowOf(raw, dim, 0));
    wide.addRecords(keys, records);
    expect(wide.bytesPerVector).toBe(dim * 4);
    const narrow = wasm.createIndex({ dim });
    narrow.addRecords(keys, records);
    expect(narrow.bytesPerVector).toBe(dim + 4);
    wide.remove([count + 1]);
    expect(wide.search(queries, 10)).toEqual(narrow.search(queries, 10));
    // A record whose scale makes its values infinite, a short buffer, or a key it holds: nothing added.
    const bad = records.slice(0, 2 * (dim + 4));
    new DataView(bad.buffer).setFloat32(dim + 4, Number.POSITIVE_INFINITY, true);
    expectPrismError(() => narrow.addRecords([count + 2, count + 3], bad), 'NON_FINITE_VECTOR');
    expectPrismError(() => narrow.addRecords([count + 2], records.subarray(0, dim)), 'DIMENSION_MISMATCH');
    expectPrismError(() => narrow.addRecords([count + 2, 1], records.subarray(0, 2 * (dim + 4))), 'INVALID_INPUT');
    expect(narrow.size).toBe(count);
    wide.dispose();
    narrow.dispose();
  });

  it('takes i4 records as they are, answering as their decoded floats do, in every kind of index and dimension', () => {
    for (const dim of [48, 33]) {
      const count = 2_000;
      const perRecord = 4 + Math.ceil(dim / 2);
      const raw = randomUnitVectors(count, dim, 76);
      const records = new Uint8Array(count * perRecord);
      const floats = new Float32Array(count * dim);
      for (let row = 0; row < count; row++) {
        const record = encodeVector(rowOf(raw, dim, row), 'i4');
        records.set(record, row * perRecord);
        floats.set(decodeStoredVector('v', record, dim), row * dim);
      }
      const keys = keysFrom(1, count);
      const queries = randomUnitVectors(6, dim, 77);
      for (const kind of ['flat', 'hnsw'] as const) {
        const fromRecords = wasm.createIndex({ dim, kind });
        const fromFloats = wasm.createIndex({ dim, kind });
        fromRecords.addRecords(keys, records, 'i4');
        fromFloats.add(keys, floats);
        expect(fromRecords.search(queries, 10)).toEqual(fromFloats.search(queries, 10));
        if (kind === 'flat') {
          expect(fromRecords.bytesPerVector).toBe(perRecord);
          for (const key of [1, 777, count]) expect(bits(fromRecords.rows?.vector(key))).toEqual(bits(floats.subarray((key - 1) * dim, key * dim)));
        }
        fromRecords.dispose();
        fromFloats.dispose();
      }
      // An index already widened to f32 decodes them.
      const wide = wasm.createIndex({ dim });
      wide.add([count + 1], rowOf(raw, dim, 0));
      wide.addRecords(keys, records, 'i4');
      expect(wide.bytesPerVector).toBe(dim * 4);
      wide.remove([count + 1]);
      const narrow = wasm.createIndex({ dim });
      narrow.add(keys, floats);
      expect(wide.search(queries, 10)).toEqual(narrow.search(queries, 10));
      // A half byte of 15 names no level (the last record's): nothing added; a short buffer neither.
      const bad = records.slice();
      bad[(count - 1) * perRecord + 4] = 0xf0 | (bad[(count - 1) * perRecord + 4] as number);
      const before = narrow.size;
      const fresh = wasm.createIndex({ dim });
      expectPrismError(() => fresh.addRecords(keys, bad, 'i4'), 'INVALID_INPUT');
      expect(fresh.size).toBe(0);
      expectPrismError(() => fresh.addRecords([1], records.subarray(0, dim + 4), 'i4'), 'DIMENSION_MISMATCH');
      expect(narrow.size).toBe(before);
      for (const index of [wide, narrow, fresh]) index.dispose();
    }
  });

  it('keeps the exact top k where the first pass over i8 rows estimates the order wrong', () => {
    // The first pass scores i8 rows against the query rounded to 16-bit steps (max |q| / 32,767).
    // Components just under half a step round to 0 and just over it to a whole step, so row
    // `under` (20 such components under) scores higher than row `over` (10 over) but is estimated
    // lower; only the margin keeps it in.
    const dim = 64;
    const step = 1 / 32767;
    const query = new Float32Array(dim);
    query[0] = 1;
    for (let d = 1; d <= 20; d++) query[d] = 0.49 * step;
    for (let d = 21; d <= 30; d++) query[d] = 0.51 * step;
    const rowWith = (ones: number[]): Float32Array => {
      const record = new Uint8Array(4 + dim);
      new DataView(record.buffer).setFloat32(0, 1 / 127, true);
      record[4 + 40] = 127; // the scale's component, where the query is 0
      for (const d of [0, ...ones]) record[4 + d] = 1;
      return decodeVector(record, dim);
    };
    const under = rowWith(keysFrom(1, 20));
    const over = rowWith(keysFrom(21, 10));
    expect(dot(under, query)).toBeGreaterThan(dot(over, query));
    const narrow = wasm.createIndex({ dim });
    narrow.add([1, 2], packRows([over, under], dim));
    expect(narrow.bytesPerVector).toBe(dim + 4);
    expect(narrow.search(query, 1)[0]!.map((hit) => hit.key)).toEqual([2]);
    const wide = wasm.createIndex({ dim });
    wide.add([9], randomUnitVectors(1, dim, 73));
    wide.add([1, 2], packRows([over, under], dim));
    wide.remove([9]);
    expect(narrow.search(query, 2)).toEqual(wide.search(query, 2));
    narrow.dispose();
    wide.dispose();
  });
});

function packRows(rows: Float32Array[], dim: number): Float32Array {
  const packed = new Float32Array(rows.length * dim);
  rows.forEach((row, i) => packed.set(row, i * dim));
  return packed;
}

/** How many signs of `a` and `b` differ: the prefilter's sketch distance (a bit a dimension, set where the component is positive). */
function signDistance(a: Float32Array, b: Float32Array): number {
  let differ = 0;
  for (let d = 0; d < a.length; d++) if (a[d]! > 0 !== b[d]! > 0) differ++;
  return differ;
}

/**
 * What a prefiltered search for `k` hits returns when the index's rows hold `order` in that order:
 * the `candidates` keys whose vectors' signs are nearest the query's (ties to the earlier row),
 * ranked by inner product as an exact search ranks them.
 */
function prefilteredReference(order: number[], vectorOf: (key: number) => Float32Array, query: Float32Array, k: number, candidates: number): SearchHit[] {
  const chosen = order
    .map((key, row) => ({ key, row, distance: signDistance(vectorOf(key), query) }))
    .sort((a, b) => a.distance - b.distance || a.row - b.row)
    .slice(0, candidates)
    .map(({ key }) => key);
  return bruteForceSearch(packRows(chosen.map(vectorOf), query.length), query.length, chosen, query, k)[0]!;
}

describe('the flat index\'s sketch prefilter', () => {
  it.each(['f32', 'i8', 'i4'] as const)('searches exactly up to exactUpTo rows, and past it scores only the rows whose signs are nearest the query\'s (%s rows)', (form) => {
    const dim = 384;
    const raw = randomUnitVectors(6_000, dim, 81);
    const rows = keysFrom(0, 6_000).map((row) => roundVector(rowOf(raw, dim, row), form));
    const vectorOf = (key: number) => rows[key - 1]!;
    const keys = keysFrom(1, 6_000);
    const index = wasm.createIndex({ dim, prefilter: { exactUpTo: 5_000, perHit: 2, least: 50 } });
    index.add(keys.slice(0, 5_000), packRows(keys.slice(0, 5_000).map(vectorOf), dim));
    expect(index.rowForm).toBe(form);
    const queries = randomUnitVectors(8, dim, 82);
    const exactly = (held: number[], k: number) => bruteForceSearch(packRows(held.map(vectorOf), dim), dim, held, queries, k);
    const keysOf = (found: SearchHit[][]) => found.map((hits) => hits.map((hit) => hit.key));
    expectSameTopK(index.search(queries, 10), exactly(keys.slice(0, 5_000), 10), vectorOf, queries, dim);

    // Past exactUpTo: every row, those added before too, is sketched, and max(50, 2 × k) are scored.
    index.add(keys.slice(5_000), packRows(keys.slice(5_000).map(vectorOf), dim));
    for (const k of [10, 40]) {
      const found = index.search(queries, k);
      const expected = Array.from({ length: queries.length / dim }, (_, q) => prefilteredReference(keys, vectorOf, rowOf(queries, dim, q), k, Math.max(50, 2 * k)));
      expectSameTopK(found, expected, vectorOf, queries, dim);
      expect(keysOf(found)).toEqual(keysOf(expected));
      // So few candidates miss some of the exact hits of random vectors: the prefilter is in effect.
      expect(keysOf(found)).not.toEqual(keysOf(exactly(keys, k)));
    }
    index.dispose();
  });

  it('keeps each row\'s sketch with it through removes that move rows, and never returns a removed key', () => {
    const dim = 384;
    const raw = randomUnitVectors(4_000, dim, 83);
    const all = keysFrom(1, 4_000);
    const vector = (key: number) => rowOf(raw, dim, key - 1);
    const index = wasm.createIndex({ dim, prefilter: { exactUpTo: 1_000, perHit: 1, least: 0 } });
    index.add(all, raw);
    const removed = all.filter((key) => key % 3 === 0 || key > 3_900);
    expect(index.remove(removed)).toBe(removed.length);
    const readded = removed.filter((key) => key % 2 === 0).slice(0, 300);
    index.add(readded, packRows(readded.map(vector), dim));
    const held = all.filter((key) => !removed.includes(key) || readded.includes(key));
    const queries = randomUnitVectors(10, dim, 84);
    index.search(queries, 20).forEach((hits, q) => {
      const query = rowOf(queries, dim, q);
      // With one candidate a hit, the hits are the 20 held rows nearest by sign, whatever their order.
      const nearest = held.map((key) => signDistance(vector(key), query)).sort((a, b) => a - b);
      expect(hits).toHaveLength(20);
      for (const hit of hits) {
        expect(held).toContain(hit.key);
        expect(signDistance(vector(hit.key), query)).toBeLessThanOrEqual(nearest[19]!);
        expect(Math.abs(hit.score - dot(vector(hit.key), query))).toBeLessThanOrEqual(SCORE_TOLERANCE);
      }
    });
    index.dispose();
  });

  // Sketches of a whole number of 128-bit lanes up to 8 are compared eight rows at a time, others
  // (and a block's last rows) one at a time: every width and a row count that is no multiple of 8.
  it.each([64, 100, 128, 192, 256, 320, 1_024, 1_100])('ranks candidates by the signs of %i dimensions as the reference does', (dim) => {
    const count = 803;
    const vectors = randomUnitVectors(count, dim, 87 + dim);
    const keys = keysFrom(0, count);
    const index = wasm.createIndex({ dim, prefilter: { exactUpTo: 0, perHit: 0, least: 97 } });
    index.add(keys, vectors);
    const queries = randomUnitVectors(3, dim, 88 + dim);
    index.search(queries, 7).forEach((hits, q) => {
      const expected = prefilteredReference(keys, (key) => rowOf(vectors, dim, key), rowOf(queries, dim, q), 7, 97);
      expect(hits.map((hit) => hit.key)).toEqual(expected.map((hit) => hit.key));
    });
    index.dispose();
  });

  it('scores at least as many rows as hits wanted, whatever the settings', () => {
    const dim = 64;
    const vectors = randomUnitVectors(500, dim, 85);
    const keys = keysFrom(0, 500);
    const index = wasm.createIndex({ dim, prefilter: { exactUpTo: 0, perHit: 0, least: 0 } });
    index.add(keys, vectors);
    const query = randomUnitVectors(1, dim, 86);
    const hits = index.search(query, 25)[0]!;
    expect(hits).toHaveLength(25);
    expect(hits.map((hit) => hit.key)).toEqual(prefilteredReference(keys, (key) => rowOf(vectors, dim, key), query, 25, 25).map((hit) => hit.key));
    index.dispose();
  });

  it('rejects a prefilter that is not counts of rows', () => {
    for (const prefilter of [{ perHit: -1 }, { least: 1.5 }, { exactUpTo: Number.NaN }]) {
      expect(() => wasm.createIndex({ dim: 8, prefilter })).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    }
  });
});

describe('reading vectors back by key (VectorIndex.rows)', () => {
  it.each(['i4', 'i8'] as const)('gives each vector bit for bit as added, and its inner product as the floats give it, while %s rows move and after they widen', (form) => {
    const dim = 384;
    const count = 12_000;
    const raw = randomUnitVectors(count, dim, 73);
    const rounded = keysFrom(0, count).map((row) => roundVector(rowOf(raw, dim, row), form));
    const query = randomUnitVectors(1, dim, 74);
    const flat = wasm.createIndex({ dim });
    const keys = keysFrom(1, count);
    flat.add(keys, packRows(rounded, dim));
    expect(flat.rowForm).toBe(form);
    const rows = flat.rows;
    if (!rows) throw new Error('a flat index reads its rows back');
    const check = (key: number) => {
      const want = rounded[key - 1] as Float32Array;
      expect(bits(rows.vector(key))).toEqual(bits(want));
      expect(rows.dot(key, query)).toBe(dot(want, query));
      const other = (key * 31) % count + 1;
      if (other % 5 !== 0) expect(rows.pairDot(key, other)).toBe(dot(want, rounded[other - 1] as Float32Array));
    };
    // Removes fill each gap with the last row, across blocks: a key is still found where it moved.
    flat.remove(keys.filter((key) => key % 5 === 0));
    for (const key of keys) {
      if (key % 5 === 0) {
        expect(rows.vector(key)).toBeUndefined();
        expect(rows.dot(key, query)).toBeUndefined();
        expect(rows.pairDot(key, 1)).toBeUndefined();
      } else if (key % 13 === 1) check(key);
    }
    // A vector with no exact i4 record widens every row to i8, one with no i8 record to f32: reads stay exact.
    if (form === 'i4') {
      flat.add([count + 2], roundVector(rowOf(raw, dim, 1), 'i8'));
      expect(flat.rowForm).toBe('i8');
      for (const key of keys) if (key % 5 !== 0 && key % 13 === 1) check(key);
      flat.remove([count + 2]);
    }
    flat.add([count + 1], rowOf(raw, dim, 0));
    expect(flat.bytesPerVector).toBe(dim * 4);
    for (const key of keys) if (key % 5 !== 0 && key % 13 === 1) check(key);
    expect(bits(rows.vector(count + 1))).toEqual(bits(rowOf(raw, dim, 0)));
    expect(rows.vector(-1)).toBeUndefined();
    expect(rows.vector(0.5)).toBeUndefined();
    flat.dispose();
    expect(() => rows.vector(2)).toThrow(PrismError);
    const hnsw = wasm.createIndex({ dim, kind: 'hnsw' });
    expect(hnsw.rows).toBeUndefined();
    hnsw.dispose();
  });
});

describe('HNSW usearch WASM index', () => {
  it('reaches high recall against brute force', () => {
    const dim = 32;
    const count = 4_000;
    const vectors = randomUnitVectors(count, dim, 31);
    const keys = keysFrom(0, count);
    const queries = randomUnitVectors(100, dim, 32);
    const index = wasm.createIndex({ dim, kind: 'hnsw', expansionSearch: 128 });
    index.add(keys, vectors);
    expect(index.kind).toBe('hnsw');
    const reference = bruteForceSearch(vectors, dim, keys, queries, 10);
    const hits = index.search(queries, 10);
    let found = 0;
    reference.forEach((expected, q) => {
      const got = new Set(hits[q]!.map((h) => h.key));
      found += expected.filter((hit) => got.has(hit.key)).length;
      for (const hit of hits[q]!) expect(Math.abs(hit.score - dot(rowOf(vectors, dim, hit.key), rowOf(queries, dim, q)))).toBeLessThan(1e-5);
    });
    expect(found / 1_000).toBeGreaterThanOrEqual(0.9);
    index.dispose();
  });
});

describe('serialize / load', () => {
  it.each(['flat', 'hnsw'] as const)('round-trips a %s index with removals', (kind) => {
    const dim = 20;
    const vectors = randomUnitVectors(1_200, dim, 41);
    const keys = keysFrom(500, 1_200);
    const index = wasm.createIndex({ dim, kind });
    index.add(keys, vectors);
    index.remove(keys.filter((key) => key % 4 === 0));
    const queries = randomUnitVectors(25, dim, 42);

    const restored = wasm.loadIndex(index.serialize());
    expect(restored.kind).toBe(kind);
    expect(restored.dim).toBe(dim);
    expect(restored.size).toBe(index.size);
    expect(restored.search(queries, 10)).toEqual(index.search(queries, 10));
    expect(restored.serialize()).toEqual(index.serialize());
    // The restored index stays writable: removed keys are free again, present keys are not.
    restored.add([500], vectors.subarray(0, dim));
    expectPrismError(() => restored.add([501], vectors.subarray(dim, 2 * dim)), 'INVALID_INPUT');
    index.dispose();
    restored.dispose();
  });

  it('loads into a separately instantiated module', async () => {
    const { index } = filledIndex(12, 300, 43);
    const other = await loadUsearchWasm(wasmBytes);
    const restored = other.loadIndex(index.serialize());
    const queries = randomUnitVectors(5, 12, 44);
    expect(restored.search(queries, 7)).toEqual(index.search(queries, 7));
    index.dispose();
    restored.dispose();
  });

  it('rejects damaged bytes with CORRUPT_CHECKPOINT', () => {
    const { index } = filledIndex(16, 200, 45);
    const bytes = index.serialize();
    const flipped = bytes.slice();
    flipped[bytes.length >> 1]! ^= 0x10;
    const badMagic = bytes.slice();
    badMagic[0] = 0;
    // Version 1 was the flat kind's usearch graph stream; its bytes are no longer read.
    const versionOne = bytes.slice();
    new DataView(versionOne.buffer).setUint32(8, 1, true);
    const damaged = [
      new Uint8Array(0),
      bytes.subarray(0, 31),
      bytes.subarray(0, bytes.length - 1),
      flipped,
      badMagic,
      versionOne,
      new Uint8Array([...bytes, 0]),
      randomBytes(bytes.length),
    ];
    for (const candidate of damaged) expectPrismError(() => wasm.loadIndex(candidate), 'CORRUPT_CHECKPOINT');
    expect(index.size).toBe(200);
    index.dispose();
  });
});

function randomBytes(length: number): Uint8Array {
  const floats = randomUnitVectors(1, Math.ceil(length / 4), 46);
  return new Uint8Array(floats.buffer, 0, length);
}

describe('typed errors', () => {
  let index: UsearchIndex;
  const dim = 8;

  beforeAll(() => {
    index = wasm.createIndex({ dim });
    index.add([1, 2, 3], randomUnitVectors(3, dim, 51));
  });
  afterAll(() => index.dispose());

  it('rejects wrong dimensions', () => {
    expectPrismError(() => index.add([4], new Float32Array(dim + 1)), 'DIMENSION_MISMATCH');
    expectPrismError(() => index.add([4, 5], new Float32Array(dim)), 'DIMENSION_MISMATCH');
    expectPrismError(() => index.search(new Float32Array(dim - 1), 1), 'DIMENSION_MISMATCH');
    expectPrismError(() => bruteForceSearch(new Float32Array(dim), dim, [1], new Float32Array(3), 1), 'DIMENSION_MISMATCH');
  });

  it('rejects NaN and Infinity', () => {
    const withNaN = randomUnitVectors(2, dim, 52);
    withNaN[dim + 3] = Number.NaN;
    expectPrismError(() => index.add([4, 5], withNaN), 'NON_FINITE_VECTOR');
    const query = randomUnitVectors(1, dim, 53);
    query[0] = Number.POSITIVE_INFINITY;
    expectPrismError(() => index.search(query, 1), 'NON_FINITE_VECTOR');
    expectPrismError(() => bruteForceSearch(withNaN, dim, [4, 5], randomUnitVectors(1, dim, 54), 1), 'NON_FINITE_VECTOR');
  });

  it('rejects bad k and bad keys', () => {
    const query = randomUnitVectors(1, dim, 55);
    for (const k of [0, -1, 1.5, Number.NaN]) expectPrismError(() => index.search(query, k), 'INVALID_INPUT');
    for (const key of [-1, 0.5, 2 ** 53, Number.NaN]) {
      expectPrismError(() => index.add([key], randomUnitVectors(1, dim, 56)), 'INVALID_INPUT');
    }
    expectPrismError(() => index.add([7, 7], randomUnitVectors(2, dim, 57)), 'INVALID_INPUT');
    // A repeat after keys that ascend (each compared with the one before), and after the order broke (looked up among all before).
    for (const keys of [[8, 9, 10, 9], [12, 11, 13, 11], [20, 21, 19, 22, 21]]) {
      expect(() => index.add(keys, randomUnitVectors(keys.length, dim, 58))).toThrow(/appears twice in one batch/);
    }
    expectPrismError(() => wasm.createIndex({ dim: 0 }), 'INVALID_INPUT');
    expect(index.size).toBe(3);
  });

  it('adds all or nothing when a key already exists, across internal chunks', () => {
    const wide = 64;
    const count = 20_000; // more rows than one copy chunk (2^20 floats / 64 = 16384)
    const big = wasm.createIndex({ dim: wide });
    big.add([count - 1], randomUnitVectors(1, wide, 58));
    expectPrismError(() => big.add(keysFrom(0, count), randomUnitVectors(count, wide, 59)), 'INVALID_INPUT');
    expect(big.size).toBe(1);
    expect(big.search(randomUnitVectors(1, wide, 60), 5)[0]!.map((h) => h.key)).toEqual([count - 1]);
    big.dispose();
  });

  it('rejects use after dispose', () => {
    const disposed = wasm.createIndex({ dim });
    disposed.dispose();
    disposed.dispose();
    expectPrismError(() => disposed.size, 'INVALID_INPUT');
    expectPrismError(() => disposed.search(new Float32Array(dim), 1), 'INVALID_INPUT');
  });
});

describe('reserving room for a batch (VectorIndex.reserve)', () => {
  /** `count` valid i4 records of 384 dimensions (a positive scale, then half bytes 0…14), sixteen that differ, repeated. */
  function i4Records(count: number): Uint8Array {
    const bytes = recordBytes(384, 'i4');
    const records = new Uint8Array(count * bytes);
    const view = new DataView(records.buffer);
    for (let row = 0; row < Math.min(16, count); row++) {
      view.setFloat32(row * bytes, 1 / 127, true);
      for (let i = 4; i < bytes; i++) records[row * bytes + i] = ((row * 31 + i * 7) % 15) | (((row + i) % 13) << 4);
    }
    for (let filled = 16; filled < count; filled *= 2) records.copyWithin(filled * bytes, 0, Math.min(filled, count - filled) * bytes);
    return records;
  }

  /** How many times `run` grows a WASM memory. */
  function growthsOf(run: () => void): number {
    const grow = WebAssembly.Memory.prototype.grow;
    let growths = 0;
    WebAssembly.Memory.prototype.grow = function (this: WebAssembly.Memory, delta: number) {
      growths++;
      return grow.call(this, delta);
    };
    try {
      run();
    } finally {
      WebAssembly.Memory.prototype.grow = grow;
    }
    return growths;
  }

  it('takes the room for a large batch in one growth of WASM memory, which its adds then fill without another', async () => {
    // A module of its own, whose memory has grown for nothing else. Added a block at a time,
    // these rows, keys, lookup and sketches grew it by a fifth at a time, a dozen times over.
    const fresh = await loadUsearchWasm(wasmBytes);
    const count = 150_000;
    const index = fresh.createIndex({ dim: 384 });
    expect(growthsOf(() => index.reserve(count))).toBe(1);
    const records = i4Records(count);
    const perBatch = 10_000;
    const growths = growthsOf(() => {
      for (let start = 0; start < count; start += perBatch) {
        index.addRecords(keysFrom(start, perBatch), records.subarray(start * recordBytes(384, 'i4'), (start + perBatch) * recordBytes(384, 'i4')), 'i4');
      }
    });
    expect(growths).toBe(0);
    expect(index.size).toBe(count);
    // Past the sketch prefilter's threshold, whose sketches the room held too: a row finds itself.
    const first = decodeVector(records.subarray(0, recordBytes(384, 'i4')), 384);
    expect(index.search(first, 1)[0]![0]!.score).toBeCloseTo(dot(first, first), 4);
    index.dispose();
  });

  it('rejects a count that is not one, and a disposed index', () => {
    const index = wasm.createIndex({ dim: 8 });
    for (const count of [-1, 1.5, Number.NaN, 2 ** 32]) expectPrismError(() => index.reserve(count), 'INVALID_INPUT');
    index.reserve(0);
    index.dispose();
    expectPrismError(() => index.reserve(10), 'INVALID_INPUT');
  });

  it('is asked once for every vector of a space before IndexSet adds them batch by batch', () => {
    const calls: string[] = [];
    const dim = 384;
    const fake: VectorIndex = {
      dim,
      get size() {
        return 0;
      },
      add: (keys) => void calls.push(`add ${keys.length}`),
      addRecords: (keys) => void calls.push(`addRecords ${keys.length}`),
      reserve: (count) => void calls.push(`reserve ${count}`),
      remove: () => 0,
      search: () => [],
      serialize: () => new Uint8Array(),
      dispose: () => undefined,
    };
    const count = 25_000;
    const keys = keysFrom(1, count);
    const set = new IndexSet(dim, () => fake);
    set.add('facetPoint', keys, keys.map((key) => `fp:${key}`), { has: () => true, get: () => undefined, copyRecords: () => true }, keys);
    expect(calls[0]).toBe(`reserve ${count}`);
    expect(calls.length).toBeGreaterThan(2);
    expect(calls.slice(1).every((call) => call.startsWith('addRecords '))).toBe(true);
  });
});

describe('loadUsearchWasm sources', () => {
  let server: Server;
  let origin: string;

  beforeAll(async () => {
    server = createServer((request, response) => {
      if (request.url === '/usearch.wasm') {
        response.writeHead(200, { 'content-type': 'application/wasm' });
        response.end(wasmBytes);
      } else {
        response.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  async function expectWorkingRuntime(runtime: UsearchWasm): Promise<void> {
    const index = runtime.createIndex({ dim: 3 });
    index.add([9, 8], new Float32Array([1, 0, 0, 0, 1, 0]));
    expect(index.search(new Float32Array([0, 1, 0]), 1)[0]![0]!.key).toBe(8);
    index.dispose();
  }

  it('accepts a precompiled WebAssembly.Module (as workerd imports it)', async () => {
    await expectWorkingRuntime(await loadUsearchWasm(await WebAssembly.compile(new Uint8Array(wasmBytes))));
  });

  it('accepts an ArrayBuffer', async () => {
    await expectWorkingRuntime(await loadUsearchWasm(new Uint8Array(wasmBytes).buffer));
  });

  it('fetches a URL', async () => {
    await expectWorkingRuntime(await loadUsearchWasm(new URL('/usearch.wasm', origin)));
    await expectWorkingRuntime(await loadUsearchWasm(`${origin}/usearch.wasm`));
  });

  it('reports WASM_LOAD_FAILED for a missing URL or bytes that are not WASM', async () => {
    await expectPrismRejection(loadUsearchWasm(`${origin}/missing.wasm`), 'WASM_LOAD_FAILED');
    await expectPrismRejection(loadUsearchWasm(new Uint8Array([0, 97, 115, 109, 9, 9])), 'WASM_LOAD_FAILED');
    await expectPrismRejection(readUsearchWasm('/nonexistent/usearch.wasm'), 'WASM_LOAD_FAILED');
  });
});
