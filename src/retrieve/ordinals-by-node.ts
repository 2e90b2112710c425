import { IntsByKey } from '../util/ints-by-key.ts';

/**
 * The lexical index's documents by node key: a Facet's, fact's or Entity's one document, an
 * Episode's turns by position. One-document nodes, nearly all of them, are kept in a table by
 * key (`IntsByKey`): as a map by key, filing ~560K of them was ~0.3 s of reading a saved index at
 * 100K messages, and each open's pass over every document looks each up again. Episodes' turn
 * lists are kept in a map.
 */
export class OrdinalsByNode {
  private readonly documents = new IntsByKey();
  private readonly turns = new Map<number, Array<number | undefined>>();

  /** The ordinal of the document at `position` of `nodeKey`, or undefined when none is filed there. */
  ordinalOf(nodeKey: number, position: number): number | undefined {
    const ordinal = this.documents.get(nodeKey);
    if (ordinal !== undefined) return position === 0 ? ordinal : undefined;
    return this.turns.get(nodeKey)?.[position];
  }

  /** The ordinals filed under `nodeKey` (an Episode's in turn order; none when it has none). */
  ordinalsOf(nodeKey: number): number[] {
    const ordinal = this.documents.get(nodeKey);
    if (ordinal !== undefined) return [ordinal];
    return (this.turns.get(nodeKey) ?? []).filter((held): held is number => held !== undefined);
  }

  /** Whether anything is filed under `nodeKey`. */
  holdsNode(nodeKey: number): boolean {
    return this.documents.get(nodeKey) !== undefined || this.turns.has(nodeKey);
  }

  /** Files `ordinal` under its node (an Episode's turns in a list by position); false when that place is taken. */
  register(nodeKey: number, position: number, episode: boolean, ordinal: number): boolean {
    if (this.documents.get(nodeKey) !== undefined) return false;
    const held = this.turns.get(nodeKey);
    if (!episode) {
      if (held !== undefined || position !== 0) return false;
      this.documents.set(nodeKey, ordinal);
      return true;
    }
    const turns = held ?? [];
    if (turns[position] !== undefined) return false;
    turns[position] = ordinal;
    if (!held) this.turns.set(nodeKey, turns);
    return true;
  }

  /** Unfiles the document at `position` of `nodeKey`. */
  unregister(nodeKey: number, position: number): void {
    if (this.documents.delete(nodeKey)) return;
    const held = this.turns.get(nodeKey);
    if (held === undefined || held[position] === undefined) return;
    held[position] = undefined;
    if (held.every((ordinal) => ordinal === undefined)) this.turns.delete(nodeKey);
  }
}
