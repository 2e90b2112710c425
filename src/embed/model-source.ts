import { PrismError, throwIfAborted } from '../errors.ts';

/**
 * Where a model's files come from. Paths are relative to the model root in the Hugging Face
 * layout (`tokenizer.json`, `onnx/model.onnx`, …), so a hub URL, a static-site folder and a
 * directory on disk are interchangeable.
 */
export interface ModelSource {
  /** Human-readable location (URL or directory), used in error messages. */
  readonly location: string;
  read(relPath: string, signal?: AbortSignal): Promise<Uint8Array>;
}

/** The Hugging Face repository whose file layout (and, by default, files) the MiniLM embedder uses. */
export const MINILM_HUB_ID = 'Xenova/all-MiniLM-L6-v2';

/** Reads model files over HTTP(S) from `baseUrl` (a folder URL; a trailing slash is added if missing). */
export function urlModelSource(baseUrl: string | URL, fetchImpl: typeof fetch = globalThis.fetch): ModelSource {
  const root = new URL(String(baseUrl).endsWith('/') ? String(baseUrl) : `${String(baseUrl)}/`);
  return {
    location: root.href,
    async read(relPath, signal) {
      const url = new URL(relPath, root);
      let response: Response;
      try {
        response = await fetchImpl(url, signal ? { signal } : {});
      } catch (cause) {
        throwIfAborted(signal);
        throw new PrismError('MODEL_LOAD_FAILED', `cannot fetch ${url.href}`, { cause });
      }
      if (!response.ok) {
        throw new PrismError('MODEL_LOAD_FAILED', `fetching ${url.href} failed: HTTP ${response.status}`);
      }
      return new Uint8Array(await response.arrayBuffer());
    },
  };
}

/** Files of a Hugging Face hub repository, for users with network access. */
export function huggingFaceModelSource(repoId: string = MINILM_HUB_ID, revision = 'main'): ModelSource {
  return urlModelSource(`https://huggingface.co/${repoId}/resolve/${revision}/`);
}
