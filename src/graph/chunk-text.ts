import type { Chunk, ChunkTurn } from './types.ts';
import { isLatin1 } from '../util/ascii.ts';

/** One line per turn, with its dialog id so packed context can be scored against gold evidence. */
export function turnLine(turn: ChunkTurn): string {
  return `${turnLineHead(turn)}${turn.text}`;
}

/** What a turn's line holds before its text: `(dialog id) speaker: `. */
export function turnLineHead(turn: Pick<ChunkTurn, 'dialogId' | 'speaker'>): string {
  return `(${turn.dialogId}) ${turn.speaker}: `;
}

/** A chunk's canonical text: its header, then one line per turn (`Chunk.text`; its SHA-256 is the chunk id). */
export function chunkText(header: string, turns: readonly ChunkTurn[]): string {
  return [header, ...turns.map(turnLine)].join('\n');
}

/** A turn's theme, as the local extractor names a turn's Facet: its speaker and its text on one line, capped at 160 characters. */
export function turnTheme(speaker: string, text: string): string {
  const line = oneLineHead(text, THEME_CHARS);
  return speakerLead(speaker) + (line.length > THEME_CHARS ? `${line.slice(0, THEME_CHARS - 3)}…` : line);
}

/**
 * `speaker: `, one string per speaker: a fact's content and a Facet's theme are that lead and a
 * stretch of the turn, and made apart the lead was a string of its own in each (at 30K messages of
 * chat 131K copies of "Assistant: " and "User: ", ~4 MB of heap). Speakers past SPEAKER_LEADS
 * get a lead of their own each time.
 */
export function speakerLead(speaker: string): string {
  const known = speakerLeads.get(speaker);
  if (known !== undefined) return known;
  const lead = `${speaker}: `;
  if (speakerLeads.size < SPEAKER_LEADS) speakerLeads.set(speaker, lead);
  return lead;
}

const SPEAKER_LEADS = 1024;
const speakerLeads = new Map<string, string>();

/** The longest theme, in characters. */
const THEME_CHARS = 160;

/**
 * `text` with its whitespace runs made one space and none at either end (`replace(/\s+/g, ' ')`,
 * then `trim()`), made only as far as it is longer than `limit` characters when the whole line is:
 * every store reads a Facet's theme back this way, once a Facet at every open.
 *
 * The stretches between the runs that collapsing changes (`COLLAPSED`) are found by a regular
 * expression over the head still needed and taken whole: a turn's line is then a slice of its text
 * where nothing in reach collapses (sharing the turn's text: a copy of every turn's head was
 * ~0.5 KB of heap a message of chat), else a few stretches joined into one flat string. Read word
 * by word, character by character, this was ~1.3 µs a Facet, most of a Facet's rebuilding.
 */
function oneLineHead(text: string, limit: number): string {
  const end = text.length;
  const stretches: string[] = [];
  // The line's length so far, each stretch taken with the one space that follows it.
  let made = 0;
  let start = afterSpaces(text, 0);
  while (start < end) {
    // Two characters past what the line still needs: a run found at the last is one at the end.
    const reach = Math.min(end, start + (limit - made) + 2);
    // Never at `start`, which is not whitespace: every stretch holds a character.
    const found = text.slice(start, reach).search(COLLAPSED);
    const stop = found < 0 ? reach : start + found;
    stretches.push(text.slice(start, stop));
    made += stop - start + 1;
    if (made - 1 > limit || stop === end) break;
    start = afterSpaces(text, stop);
  }
  return stretches.length === 1 ? (stretches[0] as string) : stretches.join(' ');
}

/** Whitespace that collapsing changes: a run of two, any but a space, or one at the end of what is read. */
const COLLAPSED = /\s\s|[^\S ]|\s$/;

/** Where the whitespace from `at` on ends. */
function afterSpaces(text: string, at: number): number {
  while (at < text.length && isSpace(text.charCodeAt(at))) at++;
  return at;
}

/** Whether UTF-16 unit `c` is one that `\s` matches (ECMAScript's WhiteSpace and LineTerminator). */
function isSpace(c: number): boolean {
  if (c <= 0x20) return c === 0x20 || (c >= 0x09 && c <= 0x0d);
  return c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}

/**
 * Where each turn's text starts in `chunk.text`, or null when `chunk.text` is not the
 * canonical join of its header and turns (a chunk built by hand).
 */
export function turnTextOffsets(chunk: Pick<Chunk, 'header' | 'text' | 'turns'>): number[] | null {
  const { text } = chunk;
  if (!text.startsWith(chunk.header)) return null;
  const offsets: number[] = [];
  let at = chunk.header.length;
  for (const turn of chunk.turns) {
    const lead = `\n${turnLineHead(turn)}`;
    if (!text.startsWith(lead, at) || !text.startsWith(turn.text, at + lead.length)) return null;
    offsets.push(at + lead.length);
    at += lead.length + turn.text.length;
  }
  return at === text.length ? offsets : null;
}

/**
 * Points each turn's text into the chunk's text, which holds it whole (header, then a line
 * per turn): a session's text is then held once, not twice. A slice of a string shares its
 * characters in JavaScript engines, and reads as fast. The stores do this as they read a chunk,
 * before the records that slice its turns (a FacetPoint's content) are rebuilt: those slices
 * then share the chunk's text too, where they held the turn texts JSON.parse made, a second
 * copy of every session (~1 KB a message of chat).
 */
