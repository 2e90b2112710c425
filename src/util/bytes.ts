/** `chunks` end to end in one array. */
export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

/**
 * Writes `value` (a non-negative safe integer) at `at` as an unsigned varint (7 bits a byte, low
 * first; at most 8 bytes) and returns the position after it. `bytes` must have the room.
 */
export function putVarint(bytes: Uint8Array, at: number, value: number): number {
  let rest = value;
  let next = at;
  while (rest >= 0x80) {
    bytes[next++] = (rest % 0x80) | 0x80;
    rest = Math.floor(rest / 0x80);
  }
  bytes[next++] = rest;
  return next;
}

/**
 * The unsigned varint at `start` (exact up to 2^53) and the position after it; null when it runs
 * past `end` or past `maxBytes` bytes.
 */
export function readVarint(bytes: Uint8Array, start: number, end: number, maxBytes: number): [value: number, next: number] | null {
  let value = 0;
  let scale = 1;
  for (let at = start; at < end && at - start < maxBytes; at++) {
    const byte = bytes[at] as number;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return [value, at + 1];
    scale *= 0x80;
  }
  return null;
}

/**
 * A compact binary layout for derived state a store keeps (see `LexicalIndex.toBytes`): unsigned
 * varints (7 bits a byte, low first, exact up to 2^53), little-endian float64s, and strings
 * gathered into one UTF-8 block so that a reader decodes them all with one `TextDecoder` call.
 */
export class ByteWriter {
  private buffer = new Uint8Array(1 << 16);
  private length = 0;
  private readonly strings: string[] = [];

  /** A non-negative safe integer. */
  varint(value: number): void {
    if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`varint out of range: ${value}`);
    this.room(8);
    this.length = putVarint(this.buffer, this.length, value);
  }

  float64(value: number): void {
    this.room(8);
    new DataView(this.buffer.buffer).setFloat64(this.length, value, true);
    this.length += 8;
  }

  /** Bytes as they are, read back by `ByteReader.bytes` given their length (written apart, before them). */
  bytes(data: Uint8Array): void {
    this.room(data.length);
    this.buffer.set(data, this.length);
    this.length += data.length;
  }

  /** A string, read back in order by `ByteReader.string`: its length goes here, its text to the block `finish` appends. */
  string(value: string): void {
    this.varint(value.length);
    this.strings.push(value);
  }

  /** What `other` holds, as if it had been written here: its numbers and bytes, then its strings in order. */
  append(other: ByteWriter): void {
    this.room(other.length);
    this.buffer.set(other.buffer.subarray(0, other.length), this.length);
    this.length += other.length;
    for (const value of other.strings) this.strings.push(value);
  }

  /** The bytes written: the numbers, then the string block and its byte length (a u32 at the very end). */
  finish(): Uint8Array {
    const block = new TextEncoder().encode(this.strings.join(''));
    this.room(block.length + 4);
    this.buffer.set(block, this.length);
    this.length += block.length;
    new DataView(this.buffer.buffer).setUint32(this.length, block.length, true);
    this.length += 4;
    return this.buffer.slice(0, this.length);
  }

  private room(more: number): void {
    if (this.length + more <= this.buffer.length) return;
    const grown = new Uint8Array(Math.max(this.buffer.length * 2, this.length + more));
    grown.set(this.buffer.subarray(0, this.length));
    this.buffer = grown;
  }
}

/**
 * The unsigned varint (a safe integer: 8 bytes at most) at `cursor.at`, moving the cursor past
 * it; a `ByteFormatError` when it runs past `end`. As `readVarint`, without a pair made per
 * number: a lexical index's postings are tens of millions.
 */
export function nextVarint(bytes: Uint8Array, cursor: { at: number }, end: number): number {
  let value = 0;
  let scale = 1;
  for (const start = cursor.at; cursor.at < end && cursor.at - start < 8; scale *= 0x80) {
    const byte = bytes[cursor.at++] as number;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return value;
  }
  throw new ByteFormatError('truncated or overlong varint');
}

/** Thrown when bytes do not hold what a `ByteReader` is asked for. */
export class ByteFormatError extends Error {}

/** Reads what a `ByteWriter` wrote, in the same order. */
export class ByteReader {
  /** Where the next number is read. */
  private readonly cursor = { at: 0 };
  private readonly end: number;
  private readonly text: string;
  private textPosition = 0;

  constructor(readonly source: Uint8Array) {
    if (source.length < 4) throw new ByteFormatError('too short');
    const blockLength = new DataView(source.buffer, source.byteOffset, source.byteLength).getUint32(source.length - 4, true);
    this.end = source.length - 4 - blockLength;
    if (this.end < 0) throw new ByteFormatError('string block longer than the bytes');
    try {
      this.text = new TextDecoder('utf-8', { fatal: true }).decode(source.subarray(this.end, source.length - 4));
    } catch {
      throw new ByteFormatError('string block is not UTF-8');
    }
  }

  /** Bytes of numbers left to read: a count read from the bytes is checked against it before anything is sized by it. */
  get remaining(): number {
    return this.end - this.cursor.at;
  }

  varint(): number {
    return nextVarint(this.source, this.cursor, this.end);
  }

  float64(): number {
    if (this.cursor.at + 8 > this.end) throw new ByteFormatError('truncated float');
    const value = new DataView(this.source.buffer, this.source.byteOffset).getFloat64(this.cursor.at, true);
    this.cursor.at += 8;
    return value;
  }

  /** Steps over the next `length` bytes, and tells where in `source` they start. */
  skip(length: number): number {
    if (length > this.remaining) throw new ByteFormatError('bytes past the end');
    const start = this.cursor.at;
    this.cursor.at += length;
    return start;
  }

  string(): string {
    const length = this.varint();
    if (this.textPosition + length > this.text.length) throw new ByteFormatError('string past the block');
    return this.text.slice(this.textPosition, (this.textPosition += length));
  }

  /** Whether every number and string written was read. */
  get done(): boolean {
    return this.cursor.at === this.end && this.textPosition === this.text.length;
  }
}
