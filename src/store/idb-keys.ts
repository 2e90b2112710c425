/**
 * The keys that let an IndexedDB delete erase (issue 24). Chromium keeps deleted IndexedDB
 * values in its LevelDB files until a compaction no page can trigger, so the IndexedDB store
 * writes every value sealed (AES-GCM) under a key that lives outside IndexedDB: in a key ring,
 * one small file in the Origin Private File System. Chromium rewrites such a file whole
 * (`createWritable()` writes a swap file and renames it over the old one) and unlinks a removed
 * one, so a key dropped from its ring leaves no byte in any file of the profile — and with it,
 * every copy of what it sealed becomes noise.
 */
import { PrismError } from '../errors.ts';
import { createSerial } from '../util/serial.ts';
import { unpacked } from './value-pack.ts';
import { IV_BYTES, ReadWorker, type BulkReadRequest, type ReadAnswer, type ReadValue } from './read-worker.ts';

/**
 * The owner of the key that seals a partition's derived state (see `GraphStore.loadDerived`).
 * That state holds words of many chunks, so its key is retired whenever the state is dropped (a
 * delete of any node or chunk): every copy LevelDB still keeps of it is then noise. Chunk ids,
 * the other owners, are hex hashes, never this.
 */
export const DERIVED_OWNER = 'derived state';

const KEY_BYTES = 32;

/** One key of a ring: a random id (what sealed values name), the record it is for, the key bytes. */
interface RingEntry {
  id: string;
  /** The chunk whose records the key seals, or `null` for the ring's shared key (records of no single chunk). */
  owner: string | null;
  bytes: Uint8Array<ArrayBuffer>;
}

interface RingFile {
  /**
   * Random, new at every write and first in the file: a folder that wrote or read a ring
   * knows from the file's first bytes whether it still holds what it has in memory.
   */
  stamp?: string;
  keys: Array<{ id: string; owner: string | null; key: string }>;
}

/** The file's stamp as `write` puts it: first, so a short read finds it. */
const STAMP_PREFIX = '{"stamp":"';
const STAMP_HEX = 16;

function randomHex(bytes: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, '0')).join('');
}

function toBase64(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes));
}

/**
 * A key's bytes from its base64, by index: a ring holds a key per chunk and is read at every open,
 * and `Uint8Array.from` over the string's iterator with a callback a character was ~80 ms of
 * opening 30K messages of chat in Chromium.
 */
function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  const chars = atob(text);
  const bytes = new Uint8Array(chars.length);
  for (let i = 0; i < chars.length; i++) bytes[i] = chars.charCodeAt(i);
  return bytes;
}

/** The keys of one partition (or of the cache), as its file in the key folder holds them. */
export class KeyRing {
  private readonly entries: Map<string, RingEntry>;
  /** The newest key of each owner, so that finding one does not scan the ring (a key per chunk). */
  private readonly newest = new Map<string | null, string>();
  /** Each key as the file writes it, kept so that writing a grown ring does not encode every key again. */
  private readonly written = new Map<string, string>();

  constructor(
    /** The ring's file name in the key folder. */
    readonly name: string,
    entries: readonly RingEntry[] = [],
  ) {
    this.entries = new Map(entries.map((entry) => [entry.id, entry]));
    for (const entry of this.entries.values()) this.newest.set(entry.owner, entry.id);
  }