export function shareTurnTexts(chunk: Chunk): void {
  // A chunk a store read is shared already when the graph takes it: its text is not compared
  // with its turns a second time (at 30K messages that was ~3% of a cold open in Chromium).
  if (!sharedChunks.has(chunk)) pointTurnsInto(chunk, turnTextOffsets(chunk));
}

/** A chunk read without its text (a store keeps `text` null where it is the canonical join), its turns holding string texts. */
export type UnjoinedChunk = Omit<Chunk, 'text'> & { text: string | null };

/**
 * Gives a chunk read without its text that text, and points each turn's text into it as
 * `shareTurnTexts` would. The offsets are known as the text is joined, so nothing is compared: at
 * 100K messages of chat that second pass over every session's text was ~0.3 s of an open.
 */
export function joinChunkText(chunk: UnjoinedChunk): asserts chunk is Chunk {
  joinChunkTexts([chunk]);
}

/**
 * `joinChunkText` of several chunks at once: their texts are slices of one string, laid end to
 * end. A session's text (~12 KB of chat) is made where the engine makes young objects, and at an
 * open every one survives, each copied by the collector from there into the old generation (at
 * 100K messages ~128 MB, copied twice); a string of a few megabytes is made in the old generation
 * at once. A chunk deleted later keeps its stretch of that string in memory while another chunk
 * of its batch lives (its text is gone from the store; nothing reads it).
 */
export function joinChunkTexts(chunks: readonly UnjoinedChunk[]): void {
  const pieces: string[] = [];
  const ends: number[] = [];
  const offsets: number[][] = [];
  let at = 0;
  for (const chunk of chunks) {
    pieces.push(chunk.header);
    at += chunk.header.length;
    const starts: number[] = [];
    for (const turn of chunk.turns) {
      const lead = `\n${turnLineHead(turn)}`;
      pieces.push(lead, turn.text);
      at += lead.length;
      starts.push(at);
      at += turn.text.length;
    }
    ends.push(at);
    offsets.push(starts);
  }
  const joined = pieces.join('');
  chunks.forEach((chunk, i) => {
    chunk.text = joined.slice(i === 0 ? 0 : ends[i - 1], ends[i]);
    const starts = offsets[i] as number[];
    // From the joined string itself (a slice of a slice is made of the string under both).
    chunk.turns.forEach((turn, k) => {
      const start = starts[k] as number;
      turn.text = joined.slice(start, start + turn.text.length);
    });
    sharedChunks.add(chunk as Chunk);
  });
}

/**
 * Chunks decoded one by one whose texts are joined a batch at a time (`joinChunkTexts`), once
 * their turns hold about `JOINED_CHARS` characters, and by `flush` at the end of a read: until
 * then a chunk has no text. The strings the turns were read as are dropped a batch at a time,
 * while they are still young.
 */
export class ChunkTextJoiner {
  /**
   * Two batches: of chunks whose text is all Latin-1, and of the others. An engine keeps a string
   * with one character past Latin-1 at two bytes a character, all of it: one curly quote or emoji
   * would double a batch of plain text (at 100K messages of chat, +84 MB of heap in one batch).
   */
  private readonly batches = [new TextBatch(), new TextBatch()];

  /** Joins `chunk` with the batch it falls in. */
  readonly join = (chunk: UnjoinedChunk): void => {
    const batch = this.batches[isLatin1Chunk(chunk) ? 0 : 1] as TextBatch;
    batch.chunks.push(chunk);
    for (const turn of chunk.turns) batch.chars += turn.text.length;
    if (batch.chars >= JOINED_CHARS) batch.flush();
  };

  /** Joins the chunks not joined yet (none: nothing to do). */
  flush(): void {
    for (const batch of this.batches) batch.flush();
  }
}

class TextBatch {
  chunks: UnjoinedChunk[] = [];
  chars = 0;

  flush(): void {
    if (this.chunks.length === 0) return;
    joinChunkTexts(this.chunks);
    this.chunks = [];
    this.chars = 0;
  }
}

/** Whether every character of the chunk's text (its header and turns' lines) is Latin-1. */
function isLatin1Chunk(chunk: UnjoinedChunk): boolean {
  return isLatin1(chunk.header) && chunk.turns.every((turn) => isLatin1(turn.text) && isLatin1(turn.speaker) && isLatin1(turn.dialogId));
}

/** Characters of turn text a batch of joined chunk texts holds at least: ~2 MB of chat, made in the old generation whole. */
const JOINED_CHARS = 1 << 21;

/** Points turn `i`'s text at `offsets[i]` in the chunk's text (none where `offsets` is null), and marks the chunk shared. */
function pointTurnsInto(chunk: Chunk, offsets: readonly number[] | null): void {
  chunk.turns.forEach((turn, i) => {
    const offset = offsets?.[i];
    if (offset !== undefined) turn.text = chunk.text.slice(offset, offset + turn.text.length);
  });
  sharedChunks.add(chunk);
}

/** Chunks whose turn texts `shareTurnTexts` or `joinChunkTexts` has pointed into their text (a chunk's text and turns are never changed in place). */
const sharedChunks = new WeakSet<Chunk>();
