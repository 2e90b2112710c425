import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import type { Socket } from 'node:net';

/** An isolate's memory as its V8 inspector reports it, after a full garbage collection. */
export interface IsolateMemory {
  /** JavaScript heap: bytes in live objects, and bytes the heap holds. */
  heapUsed: number;
  heapTotal: number;
  /** ArrayBuffer contents, held outside the heap. */
  backingStores: number;
  /** The size of every live `WebAssembly.Memory` (onnxruntime's, usearch's). */
  wasmMemories: number[];
}

/**
 * Reads the memory of the isolate behind `workerd serve --inspector-addr=127.0.0.1:<port>`'s
 * `service`: the heap usage, and every WebAssembly.Memory found by `Runtime.queryObjects`, which
 * collects garbage first, so what is counted is what lives.
 */
export async function isolateMemory(port: number, service: string): Promise<IsolateMemory> {
  const session = await inspectorSessionWhenListed(port, service);
  try {
    const created = session.event('Runtime.executionContextCreated');
    await session.send('Runtime.enable');
    const { context } = (await created) as { context: { id: number } };
    const prototype = (await session.send('Runtime.evaluate', { expression: 'WebAssembly.Memory.prototype', contextId: context.id })) as RemoteResult;
    const found = (await session.send('Runtime.queryObjects', { prototypeObjectId: prototype.result.objectId })) as { objects: { objectId: string } };
    const sizes = (await session.send('Runtime.callFunctionOn', {
      objectId: found.objects.objectId,
      functionDeclaration: 'function () { return this.map((memory) => memory.buffer.byteLength); }',
      returnByValue: true,
    })) as { result: { value: number[] } };
    const heap = (await session.send('Runtime.getHeapUsage')) as { usedSize: number; totalSize: number; backingStorageSize: number };
    return { heapUsed: heap.usedSize, heapTotal: heap.totalSize, backingStores: heap.backingStorageSize, wasmMemories: sizes.result.value };
  } finally {
    session.close();
  }
}

interface RemoteResult {
  result: { objectId: string };
}

interface InspectorSession {
  send(method: string, params?: Record<string, unknown>): Promise<unknown>;
  /** The params of the next event named `method`. */
  event(method: string): Promise<unknown>;
  close(): void;
}

/**
 * The inspector lists a service once workerd has made its isolate, which on a loaded machine
 * may come after the request that made it has answered: a 404 is asked again, for up to 20 s.
 */
async function inspectorSessionWhenListed(port: number, service: string): Promise<InspectorSession> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      return await inspectorSession(port, service);
    } catch (err) {
      if (!(err instanceof InspectorNotListed) || Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

class InspectorNotListed extends Error {}

/**
 * The DevTools protocol over a WebSocket, with just enough of RFC 6455 for it (Node 20 has no
 * WebSocket client without a flag): masked text frames out; text frames, fragmented or not, in.
 */
function inspectorSession(port: number, service: string): Promise<InspectorSession> {
  return new Promise((resolve, reject) => {
    const upgrade = request({
      host: '127.0.0.1',
      port,
      path: `/${service}`,
      headers: { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': randomBytes(16).toString('base64') },
    });
    upgrade.once('error', reject);
    upgrade.once('response', (response) => {
      const message = `inspector answered HTTP ${response.statusCode} instead of upgrading`;
      response.resume();
      reject(response.statusCode === 404 ? new InspectorNotListed(message) : new Error(message));
    });
    upgrade.once('upgrade', (_response, socket: Socket, head: Buffer) => resolve(session(socket, head)));
    upgrade.end();
  });
}

function session(socket: Socket, head: Buffer): InspectorSession {
  let nextId = 0;
  const replies = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  const waiting = new Map<string, (params: unknown) => void>();
  let received = head;
  let message: Buffer[] = [];

  const dispatch = (text: string): void => {
    const parsed = JSON.parse(text) as { id?: number; result?: unknown; error?: { message: string }; method?: string; params?: unknown };
    if (parsed.id !== undefined) {
      const reply = replies.get(parsed.id);
      replies.delete(parsed.id);
      if (parsed.error) reply?.reject(new Error(`inspector: ${parsed.error.message}`));
      else reply?.resolve(parsed.result);
    } else if (parsed.method) {
      waiting.get(parsed.method)?.(parsed.params);
      waiting.delete(parsed.method);
    }
  };
  const readFrames = (): void => {
    for (;;) {
      if (received.length < 2) return;
      const fin = (received[0]! & 0x80) !== 0;
      const opcode = received[0]! & 0x0f;
      let length = received[1]! & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (received.length < 4) return;
        length = received.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (received.length < 10) return;
        length = Number(received.readBigUInt64BE(2));
        offset = 10;
      }
      if (received.length < offset + length) return;
      const payload = received.subarray(offset, offset + length);
      received = received.subarray(offset + length);
      if (opcode === 0x1 || opcode === 0x0) {
        message.push(payload);
        if (fin) {
          dispatch(Buffer.concat(message).toString('utf8'));
          message = [];
        }
      }
    }
  };
  socket.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
    readFrames();
  });
  const failAll = (error: Error): void => {
    for (const reply of replies.values()) reply.reject(error);
    replies.clear();
  };
  socket.on('error', failAll);
  socket.on('close', () => failAll(new Error('inspector connection closed')));
  readFrames();

  const sendText = (text: string): void => {
    const payload = Buffer.from(text, 'utf8');
    const mask = randomBytes(4);
    const length = payload.length < 126 ? Buffer.of(0x80 | payload.length) : payload.length < 65536 ? Buffer.of(0x80 | 126, payload.length >> 8, payload.length & 0xff) : Buffer.concat([Buffer.of(0x80 | 127), bigEndian64(payload.length)]);
    const masked = Buffer.from(payload.map((byte, i) => byte ^ mask[i % 4]!));
    socket.write(Buffer.concat([Buffer.of(0x81), length, mask, masked]));
  };

  return {
    send(method, params = {}) {
      const id = ++nextId;
      const reply = new Promise<unknown>((resolve, reject) => replies.set(id, { resolve, reject }));
      sendText(JSON.stringify({ id, method, params }));
      return reply;
    },
    event(method) {
      return new Promise((resolve) => waiting.set(method, resolve));
    },
    close() {
      socket.end(Buffer.of(0x88, 0x80, ...randomBytes(4)));
    },
  };
}

function bigEndian64(value: number): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeBigUInt64BE(BigInt(value));
  return bytes;
}
