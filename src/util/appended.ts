/**
 * Arrays made by appending to another, each remembering the array it extends. An Entity's chunk
 * list is put again, copied with one more chunk, by every add that names the Entity, and a
 * speaker's names every chunk (~9.7K ids at 100K messages of chat). A reader that checked or
 * wrote the list before (the write batch's check, a store's paging) learns from here that the new
 * list starts with it, instead of looking at each id again: each look is a cache miss, and at
 * 100K messages they were ~1.4 ms of an add, growing with the memory.
 */

interface Extension {
  /** Held weakly: a list must not keep every earlier version of itself alive. */
  readonly head: WeakRef<readonly unknown[]>;
  /** The head's length when it was extended. */
  readonly length: number;
}

const extensions = new WeakMap<readonly unknown[], Extension>();

/** A new array of `head`'s items, then `items`, that remembers it extends `head` (see `appendedTo`). */
export function appended<T>(head: readonly T[], ...items: T[]): T[] {
  const list = [...head, ...items];
  extensions.set(list, { head: new WeakRef(head), length: head.length });
  return list;
}

/**
 * The array `list` was made from by `appended`, while that array is alive and as long as it was
 * then; else undefined. Its items are then `list`'s first ones, as long as neither array had an
 * item replaced since. Records are not changed once made (the graph only points a list's new ids
 * at equal strings it holds), so a reader may take them as the same.
 */
export function appendedTo(list: readonly unknown[]): readonly unknown[] | undefined {
  const extension = extensions.get(list);
  const head = extension?.head.deref();
  return head !== undefined && head.length === extension?.length && list.length >= head.length ? head : undefined;
}
