/**
 * The IndexedDB store's bulk reads (a memory's open), done off the page's main thread: a
 * dedicated worker opens the database, reads the partition's stores in one transaction, unseals
 * each value (AES-GCM) and hands the plaintexts over (transferred, not copied), a part of
 * `PART_BYTES` at a time, while the page decodes the parts already back. At 30K messages of chat
 * a cold open reads ~18,000 sealed values: on the page's thread, IndexedDB's deserialising of
 * them (their group records' ~350K member keys, each an array) took ~300 ms and WebCrypto's
 * `decrypt` ~12 µs of the calling thread a value whatever its size (~230 ms).
 *
 * The worker is made from `readerMain`'s own source (a Blob URL), so no bundler has to find a
 * second file. Where no worker can start (no `Worker`, a content security policy without
 * `worker-src blob:`, or no answer in `HANDSHAKE_MS`), the same program runs on the page's own
 * thread (`ReadWorker.start` gives one that does), so both ways read, unseal and answer alike.
 */

import { unpacked } from './value-pack.ts';

/** IV bytes before each sealed value's ciphertext and tag (as `KeyFolder.seal` writes them). */
export const IV_BYTES = 12;

/** How long a new worker may take to answer its first message before it is given up. */
const HANDSHAKE_MS = 2000;

/**
 * Sealed bytes one part of a store's values holds at most: the page decodes a part while the
 * worker unseals the next, and a store's first values wait for no more than one part.
 */
const PART_BYTES = 1 << 20;

/**
 * Records one request of a bulk read asks for: a store is read a piece at a time, so that the
 * page decodes the first pieces while IndexedDB reads the next (group records of a chunk's nodes
 * or vectors hold ~10 KB each).
 */
const PIECE_RECORDS = 256;

/** One bulk read: stores of database `database` over the keys from `lower` to `upper`, in one read-only transaction. */
export interface BulkReadRequest {
  database: string;
  /** The database's version as the page's connection opened it: a database upgraded since (another tab's newer build) is not read. */
  version: number;
  lower: IDBValidKey;
  upper: IDBValidKey;
  /** Values read at one key each (a partition's meta and revision), as stored. */
  gets: Array<[store: string, key: IDBValidKey]>;
  /** Stores whose keys alone in the range are read: each key's second part (an id), in key order. */
  keysOf: string[];
  /** Stores whose sealed values (`{ keyId, sealed, members? }`) in the range are read and unsealed, in key order, store after store. */
  valuesOf: string[];
  /** Stores of `valuesOf` whose values may be packed (value-pack.ts): unpacked once unsealed. */
  packed: string[];
}

/**
 * A value of `valuesOf`, unsealed: its record key's second part (an id), the id of the key it was
 * sealed under, its group's member ids (a group record's: each member key's second part), and its
 * plaintext (unpacked). Where the worker was not sent its key, `plain` is null and `sealed` holds
 * it still (packed, if it was); where it did not decrypt (altered), both are null; where it
 * decrypted but did not unpack, both are null and `damaged` says why.
 */
export interface ReadValue {
  id: string;
  keyId: string;
  members: string[] | null;
  plain: ArrayBuffer | null;
  sealed: ArrayBuffer | null;
  damaged?: string;
}

/** What the worker answers a read, message by message, in the request's order: gets, keys, then each store's values in parts. */
export type ReadAnswer =
  | { batch: number; got: unknown[] }
  | { batch: number; store: string; keys: string }
  | { batch: number; store: string; values: Array<Omit<ReadValue, 'members'> & { members: string | null }>; last: boolean }
  | { batch: number; done: true }
  | { batch: number; error: string };

/** A message to the program: a read (keys it may need: id, raw bytes), or, with no read, the handshake. */
interface ReadMessage {
  batch: number;
  read?: BulkReadRequest;
  keys?: Array<[string, ArrayBuffer]>;
  /** `IV_BYTES`, `PART_BYTES` and `PIECE_RECORDS`: the program names nothing outside itself. */
  ivBytes: number;
  partBytes: number;
  pieceRecords: number;
}

/** Where the program runs: a worker's global scope, or a stand-in for one on the page's thread. */
interface ReaderScope {
  onmessage: ((event: { data: ReadMessage }) => void) | null;
  postMessage(message: ReadAnswer, transfer: Transferable[]): void;
}

/**
 * The reader's whole program: it runs from its source text, so it names nothing outside itself;
 * `unpack` is value-pack.ts's `unpacked`, handed in (its source with the program's).
 */
