import { PrismError } from '../errors.ts';
import type { EmbedOptions, Embedder } from './types.ts';

/**
 * An embedder whose model is loaded on the first `embed`: its `id` and `dim` are known up front,
 * so a memory opens, lists, gets, counts, exports, imports and deletes without reading the model
 * (only `add` and `search` embed). A load that fails is tried again by the next `embed`.
 */
export class LazyEmbedder implements Embedder {
  #loading: Promise<Embedder> | null = null;

  /** `load` must resolve to an embedder with this `id` and `dim`; any other is `MODEL_LOAD_FAILED`. */
  constructor(
    readonly id: string,
    readonly dim: number,
    private readonly load: () => Promise<Embedder>,
  ) {}

  /** Whether the model has been loaded (or is loading). */
  get loaded(): boolean {
    return this.#loading !== null;
  }

  async embed(texts: readonly string[], options?: EmbedOptions): Promise<Float32Array[]> {
    return (await this.#embedder()).embed(texts, options);
  }

  async dispose(): Promise<void> {
    const loading = this.#loading;
    this.#loading = null;
    const embedder = await loading?.catch(() => null);
    await embedder?.dispose?.();
  }

  #embedder(): Promise<Embedder> {
    if (this.#loading === null) {
      const loading = this.load().then((embedder) => {
        if (embedder.id !== this.id || embedder.dim !== this.dim) {
          throw new PrismError('MODEL_LOAD_FAILED', `expected embedder ${this.id} (${this.dim}-d), loaded ${embedder.id} (${embedder.dim}-d)`);
        }
        return embedder;
      });
      loading.catch(() => {
        if (this.#loading === loading) this.#loading = null;
      });
      this.#loading = loading;
    }
    return this.#loading;
  }
}
