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

const KEY_BYTES = 32;
const IV_BYTES = 12;

/** One key of a ring: a random id (what sealed values name), the record it is for, the key bytes. */
interface RingEntry {
  id: string;
  /** The chunk whose records the key seals, or `null` for the ring's shared key (records of no single chunk). */
  owner: string | null;
  bytes: Uint8Array<ArrayBuffer>;
}

interface RingFile {
  keys: Array<{ id: string; owner: string | null; key: string }>;
}

function randomHex(bytes: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, '0')).join('');
}

function toBase64(bytes: Uint8Array): string {
  return btoa(Array.from(bytes, (b) => String.fromCharCode(b)).join(''));
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/** The keys of one partition (or of the cache), as its file in the key folder holds them. */
export class KeyRing {
  private readonly entries: Map<string, RingEntry>;

  constructor(
    /** The ring's file name in the key folder. */
    readonly name: string,
    entries: readonly RingEntry[] = [],
  ) {
    this.entries = new Map(entries.map((entry) => [entry.id, entry]));
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
    let newest: string | undefined;
    for (const entry of this.entries.values()) if (entry.owner === owner) newest = entry.id;
    return newest;
  }

  /** Adds a fresh random key for `owner` and returns its id. */
  add(owner: string | null): string {
    const id = randomHex(12);
    this.entries.set(id, { id, owner, bytes: crypto.getRandomValues(new Uint8Array(KEY_BYTES)) });
    return id;
  }

  /** Drops every key not in `kept`; true when any went. */
  retain(kept: ReadonlySet<string>): boolean {
    const before = this.entries.size;
    for (const id of this.entries.keys()) if (!kept.has(id)) this.entries.delete(id);
    return this.entries.size !== before;
  }

  serialize(): string {
    const file: RingFile = { keys: [...this.entries.values()].map(({ id, owner, bytes }) => ({ id, owner, key: toBase64(bytes) })) };
    return JSON.stringify(file);
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

  /** The ring in file `name`, or an empty ring when there is none. */
  async read(name: string): Promise<KeyRing> {
    let file: File;
    try {
      file = await (await this.folder.getFileHandle(name)).getFile();
    } catch (err) {
      if (err instanceof DOMException && err.name === 'NotFoundError') return new KeyRing(name);
      throw err;
    }
    return KeyRing.parse(name, await file.text());
  }

  /** Replaces the ring's file whole: the swap-and-rename leaves no copy of a dropped key. */
  async write(ring: KeyRing): Promise<void> {
    const writable = await (await this.folder.getFileHandle(ring.name, { create: true })).createWritable();
    try {
      await writable.write(ring.serialize());
      await writable.close();
    } catch (err) {
      await writable.abort().catch(() => undefined);
      throw err;
    }
  }

  /** Unlinks the ring's file, and with it every key it held. */
  async remove(name: string): Promise<void> {
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
      if (!bytes) throw new PrismError('CORRUPT_CHECKPOINT', `key ${id} is missing from key ring ${ring.name}: a value sealed with it cannot be read`);
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
      throw new PrismError('CORRUPT_CHECKPOINT', `a value sealed with key ${id} of ${ring.name} does not decrypt: it was altered`, { cause });
    }
  }
}
