/**
 * A compact binary layout for derived state a store keeps (see `LexicalIndex.toBytes`): unsigned
 * varints (7 bits a byte, low first, exact up to 2^53), little-endian float64s, and strings
 * gathered into one UTF-8 block so that a reader decodes them all with one `TextDecoder` call.
 */
export class ByteWriter {
  private bytes = new Uint8Array(1 << 16);
  private length = 0;
  private readonly strings: string[] = [];

  /** A non-negative safe integer. */
  varint(value: number): void {
    if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`varint out of range: ${value}`);
    this.room(8);
    let rest = value;
    while (rest >= 0x80) {
      this.bytes[this.length++] = (rest % 0x80) | 0x80;
      rest = Math.floor(rest / 0x80);
    }
    this.bytes[this.length++] = rest;
  }

  float64(value: number): void {
    this.room(8);
    new DataView(this.bytes.buffer).setFloat64(this.length, value, true);
    this.length += 8;
  }

  /** A string, read back in order by `ByteReader.string`: its length goes here, its text to the block `finish` appends. */
  string(value: string): void {
    this.varint(value.length);
    this.strings.push(value);
  }

  /** The bytes written: the numbers, then the string block and its byte length (a u32 at the very end). */
  finish(): Uint8Array {
    const block = new TextEncoder().encode(this.strings.join(''));
    this.room(block.length + 4);
    this.bytes.set(block, this.length);
    this.length += block.length;
    new DataView(this.bytes.buffer).setUint32(this.length, block.length, true);
    this.length += 4;
    return this.bytes.slice(0, this.length);
  }

  private room(more: number): void {
    if (this.length + more <= this.bytes.length) return;
    const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.length + more));
    grown.set(this.bytes.subarray(0, this.length));
    this.bytes = grown;
  }
}

/** Thrown when bytes do not hold what a `ByteReader` is asked for. */
export class ByteFormatError extends Error {}

/** Reads what a `ByteWriter` wrote, in the same order. */
export class ByteReader {
  private position = 0;
  private readonly end: number;
  private readonly text: string;
  private textPosition = 0;

  constructor(private readonly bytes: Uint8Array) {
    if (bytes.length < 4) throw new ByteFormatError('too short');
    const blockLength = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(bytes.length - 4, true);
    this.end = bytes.length - 4 - blockLength;
    if (this.end < 0) throw new ByteFormatError('string block longer than the bytes');
    try {
      this.text = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(this.end, bytes.length - 4));
    } catch {
      throw new ByteFormatError('string block is not UTF-8');
    }
  }

  /** Bytes of numbers left to read: a count read from the bytes is checked against it before anything is sized by it. */
  get remaining(): number {
    return this.end - this.position;
  }

  varint(): number {
    let value = 0;
    let scale = 1;
    for (;;) {
      if (this.position >= this.end) throw new ByteFormatError('truncated varint');
      const byte = this.bytes[this.position++] as number;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) break;
      scale *= 0x80;
      if (scale > 2 ** 49) throw new ByteFormatError('varint too long');
    }
    return value;
  }

  float64(): number {
    if (this.position + 8 > this.end) throw new ByteFormatError('truncated float');
    const value = new DataView(this.bytes.buffer, this.bytes.byteOffset).getFloat64(this.position, true);
    this.position += 8;
    return value;
  }

  string(): string {
    const length = this.varint();
    if (this.textPosition + length > this.text.length) throw new ByteFormatError('string past the block');
    const value = this.text.slice(this.textPosition, (this.textPosition += length));
    return value;
  }

  /** Whether every number and string written was read. */
  get done(): boolean {
    return this.position === this.end && this.textPosition === this.text.length;
  }
}
