import { PrismError } from '../errors.ts';

function abortedError(signal: AbortSignal): PrismError {
  return new PrismError('ABORTED', 'LLM call aborted', { cause: signal.reason });
}

/** A counting semaphore whose waiters can give up through an AbortSignal. */
export class Semaphore {
  private available: number;
  private readonly waiters: Array<() => void> = [];

  constructor(permits: number) {
    if (!Number.isInteger(permits) || permits < 1) {
      throw new PrismError('INVALID_INPUT', `concurrency must be a positive integer, got ${permits}`);
    }
    this.available = permits;
  }

  /** Resolves with a release function once a permit is held. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(abortedError(signal));
    if (this.available > 0) {
      this.available--;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const grant = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve(this.releaser());
      };
      const onAbort = (): void => {
        const index = this.waiters.indexOf(grant);
        if (index >= 0) this.waiters.splice(index, 1);
        reject(abortedError(signal as AbortSignal));
      };
      this.waiters.push(grant);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // Hand the permit straight to the next waiter so a newcomer cannot overtake it.
      const next = this.waiters.shift();
      if (next) next();
      else this.available++;
    };
  }
}

/** Waits `ms`, rejecting with `ABORTED` as soon as `signal` fires. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortedError(signal));
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortedError(signal as AbortSignal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
