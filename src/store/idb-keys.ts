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
import { IV_BYTES, UnsealWorker } from './unseal-worker.ts';

/**
 * The owner of the key that seals a partition's derived state (see `GraphStore.loadDerived`).
 * That state holds words of many chunks, so its key is retired whenever the state is dropped (a
 * delete of any node or chunk): every copy LevelDB still keeps of it is then noise. Chunk ids,
 * the other owners, are hex hashes, never this.
 */
export const DERIVED_OWNER = 'derived state';

const KEY_BYTES = 32;

/**
 * Sealed bytes a batch sent to the unsealing worker holds at most: the page decodes a batch while
 * the worker unseals the next, and a read's first values wait for no more than one batch.
 */
const WORKER_BATCH_BYTES = 1 << 20;

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
   * The worker that unseals the values of bulk reads (`unsealAll`) while one is in flight
   * (`whileReading`), null between them: an idle one kept ~40 MB of the tab. It resolves to null
   * where no worker can run.
   */
  private worker: Promise<UnsealWorker | null> | null = null;
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
   * Starts the unsealing worker ahead of a bulk read that is coming (a store's open, before the
   * memory's first load): started by the read itself, its start delayed the read's first values.
   */
  prepareReading(): void {
    this.worker ??= UnsealWorker.start();
  }

  /**
   * Runs `read`, a bulk read whose values are unsealed through `unsealAll`, with the unsealing
   * worker running (started for it unless `prepareReading` started it) and stopped once no such
   * read is left in flight.
   */
  async whileReading<T>(read: () => Promise<T>): Promise<T> {
    this.prepareReading();
    this.readers++;
    try {
      return await read();
    } finally {
      if (--this.readers === 0) this.stopWorker();
    }
  }

  /** Stops the unsealing worker, if one runs. */
  stopWorker(): void {
    void this.worker?.then((started) => started?.terminate());
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

  async unseal(ring: KeyRing, id: string, sealed: ArrayBuffer): Promise<Uint8Array<ArrayBuffer>> {
    const bytes = new Uint8Array(sealed);
    try {
      return new Uint8Array(await crypto.subtle.decrypt({ name: 'AES-GCM', iv: bytes.subarray(0, IV_BYTES) }, await this.key(ring, id), bytes.subarray(IV_BYTES)));
    } catch (cause) {
      if (cause instanceof PrismError) throw cause;
      throw altered(ring, id, cause);
    }
  }

  /**
   * `decode` of each value's plaintext, in order: a bulk read's. Unsealed by the folder's worker
   * where one runs (see `whileReading`), a batch of `WORKER_BATCH_BYTES` at a time, each batch
   * decoded here as it comes back while the worker goes on with the next; the values' sealed
   * buffers are handed to the worker, so the caller must not read them again. Else one by one
   * on this thread, as `unseal` does.
   */
  async unsealAll<V extends { keyId: string; sealed: ArrayBuffer }, T>(ring: KeyRing, values: readonly V[], decode: (plain: Uint8Array<ArrayBuffer>, value: V) => T): Promise<T[]> {
    const worker = await this.worker;
    if (worker === null) return Promise.all(values.map(async (value) => decode(await this.unseal(ring, value.keyId, value.sealed), value)));
    for (const { keyId } of values) if (!ring.has(keyId)) throw missingKey(ring, keyId);
    const batches: Array<{ values: readonly V[]; plains: Promise<Array<ArrayBuffer | null>> }> = [];
    for (let start = 0; start < values.length; ) {
      let end = start;
      for (let bytes = 0; end < values.length && (end === start || bytes < WORKER_BATCH_BYTES); end++) bytes += (values[end] as V).sealed.byteLength;
      const batch = values.slice(start, end);
      const plains = worker.unseal(batch, (id) => ring.bytesOf(id));
      // Awaited below in order; a batch left behind by an earlier failure must not reject unheard.
      plains.catch(() => undefined);
      batches.push({ values: batch, plains });
      start = end;
    }
    const decoded: T[] = [];
    for (const batch of batches) {
      const plains = await batch.plains.catch((cause: unknown) => {
        throw new PrismError('STORE_IO', `unsealing the values of ${ring.name}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
      });
      batch.values.forEach((value, i) => {
        const plain = plains[i];
        if (plain === null || plain === undefined) throw altered(ring, value.keyId);
        decoded.push(decode(new Uint8Array(plain), value));
      });
    }
    return decoded;
  }
}

function missingKey(ring: KeyRing, id: string): PrismError {
  return new PrismError('CORRUPT_CHECKPOINT', `key ${id} is missing from key ring ${ring.name}: a value sealed with it cannot be read`);
}

function altered(ring: KeyRing, id: string, cause?: unknown): PrismError {
  return new PrismError('CORRUPT_CHECKPOINT', `a value sealed with key ${id} of ${ring.name} does not decrypt: it was altered`, cause === undefined ? {} : { cause });
}