function readerMain(scope: ReaderScope, unpack: (bytes: Uint8Array<ArrayBuffer>) => Uint8Array<ArrayBuffer>): void {
  const imported = new Map<string, Promise<CryptoKey>>();
  const settled = <T>(request: IDBRequest<T>): Promise<T> =>
    new Promise((resolve, reject) => {
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
  // A key's second part: an id (the first is the partition's token).
  const idsOf = (keys: readonly IDBValidKey[]): string[] => keys.map((key) => (Array.isArray(key) ? String(key[1]) : String(key)));
  const unseal = async (value: { keyId: string; sealed: ArrayBuffer }, ivBytes: number): Promise<ArrayBuffer | null> => {
    const bytes = new Uint8Array(value.sealed);
    try {
      return await crypto.subtle.decrypt({ name: 'AES-GCM', iv: bytes.subarray(0, ivBytes) }, await (imported.get(value.keyId) as Promise<CryptoKey>), bytes.subarray(ivBytes));
    } catch {
      return null;
    }
  };
  // A value unpacked is a fresh buffer of its own, one left as it is the one decrypted: either is transferred whole.
  const unpackedOf = (plain: ArrayBuffer | null, packed: boolean): { plain: ArrayBuffer | null; damaged?: string } => {
    if (plain === null || !packed) return { plain };
    try {
      return { plain: unpack(new Uint8Array(plain)).buffer };
    } catch (error) {
      return { plain: null, damaged: error instanceof Error ? error.message : String(error) };
    }
  };
  const read = async ({ batch, read: request, keys = [], ivBytes, partBytes, pieceRecords }: ReadMessage & { read: BulkReadRequest }): Promise<void> => {
    for (const [id, bytes] of keys) if (!imported.has(id)) imported.set(id, crypto.subtle.importKey('raw', bytes, 'AES-GCM', false, ['decrypt']));
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      const open = indexedDB.open(request.database, request.version);
      // No such database, or one of an older version: not the one the page opened, so nothing to read.
      open.onupgradeneeded = () => open.transaction?.abort();
      open.onsuccess = () => resolve(open.result);
      open.onerror = () => reject(open.error ?? new Error(`${request.database} did not open`));
    });
    // Another connection's upgrade must not wait for this one.
    db.onversionchange = () => db.close();
    try {
      const tx = db.transaction([...new Set([...request.gets.map(([store]) => store), ...request.keysOf, ...request.valuesOf])], 'readonly');
      const done = new Promise<void>((resolve, reject) => {
        tx.oncomplete = () => resolve();
        tx.onabort = () => reject(tx.error ?? new Error('the read was aborted'));
      });
      done.catch(() => undefined);
      const range = IDBKeyRange.bound(request.lower, request.upper);
      const gets = Promise.all(request.gets.map(([store, key]) => settled(tx.objectStore(store).get(key))));
      const keyLists = request.keysOf.map((store) => settled(tx.objectStore(store).getAllKeys(range)));
      // The values a piece of `pieceRecords` records at a time, the next piece asked for as each
      // comes (before it is unsealed: a transaction with no request left ends), so the first
      // values reach the page before the biggest store has been read whole.
      type Piece = { store: string; ids: string[]; values: Array<{ keyId: string; sealed: ArrayBuffer; members?: IDBValidKey[] }>; last: boolean };
      const pieces: Piece[] = [];
      let pieceCame: (() => void) | null = null;
      let readFailure: unknown = null;
      const ask = (at: number, lower: IDBValidKey, exclusive: boolean): void => {
        const store = tx.objectStore(request.valuesOf[at] as string);
        const within = IDBKeyRange.bound(lower, request.upper, exclusive, false);
        const keysOf = store.getAllKeys(within, pieceRecords);
        const valuesOf = store.getAll(within, pieceRecords);
        keysOf.onerror = valuesOf.onerror = (event) => {
          readFailure ??= (event.target as IDBRequest).error ?? new Error('a read failed');
          pieceCame?.();
        };
        valuesOf.onsuccess = () => {
          const keys = keysOf.result;
          const full = keys.length === pieceRecords;
          if (full) ask(at, keys[keys.length - 1] as IDBValidKey, true);
          else if (at + 1 < request.valuesOf.length) ask(at + 1, request.lower, false);
          pieces.push({ store: request.valuesOf[at] as string, ids: idsOf(keys), values: valuesOf.result, last: !full });
          pieceCame?.();
        };
      };
      if (request.valuesOf.length > 0) ask(0, request.lower, false);
      scope.postMessage({ batch, got: await gets }, []);
      for (const [i, store] of request.keysOf.entries()) scope.postMessage({ batch, store, keys: JSON.stringify(idsOf(await keyLists[i]!)) }, []);
      for (let lastStores = 0; lastStores < request.valuesOf.length; ) {
        while (pieces.length === 0 && readFailure === null) await new Promise<void>((resolve) => (pieceCame = resolve));
        if (readFailure !== null) throw readFailure;
        const { store, ids, values, last } = pieces.shift() as Piece;
        if (last) lastStores++;
        const packed = request.packed.includes(store);
        // A piece is posted in parts of at most `partBytes` sealed bytes (at least one part a piece).
        let start = 0;
        do {
          let end = start;
          for (let bytes = 0; end < values.length && (end === start || bytes < partBytes); end++) bytes += values[end]!.sealed.byteLength;
          const part = await Promise.all(
            values.slice(start, end).map(async (value, i) => {
              const known = imported.has(value.keyId);
              const plain = unpackedOf(known ? await unseal(value, ivBytes) : null, packed);
              return { id: ids[start + i] as string, keyId: value.keyId, members: value.members ? JSON.stringify(idsOf(value.members)) : null, ...plain, sealed: known ? null : value.sealed };
            }),
          );
          const transfer = part.flatMap(({ plain, sealed }) => [plain, sealed].filter((buffer): buffer is ArrayBuffer => buffer !== null));
          scope.postMessage({ batch, store, values: part, last: last && end >= values.length }, transfer);
          start = end;
        } while (start < values.length);
      }
      await done;
      scope.postMessage({ batch, done: true }, []);
    } finally {
      db.close();
    }
  };
  scope.onmessage = ({ data }) => {
    if (data.read === undefined) {
      scope.postMessage({ batch: data.batch, done: true }, []);
      return;
    }
    read(data as ReadMessage & { read: BulkReadRequest }).catch((error: unknown) => {
      scope.postMessage({ batch: data.batch, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) }, []);
    });
  };
}