  get ids(): string[] {
    return [...this.entries.keys()];
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  bytesOf(id: string): Uint8Array<ArrayBuffer> | undefined {
    return this.entries.get(id)?.bytes;
  }

  /** The newest key for `owner` (`null`: the shared key), if the ring holds one. */
  keyOf(owner: string | null): string | undefined {
    return this.newest.get(owner);
  }

  /** Adds a fresh random key for `owner` and returns its id. */
  add(owner: string | null): string {
    const id = randomHex(12);
    this.entries.set(id, { id, owner, bytes: crypto.getRandomValues(new Uint8Array(KEY_BYTES)) });
    this.newest.set(owner, id);
    return id;
  }

  /** Drops every key not in `kept`; true when any went. */
  retain(kept: ReadonlySet<string>): boolean {
    const before = this.entries.size;
    for (const id of this.entries.keys()) {
      if (kept.has(id)) continue;
      this.entries.delete(id);
      this.written.delete(id);
    }
    if (this.entries.size === before) return false;
    this.newest.clear();
    for (const entry of this.entries.values()) this.newest.set(entry.owner, entry.id);
    return true;
  }

  /** A ring of the same keys that changes apart from this one (the keys' bytes are never changed, so they are shared). */
  copy(): KeyRing {
    const ring = new KeyRing(this.name, [...this.entries.values()]);
    for (const [id, text] of this.written) ring.written.set(id, text);
    return ring;
  }

  serialize(stamp: string): string {
    const keys: string[] = [];
    for (const { id, owner, bytes } of this.entries.values()) {
      let text = this.written.get(id);
      if (text === undefined) {
        text = JSON.stringify({ id, owner, key: toBase64(bytes) });
        this.written.set(id, text);
      }
      keys.push(text);
    }
    return `${STAMP_PREFIX}${stamp}","keys":[${keys.join(',')}]}`;
  }

  static parse(name: string, text: string): KeyRing {
    try {
      const file = JSON.parse(text) as RingFile;
      return new KeyRing(
        name,
        file.keys.map(({ id, owner, key }) => ({ id, owner, bytes: fromBase64(key) })),
      );
    } catch (cause) {
      throw new PrismError('CORRUPT_CHECKPOINT', `key ring ${name} is damaged: the values it seals cannot be read`, { cause });
    }
  }
}

/**
 * The folder of one database's key rings in the Origin Private File System. Needs a secure
 * context (https or localhost), as IndexedDB's Web Locks and WebCrypto do.
 */
export class KeyFolder {
  /** Imported keys by id: ids are random and never reused, so an entry never goes stale. */
  private readonly imported = new Map<string, Promise<CryptoKey>>();
  /** The ring of each file as this folder last wrote or read it, under the stamp the file then began with. */
  private readonly rings = new Map<string, { stamp: string; ring: KeyRing }>();

  /**
   * The worker that does the bulk reads (`bulkRead`) while one is in flight, null between them:
   * an idle one kept ~40 MB of the tab. Where no worker can run, the same program runs on this
   * thread (see `ReadWorker`).
   */
  private worker: Promise<ReadWorker> | null = null;
  /** Bulk reads in flight. */
  private readers = 0;

  private constructor(private readonly folder: FileSystemDirectoryHandle) {}

  static async open(dbName: string): Promise<KeyFolder> {
    const storage = globalThis.navigator?.storage;
    if (typeof storage?.getDirectory !== 'function' || globalThis.crypto?.subtle === undefined) {
      throw new PrismError(
        'STORE_IO',
        `opening ${dbName}: the IndexedDB store needs the Origin Private File System and WebCrypto (a secure context: https or localhost) to keep the keys that make a delete erase`,
      );
    }
    const root = await storage.getDirectory();
    return new KeyFolder(await root.getDirectoryHandle(`prism-memory-keys-${encodeURIComponent(dbName)}`, { create: true }));
  }

  /**
   * Starts the reading worker ahead of a bulk read that is coming (a store's open, before the
   * memory's first load): started by the read itself, its start delayed the read's first values.
   */
  prepareReading(): void {
    this.worker ??= ReadWorker.start();
  }

  /** Stops the reading worker, if one runs. */
  stopWorker(): void {
    void this.worker?.then((started) => started.terminate());
    this.worker = null;
  }

  /**
   * The ring in file `name`, or an empty ring when there is none. A ring this folder wrote or
   * read last is not parsed again while the file still starts with its stamp (another tab's
   * write changes the stamp): a commit reads its ring, and a ring holds a key per chunk.
   */
  async read(name: string): Promise<KeyRing> {
    let file: File;
    try {
      file = await (await this.folder.getFileHandle(name)).getFile();
    } catch (err) {
      if (err instanceof DOMException && err.name === 'NotFoundError') return new KeyRing(name);
      throw err;
    }
    const known = this.rings.get(name);
    if (known && (await file.slice(0, STAMP_PREFIX.length + STAMP_HEX).text()) === `${STAMP_PREFIX}${known.stamp}`) return known.ring.copy();
    const text = await file.text();
    const ring = KeyRing.parse(name, text);
    const stamp = text.startsWith(STAMP_PREFIX) ? text.slice(STAMP_PREFIX.length, STAMP_PREFIX.length + STAMP_HEX) : undefined;
    if (stamp !== undefined && /^[0-9a-f]+$/.test(stamp)) this.rings.set(name, { stamp, ring: ring.copy() });
    else this.rings.delete(name);
    return ring;
  }

  /** Replaces the ring's file whole: the swap-and-rename leaves no copy of a dropped key. */
  async write(ring: KeyRing): Promise<void> {
    this.rings.delete(ring.name);
    const stamp = randomHex(STAMP_HEX / 2);
    const writable = await (await this.folder.getFileHandle(ring.name, { create: true })).createWritable();
    try {
      await writable.write(ring.serialize(stamp));
      await writable.close();
    } catch (err) {
      await writable.abort().catch(() => undefined);
      throw err;
    }
    this.rings.set(ring.name, { stamp, ring: ring.copy() });
  }

