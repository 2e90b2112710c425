import { describe, expect, it } from 'vitest';
import { IntsByKey } from '../src/util/ints-by-key.ts';

/** Sets, deletes and reads both a table and a plain map the same way; every key must read alike. */
function compare(table: IntsByKey, reference: Map<number, number>, keys: readonly number[]): void {
  const differing = keys.filter((key) => table.get(key) !== reference.get(key));
  expect(differing).toEqual([]);
  expect(table.size).toBe(reference.size);
}

describe('IntsByKey', () => {
  it('reads as a map does when sparse keys come first and the keys between them fill the table later', () => {
    // As an open files edges: one key in twelve first (past the table's reach), then every other key up to them.
    const table = new IntsByKey();
    const reference = new Map<number, number>();
    const last = 600_000;
    for (let key = 11; key < last; key += 12) {
      table.set(key, key * 3);
      reference.set(key, key * 3);
    }
    for (let key = 0; key < last; key++) {
      if (key % 12 === 11 || key % 5 !== 0) continue;
      table.set(key, key + 1);
      reference.set(key, key + 1);
    }
    const every = Array.from({ length: last + 10 }, (_, key) => key);
    compare(table, reference, every);
    // A key taken into the grown table from the map is set and deleted there, and stays deleted.
    for (let key = 11; key < last; key += 24) {
      table.delete(key);
      reference.delete(key);
    }
    for (let key = 23; key < last; key += 48) {
      table.set(key, 7);
      reference.set(key, 7);
    }
    compare(table, reference, every);
  });

  it('keeps keys and numbers no slot holds in its map through a growth', () => {
    const table = new IntsByKey();
    const odd: Array<[number, number]> = [
      [5_000_000, 1],
      [-3, 2],
      [1.5, 3],
      [70_000, 2 ** 31],
      [70_001, 0.25],
      [2 ** 53, 4],
    ];
    for (const [key, value] of odd) table.set(key, value);
    for (let key = 0; key < 200_000; key++) table.set(key === 70_000 || key === 70_001 ? 70_002 : key, key);
    for (const [key, value] of odd.filter(([key]) => key !== 70_000 && key !== 70_001)) expect(table.get(key)).toBe(value);
    expect(table.get(5)).toBe(5);
  });
});
