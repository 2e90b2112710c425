import { describe, expect, it } from 'vitest';
import { RecordsByKey } from '../src/graph/records-by-key.ts';
import { mulberry32 } from '../src/eval/stats.ts';

interface Thing {
  name: string;
}

describe('RecordsByKey', () => {
  it('reads as a map by key does through random puts of objects and numbers, replacements and deletes', () => {
    const random = mulberry32(7);
    const table = new RecordsByKey<Thing>();
    const reference = new Map<number, Thing | number>();
    // Mostly dense keys as a memory gives them out, with a few far past them and a few no slot holds.
    const keyAt = (): number => {
      const roll = random();
      if (roll < 0.01) return -1 - Math.floor(random() * 5);
      if (roll < 0.02) return 1.5 + Math.floor(random() * 5);
      if (roll < 0.04) return 10_000_000 + Math.floor(random() * 10);
      return Math.floor(random() * 3_000);
    };
    for (let step = 0; step < 40_000; step++) {
      const key = keyAt();
      const roll = random();
      if (roll < 0.2) {
        table.delete(key);
        reference.delete(key);
      } else if (roll < 0.55) {
        const ordinal = Math.floor(random() * 100_000);
        table.set(key, ordinal);
        reference.set(key, ordinal);
      } else {
        const thing = { name: `thing ${step}` };
        table.set(key, thing);
        reference.set(key, thing);
      }
    }
    const keys = [...new Set([...reference.keys(), ...Array.from({ length: 3_100 }, (_, key) => key)])];
    // Objects compared by identity: a freed object's place, given to another, must not leak it.
    const differing = keys.filter((key) => table.get(key) !== reference.get(key));
    expect(differing).toEqual([]);
    expect(reference.size).toBeGreaterThan(1_000);
  });

  it('gives a deleted object\'s place to the next object put, and a number in an object\'s key frees it too', () => {
    const table = new RecordsByKey<Thing>();
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((name) => ({ name })) as [Thing, Thing, Thing, Thing];
    table.set(1, a);
    table.set(2, b);
    table.delete(1);
    table.set(3, c);
    table.set(2, 5);
    table.set(4, d);
    expect([table.get(1), table.get(2), table.get(3), table.get(4)]).toEqual([undefined, 5, c, d]);
    table.set(2, a);
    expect([table.get(2), table.get(3), table.get(4)]).toEqual([a, c, d]);
  });
});