  /** Unlinks the ring's file, and with it every key it held. */
  async remove(name: string): Promise<void> {
    this.rings.delete(name);
    try {
      await this.folder.removeEntry(name);
    } catch (err) {
      if (!(err instanceof DOMException && err.name === 'NotFoundError')) throw err;
    }
  }

  private key(ring: KeyRing, id: string): Promise<CryptoKey> {
    let key = this.imported.get(id);
    if (!key) {
      const bytes = ring.bytesOf(id);
      if (!bytes) throw missingKey(ring, id);
      key = crypto.subtle.importKey('raw', bytes, 'AES-GCM', false, ['encrypt', 'decrypt']);
      this.imported.set(id, key);
    }
    return key;
  }

  /** `plain` sealed under key `id` of `ring`: a fresh IV, then the AES-GCM ciphertext and tag. */
  async seal(ring: KeyRing, id: string, plain: Uint8Array<ArrayBuffer>): Promise<ArrayBuffer> {
    const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
    const cipher = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, await this.key(ring, id), plain));
    const sealed = new Uint8Array(IV_BYTES + cipher.length);
    sealed.set(iv);
    sealed.set(cipher, IV_BYTES);
    return sealed.buffer;
  }

  /**
   * The plaintext `sealed` holds under key `id` of `ring`: unpacked (value-pack.ts) when `packed`
   * (its store's values may be packed), else as sealed (a packed value is sealed again as it is).
   */
  async unseal(ring: KeyRing, id: string, sealed: ArrayBuffer, packed = false): Promise<Uint8Array<ArrayBuffer>> {
    const bytes = new Uint8Array(sealed);
    let plain: Uint8Array<ArrayBuffer>;
    try {
      plain = new Uint8Array(await crypto.subtle.decrypt({ name: 'AES-GCM', iv: bytes.subarray(0, IV_BYTES) }, await this.key(ring, id), bytes.subarray(IV_BYTES)));
    } catch (cause) {
      if (cause instanceof PrismError) throw cause;
      throw altered(ring, id, cause);
    }
    return packed ? this.unpack(ring, id, plain) : plain;
  }

  /** `plain`, unsealed under key `id` of `ring`, unpacked where it was packed; CORRUPT_CHECKPOINT where it does not unpack. */
  unpack(ring: KeyRing, id: string, plain: Uint8Array<ArrayBuffer>): Uint8Array<ArrayBuffer> {
    try {
      return unpacked(plain);
    } catch (cause) {
      throw damagedValue(ring, id, cause instanceof Error ? cause.message : String(cause));
    }
  }

  /**
   * Reads `request` and `decoders`' stores (`BulkReadRequest`) in one transaction, by the folder's
   * worker (started for it unless `prepareReading` started it, and stopped once no bulk read is
   * left in flight), each value unsealed under its key of `ring` and decoded here as its part
   * comes back, while the worker goes on with the next; parts are decoded in the order they come,
   * so a store's decoder runs once every store before it in `decoders` is decoded whole, and
   * after `opened` (given the values read at one key) has settled. A value sealed under a key `ring` lacks
   * (one written after `ring` was read) is unsealed here under the ring `ringWith` gives for it:
   * CORRUPT_CHECKPOINT when that one lacks it too, or when a value does not decrypt.
   */
  bulkRead<D extends Record<string, ValueDecoder<unknown>>>(
    ring: KeyRing,
    request: Omit<BulkReadRequest, 'valuesOf'>,
    decoders: D,
    ringWith: (values: ReadonlyArray<{ keyId: string }>) => Promise<KeyRing>,
    opened: (got: unknown[]) => Promise<void>,
  ): BulkRead<D> {
    const got = settleLater<unknown[]>();
    const keys = new Map(request.keysOf.map((store) => [store, settleLater<string[]>()] as const));
    /** Each store's decoding: its values decoded so far. */
    interface StoreDecoding {
      decode: ValueDecoder<unknown>;
      /** Whether the store's values may be packed (`BulkReadRequest.packed`): the worker unpacks those it unseals, this thread those it could not. */
      packed: boolean;
      decoded: unknown[];
      settled: ReturnType<typeof settleLater<unknown[]>>;
    }
    const stores = new Map(Object.entries(decoders).map(([store, decode]): [string, StoreDecoding] => [store, { decode, packed: request.packed.includes(store), decoded: [], settled: settleLater<unknown[]>() }]));
    // Every part is decoded in the order it came, store after store: a decoder may rely on every store before its own being decoded whole.
    const inOrder = createSerial();
    /** The read's first error, once it has one: every result not settled yet is rejected with it. */
    const failure: { error?: unknown; failed: boolean } = { failed: false };
    const fail = (error: unknown): void => {
      if (failure.failed) return;
      Object.assign(failure, { error, failed: true });
      for (const later of [got, ...keys.values(), ...[...stores.values()].map(({ settled }) => settled)]) later.reject(error);
    };
    const decodePart = async (store: StoreDecoding, values: readonly ReadValue[], last: boolean): Promise<void> => {
      if (failure.failed) return;
      const stillSealed = values.filter(({ plain, sealed }) => plain === null && sealed !== null);
      const ringNow = stillSealed.length > 0 ? await ringWith(stillSealed) : ring;
      for (const value of values) {
        const plain = value.plain !== null ? new Uint8Array(value.plain) : value.sealed !== null ? await this.unseal(ringNow, value.keyId, value.sealed, store.packed) : null;
        if (plain === null) throw value.damaged === undefined ? altered(ring, value.keyId) : damagedValue(ring, value.keyId, value.damaged);
        store.decoded.push(store.decode(plain, value));
      }
      if (last) store.settled.resolve(store.decoded);
    };
    const heard = (answer: ReadAnswer): void => {
      if (failure.failed) return;
      if ('got' in answer) {
        got.resolve(answer.got);
        inOrder(() => opened(answer.got)).catch(fail);
      } else if ('keys' in answer) keys.get(answer.store)?.resolve(JSON.parse(answer.keys) as string[]);
      else if ('values' in answer) {
        const store = stores.get(answer.store);
        if (!store) return;
        const values = answer.values.map((value): ReadValue => ({ ...value, members: value.members === null ? null : (JSON.parse(value.members) as string[]) }));
        inOrder(() => decodePart(store, values, answer.last)).catch(fail);
      }
    };
    this.prepareReading();
    this.readers++;
    const done = (async () => {
      try {
        const reader = await (this.worker as Promise<ReadWorker>);
        await reader.read({ ...request, valuesOf: [...stores.keys()] }, ring.ids.map((id) => [id, ring.bytesOf(id) as Uint8Array]), heard);
        // Once every part before it is decoded.
        await inOrder(async () => undefined);
      } catch (error) {
        fail(error);
      } finally {
        if (--this.readers === 0) this.stopWorker();
      }
      if (failure.failed) throw failure.error;
    })();
    done.catch(() => undefined);
    return {
      got: got.promise,
      keys: (store) => keys.get(store)?.promise ?? Promise.reject(new Error(`${store}'s keys were not asked for`)),
      values: Object.fromEntries([...stores].map(([store, { settled }]) => [store, settled.promise])) as BulkRead<D>['values'],
      done,
    };
  }
}

