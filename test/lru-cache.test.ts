import { describe, expect, it } from 'vitest';
import { LruCache } from '../src/util/lru-cache.ts';

describe('LruCache', () => {
  it('evicts the least recently used entry', () => {
    const cache = new LruCache<string, number>(2);
    cache.set('a', 1);
    cache.set('b', 2);
    expect(cache.get('a')).toBe(1); // a is now the most recent
    cache.set('c', 3);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBe(1);
    expect(cache.get('c')).toBe(3);
    expect(cache.size).toBe(2);
  });

  it('bounds what its entries weigh together, least recent out first, one too heavy not kept', () => {
    const cache = new LruCache<string, string>(10, (value) => value.length);
    cache.set('a', 'xxxx');
    cache.set('b', 'yyyy');
    expect(cache.weight).toBe(8);
    cache.get('a');
    // 12 > 10: b, the least recent, goes.
    cache.set('c', 'zzzz');
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual(['xxxx', undefined, 'zzzz']);
    expect(cache.weight).toBe(8);
    // Set again: the old value's weight is taken off first.
    cache.set('a', 'x');
    expect(cache.weight).toBe(5);
    expect(cache.delete('c')).toBe(true);
    expect(cache.delete('c')).toBe(false);
    expect(cache.weight).toBe(1);
    cache.set('big', 'w'.repeat(11));
    expect([cache.get('big'), cache.size, cache.weight]).toEqual([undefined, 1, 1]);
    cache.clear();
    expect([cache.size, cache.weight]).toEqual([0, 0]);
  });

  it('holds nothing at capacity 0', () => {
    const cache = new LruCache<string, number>(0);
    cache.set('a', 1);
    expect([cache.get('a'), cache.size, cache.weight]).toEqual([undefined, 0, 0]);
  });
});
