/**
 * Slots a key may reach in an `IntsByKey` table, per number it holds and beyond (else its number
 * goes to the map): a key is found in the table with no hashing, and a key far beyond the numbers
 * held (a memory that deleted much, or damaged bytes) costs no table that large. A memory's keys
 * count its nodes and edges ever made: at 100K messages 1.5M keys, for ~560K lexical documents
 * and ~440K derived edges of one type.
 */
const SLOTS_PER_NUMBER = 8;
const SLOTS_BEYOND = 1 << 16;

/** The largest number a slot holds (it holds the number + 1, 0 for none). */
const MAX_SLOT_NUMBER = 2 ** 31 - 2;

/**
 * Non-negative integers by key, where keys are small integers given out in order (a memory's node
 * keys): in an `Int32Array` by key, outside the JS heap, and in a map for a key the table would
 * have to reach too far for, or a number no slot holds. As maps by key or by id, ~500K of them
 * were tenths of a second of an open at 100K messages (the sets of a hash table that size miss
 * the cache at every one) and tens of MB of heap.
 */
export class IntsByKey {
  private table = new Int32Array(0);
  private readonly beyond = new Map<number, number>();
  private held = 0;

  /** How many keys hold a number. */
  get size(): number {
    return this.held;
  }

  get(key: number): number | undefined {
    const slot = this.slot(key);
    if (slot > 0) return slot - 1;
    return this.beyond.size > 0 ? this.beyond.get(key) : undefined;
  }

  set(key: number, value: number): void {
    const fits = fitsSlot(value);
    if (this.slot(key) > 0) {
      if (fits) {
        this.table[key] = value + 1;
        return;
      }
      this.table[key] = 0;
      this.held--;
    } else if (this.beyond.size > 0 && this.beyond.has(key)) {
      this.beyond.set(key, value);
      return;
    }
    if (fits && this.reaches(key)) this.table[key] = value + 1;
    else this.beyond.set(key, value);
    this.held++;
  }

  /** Takes out `key`'s number; whether it held one. */
  delete(key: number): boolean {
    if (this.slot(key) > 0) this.table[key] = 0;
    else if (!this.beyond.delete(key)) return false;
    this.held--;
    return true;
  }

  /** `key`'s slot in the table (0 when it holds none or lies beyond it). */
  private slot(key: number): number {
    return key >= 0 && key < this.table.length ? ((this.table[key] as number | undefined) ?? 0) : 0;
  }

  /**
   * Whether the table holds, or may be grown to hold, `key` (grown by doubling when so). A grown
   * table takes in the numbers of the map's keys it now reaches: sparse keys set first go to the
   * map, and stay there no longer than the table's reach (an open files each Facet's edge, one
   * key in twelve at 100K messages of chat, before the facts' that fill the keys between them:
   * ~110K of them were left in the map, ~3.5 MB of heap and a hash lookup each read).
   */
  private reaches(key: number): boolean {
    if (!Number.isSafeInteger(key) || key < 0) return false;
    if (key < this.table.length) return true;
    const limit = SLOTS_PER_NUMBER * (this.held + 1) + SLOTS_BEYOND;
    if (key >= limit) return false;
    const next = new Int32Array(Math.min(limit, Math.max(key + 1, this.table.length * 2)));
    next.set(this.table);
    this.table = next;
    for (const [beyondKey, value] of this.beyond) {
      if (!Number.isSafeInteger(beyondKey) || beyondKey < 0 || beyondKey >= next.length || !fitsSlot(value)) continue;
      next[beyondKey] = value + 1;
      this.beyond.delete(beyondKey);
    }
    return true;
  }
}

/** Whether a slot holds `value`: an integer from 0 to `MAX_SLOT_NUMBER`. */
function fitsSlot(value: number): boolean {
  return Number.isInteger(value) && value >= 0 && value <= MAX_SLOT_NUMBER;
}
