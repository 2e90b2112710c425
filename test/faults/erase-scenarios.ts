/**
 * Delete on disk: a real Memory on a real SQLite file holds two users' sessions; one session
 * and then one whole user are deleted, and every file of the store directory is searched,
 * byte for byte, for the deleted text and the deleted user's name. Shared by the fault suite
 * (erase.fault.ts) and the vitest tests (test/store-erase.test.ts).
 */
import { readdir, readFile } from 'node:fs/promises';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import type { Embedder } from '../../src/embed/types.ts';
import { Memory } from '../../src/memory.ts';
import { openSqliteStore } from '../../src/store/sqlite.node.ts';
import type { VectorIndex } from '../../src/vector/types.ts';

export interface EraseRuntime {
  embedder: Embedder;
  createIndex: (dim: number) => VectorIndex;
}

/** Where the search found a needle: the file (relative to the store directory) and the bytes found. */
export interface Hit {
  file: string;
  needle: string;
  bytes: number;
}

/** The bytes of `needles` (UTF-8) found in every file under `dir`, one hit per occurrence. */
export async function findOnDisk(dir: string, needles: readonly string[]): Promise<Hit[]> {
  const hits: Hit[] = [];
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const content = await readFile(path);
    for (const needle of needles) {
      const bytes = Buffer.from(needle, 'utf8');
      for (let at = content.indexOf(bytes); at !== -1; at = content.indexOf(bytes, at + 1)) {
        hits.push({ file: path.slice(dir.length + 1), needle, bytes: bytes.length });
      }
    }
  }
  return hits;
}

/** Share of kept messages the byte search must find on disk (see `EraseOutcome.keptOnDisk`). */
export const KEPT_FOUND_SHARE = 0.95;

export const bytesOf = (hits: readonly Hit[]): number => hits.reduce((sum, hit) => sum + hit.bytes, 0);

/** A message's note marker, `note <tag>s<session>m<message> says`: short, so a page end seldom cuts it. */
function markerOf(text: string): string {
  const marker = /note \S+ says/.exec(text)?.[0];
  if (marker === undefined) throw new Error(`no note marker in ${text}`);
  return marker;
}

/**
 * The marker's word as the lexical index keeps it: `<tag>s<session>m<message>` cut at the tag's
 * hyphens, its last part (lower-case, no suffix to strip). A saved index holds it as a term.
 */
function markerTermOf(text: string): string {
  return markerOf(text).split(' ')[1]!.split('-').at(-1)!.toLowerCase();
}

/** One user's sessions: every message carries a word found nowhere else, `<tag>s<session>m<message>`. */
function sessionsOf(tag: string, sessions: number, messages: number): { sessionId: string; texts: string[] }[] {
  return Array.from({ length: sessions }, (_, s) => ({
    sessionId: `${tag}-session-${String(s).padStart(2, '0')}`,
    texts: Array.from(
      { length: messages },
      (_, m) => `Grüße aus Łódź: note ${tag}s${s}m${m} says the ${['harbour', 'violin', 'orchard', 'lantern'][m % 4]} key is under stone ${s * messages + m}.`,
    ),
  }));
}

export interface EraseOutcome {
  /** Deleted text or name found after each step: the session delete and the user delete (store open), and after close. */
  afterSessionDelete: Hit[];
  afterUserDelete: Hit[];
  afterClose: Hit[];
  /**
   * Kept messages the byte search finds after close, whole or by their note's marker (the
   * search itself works). SQLite cuts a record that spills onto overflow pages at each page's
   * end, and a message is stored once, so a few are split on disk: a few percent may be missed.
   */
  keptOnDisk: number;
  /** Kept messages a search still finds in the reopened store. */
  keptSearchable: number;
  kept: number;
  /** Milliseconds of the session delete and of the user delete. */
  sessionDeleteMs: number;
  userDeleteMs: number;
  /** Bytes of the lexical indexes saved beside the records before the deletes. */
  savedIndexBytes: number;
}

