import { describe, expect, it } from 'vitest';
import { decodeStoredVector, decodeVector, encodedBytes, encodeVector, i4RecordDot, i4RecordPairDot, isValidI4Record, roundVector, type VectorPrecision } from '../src/store/vector-codec.ts';
import { mulberry32 } from '../src/eval/stats.ts';
import { VectorTable, vectorDot } from '../src/graph/vector-table.ts';
import { dot as exactDot } from '../src/util/vectors.ts';
import { checkMemoryStructure } from '../src/store/validate-snapshot.ts';
import { PrismError } from '../src/errors.ts';
import { flatIndex } from '../src/vector/flat-index.ts';
import { IndexSet, type IndexVectors } from '../src/vector/index-set.ts';
import type { VectorIndex } from '../src/vector/types.ts';
import { loadUsearchWasm } from '../src/vector/usearch-wasm.ts';
import { readUsearchWasm } from '../src/vector/wasm-bytes.node.ts';
import { packRows } from '../src/util/vectors.ts';
import { joinGroupValues, slicedTexts, splitGroupTexts, splitGroupValues } from '../src/store/vector-groups.ts';

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

  for (const precision of ['f32', 'f16', 'i8', 'i4'] as const satisfies readonly VectorPrecision[]) {
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

  it('i4: 196 bytes a MiniLM vector, each value one of 15 levels of its scale, no further from the vector than at the i8 scale; cosines within 0.05 of f32', () => {
    expect(encodedBytes(384, 'i4')).toBe(196);
    const levels = [0, 18, 36, 54, 73, 91, 109, 127];
    const [query, ...rest] = vectors;
    for (const vector of rest) {
      const rounded = roundVector(vector, 'i4');
      const scale = new DataView(encodeVector(vector, 'i4').buffer).getFloat32(0, true);
      const max = Math.max(...vector.map(Math.abs));
      expect(scale).toBeLessThanOrEqual(max / 127 + 1e-9);
      expect(Math.max(...rounded.map(Math.abs))).toBe(Math.fround(127 * scale));
      for (const x of rounded) expect(levels).toContain(Math.round(Math.abs(x) / scale));
      // The levels at the i8 scale itself (max / 7 apart): the chosen scale is at least as close.
      const atI8Scale = vector.map((x) => Math.sign(x) * (levels[Math.round((Math.abs(x) / max) * 7)] as number) * (max / 127));
      const error = (v: Float32Array) => v.reduce((sum, x, i) => sum + (x - (vector[i] as number)) ** 2, 0);
      expect(error(rounded)).toBeLessThanOrEqual(error(atI8Scale) + 1e-9);
      expect(Math.abs(dot(query!, rounded) - dot(query!, vector))).toBeLessThan(0.05);
    }
  });

  it('i4 takes, of the i8 scale × 1, 0.975 … 0.5, the one whose levels are nearest the vector (the larger on a tie), as scoring each scale value by value does', () => {
    const levels = [0, 18, 36, 54, 73, 91, 109, 127];
    /** The scale by its definition: every value leveled by its own division, at each of the 21 scales. */
    const definedScale = (vector: Float32Array): number => {
      const max = vector.reduce((most, x) => Math.max(most, Math.abs(x)), 0);
      const full = Math.fround(max === 0 ? 1 : max / 127);
      let best = full;
      let bestError = Infinity;
      for (let step = 0; step <= 20; step++) {
        const scale = Math.fround(full * (1 - step / 40));
        let error = 0;
        for (const x of vector) {
          const level = Math.min(7, Math.round((Math.abs(x / scale) * 7) / 127)) || 0;
          error += (Math.abs(x) - Math.fround((levels[level] as number) * scale)) ** 2;
        }
        if (error < bestError) [best, bestError] = [scale, error];
      }
      return best;
    };
    const random = mulberry32(11);
    const cases: Float32Array[] = [
      ...unitVectors(300, 384),
      // Heavy-tailed values, as MiniLM's few large dimensions.
      ...Array.from({ length: 300 }, () => Float32Array.from({ length: 384 }, () => (random() - 0.5) * (random() < 0.03 ? 8 : 1))),
      // Few distinct values (ties between values and between scales), odd dimensions, zeros and subnormals.
      ...Array.from({ length: 200 }, (_, i) => Float32Array.from({ length: 8 + (i % 41) }, () => Math.round(random() * 6 - 3) / 3)),
      new Float32Array(16),
      Float32Array.from({ length: 16 }, (_, i) => (i === 3 ? 1 : 0)),
      Float32Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? 1e-45 : -3e-45)),
      Float32Array.from({ length: 16 }, (_, i) => (i + 1) * 1e-40),
    ];
    // Values at the |x| where a level's rounding turns at each of the scales (and the f32 values
    // either side), beside a largest value of 1 that fixes the scales: where leveling by order
    // could go wrong if anything could.
    const f32Step = (x: number, up: boolean) => {
      const bits = new Uint32Array(Float32Array.of(x).buffer);
      bits[0] = (bits[0] as number) + (up ? 1 : -1);
      return new Float32Array(bits.buffer)[0] as number;
    };
    const full = Math.fround(1 / 127);
    const turns = Array.from({ length: 21 }, (_, step) => Math.fround(full * (1 - step / 40))).flatMap((scale) =>
      [1, 2, 3, 4, 5, 6, 7].flatMap((level) => {
        const turn = Math.fround((((level - 0.5) * 127) / 7) * scale);
        return [f32Step(turn, false), turn, f32Step(turn, true)];
      }),
    );
    for (let at = 0; at < turns.length; at += 200) cases.push(Float32Array.from([1, ...turns.slice(at, at + 200).map((x, i) => (i % 2 === 0 ? x : -x))]));
    // Vectors already on their levels, as a store gets them (rounded before the commit).
    cases.push(...cases.slice(0, 50).map((vector) => roundVector(vector, 'i4')));
    const readBack = (scale: number) => {
      let current = scale;
      for (let step = 0; step < 4 && Math.fround(Math.fround(127 * current) / 127) !== current; step++) current = Math.fround(Math.fround(127 * current) / 127);
      return current;
    };
    for (const vector of cases) expect(new DataView(encodeVector(vector, 'i4').buffer).getFloat32(0, true)).toBe(readBack(definedScale(vector)));
  });

  it('i4 keeps vectors under 8 dimensions as i8 (their i4 length could be f16\'s); a half byte no level is is CORRUPT_CHECKPOINT', () => {
    const small = Float32Array.from([0.5, -0.25, 0.125]);
    expect([...encodeVector(small, 'i4')]).toEqual([...encodeVector(small, 'i8')]);
    // An odd dimension: the last byte holds one value.
    const odd = roundVector(Float32Array.from([0.5, -0.25, 0.125, 0, -0.5, 0.3, -0.1, 0.05, -0.45]), 'i4');
    expect(encodeVector(odd, 'i4').byteLength).toBe(4 + 5);
    expect(decodeVector(encodeVector(odd, 'i4'), 9)).toEqual(odd);
    expect(odd[8]).not.toBe(0);
    // Its unused high half is not read: 384 dimensions' bytes read as 383 (the last value dropped).
    const full = encodeVector(vectors[0] as Float32Array, 'i4');
    full[195] = 0xe0 | (full[195]! & 0x0f);
    expect(decodeVector(full, 383)).toEqual(decodeVector(full, 384).subarray(0, 383));
    const bytes = encodeVector(vectors[0] as Float32Array, 'i4');
    bytes[100] = 0xf0 | (bytes[100]! & 0x0f);
    expect(() => decodeVector(bytes, 384)).toThrow(expect.objectContaining({ code: 'CORRUPT_CHECKPOINT' }));
  });

  it('isValidI4Record finds a half byte of 15 at any place, in a record at an aligned offset (read four bytes at a time) and at an unaligned one', () => {
    const record = encodeVector(vectors[0] as Float32Array, 'i4');
    for (const offset of [0, 4, 1, 3]) {
      const view = new Uint8Array(offset + record.length).subarray(offset);
      view.set(record);
      expect(isValidI4Record(view, 384)).toBe(true);
      for (let j = 4; j < view.length; j++) {
        for (const half of [0x0f, 0xf0]) {
          const kept = view[j] as number;
          view[j] = kept | half;
          expect(isValidI4Record(view, 384)).toBe(false);
          view[j] = kept;
        }
      }
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

describe('VectorTable: vectors by id, i8 when that is exact', () => {
  const vectors = unitVectors(50, 384);
  const bits = (v: Float32Array | undefined) => (v ? [...new Uint32Array(v.buffer, v.byteOffset, v.length)] : undefined);

  it('reads back every vector bit for bit, i8-exact ones and others alike, in insertion order', () => {
    const table = new VectorTable();
    const expected = new Map<string, Float32Array>();
    vectors.forEach((v, i) => expected.set(`v${i}`, i % 2 ? roundVector(v, 'i8') : v));
    for (const [id, v] of expected) table.set(id, v);
    expect(table.size).toBe(50);
    expect([...table.keys()]).toEqual([...expected.keys()]);
    for (const [id, v] of expected) expect(bits(table.get(id))).toEqual(bits(v));
    expect([...table].map(([id, v]) => [id, bits(v)])).toEqual([...expected].map(([id, v]) => [id, bits(v)]));
  });

  it('gives each inner product bit for bit as `dot` of the decoded vector, for i8 records and kept floats; refuses another dimension', () => {
    const table = new VectorTable();
    vectors.forEach((v, i) => table.set(`v${i}`, i % 2 ? roundVector(v, 'i8') : v));
    const queries = unitVectors(3, 384);
    for (const query of queries) for (let i = 0; i < 50; i++) expect(table.dot(`v${i}`, query)).toBe(exactDot(table.get(`v${i}`) as Float32Array, query));
    for (const query of queries) for (let i = 0; i < 50; i++) expect(vectorDot(new Map([[`v${i}`, table.get(`v${i}`) as Float32Array]]), `v${i}`, query)).toBe(table.dot(`v${i}`, query));
    expect(table.dot('absent', queries[0] as Float32Array)).toBeUndefined();
    expect(() => table.dot('v1', new Float32Array(10))).toThrow(expect.objectContaining({ code: 'DIMENSION_MISMATCH' }));
  });

  it('reads i4 records where they lie, inner products bit for bit as over their decoded floats, at odd and even dimensions', () => {
    for (const dim of [8, 9, 15, 384]) {
      const [a, b, query] = unitVectors(3, dim) as [Float32Array, Float32Array, Float32Array];
      // Each record at an odd offset of a larger buffer, as in a pool page or WASM memory.
      const place = (record: Uint8Array, at: number) => {
        const bytes = new Uint8Array(at + record.byteLength + 3).fill(0xee);
        bytes.set(record, at);
        return { bytes, view: new DataView(bytes.buffer), at };
      };
      const recordA = place(encodeVector(a, 'i4'), 5);
      const recordB = place(encodeVector(b, 'i4'), 11);
      const [floatsA, floatsB] = [roundVector(a, 'i4'), roundVector(b, 'i4')];
      expect(i4RecordDot(recordA.bytes, recordA.view, recordA.at, dim, query)).toBe(exactDot(floatsA, query));
      expect(i4RecordPairDot(recordA.bytes, recordA.view, recordA.at, recordB.bytes, recordB.view, recordB.at, dim)).toBe(exactDot(floatsA, floatsB));
      expect(() => i4RecordDot(recordA.bytes, recordA.view, recordA.at, dim, new Float32Array(dim + 1))).toThrow(expect.objectContaining({ code: 'DIMENSION_MISMATCH' }));
    }
  });

  it('takes stored bytes at any precision, and names a vector whose bytes fit none', () => {
    const table = new VectorTable();
    const precisions = ['i8', 'i4', 'f16', 'f32'] as const;
    for (const precision of precisions) table.setStored(precision, encodeVector(vectors[0] as Float32Array, precision), 384);
    for (const precision of precisions) expect(bits(table.get(precision))).toEqual(bits(roundVector(vectors[0] as Float32Array, precision)));
    // An i4 vector is held as its stored bytes: copied out as they are, or as the i8 record they name; an i8 one only as i8.
    const i4Place = table.recordPlace('i4') as number;
    const record = new Uint8Array(388);
    expect(table.copyRecords([i4Place], record)).toBe(true);
    expect([...record]).toEqual([...encodeVector(roundVector(vectors[0] as Float32Array, 'i4'), 'i8')]);
    const stored = new Uint8Array(196);
    expect(table.copyRecords([i4Place], stored, 'i4')).toBe(true);
    expect([...stored]).toEqual([...encodeVector(vectors[0] as Float32Array, 'i4')]);
    expect(table.copyRecords([table.recordPlace('i8') as number], stored, 'i4')).toBe(false);
    expect(table.recordPlace('f32')).toBeUndefined();
    expect(() => table.setStored('bad', new Uint8Array(100), 384)).toThrow(expect.objectContaining({ code: 'CORRUPT_CHECKPOINT', message: expect.stringContaining('bad') }));
    const badLevel = encodeVector(vectors[0] as Float32Array, 'i4');
    badLevel[4] = 0xff;
    expect(() => table.setStored('bad-level', badLevel, 384)).toThrow(expect.objectContaining({ code: 'CORRUPT_CHECKPOINT', message: expect.stringContaining('bad-level') }));
    // A store's read holds each id once: one met again, at any precision, is a damaged store's; `setStored` replaces it.
    for (const precision of precisions) {
      expect(() => table.addStored(precision, encodeVector(vectors[1] as Float32Array, precision), 384)).toThrow(
        expect.objectContaining({ code: 'CORRUPT_CHECKPOINT', message: expect.stringContaining(`"${precision}" is stored twice`) }),
      );
    }
    table.addStored('new', encodeVector(vectors[1] as Float32Array, 'i4'), 384);
    table.setStored('i4', encodeVector(vectors[1] as Float32Array, 'i4'), 384);
    expect(bits(table.get('i4'))).toEqual(bits(table.get('new')));
    expect(table.size).toBe(precisions.length + 1);
  });

  it('replaces, deletes and reuses records without mixing vectors up, past its decode cache', () => {
    const table = new VectorTable();
    const count = 5000;
    const rounded = vectors.map((v) => roundVector(v, 'i8'));
    for (let i = 0; i < count; i++) table.set(`n${i}`, rounded[i % 50] as Float32Array);
    for (let i = 0; i < count; i += 3) table.delete(`n${i}`);
    for (let i = 0; i < count; i += 6) table.set(`n${i}`, rounded[(i + 1) % 50] as Float32Array);
    table.set('n1', rounded[7] as Float32Array);
    for (let i = 0; i < count; i++) {
      const want = i === 1 ? rounded[7] : i % 6 === 0 ? rounded[(i + 1) % 50] : i % 3 === 0 ? undefined : rounded[i % 50];
      expect(bits(table.get(`n${i}`))).toEqual(bits(want));
    }
    expect(table.has('n3')).toBe(false);
    // Past the first page of records too: each inner product straight from the record is the one of the decoded floats.
    const query = unitVectors(1, 384)[0] as Float32Array;
    for (let i = 0; i < count; i += 7) {
      const vector = table.get(`n${i}`);
      expect(table.dot(`n${i}`, query)).toBe(vector && exactDot(vector, query));
    }
    table.clear();
    expect(table.size).toBe(0);
    expect(table.get('n2')).toBeUndefined();
  });
});

describe('VectorTable: records copied for an index', () => {
  const rounded = unitVectors(3000, 384).map((v) => roundVector(v, 'i8'));

  it('copies the records of the ids asked, in their order and across pages, as the stores encode them', () => {
    const table = new VectorTable();
    rounded.forEach((v, i) => table.set(`n${i}`, v));
    const ids = ['n2999', 'n0', 'n1500', 'n1024', 'n7'];
    const target = new Uint8Array(ids.length * 388);
    expect(table.copyRecords(placesOf(table, ids), target)).toBe(true);
    ids.forEach((id, i) => expect([...target.subarray(i * 388, (i + 1) * 388)]).toEqual([...encodeVector(rounded[Number(id.slice(1))] as Float32Array, 'i8')]));
    const odd = new Uint8Array(388 * 2 + 1).subarray(1);
    expect(table.copyRecords(placesOf(table, ['n5', 'n6']), odd)).toBe(true);
    expect([...odd.subarray(388)]).toEqual([...encodeVector(rounded[6] as Float32Array, 'i8')]);
  });

  it('gives no place for a vector kept as floats or an absent id, and refuses a target of another size', () => {
    const table = new VectorTable();
    table.set('exact', rounded[0] as Float32Array);
    table.set('floats', unitVectors(1, 384)[0] as Float32Array);
    expect(table.recordPlace('floats')).toBeUndefined();
    expect(table.recordPlace('absent')).toBeUndefined();
    expect(table.copyRecords(placesOf(table, ['exact']), new Uint8Array(2 * 388))).toBe(false);
  });

  it('lends a record by its place, gives a deleted vector\'s place to the next one, and copies nothing from a lent place', () => {
    const table = new VectorTable();
    rounded.slice(0, 4).forEach((v, i) => table.set(`n${i}`, v));
    const place = table.recordPlace('n1') as number;
    table.delete('n1');
    table.set('m', rounded[9] as Float32Array);
    expect(table.recordPlace('m')).toBe(place);
    const target = new Uint8Array(388);
    expect(table.copyRecords([place], target)).toBe(true);
    expect([...target]).toEqual([...encodeVector(rounded[9] as Float32Array, 'i8')]);
    // An index of one row that reads back what it was lent.
    const lentTo = { vector: (key: number) => (key === 7 ? (rounded[9] as Float32Array) : undefined), dot: () => undefined, pairDot: () => undefined };
    table.lend(['m'], [7], lentTo, [place]);
    expect(table.recordPlace('m')).toBeUndefined();
    expect(table.copyRecords([place], target)).toBe(false);
    expect(bitsOf(table.get('m'))).toEqual(bitsOf(rounded[9]));
    expect([...table.keys()]).toEqual(['n0', 'n2', 'n3', 'm']);
  });

  it('keeps stored i4 and i8 records side by side: replaced, deleted and reused without mixing them up', () => {
    const table = new VectorTable();
    const count = 3000;
    const i4Of = (i: number) => encodeVector(rounded[i % 100] as Float32Array, 'i4');
    const i8Of = (i: number) => encodeVector(rounded[i % 100] as Float32Array, 'i8');
    for (let i = 0; i < count; i++) table.setStored(`n${i}`, i % 2 ? i4Of(i) : i8Of(i), 384);
    for (let i = 0; i < count; i += 3) table.delete(`n${i}`);
    for (let i = 0; i < count; i += 6) table.setStored(`n${i}`, i4Of(i + 1), 384);
    const query = unitVectors(1, 384)[0] as Float32Array;
    for (let i = 0; i < count; i++) {
      const replaced = i % 6 === 0;
      if (i % 3 === 0 && !replaced) {
        expect(table.has(`n${i}`)).toBe(false);
        continue;
      }
      const want = decodeStoredVector(`n${i}`, replaced ? i4Of(i + 1) : i % 2 ? i4Of(i) : i8Of(i), 384);
      expect(bitsOf(table.peek(`n${i}`))).toEqual(bitsOf(want));
      if (i % 7 === 0) expect(table.dot(`n${i}`, query)).toBe(exactDot(want, query));
      if (i % 7 === 0) expect(table.pairDot(`n${i}`, 'n1')).toBe(exactDot(want, decodeStoredVector('n1', i4Of(1), 384)));
      const record = new Uint8Array(388);
      expect(table.copyRecords(placesOf(table, [`n${i}`]), record)).toBe(true);
      expect([...record]).toEqual([...encodeVector(want, 'i8')]);
    }
  });
});

describe('VectorTable: a loaded memory is checked by its records’ scales', () => {
  const vector = roundVector(unitVectors(1, 384)[0] as Float32Array, 'i8');
  const withScale = (scale: number): Uint8Array => {
    const bytes = encodeVector(vector, 'i8');
    new DataView(bytes.buffer).setFloat32(0, scale, true);
    return bytes;
  };

  it('tells a finite i8 record from one whose scale makes a value infinite or NaN, and from floats', () => {
    const table = new VectorTable();
    table.setStored('ok', withScale(0.01), 384);
    table.setStored('nan', withScale(Number.NaN), 384);
    table.setStored('huge', withScale(3e36), 384);
    table.set('floats', unitVectors(1, 384)[0] as Float32Array);
    const finiteness = (dim: number): Record<string, boolean> => {
      const seen: Record<string, boolean> = {};
      table.visitFiniteness(dim, (id, finite) => (seen[id] = finite));
      return seen;
    };
    expect(finiteness(384)).toStrictEqual({ ok: true, nan: false, huge: false, floats: false });
    expect(finiteness(383)).toStrictEqual({ ok: false, nan: false, huge: false, floats: false });
  });

  it('refuses a loaded table holding a vector with a non-finite value, naming it', () => {
    const table = new VectorTable();
    table.setStored('fp:1', withScale(0.01), 384);
    table.setStored('fp:2', withScale(3e36), 384);
    const failures: string[] = [];
    const fail = (message: string): never => {
      failures.push(message);
      throw new Error(message);
    };
    const meta = { schemaVersion: 1, embedderId: 'e', dim: 384, nextKey: 1, chunkCount: 0, settings: {} };
    expect(() => checkMemoryStructure({ meta, nodes: [], edges: [], chunks: [], vectors: table, hashes: [] }, fail)).toThrow();
    expect(failures).toEqual([expect.stringMatching(/vector fp:2 contains -?Infinity at \d+/)]);
  });
});

describe('VectorTable: vectors lent to the index that holds them', () => {
  const dim = 384;
  const rounded = unitVectors(2500, dim).map((v) => roundVector(v, 'i8'));
  const bits = (v: Float32Array | undefined) => (v ? [...new Uint32Array(v.buffer, v.byteOffset, v.length)] : undefined);
  const indexes: Array<[string, () => Promise<VectorIndex>]> = [
    ['usearch WASM, flat', async () => (await loadUsearchWasm(await readUsearchWasm())).createIndex({ dim })],
    ['plain JavaScript, flat', async () => flatIndex(dim)],
  ];

  for (const [name, create] of indexes) {
    it(`${name}: reads every lent vector back bit for bit, keeps floats, and frees the records`, async () => {
      const index = await create();
      const rows = index.rows;
      if (!rows) throw new Error('a flat index reads its rows back');
      const table = new VectorTable();
      const ids = rounded.map((_, i) => `n${i}`);
      rounded.forEach((v, i) => table.set(ids[i] as string, v));
      const floats = unitVectors(1, dim)[0] as Float32Array;
      table.set('floats', floats);
      const keys = ids.map((_, i) => 10 + i);
      index.add(keys, packRows(rounded, dim));
      table.lend(ids, keys, rows);
      // Lent: no record is left to copy, yet every read answers as before, in insertion order.
      expect(table.recordPlace('n0')).toBeUndefined();
      const query = unitVectors(2, dim)[1] as Float32Array;
      rounded.forEach((v, i) => {
        if (i % 11 !== 0) return;
        expect(bits(table.get(`n${i}`))).toEqual(bits(v));
        expect(bits(table.peek(`n${i}`))).toEqual(bits(v));
        expect(table.dot(`n${i}`, query)).toBe(exactDot(v, query));
        // Two lent vectors, and a lent one with floats: their dot as their decoded floats give it.
        expect(table.pairDot(`n${i}`, `n${(i * 7 + 3) % 2500}`)).toBe(exactDot(v, rounded[(i * 7 + 3) % 2500] as Float32Array));
        expect(table.pairDot('floats', `n${i}`)).toBe(exactDot(floats, v));
      });
      expect(table.pairDot('n3', 'missing')).toBeUndefined();
      expect(bits(table.get('floats'))).toEqual(bits(floats));
      expect([...table.keys()]).toEqual([...ids, 'floats']);
      // The graph removes an index entry and its vector together; the others read on from where their rows moved.
      index.remove([10, 11]);
      table.delete('n0');
      table.delete('n1');
      expect(table.has('n0')).toBe(false);
      expect(bits(table.get('n2499'))).toEqual(bits(rounded[2499]));
      // A lent vector set again is the table's own, whatever the index holds.
      table.set('n5', rounded[6] as Float32Array);
      table.set('n6', rounded[7] as Float32Array);
      expect(bits(table.get('n5'))).toEqual(bits(rounded[6]));
      // Two records of the table's own, and one of its own with a lent one.
      expect(table.pairDot('n5', 'n6')).toBe(exactDot(rounded[6] as Float32Array, rounded[7] as Float32Array));
      expect(table.pairDot('n5', 'n9')).toBe(exactDot(rounded[6] as Float32Array, rounded[9] as Float32Array));
      expect(table.recordPlace('n5')).toBeDefined();
      // Past its disposal the index answers nothing: a lent read fails loudly rather than quietly missing.
      index.dispose();
      expect(() => table.get('n2000')).toThrow(PrismError);
      expect(bits(table.get('n5'))).toEqual(bits(rounded[6]));
    });
  }
});

describe('IndexSet: records copied into an index a batch at a time', () => {
  const dim = 384;
  // More than two batches of 4 MB (10,810 records of 388 bytes each).
  const count = 25_000;
  const rounded = unitVectors(count, dim).map((v) => roundVector(v, 'i8'));
  const ids = rounded.map((_, i) => `n${i}`);
  const keys = ids.map((_, i) => i + 1);

  async function setOf(): Promise<{ set: IndexSet; table: VectorTable; vectors: IndexVectors }> {
    const usearch = await loadUsearchWasm(await readUsearchWasm());
    const table = new VectorTable();
    rounded.forEach((v, i) => table.set(ids[i] as string, v));
    const vectors: IndexVectors = {
      has: (id) => table.has(id),
      get: (id) => table.peek(id),
      recordPlace: (id) => table.recordPlace(id),
      copyRecords: (slots, target, form) => table.copyRecords(slots, target, form),
      lend: (batch, batchKeys, rows, slots) => table.lend(batch, batchKeys, rows, slots),
    };
    return { set: new IndexSet(dim, (d) => usearch.createIndex({ dim: d })), table, vectors };
  }

  it('adds every vector across batches, and answers as the floats do', async () => {
    const { set, table, vectors } = await setOf();
    set.add('facetPoint', keys, ids, vectors, placesOf(table, ids));
    expect(set.size('facetPoint')).toBe(count);
    expect(table.recordPlace('n0')).toBeUndefined();
    const query = rounded[20_000] as Float32Array;
    const [best] = set.search('facetPoint', query, 1);
    expect(best?.key).toBe(20_001);
    expect(bitsOf(table.get('n24999'))).toEqual(bitsOf(rounded[24_999]));
    set.dispose();
  });

  it('adds all or nothing: a key the index holds in a later batch leaves none of the batch added', async () => {
    const { set, table, vectors } = await setOf();
    set.add('facetPoint', [count + 5], ['n20000'], vectors, placesOf(table, ['n20000']));
    const clashing = keys.map((key, i) => (i === 20_000 ? count + 5 : key));
    expect(() => set.add('facetPoint', clashing, ids, vectors, placesOf(table, ids))).toThrow(PrismError);
    expect(set.size('facetPoint')).toBe(1);
    set.dispose();
  });

  it('adds stored i4 records as they are, and a batch with an i8 record among them as i8: every vector as its floats', async () => {
    const { set, table, vectors } = await setOf();
    const stored = rounded.map((v) => encodeVector(v, 'i4'));
    // The first batch all i4; an i8 record in the second sends that batch as i8, i4 ones expanded.
    ids.forEach((id, i) => (i === 15_000 ? table.set(id, decodeStoredVector(id, stored[i] as Uint8Array, dim)) : table.setStored(id, stored[i] as Uint8Array, dim)));
    set.add('facetPoint', keys, ids, vectors, placesOf(table, ids));
    expect(set.size('facetPoint')).toBe(count);
    const usearch = await loadUsearchWasm(await readUsearchWasm());
    const fromFloats = usearch.createIndex({ dim });
    fromFloats.add(keys, packRows(stored.map((bytes, i) => decodeStoredVector(ids[i] as string, bytes, dim)), dim));
    for (const q of [3, 12_000, 15_000, 24_999]) {
      const query = decodeStoredVector('q', stored[q] as Uint8Array, dim);
      expect(set.search('facetPoint', query, 5)).toEqual(fromFloats.search(query, 5)[0]);
      expect(bitsOf(table.get(`n${q}`))).toEqual(bitsOf(query));
    }
    fromFloats.dispose();
    set.dispose();
  });

  it('falls back to floats for the whole batch when one vector past the first batch is not a record', async () => {
    const { set, table, vectors } = await setOf();
    // Off the i8 grid by a hair: kept as floats.
    const floats = Float32Array.from(rounded[20_000] as Float32Array, (x, i) => (i === 0 ? x + 1e-7 : x));
    table.set('n20000', floats);
    expect(table.recordPlace('n20000')).toBeUndefined();
    set.add('facetPoint', keys, ids, vectors, placesOf(table, ids));
    expect(set.size('facetPoint')).toBe(count);
    expect(set.search('facetPoint', floats, 1)[0]?.key).toBe(20_001);
    set.dispose();
  });
});

/** The record slots of `ids` as an applyBatch queue takes them (−1 where there is none). */
function placesOf(table: VectorTable, ids: readonly string[]): number[] {
  return ids.map((id) => table.recordPlace(id) ?? -1);
}

function bitsOf(v: Float32Array | undefined): number[] | undefined {
  return v && [...new Uint32Array(v.buffer, v.byteOffset, v.length)];
}

describe('group values as text (IndexedDB node and edge groups)', () => {
  const encoder = new TextEncoder();
  const utf8 = new TextDecoder();
  const PIECES = ['{"l":"facetPoint"', 'plain words', 'café', 'naïve — “quoted”', '日本語', '🎉', '\u0080\u009f', 'ÿ', '€', '\u00ad', '', ' ', '\n', '\\'];

  it('gives each value its own UTF-8 decoding, ASCII and not, under its member', () => {
    const random = mulberry32(5);
    for (let n = 0; n < 300; n++) {
      const values = Array.from({ length: Math.floor(random() * 12) }, () =>
        Array.from({ length: Math.floor(random() * 5) }, () => PIECES[Math.floor(random() * PIECES.length)] as string).join(''),
      );
      const members = values.map((_, i) => `fp:${n}:${i}`);
      const data = joinGroupValues(values.map((value) => encoder.encode(value)));
      const before = data.slice();
      const texts = splitGroupTexts('a group', members, data);
      expect(texts).toEqual(members.map((member, i) => [member, values[i]]));
      // Its lengths, blanked while it was decoded, are put back.
      expect(data).toEqual(before);
      // Sliced from the group decoded whole, lengths blanked: UTF-8 always adds up.
      const bytes = values.map((value) => encoder.encode(value));
      const starts = bytes.map((_, i) => bytes.slice(0, i + 1).reduce((at, value) => at + 4 + value.length, 0) - (bytes[i] as Uint8Array).length);
      const ends = starts.map((start, i) => start + (bytes[i] as Uint8Array).length);
      expect(slicedTexts(values.map((value) => `    ${value}`).join(''), members, starts, ends, data.length)).toEqual(texts);
      expect(texts.map(([, text]) => text)).toEqual([...splitGroupValues('a group', members, data).values()].map((bytes) => utf8.decode(bytes)));
    }
  });

  it('decodes bytes that are not UTF-8 as the decoder does, one value at a time', () => {
    const values = [new Uint8Array([0x7b, 0xff, 0x7d]), new Uint8Array([0x80]), new Uint8Array([0x61, 0x62])];
    // Decoded whole, the lone bytes are a character each: the count falls short of the bytes.
    expect(slicedTexts(`    ${utf8.decode(values[0])}    ${utf8.decode(values[1])}    ab`, ['a', 'b', 'c'], [4, 11, 16], [7, 12, 18], 18)).toBeNull();
    expect(splitGroupTexts('a group', ['a', 'b', 'c'], joinGroupValues(values))).toEqual([
      ['a', utf8.decode(values[0])],
      ['b', utf8.decode(values[1])],
      ['c', 'ab'],
    ]);
  });

  it('refuses values and members that do not match, as splitGroupValues does', () => {
    const data = () => joinGroupValues([encoder.encode('one'), encoder.encode('two')]);
    for (const [members, bytes] of [
      [['a', 'b', 'c'], data()],
      [['a'], data()],
      [['a', 'b'], data().subarray(0, data().length - 1)],
    ] as const) {
      const split = () => splitGroupValues('a group', members, bytes);
      expect(split).toThrow(PrismError);
      expect(() => splitGroupTexts('a group', members, bytes)).toThrow(/a group: /);
    }
    // A member named twice is refused by splitGroupValues; as text, each value is its own record,
    // which the open's structure check refuses where two share a node's id.
    expect(() => splitGroupValues('a group', ['a', 'a'], data())).toThrow(/appears twice/);
    expect(splitGroupTexts('a group', ['a', 'a'], data())).toEqual([
      ['a', 'one'],
      ['a', 'two'],
    ]);
  });
});
