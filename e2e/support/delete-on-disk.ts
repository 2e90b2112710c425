import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import type { HarnessMessage } from '../pages/store-memory.ts';
import { DERIVED_OWNER } from '../../src/store/idb-keys.ts';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './chromium.ts';

/**
 * Issue 24, delete on disk: a real `Memory` on IndexedDB in a Chromium profile this module owns
 * (a persistent context on a fresh --user-data-dir), so that after `delete` every file of the
 * profile can be searched byte by byte for what was deleted. Shared by e2e/delete-on-disk.spec.ts
 * and the fault suite's "delete on disk (IndexedDB, Chromium)" row.
 */

/** Words that occur nowhere but in the messages below, so any copy of them on disk is theirs. */
export const KEPT_WORD = 'Juniperlatch';
export const DELETED_SESSION = 'session-Cobblewhisk';
export const DELETED_SESSION_WORDS = ['Quillfeather', 'Vexmoor', 'Brindlewort'];
export const DELETED_USER = 'user-Thistlegrave';
export const DELETED_USER_WORDS = ['Marrowick', 'Olvenstrand'];
/** An LLM reply cached for the deleted session (forgotten by its tag), and one kept. */
export const DELETED_CACHE_WORD = 'Pellucidarian';
export const KEPT_CACHE_WORD = 'Ravenmoss';
const CACHE_TAG = 'chunk-of-the-deleted-session';

const DB_NAME = 'delete-on-disk';

const KEPT: HarnessMessage[] = [
  { speaker: 'Ann', text: `I keep my ${KEPT_WORD} bicycle in the blue shed behind the bakery.`, id: 'kept:1' },
  { speaker: 'Friend', text: 'That sounds lovely, tell me more next time.', id: 'kept:2' },
];
// The third message has characters beyond Latin-1, so V8 serialises it as a two-byte (UTF-16) string.
const DELETED: HarnessMessage[] = [
  { speaker: 'Ann', text: 'My locker code at the Quillfeather gym is 48213, next to Vexmoor station.', id: 'gone:1' },
  { speaker: 'Friend', text: 'Noted, I will not tell anyone about Quillfeather.', id: 'gone:2' },
  { speaker: 'Ann', text: 'Größenwahn ✓ — the Brindlewort café opens at nine.', id: 'gone:3' },
];
const OTHER_USER: HarnessMessage[] = [
  { speaker: 'Ben', text: 'I sold my Marrowick canoe to a fisherman from Olvenstrand.', id: 'other:1' },
  { speaker: 'Friend', text: 'A fine canoe it was.', id: 'other:2' },
];

/** What the profile is searched for: a label, and the bytes that give it away. */
export interface Needle {
  label: string;
  bytes: Buffer;
}

/** Each word as UTF-8 (also V8's one-byte Latin-1 form of these ASCII words) and as UTF-16LE (V8's two-byte form). */
export function wordNeedles(words: readonly string[]): Needle[] {
  return words.flatMap((word) => (['utf8', 'utf16le'] as const).map((encoding) => ({ label: `${word} (${encoding})`, bytes: Buffer.from(word, encoding) })));
}

/** The needles found in one file of the profile. */
export interface ByteFinding {
  file: string;
  label: string;
  count: number;
  bytes: number;
}

/** Every occurrence of every needle in any file under `dir`. */
export async function findBytes(dir: string, needles: readonly Needle[]): Promise<ByteFinding[]> {
  const findings: ByteFinding[] = [];
  for (const { path, bytes } of await filesUnder(dir)) {
    for (const needle of needles) {
      let count = 0;
      for (let at = bytes.indexOf(needle.bytes); at !== -1; at = bytes.indexOf(needle.bytes, at + 1)) count++;
      if (count > 0) findings.push({ file: relative(dir, path), label: needle.label, count, bytes: count * needle.bytes.length });
    }
  }
  return findings;
}

async function filesUnder(dir: string): Promise<Array<{ path: string; bytes: Buffer }>> {
  const files: Array<{ path: string; bytes: Buffer }> = [];
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    // A file may vanish between listing and reading (LevelDB rotating its log, Chromium's caches).
    const bytes = await readFile(path).catch(() => null);
    if (bytes) files.push({ path, bytes });
  }
  return files;
}

/**
 * Every key of every key ring in the profile (src/store/idb-keys.ts), read from the files
 * Chromium keeps the Origin Private File System in: JSON `{ keys: [{ id, owner, key }] }`.
 */
export async function ringKeysIn(dir: string, owner?: string): Promise<Map<string, string>> {
  const keys = new Map<string, string>();
  for (const { bytes } of await filesUnder(join(dir, 'Default', 'File System'))) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(bytes.toString('utf8'));
    } catch {
      continue;
    }
    const ring = parsed as { keys?: Array<{ id: string; owner: string | null; key: string }> };
    for (const entry of ring.keys ?? []) if (owner === undefined || entry.owner === owner) keys.set(entry.id, entry.key);
  }
  return keys;
}

