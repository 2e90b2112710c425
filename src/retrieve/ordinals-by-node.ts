/**
 * Slots a node key may reach in the table of one-document nodes, per document filed and beyond
 * (else its ordinal goes to the map): a key is found in the table with no hashing, and a key far
 * beyond the documents (a memory that deleted much, or damaged bytes) costs no table that large.
 * A memory's keys count its nodes and edges ever made; at 100K messages 1.5M keys for ~560K documents.
 */
const SLOTS_PER_DOCUMENT = 8;
const SLOTS_BEYOND = 1 << 16;

/**
 * The lexical index's documents by node key: a Facet's, fact's or Entity's one document, an
 * Episode's turns by position. One-document nodes, nearly all of them, are kept in a table by
 * key (ordinal + 1; 0 for none): as a map by key, filing ~560K of them was ~0.3 s of reading a
 * saved index at 100K messages, and each open's pass over every document looks each up again.
 * Episodes' turn lists, and keys beyond the table's reach, are kept in a map.
 */
export class OrdinalsByNode {
  private table = new Int32Array(0);
  private readonly others = new Map<number, number | Array<number | undefined>>();
  private filed = 0;

  /** The ordinal of the document at `position` of `nodeKey`, or undefined when none is filed there. */
  ordinalOf(nodeKey: number, position: number): number | undefined {
    const slot = this.slot(nodeKey);
    if (slot > 0) return position === 0 ? slot - 1 : undefined;
    const held = this.others.get(nodeKey);
    if (held === undefined) return undefined;
    return typeof held === 'number' ? (position === 0 ? held : undefined) : held[position];
  }

  /** The ordinals filed under `nodeKey` (an Episode's in turn order; none when it has none). */
  ordinalsOf(nodeKey: number): number[] {
    const slot = this.slot(nodeKey);
    if (slot > 0) return [slot - 1];
    const held = this.others.get(nodeKey);
    if (held === undefined) return [];
    return typeof held === 'number' ? [held] : held.filter((ordinal): ordinal is number => ordinal !== undefined);
  }

  /** Whether anything is filed under `nodeKey`. */
  holdsNode(nodeKey: number): boolean {
    return this.slot(nodeKey) > 0 || this.others.has(nodeKey);
  }

  /** Files `ordinal` under its node (an Episode's turns in a list by position); false when that place is taken. */
  register(nodeKey: number, position: number, episode: boolean, ordinal: number): boolean {
    if (this.slot(nodeKey) > 0) return false;
    const held = this.others.get(nodeKey);
    if (!episode) {
      if (held !== undefined || position !== 0) return false;
      if (this.reaches(nodeKey)) this.table[nodeKey] = ordinal + 1;
      else this.others.set(nodeKey, ordinal);
      this.filed++;
      return true;
    }
    if (typeof held === 'number') return false;
    const turns = held ?? [];
    if (turns[position] !== undefined) return false;
    turns[position] = ordinal;
    if (!held) this.others.set(nodeKey, turns);
    this.filed++;
    return true;
  }

  /** Unfiles the document at `position` of `nodeKey`. */
  unregister(nodeKey: number, position: number): void {
    if (this.slot(nodeKey) > 0) {
      this.table[nodeKey] = 0;
      this.filed--;
      return;
    }
    const held = this.others.get(nodeKey);
    if (held === undefined) return;
    if (typeof held === 'number') this.others.delete(nodeKey);
    else {
      if (held[position] === undefined) return;
      held[position] = undefined;
      if (held.every((ordinal) => ordinal === undefined)) this.others.delete(nodeKey);
    }
    this.filed--;
  }

  /** `nodeKey`'s slot in the table (0 when it holds none or lies beyond it). */
  private slot(nodeKey: number): number {
    return nodeKey >= 0 && nodeKey < this.table.length ? (this.table[nodeKey] as number) : 0;
  }

  /** Whether the table holds, or may be grown to hold, `nodeKey` (grown by doubling when so). */
  private reaches(nodeKey: number): boolean {
    if (!Number.isSafeInteger(nodeKey) || nodeKey < 0) return false;
    if (nodeKey < this.table.length) return true;
    const limit = SLOTS_PER_DOCUMENT * (this.filed + 1) + SLOTS_BEYOND;
    if (nodeKey >= limit) return false;
    const next = new Int32Array(Math.min(limit, Math.max(nodeKey + 1, this.table.length * 2)));
    next.set(this.table);
    this.table = next;
    return true;
  }
}
