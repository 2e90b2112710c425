/**
 * The first `k` of `items` in `compare` order: what `[...items].sort(compare).slice(0, k)` returns,
 * ties included (Array#sort is stable, so equal items keep their input order), without sorting
 * the rest. A sorted buffer of at most `k` items takes each item that beats its last, after the
 * items it ties with, so a search that reads a short head of a long hit list pays O(n log k).
 */
export function topK<T>(items: readonly T[], k: number, compare: (a: T, b: T) => number): T[] {
  if (k >= items.length) return [...items].sort(compare);
  const top: T[] = [];
  if (k <= 0) return top;
  for (const item of items) {
    if (top.length === k && compare(item, top[k - 1] as T) >= 0) continue;
    // Upper bound: the first buffered item that `item` sorts before.
    let lo = 0;
    let hi = top.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compare(top[mid] as T, item) <= 0) lo = mid + 1;
      else hi = mid;
    }
    top.splice(lo, 0, item);
    if (top.length > k) top.pop();
  }
  return top;
}