/** The program running in a dedicated worker, or on the page's thread where none can run. */
export class ReadWorker {
  private readonly pending = new Map<number, { answer: (answer: ReadAnswer) => void; reject: (error: Error) => void }>();
  private nextBatch = 0;
  private failure: Error | null = null;

  private constructor(
    private readonly send: (message: ReadMessage, transfer: Transferable[]) => void,
    private readonly stop: () => void,
  ) {}

  /** A worker that has answered a first message, or the program on this thread where none can run here. */
  static async start(): Promise<ReadWorker> {
    return (await ReadWorker.startWorker()) ?? ReadWorker.onThisThread();
  }

  private static async startWorker(): Promise<ReadWorker | null> {
    if (typeof Worker !== 'function' || typeof Blob !== 'function' || typeof URL.createObjectURL !== 'function') return null;
    let worker: Worker;
    const url = URL.createObjectURL(new Blob([`(${readerMain.toString()})(self, ${unpacked.toString()});`], { type: 'text/javascript' }));
    try {
      worker = new Worker(url);
    } catch {
      URL.revokeObjectURL(url);
      return null;
    }
    const reader = new ReadWorker((message, transfer) => worker.postMessage(message, transfer), () => worker.terminate());
    worker.onmessage = ({ data }: MessageEvent<ReadAnswer>) => reader.heard(data);
    worker.onerror = () => reader.fail(new Error('the reading worker stopped'));
    worker.onmessageerror = () => reader.fail(new Error('the reading worker stopped'));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const answered = await Promise.race([
      reader.exchange({ batch: 0, ivBytes: IV_BYTES, partBytes: PART_BYTES, pieceRecords: PIECE_RECORDS }, [], () => undefined).then(() => true, () => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), HANDSHAKE_MS);
      }),
    ]);
    clearTimeout(timer);
    URL.revokeObjectURL(url);
    if (answered) return reader;
    worker.terminate();
    return null;
  }

  /** The program on this thread: its messages each way go through a task, as a worker's do. */
  private static onThisThread(): ReadWorker {
    const scope: ReaderScope = { onmessage: null, postMessage: (message) => setTimeout(() => reader.heard(message)) };
    readerMain(scope, unpacked);
    const reader = new ReadWorker((message) => setTimeout(() => scope.onmessage?.({ data: message })), () => undefined);
    return reader;
  }

  /**
   * Runs `request` with `keys` (id → raw bytes) to unseal with, calling `answer` with each
   * answer in order; settles once the read's transaction has completed, or with its error.
   */
  read(request: BulkReadRequest, keys: ReadonlyArray<[string, Uint8Array]>, answer: (answer: ReadAnswer) => void): Promise<void> {
    const sent = keys.map(([id, bytes]): [string, ArrayBuffer] => [id, bytes.slice().buffer]);
    return this.exchange({ batch: 0, read: request, keys: sent, ivBytes: IV_BYTES, partBytes: PART_BYTES, pieceRecords: PIECE_RECORDS }, sent.map(([, bytes]) => bytes), answer);
  }

  terminate(): void {
    this.stop();
    this.fail(new Error('the reading worker was closed'));
  }

  private heard(answer: ReadAnswer): void {
    const waiting = this.pending.get(answer.batch);
    if (!waiting) return;
    if ('done' in answer || 'error' in answer) this.pending.delete(answer.batch);
    waiting.answer(answer);
  }

  /** Rejects every exchange in flight, and every later one, with `error` (the first failure is kept). */
  private fail(error: Error): void {
    this.failure ??= error;
    for (const { reject } of this.pending.values()) reject(this.failure);
    this.pending.clear();
  }

  private exchange(message: ReadMessage, transfer: Transferable[], answer: (answer: ReadAnswer) => void): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    const batch = ++this.nextBatch;
    return new Promise<void>((resolve, reject) => {
      this.pending.set(batch, {
        answer: (heard) => {
          try {
            if ('error' in heard) throw new Error(heard.error);
            answer(heard);
            if ('done' in heard) resolve();
          } catch (error) {
            // The rest of this read's answers are not heard.
            this.pending.delete(batch);
            reject(error instanceof Error ? error : new Error(String(error)));
          }
        },
        reject,
      });
      this.send({ ...message, batch }, transfer);
    });
  }
}
