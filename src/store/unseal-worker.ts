/**
 * AES-GCM unsealing off the page's main thread, for the IndexedDB store's bulk reads (an open
 * reads ~18,000 sealed values at 30K messages of chat). In Chromium a WebCrypto `decrypt` costs
 * the calling thread ~12 µs a value whatever its size (~240 ms of a cold open's main thread),
 * so the values go to a dedicated worker in batches while the page decodes those already back.
 *
 * The worker is made from `unsealerMain`'s own source (a Blob URL), so no bundler has to find a
 * second file. Where no worker can start (no `Worker`, a content security policy without
 * `worker-src blob:`, or no answer in `HANDSHAKE_MS`), `startUnsealWorker` gives null and the
 * store unseals on its own thread as before.
 */

/** IV bytes before each sealed value's ciphertext and tag (as `KeyFolder.seal` writes them). */
export const IV_BYTES = 12;

/** How long a new worker may take to answer its first message before it is given up. */
const HANDSHAKE_MS = 2000;

/** A request to the worker: keys it has not seen (id, raw bytes), then values to unseal under key ids. */
interface UnsealRequest {
  batch: number;
  /** `IV_BYTES`: the worker's program names nothing outside itself. */
  ivBytes: number;
  keys: Array<[string, ArrayBuffer]>;
  values: Array<[string, ArrayBuffer]>;
}

/** The worker's answer: each value's plaintext, in order, or null where it did not decrypt. */
interface UnsealAnswer {
  batch: number;
  plains: Array<ArrayBuffer | null>;
}

/**
 * The worker's whole program: it runs from its source text, so it names nothing outside itself.
 * Batch −1 is the handshake.
 */
function unsealerMain(scope: { onmessage: ((event: MessageEvent<UnsealRequest>) => void) | null; postMessage(message: UnsealAnswer, transfer: Transferable[]): void }): void {
  const keys = new Map<string, Promise<CryptoKey>>();
  scope.onmessage = async ({ data }) => {
    for (const [id, bytes] of data.keys) keys.set(id, crypto.subtle.importKey('raw', bytes, 'AES-GCM', false, ['decrypt']));
    const plains = await Promise.all(
      data.values.map(async ([id, sealed]) => {
        const key = keys.get(id);
        if (key === undefined) return null;
        const bytes = new Uint8Array(sealed);
        try {
          return await crypto.subtle.decrypt({ name: 'AES-GCM', iv: bytes.subarray(0, data.ivBytes) }, await key, bytes.subarray(data.ivBytes));
        } catch {
          return null;
        }
      }),
    );
    scope.postMessage({ batch: data.batch, plains }, plains.filter((plain): plain is ArrayBuffer => plain !== null));
  };
}

/** A dedicated worker that unseals values under keys it is sent once. */
export class UnsealWorker {
  private readonly pending = new Map<number, { resolve: (plains: Array<ArrayBuffer | null>) => void; reject: (error: Error) => void }>();
  /** Key ids the worker holds. */
  private readonly sent = new Set<string>();
  private nextBatch = 0;
  private failure: Error | null = null;

  private constructor(private readonly worker: Worker) {
    worker.onmessage = ({ data }: MessageEvent<UnsealAnswer>) => {
      const waiting = this.pending.get(data.batch);
      this.pending.delete(data.batch);
      waiting?.resolve(data.plains);
    };
    worker.onerror = () => this.fail(new Error('the unsealing worker stopped'));
    worker.onmessageerror = () => this.fail(new Error('the unsealing worker stopped'));
  }

  /** A worker that has answered a first message, or null where none can run here. */
  static async start(): Promise<UnsealWorker | null> {
    if (typeof Worker !== 'function' || typeof Blob !== 'function' || typeof URL.createObjectURL !== 'function') return null;
    let worker: Worker;
    const url = URL.createObjectURL(new Blob([`(${unsealerMain.toString()})(self);`], { type: 'text/javascript' }));
    try {
      worker = new Worker(url);
    } catch {
      URL.revokeObjectURL(url);
      return null;
    }
    const unsealer = new UnsealWorker(worker);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const answered = await Promise.race([
      unsealer.post([], []).then(() => true, () => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), HANDSHAKE_MS);
      }),
    ]);
    clearTimeout(timer);
    URL.revokeObjectURL(url);
    if (answered) return unsealer;
    worker.terminate();
    return null;
  }

  /**
   * The plaintexts of `values` (their sealed bytes are transferred: the caller's buffers are left
   * empty), in order, null where one did not decrypt. `keyBytes` gives a key's raw bytes by id
   * (undefined: not a key the worker can be sent, so its values give null).
   */
  unseal(values: ReadonlyArray<{ keyId: string; sealed: ArrayBuffer }>, keyBytes: (id: string) => Uint8Array | undefined): Promise<Array<ArrayBuffer | null>> {
    const keys: Array<[string, ArrayBuffer]> = [];
    for (const { keyId } of values) {
      if (this.sent.has(keyId)) continue;
      const bytes = keyBytes(keyId);
      if (bytes === undefined) continue;
      this.sent.add(keyId);
      keys.push([keyId, bytes.slice().buffer]);
    }
    // Only the id and bytes cross: a value's other fields (a group's member ids) would be cloned for nothing.
    return this.post(keys, values.map(({ keyId, sealed }) => [keyId, sealed]));
  }

  terminate(): void {
    this.worker.terminate();
    this.fail(new Error('the unsealing worker was closed'));
  }

  /** Rejects every batch in flight, and every later one, with `error` (the first failure is kept). */
  private fail(error: Error): void {
    this.failure ??= error;
    for (const { reject } of this.pending.values()) reject(this.failure);
    this.pending.clear();
  }

  private post(keys: Array<[string, ArrayBuffer]>, values: Array<[string, ArrayBuffer]>): Promise<Array<ArrayBuffer | null>> {
    if (this.failure) return Promise.reject(this.failure);
    const batch = this.nextBatch++;
    const answer = new Promise<Array<ArrayBuffer | null>>((resolve, reject) => this.pending.set(batch, { resolve, reject }));
    const request: UnsealRequest = { batch, ivBytes: IV_BYTES, keys, values };
    this.worker.postMessage(request, [...keys.map(([, bytes]) => bytes), ...values.map(([, sealed]) => sealed)]);
    return answer;
  }
}