/** Decodes one value of a bulk read from its plaintext (see `KeyFolder.bulkRead`). */
export type ValueDecoder<T> = (plain: Uint8Array<ArrayBuffer>, value: ReadValue) => T;

/** A bulk read's results as they come: each settles with the read's error where it fails. */
export interface BulkRead<D extends Record<string, ValueDecoder<unknown>>> {
  /** The values read at one key each, in the request's order. */
  got: Promise<unknown[]>;
  /** A `keysOf` store's ids, in key order. */
  keys(store: string): Promise<string[]>;
  /** Each store's values decoded, in key order. */
  values: { [Store in keyof D]: Promise<Array<ReturnType<D[Store]>>> };
  /** Settles once every value is decoded. */
  done: Promise<void>;
}

/** A promise settled from outside; a rejection nobody awaits is not reported as unhandled. */
function settleLater<T>(): { promise: Promise<T>; resolve(value: T): void; reject(error: unknown): void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

function missingKey(ring: KeyRing, id: string): PrismError {
  return new PrismError('CORRUPT_CHECKPOINT', `key ${id} is missing from key ring ${ring.name}: a value sealed with it cannot be read`);
}

/** A value that decrypted but whose packed bytes do not unpack (value-pack.ts): only a bug or a forged key makes one. */
function damagedValue(ring: KeyRing, id: string, why: string): PrismError {
  return new PrismError('CORRUPT_CHECKPOINT', `a value sealed with key ${id} of ${ring.name} decrypts but does not unpack (${why})`);
}

function altered(ring: KeyRing, id: string, cause?: unknown): PrismError {
  return new PrismError('CORRUPT_CHECKPOINT', `a value sealed with key ${id} of ${ring.name} does not decrypt: it was altered`, cause === undefined ? {} : { cause });
}
