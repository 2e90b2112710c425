import { PrismError } from '../errors.ts';

/** How long a writer waits for a partition's lock before `STORE_BUSY`, unless a store is told otherwise. */
export const DEFAULT_LOCK_TIMEOUT_MS = 30_000;

export function lockTimeoutError(what: string, timeoutMs: number): PrismError {
  return new PrismError('STORE_BUSY', `${what}: another writer held the lock for more than ${timeoutMs} ms`);
}

/**
 * Exclusive sections per key within one JavaScript realm: callers of `run` with the same key
 * run one at a time, in call order. Waiting is asynchronous (a promise chain), never a spin.
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  /**
   * Runs `fn` once every earlier section of `key` has finished. With `timeoutMs`, gives up
   * after waiting that long and rejects with `STORE_BUSY` (naming `what`) without running `fn`.
   */
  async run<T>(key: string, fn: () => Promise<T>, timeout?: { ms: number; what: string }): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release: () => void = () => undefined;
    const done = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The next caller waits for this section and, transitively, for every earlier one, even
    // when this caller gives up early.
    const tail = previous.then(() => done);
    this.tails.set(key, tail);
    try {
      await (timeout ? withinTime(previous, timeout.ms, timeout.what) : previous);
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}

async function withinTime(wait: Promise<void>, ms: number, what: string): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(lockTimeoutError(what, ms)), ms);
  });
  try {
    await Promise.race([wait, expired]);
  } finally {
    clearTimeout(timer);
  }
}
