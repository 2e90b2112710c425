import { describe, expect, it } from 'vitest';
import { ByteReader, ByteWriter } from '../src/util/bytes.ts';

describe('ByteWriter', () => {
  it('appends another writer as if its numbers, bytes and strings had been written in place', () => {
    const write = (out: ByteWriter, from: number) => {
      out.varint(from);
      out.string(`term ${from} é`);
      out.bytes(Uint8Array.of(from, 255, 0));
      out.varint(2 ** 40 + from);
      out.string('');
    };
    const whole = new ByteWriter();
    whole.string('head');
    for (let i = 0; i < 3; i++) write(whole, i);
    const parts = new ByteWriter();
    parts.string('head');
    const tail = new ByteWriter();
    for (let i = 0; i < 3; i++) write(tail, i);
    parts.append(tail);
    const bytes = parts.finish();
    expect(bytes).toStrictEqual(whole.finish());
    const read = new ByteReader(bytes);
    expect(read.string()).toBe('head');
    expect(read.varint()).toBe(0);
    expect(read.string()).toBe('term 0 é');
  });
});
