/**
 * A store value's bytes packed before they are sealed: a byte-aligned LZ77 of this project's own
 * (LZ4's sequence layout: a token of two 4-bit lengths, literals, a 16-bit offset), since sealed
 * bytes no longer compress and a browser's stored bytes set how long an open reads. In Chromium,
 * IndexedDB hands a cold open its values at ~25–40 ms a MB whatever the records; at 30K messages
 * of chat the records' JSON and chunk text were 53 of the 82 MB read; they pack ~2.2× (chunk text)
 * to ~3.5× (node records). Deflate packs text ~1.4× tighter, but `DecompressionStream` cost
 * Chromium ~0.5 ms a value (a cold open reads ~18,000) and an inflater of our own decodes at a
 * fraction of this one's speed, in the worker that sets the pace.
 *
 * A packed value starts with four 0xff bytes, then its unpacked length (u32, little endian), then
 * its sequences. No value a store packs starts so unpacked: it is UTF-8 text (no
 * byte of which is 0xff) or group values led by a u32 length (0xffffffff would be a 4 GiB
 * value). So values written before packing, or left unpacked where it gained nothing, read as
 * they are: `unpacked` hands them back unchanged.
 */

/** Bytes before a packed value's sequences: the mark and the unpacked length. */
const HEAD_BYTES = 8;
/** The shortest match a sequence copies (a shorter one costs more than its literals). */
const MIN_MATCH = 4;
/** How far back a match may start: a 16-bit offset (2^16 − 1, so also the mask of a position in `chain`). */
const WINDOW = 65_535;
/** log2 of the match finder's slots: 16K positions, one per hash of 4 bytes (64 KB, kept between calls). */
const HASH_BITS = 14;
/** Values shorter than this are left as they are: too short to hold a match worth its header. */
const MIN_PACKED_INPUT = 64;
/**
 * Past a run of misses the finder steps further at each (one byte more every 2^SKIP_SHIFT misses
 * in a row), so bytes that do not compress cost little to try.
 */
const SKIP_SHIFT = 5;

/** Earlier positions with the same hash tried for the longest match: deeper packs text a little tighter (8: chunk text 2.22× against 1.99× with 1) and writes slower. */
const CHAIN_DEPTH = 8;

/**
 * The match finder's state, kept between calls (a value is packed in one synchronous call):
 * `slots`, by hash of 4 bytes, holds the last position seen there plus the call's `base`, and
 * `chain`, by position modulo the window, the position before it with the same hash (relative to
 * the call's own start). Each call starts `base` above every value earlier calls wrote, so their
 * entries read as no position (below 0), and the tables are never cleared but when `base` would
 * overflow.
 */
const slots = new Int32Array(1 << HASH_BITS);
const chain = new Int32Array(WINDOW + 1);
let base = 1;

/**
 * `plain` packed, when that makes it shorter by an eighth or more; else `plain` itself (which
 * `unpacked` hands back as it is).
 */
export function packValue(plain: Uint8Array<ArrayBuffer>): Uint8Array<ArrayBuffer> {
  const length = plain.length;
  if (length < MIN_PACKED_INPUT) return plain;
  // The worst case: every byte a literal, one length byte more per 255 of them, and the head.
  const out = new Uint8Array(HEAD_BYTES + length + Math.ceil(length / 255) + 16);
  if (base + length >= 0x7fff_ffff) {
    slots.fill(0);
    base = 1;
  }
  const offset = base;
  base += length;
  out.fill(0xff, 0, 4);
  new DataView(out.buffer).setUint32(4, length, true);
  let op = HEAD_BYTES;
  let anchor = 0;
  let at = 0;
  let misses = 0;
  // The last position a match may start at: it reads four bytes.
  const lastStart = length - MIN_MATCH;
  while (at <= lastStart) {
    const slot = slotOf(plain, at);
    let candidate = slots[slot]! - offset;
    slots[slot] = at + offset;
    chain[at & WINDOW] = candidate;
    // The longest match among the last `CHAIN_DEPTH` positions with this hash, within the window.
    let matched = 0;
    let from = 0;
    for (let tries = CHAIN_DEPTH; tries > 0 && candidate >= 0 && at - candidate <= WINDOW; tries--) {
      // A candidate that differs at the longest match's end cannot beat it.
      if (plain[candidate + matched] === plain[at + matched]) {
        let run = 0;
        while (at + run < length && plain[candidate + run] === plain[at + run]) run++;
        if (run > matched) {
          matched = run;
          from = candidate;
        }
      }
      candidate = chain[candidate & WINDOW]!;
    }
    if (matched < MIN_MATCH) {
      at += 1 + (misses++ >> SKIP_SHIFT);
      continue;
    }
    misses = 0;
    op = writeSequence(out, op, plain, anchor, at, at - from, matched);
    const end = at + matched;
    // The positions inside the match go in too (text repeats in runs of matches).
    for (at++; at < end && at <= lastStart; at++) {
      const inner = slotOf(plain, at);
      chain[at & WINDOW] = slots[inner]! - offset;
      slots[inner] = at + offset;
    }
    at = end;
    anchor = at;
  }
  op = writeSequence(out, op, plain, anchor, length, 0, 0);
  if (op > length - (length >> 3)) return plain;
  return out.slice(0, op);
}