/**
 * `keeper` (kept) and `gone` (deleted whole) each add `sessions` sessions of `messages`
 * messages; then one of the keeper's sessions is deleted, then the whole `gone` user.
 */
export async function deleteOnDisk(dir: string, runtime: EraseRuntime, size: { sessions: number; messages: number }, users = { keeper: 'keeper-ana', gone: 'gone-zephyrine' }): Promise<EraseOutcome> {
  const path = join(dir, 'memory.sqlite');
  const open = async () => Memory.open({ store: await openSqliteStore(path), embedder: runtime.embedder, createIndex: runtime.createIndex, llm: null });
  const keeper = sessionsOf(users.keeper, size.sessions, size.messages);
  const gone = sessionsOf(users.gone, size.sessions, size.messages);
  let memory = await open();
  for (const [userId, sessions] of [[users.keeper, keeper], [users.gone, gone]] as const) {
    for (const [s, session] of sessions.entries()) {
      const messages = session.texts.map((text, m) => ({ speaker: m % 2 === 0 ? 'Ana' : 'Ben', text, id: `${session.sessionId}:${m}` }));
      await memory.add(messages, { userId, sessionId: session.sessionId, date: `2024-03-${String(s + 1).padStart(2, '0')}` });
    }
  }
  // A search of each user saves its lexical index beside the records (close waits for the saves),
  // so the deletes below must drop a saved index that holds their words.
  for (const userId of [users.keeper, users.gone]) await memory.search('Where is the harbour key?', { userId });
  await memory.close();
  const raw = new Database(path, { readonly: true });
  const savedIndexBytes = Number((raw.prepare('SELECT coalesce(sum(length(data)), 0) AS bytes FROM derived').get() as { bytes: number }).bytes);
  raw.close();
  memory = await open();
  // The middle session: its delete also bridges the episode chain around it.
  const [deletedSession, keptSessions] = [keeper[Math.floor(size.sessions / 2)]!, keeper.filter((_, s) => s !== Math.floor(size.sessions / 2))];
  let started = performance.now();
  await memory.delete({ userId: users.keeper, sessionId: deletedSession.sessionId });
  const sessionDeleteMs = performance.now() - started;
  const deletedTexts = [...deletedSession.texts, ...deletedSession.texts.map(markerOf), ...deletedSession.texts.map(markerTermOf)];
  const afterSessionDelete = await findOnDisk(dir, [...deletedTexts, deletedSession.sessionId]);
  started = performance.now();
  await memory.delete({ userId: users.gone });
  const userDeleteMs = performance.now() - started;
  const goneNeedles = [...gone.flatMap((session) => [...session.texts, ...session.texts.map(markerOf), ...session.texts.map(markerTermOf), session.sessionId]), users.gone];
  const afterUserDelete = await findOnDisk(dir, [...deletedTexts, ...goneNeedles]);
  await memory.close();
  const afterClose = await findOnDisk(dir, [...deletedTexts, deletedSession.sessionId, ...goneNeedles]);

  const keptTexts = keptSessions.flatMap((session) => session.texts);
  const found = new Set((await findOnDisk(dir, [...keptTexts, ...keptTexts.map(markerOf)])).map((hit) => hit.needle));
  const onDisk = keptTexts.filter((text) => found.has(text) || found.has(markerOf(text)));
  memory = await open();
  let keptSearchable = 0;
  for (const text of keptTexts) {
    const word = /note (\S+) says/.exec(text)?.[1] ?? '';
    const found = await memory.search(`What does note ${word} say?`, { userId: users.keeper, budget: 256 });
    if (found.context.includes(word)) keptSearchable++;
  }
  await memory.close();
  return { afterSessionDelete, afterUserDelete, afterClose, keptOnDisk: onDisk.length, keptSearchable, kept: keptTexts.length, sessionDeleteMs, userDeleteMs, savedIndexBytes };
}
