import { describe, expect, it } from 'vitest';
import { OrdinalsByNode } from '../src/retrieve/ordinals-by-node.ts';

/** A reference kept as a plain map, the form the table replaced. */
class ReferenceOrdinals {
  readonly byKey = new Map<number, number | Array<number | undefined>>();
  register(key: number, position: number, episode: boolean, ordinal: number): boolean {
    const held = this.byKey.get(key);
    if (!episode) {
      if (held !== undefined || position !== 0) return false;
      this.byKey.set(key, ordinal);
      return true;
    }
    if (typeof held === 'number') return false;
    const turns = held ?? [];
    if (turns[position] !== undefined) return false;
    turns[position] = ordinal;
    this.byKey.set(key, turns);
    return true;
  }
  unregister(key: number, position: number): void {
    const held = this.byKey.get(key);
    if (typeof held !== 'object') this.byKey.delete(key);
    else {
      held[position] = undefined;
      if (held.every((ordinal) => ordinal === undefined)) this.byKey.delete(key);
    }
  }
  ordinalsOf(key: number): number[] {
    const held = this.byKey.get(key);
    if (held === undefined) return [];
    return typeof held === 'number' ? [held] : held.filter((ordinal): ordinal is number => ordinal !== undefined);
  }
  ordinalOf(key: number, position: number): number | undefined {
    const held = this.byKey.get(key);
    if (held === undefined) return undefined;
    return typeof held === 'number' ? (position === 0 ? held : undefined) : held[position];
  }
}

/** A small deterministic generator, so a failure replays. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

describe('OrdinalsByNode', () => {
  it('files, finds and unfiles as a map by key does, for keys near and far beyond the documents', () => {
    const next = random(7);
    const table = new OrdinalsByNode();
    const reference = new ReferenceOrdinals();
    const keys: number[] = [];
    for (let ordinal = 0; ordinal < 20_000; ordinal++) {
      // Mostly keys a few apart, as a memory allocates them; some beyond the table's reach until
      // it grows past them, some far beyond it, some repeated.
      const roll = next();
      const key =
        roll < 0.05
          ? Math.floor(next() * 2 ** 40)
          : roll < 0.1 && keys.length > 0
            ? (keys[Math.floor(next() * keys.length)] as number)
            : roll < 0.15
              ? 12 * ordinal + 70_000 + Math.floor(next() * 3)
              : 3 * ordinal + Math.floor(next() * 3);
      const episode = next() < 0.1;
      const position = episode ? Math.floor(next() * 4) : next() < 0.02 ? 1 : 0;
      expect(table.register(key, position, episode, ordinal)).toBe(reference.register(key, position, episode, ordinal));
      keys.push(key);
      if (next() < 0.2) {
        const gone = keys[Math.floor(next() * keys.length)] as number;
        const at = Math.floor(next() * 4);
        table.unregister(gone, at);
        reference.unregister(gone, at);
      }
    }
    for (const key of [...keys, -1, 0.5, 2 ** 60]) {
      expect(table.ordinalsOf(key)).toEqual(reference.ordinalsOf(key));
      expect(table.holdsNode(key)).toBe(reference.byKey.has(key));
      for (let position = 0; position < 4; position++) expect(table.ordinalOf(key, position)).toBe(reference.ordinalOf(key, position));
    }
  });

  it('refuses a second document at a node’s place, and an Episode’s turn under a one-document node', () => {
    const table = new OrdinalsByNode();
    expect(table.register(5, 0, false, 0)).toBe(true);
    expect(table.register(5, 0, false, 1)).toBe(false);
    expect(table.register(5, 1, true, 1)).toBe(false);
    expect(table.register(6, 1, false, 2)).toBe(false);
    expect(table.register(9, 2, true, 3)).toBe(true);
    expect(table.register(9, 2, true, 4)).toBe(false);
    expect(table.register(9, 0, false, 4)).toBe(false);
    expect(table.ordinalsOf(9)).toEqual([3]);
    table.unregister(5, 0);
    expect(table.holdsNode(5)).toBe(false);
    expect(table.register(5, 0, false, 5)).toBe(true);
    expect(table.ordinalOf(5, 0)).toBe(5);
  });
});
