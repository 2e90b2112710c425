/**
 * The protobuf wire format, as far as rewriting an ONNX model needs it: split a message into its
 * fields (kept as byte ranges, so untouched fields are copied, not decoded), and write messages
 * back as lists of byte chunks that are joined once at the end.
 */

import { putVarint, readVarint } from '../util/bytes.ts';

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_BYTES = 2;
const WIRE_FIXED32 = 5;

/** One field of a message: its number, wire type, the whole field's bytes and, for varints, the value. */
export interface WireField {
  readonly field: number;
  readonly wire: number;
  /** The field as encoded, tag included. */
  readonly encoded: Uint8Array;
  /** The payload of a length-delimited field (a string, bytes, packed numbers or a nested message). */
  readonly bytes: Uint8Array;
  /** The value of a varint field (exact up to 2^53). */
  readonly varint: number;
}

export class WireFormatError extends Error {
  override readonly name = 'WireFormatError';
}

function wireVarint(buf: Uint8Array, start: number): [value: number, next: number] {
  // Ten bytes: protobuf writes a negative int64 that long.
  const read = readVarint(buf, start, buf.length, 10);
  if (!read) throw new WireFormatError(`truncated varint at byte ${start}`);
  return read;
}

/** Splits an encoded message into its fields, in order. */
export function readFields(message: Uint8Array): WireField[] {
  const fields: WireField[] = [];
  let pos = 0;
  while (pos < message.length) {
    const start = pos;
    const [tag, afterTag] = wireVarint(message, pos);
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    let bytes = message.subarray(afterTag, afterTag);
    let varint = 0;
    if (wire === WIRE_VARINT) [varint, pos] = wireVarint(message, afterTag);
    else if (wire === WIRE_FIXED64) pos = afterTag + 8;
    else if (wire === WIRE_FIXED32) pos = afterTag + 4;
    else if (wire === WIRE_BYTES) {
      const [length, payloadStart] = wireVarint(message, afterTag);
      pos = payloadStart + length;
      bytes = message.subarray(payloadStart, pos);
    } else throw new WireFormatError(`unsupported wire type ${wire} at byte ${start}`);
    if (pos > message.length) throw new WireFormatError(`field ${field} at byte ${start} runs past the end of the message`);
    fields.push({ field, wire, encoded: message.subarray(start, pos), bytes, varint });
  }
  return fields;
}

const utf8Decoder = new TextDecoder();
const utf8Encoder = new TextEncoder();

export function fieldString(field: WireField): string {
  return utf8Decoder.decode(field.bytes);
}

/** The values of a repeated varint field, whether packed or not. */
export function fieldVarints(fields: readonly WireField[], number: number): number[] {
  const values: number[] = [];
  for (const f of fields) {
    if (f.field !== number) continue;
    if (f.wire === WIRE_VARINT) values.push(f.varint);
    else for (let pos = 0; pos < f.bytes.length; ) {
      const [value, next] = wireVarint(f.bytes, pos);
      values.push(value);
      pos = next;
    }
  }
  return values;
}

/** An encoded message (or part of one) as byte chunks, joined only when the whole model is written. */
export type Chunks = Uint8Array[];

function varintBytes(value: number): Uint8Array {
  const bytes = new Uint8Array(8);
  return bytes.subarray(0, putVarint(bytes, 0, value));
}

export function byteLength(chunks: Chunks): number {
  return chunks.reduce((sum, chunk) => sum + chunk.length, 0);
}

/** A length-delimited field holding `payload` (a nested message, bytes or a string). */
export function bytesField(number: number, payload: Chunks | Uint8Array | string): Chunks {
  const chunks = typeof payload === 'string' ? [utf8Encoder.encode(payload)] : payload instanceof Uint8Array ? [payload] : payload;
  return [varintBytes(number * 8 + WIRE_BYTES), varintBytes(byteLength(chunks)), ...chunks];
}

export function varintField(number: number, value: number): Chunks {
  return [varintBytes(number * 8 + WIRE_VARINT), varintBytes(value)];
}