/** The slot of the 4 bytes at `at` (a multiplicative hash). */
function slotOf(plain: Uint8Array, at: number): number {
  const word = plain[at]! | (plain[at + 1]! << 8) | (plain[at + 2]! << 16) | (plain[at + 3]! << 24);
  return Math.imul(word, 0x9e3779b1) >>> (32 - HASH_BITS);
}

/** Writes one sequence at `op`: the literals `plain[from, to)`, then (unless `matched` is 0) a match `distance` back; the position after it. */
function writeSequence(out: Uint8Array, op: number, plain: Uint8Array, from: number, to: number, distance: number, matched: number): number {
  const literals = to - from;
  const token = op++;
  op = writeLengthTail(out, op, literals);
  out.set(plain.subarray(from, to), op);
  op += literals;
  let low = 0;
  if (matched > 0) {
    out[op++] = distance & 0xff;
    out[op++] = distance >>> 8;
    low = Math.min(matched - MIN_MATCH, 15);
    op = writeLengthTail(out, op, matched - MIN_MATCH);
  }
  out[token] = (Math.min(literals, 15) << 4) | low;
  return op;
}

/** A length's bytes beyond its token's 4 bits (which hold up to 14, or 15 for "more follows"): 255s, then the rest. */
function writeLengthTail(out: Uint8Array, op: number, length: number): number {
  if (length < 15) return op;
  let rest = length - 15;
  for (; rest >= 255; rest -= 255) out[op++] = 255;
  out[op++] = rest;
  return op;
}

/**
 * A stored value's plain bytes: `bytes` unpacked where `packValue` packed them, else `bytes`
 * itself. Throws an Error when a packed value's sequences do not make its stated length (a
 * value that passed its seal's check was written so, so only a bug or a forged key makes one).
 *
 * It names nothing outside itself, so the reading worker runs it from its source text (see
 * read-worker.ts); its constants are written out here for that reason.
 */
export function unpacked(bytes: Uint8Array<ArrayBuffer>): Uint8Array<ArrayBuffer> {
  if (bytes.length < 8 || bytes[0] !== 0xff || bytes[1] !== 0xff || bytes[2] !== 0xff || bytes[3] !== 0xff) return bytes;
  const size = (bytes[4]! | (bytes[5]! << 8) | (bytes[6]! << 16) | (bytes[7]! << 24)) >>> 0;
  const end = bytes.length;
  const damaged = (why: string): Error => new Error(`a packed value is damaged: ${why}`);
  // A sequence makes at most 255 bytes a byte it reads (a length's 255s), with room to spare.
  if (size > (end - 8) * 256 + 16) throw damaged(`it says ${size} bytes`);
  const out = new Uint8Array(size);
  let ip = 8;
  let op = 0;
  const lengthTail = (length: number): number => {
    if (length < 15) return length;
    for (;;) {
      if (ip >= end) throw damaged('a length runs past its end');
      const more = bytes[ip++]!;
      length += more;
      if (more < 255) return length;
    }
  };
  for (;;) {
    if (ip >= end) throw damaged('it ends before its last sequence');
    const token = bytes[ip++]!;
    const literals = lengthTail(token >>> 4);
    if (ip + literals > end || op + literals > size) throw damaged('literals run past its end');
    // Short runs byte by byte: a view to copy from costs more than the copy.
    if (literals > 32) {
      out.set(bytes.subarray(ip, ip + literals), op);
      ip += literals;
      op += literals;
    } else for (let i = 0; i < literals; i++) out[op++] = bytes[ip++]!;
    if (op === size) {
      if (ip !== end || (token & 15) !== 0) throw damaged('bytes follow its last sequence');
      return out;
    }
    if (ip + 2 > end) throw damaged('an offset runs past its end');
    const distance = bytes[ip]! | (bytes[ip + 1]! << 8);
    ip += 2;
    const matched = lengthTail(token & 15) + 4;
    if (distance === 0 || distance > op) throw damaged('a match starts before it');
    if (op + matched > size) throw damaged('a match runs past its length');
    // Byte by byte where short, or where source and copy overlap (a run: it repeats the bytes just written).
    if (distance >= matched && matched > 32) {
      out.copyWithin(op, op - distance, op - distance + matched);
      op += matched;
    } else for (let from = op - distance, stop = op + matched; op < stop; ) out[op++] = out[from++]!;
  }
}
