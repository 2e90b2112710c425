/**
 * A least-recently-used map bounded by what its entries weigh together: by default each weighs 1,
 * so the bound is a count. Past it the least recently used entries go first; an entry heavier
 * than the whole bound is not kept. A capacity of 0 holds nothing. The caches a long-running
 * process fills as it works (query vectors, token counts, what searches derive from the turns
 * they reach) are bounded this way, so memory does not grow with how long it has searched.
 */
export class LruCache<K, V> {
  readonly capacity: number;
  readonly #entries = new Map<K, V>();
  readonly #weigh: (value: V, key: K) => number;
  #weight = 0;

  constructor(capacity: number, weigh: (value: V, key: K) => number = () => 1) {
    this.capacity = capacity;
    this.#weigh = weigh;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** What the entries weigh together. */
  get weight(): number {
    return this.#weight;
  }

  get(key: K): V | undefined {
    const value = this.#entries.get(key);
    if (value !== undefined) {
      // Map keeps insertion order, so re-inserting marks the entry as most recently used.
      this.#entries.delete(key);
      this.#entries.set(key, value);
    }
    return value;
  }

  set(key: K, value: V): void {
    this.delete(key);
    const weight = this.#weigh(value, key);
    if (weight > this.capacity || this.capacity <= 0) return;
    this.#entries.set(key, value);
    this.#weight += weight;
    for (const [oldest, held] of this.#entries) {
      if (this.#weight <= this.capacity) break;
      this.#entries.delete(oldest);
      this.#weight -= this.#weigh(held, oldest);
    }
  }

  delete(key: K): boolean {
    const held = this.#entries.get(key);
    if (held === undefined) return false;
    this.#entries.delete(key);
    this.#weight -= this.#weigh(held, key);
    return true;
  }

  clear(): void {
    this.#entries.clear();
    this.#weight = 0;
  }
}