/** A ring key as the profile could hold it: base64 in its ring file, or raw. */
export function keyNeedles(keys: ReadonlyMap<string, string>): Needle[] {
  return [...keys].flatMap(([id, key]) => [
    { label: `key ${id} (base64)`, bytes: Buffer.from(key, 'latin1') },
    { label: `key ${id} (raw)`, bytes: Buffer.from(key, 'base64') },
  ]);
}

export const bytesOf = (findings: readonly ByteFinding[]): number => findings.reduce((sum, f) => sum + f.bytes, 0);

/** A Chromium on a profile directory of its own, with the page's errors and any external request recorded. */
class Profile {
  readonly problems: string[] = [];
  private context: BrowserContext | null = null;

  private constructor(
    readonly dir: string,
    private readonly siteUrl: string,
  ) {}

  static async create(siteUrl: string): Promise<Profile> {
    return new Profile(await mkdtemp(join(tmpdir(), 'prism-delete-on-disk-')), siteUrl);
  }

  /** Starts Chromium on the profile and opens `page` of the e2e site. */
  async launch(page: string): Promise<Page> {
    const context = await chromium.launchPersistentContext(this.dir, { executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS] });
    this.context = context;
    await context.route(
      (url) => url.hostname !== '127.0.0.1' && url.hostname !== 'localhost',
      (route) => {
        this.problems.push(`external request: ${route.request().url()}`);
        return route.abort('blockedbyclient');
      },
    );
    return this.open(page);
  }

  /** Another page of the site, in the running browser. */
  async open(path: string): Promise<Page> {
    if (!this.context) throw new Error('launch the profile first');
    const page = await this.context.newPage();
    page.on('pageerror', (err) => this.problems.push(`page error: ${err.stack ?? err.message}`));
    await page.goto(new URL(path, this.siteUrl).href);
    return page;
  }

  /** Closes the browser: Chromium then flushes and closes its files. */
  async close(): Promise<void> {
    await this.context?.close();
    this.context = null;
  }

  async remove(): Promise<void> {
    await this.close();
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** What was found of deleted data in the profile at one moment. */
export interface DiskCheck {
  /** Deleted words (text, session id, the deleted user's scope name, a forgotten cache reply). */
  words: ByteFinding[];
  /** The retired keys: those the deletes dropped from the key rings, base64 or raw. */
  retiredKeys: ByteFinding[];
}

export interface DeleteOnDiskOutcome {
  /** The kept session's and kept reply's words, in the clear, before any delete (none when values are sealed). */
  keptBeforeDeletes: ByteFinding[];
  /** Keys sealing saved lexical indexes before the deletes (one a scope searched), and how many of them the deletes retired. */
  derivedKeys: number;
  derivedKeysRetired: number;
  /** How many ring keys the session, cache and user deletes retired (must be some). */
  retiredKeyCount: number;
  /** Ring keys still live after those deletes, and how many of them the search finds: all, or it misses the key rings' files. */
  liveKeys: number;
  liveKeysFound: number;
  afterDeletesOpen: DiskCheck;
  afterDeletesClosed: DiskCheck;
  /** What the cache read after `deleteCached`: the forgotten reply and the kept one. */
  cacheReads: Array<string | undefined>;
  /** After a reopen on the same profile: sessions listed in the default scope and the deleted user's, and whether search finds the kept message. */
  reopened: { sessions: string[]; foundKept: boolean; otherUserSessions: string[] };
  /** After `delete('all')`, every word (the kept ones too) and every key the profile ever held. */
  afterDeleteAllOpen: DiskCheck;
  afterDeleteAllClosed: DiskCheck;
  /** Page errors and external requests (must be none). */
  problems: string[];
}

const DELETED_WORDS = [...DELETED_SESSION_WORDS, DELETED_SESSION, ...DELETED_USER_WORDS, DELETED_USER, DELETED_CACHE_WORD];
const ALL_WORDS = [KEPT_WORD, KEPT_CACHE_WORD, ...DELETED_WORDS];

/** Bytes of deleted data found by one check. */
export const bytesFound = (check: DiskCheck): number => bytesOf(check.words) + bytesOf(check.retiredKeys);

/**
 * Adds a kept session and a doomed one to the default scope and a session for another user,
 * caches two LLM replies; deletes the doomed session, one reply (by its tag) and the other user,
 * and searches the profile with the page open and after the browser closed; reopens and checks
 * what was kept; then deletes everything and searches again.
 */
export async function deleteOnDisk(siteUrl: string): Promise<DeleteOnDiskOutcome> {
  const profile = await Profile.create(siteUrl);
  try {
    let memory = await profile.launch('store-memory.html');
    await memory.evaluate(async ({ name, kept, deleted, other, deletedSession, deletedUser }) => {
      await window.memoryHarness.open(name);
      await window.memoryHarness.add('session-kept', '2024-03-01T10:00:00', kept);
      await window.memoryHarness.add(deletedSession, '2024-03-02T10:00:00', deleted);
      await window.memoryHarness.add('session-other', '2024-03-03T10:00:00', other, { userId: deletedUser });
      // A search of each scope saves its lexical index (sealed under a key of its own, words of
      // every session in it); closing waits for the saves. The deletes below must retire those keys.
      await window.memoryHarness.search('Where does Ann keep her bicycle?');
      await window.memoryHarness.search('Where does Ann keep her bicycle?', { userId: deletedUser });
      await window.memoryHarness.close();
      await window.memoryHarness.open(name);
    }, { name: DB_NAME, kept: KEPT, deleted: DELETED, other: OTHER_USER, deletedSession: DELETED_SESSION, deletedUser: DELETED_USER });
    const derivedKeys = await ringKeysIn(profile.dir, DERIVED_OWNER);
    const cachePage = await profile.open('store.html');
    await cachePage.evaluate(
      ({ name, tag, forgotten, kept }) => window.storeHarness.cacheTwo(name, tag, forgotten, kept),
      { name: DB_NAME, tag: CACHE_TAG, forgotten: `Reply: ${DELETED_CACHE_WORD} was mentioned.`, kept: `Reply: ${KEPT_CACHE_WORD} is fine.` },
    );
    const keptBeforeDeletes = await findBytes(profile.dir, wordNeedles([KEPT_WORD, KEPT_CACHE_WORD]));
    const keysBefore = await ringKeysIn(profile.dir);

    const cacheReads = await cachePage.evaluate(({ name, tag }) => window.storeHarness.forgetTag(name, tag), { name: DB_NAME, tag: CACHE_TAG });
    await memory.evaluate(async ({ deletedSession, deletedUser }) => {
      await window.memoryHarness.delete({ sessionId: deletedSession });
      await window.memoryHarness.delete({ userId: deletedUser });
    }, { deletedSession: DELETED_SESSION, deletedUser: DELETED_USER });
    const liveKeys = await ringKeysIn(profile.dir);
    const retired = new Map([...keysBefore].filter(([id]) => !liveKeys.has(id)));
    const derivedKeysRetired = [...derivedKeys.keys()].filter((id) => retired.has(id)).length;
    const check = async (words: readonly string[], keys: ReadonlyMap<string, string>): Promise<DiskCheck> => ({
      words: await findBytes(profile.dir, wordNeedles(words)),
      retiredKeys: await findBytes(profile.dir, keyNeedles(keys)),
    });
    const afterDeletesOpen = await check(DELETED_WORDS, retired);
    const liveFindings = await findBytes(profile.dir, keyNeedles(liveKeys));
    const liveKeysFound = [...liveKeys.keys()].filter((id) => liveFindings.some((f) => f.label.startsWith(`key ${id} `))).length;
    await profile.close();
    const afterDeletesClosed = await check(DELETED_WORDS, retired);

    memory = await profile.launch('store-memory.html');
    const reopened = await memory.evaluate(async ({ name, keptWord, deletedUser }) => {
      await window.memoryHarness.open(name);
      return {
        sessions: (await window.memoryHarness.list()).map((s) => s.sessionId).sort(),
        foundKept: (await window.memoryHarness.search('Where does Ann keep her bicycle?')).texts.some((t) => t.includes(keptWord)),
        otherUserSessions: (await window.memoryHarness.list({ userId: deletedUser })).map((s) => s.sessionId),
      };
    }, { name: DB_NAME, keptWord: KEPT_WORD, deletedUser: DELETED_USER });
    const everyKey = new Map([...keysBefore, ...(await ringKeysIn(profile.dir))]);
    await memory.evaluate(() => window.memoryHarness.delete('all'));
    const afterDeleteAllOpen = await check(ALL_WORDS, everyKey);
    await profile.close();
    const afterDeleteAllClosed = await check(ALL_WORDS, everyKey);
    return {
      keptBeforeDeletes,
      derivedKeys: derivedKeys.size,
      derivedKeysRetired,
      retiredKeyCount: retired.size,
      liveKeys: liveKeys.size,
      liveKeysFound,
      afterDeletesOpen,
      afterDeletesClosed,
      cacheReads,
      reopened,
      afterDeleteAllOpen,
      afterDeleteAllClosed,
      problems: profile.problems,
    };
  } finally {
    await profile.remove();
  }
}
