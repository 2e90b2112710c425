import { IntsByKey } from '../util/ints-by-key.ts';

/**
 * A record by its key: an object `R`, or a number (the graph's facts held as columns are their
 * ordinal). Keys are small integers given out in order, so each key's place is a number in a
 * table by key outside the JS heap (`IntsByKey`), and only the objects are in an array: as a JS
 * array by key, at 100K messages of chat ~1.5M keys (two in three a fact's) were a 16.7 MB array
 * in the heap, which every full collection walks.
 *
 * A place is even for an object (twice its index in `objects`) and odd for a number (twice it,
 * plus one); an object's index is given to the next one put once its key is deleted or holds a
 * number.
 */
export class RecordsByKey<R extends object> {
  private readonly places = new IntsByKey();
  private readonly objects: Array<R | undefined> = [];
  private readonly freed: number[] = [];

  get(key: number): R | number | undefined {
    const place = this.places.get(key);
    if (place === undefined) return undefined;
    return place % 2 === 1 ? (place - 1) / 2 : this.objects[place / 2];
  }

  /** Puts `record` under `key`, in place of what the key held. A number must be a non-negative integer. */
  set(key: number, record: R | number): void {
    const place = this.places.get(key);
    const held = place !== undefined && place % 2 === 0 ? place / 2 : undefined;
    if (typeof record === 'number') {
      if (held !== undefined) this.free(held);
      this.places.set(key, record * 2 + 1);
      return;
    }
    if (held !== undefined) {
      this.objects[held] = record;
      return;
    }
    const at = this.freed.pop() ?? this.objects.length;
    this.objects[at] = record;
    this.places.set(key, at * 2);
  }

  delete(key: number): void {
    const place = this.places.get(key);
    if (place === undefined) return;
    if (place % 2 === 0) this.free(place / 2);
    this.places.delete(key);
  }

  private free(at: number): void {
    this.objects[at] = undefined;
    this.freed.push(at);
  }
}
