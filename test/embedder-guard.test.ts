import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { remoteEmbedder } from '../src/embed/remote.ts';
import type { Embedder } from '../src/embed/types.ts';
import { Memory } from '../src/memory.ts';
import { openSqliteStore } from '../src/node.ts';
import { MemoryStore } from '../src/store/memory.ts';
import type { GraphStore } from '../src/store/types.ts';
import { flatIndex } from '../src/vector/flat-index.ts';
import { hashEmbedder } from './helpers/hash-embedder.ts';
import { startOpenAiServer, type OpenAiTestServer } from './helpers/openai-server.ts';

// A memory records the id and dimension of the embedder that wrote it; any other embedder is
// EMBEDDER_MISMATCH, whatever the store, and nothing is read, written or mixed.

const scope = { userId: 'ada' };
const messages = [
  { speaker: 'Ada', text: 'I moved to Lisbon in March and started learning Portuguese.' },
  { speaker: 'Ben', text: 'Did you take your cat Smoke with you?' },
];

/** `inner`'s vectors under another name and, when given, cut to another dimension. */
function renamed(inner: Embedder, id: string, dim = inner.dim): Embedder {
  return { id, dim, embed: async (texts) => (await inner.embed(texts)).map((v) => v.slice(0, dim)) };
}

async function open(store: GraphStore, embedder: Embedder): Promise<Memory> {
  return Memory.open({ store, embedder, createIndex: flatIndex, llm: null });
}

/** Every call on a memory opened with the wrong embedder fails the same way. */
async function expectMismatch(memory: Memory, wrote: Embedder): Promise<void> {
  for (const call of [() => memory.list(scope), () => memory.search('Where did Ada move?', scope), () => memory.add(messages, { ...scope, sessionId: 'more' })]) {
    await expect(call()).rejects.toMatchObject({ code: 'EMBEDDER_MISMATCH', message: expect.stringContaining(`embedded with ${wrote.id} (${wrote.dim} dimensions)`) });
  }
}

describe('EMBEDDER_MISMATCH', () => {
  let dir: string;
  let server: OpenAiTestServer;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'prism-embedder-guard-'));
    const words = hashEmbedder(8);
    server = await startOpenAiServer({ embed: async (body) => (await words.embed(body.input)).map((v) => Array.from(v)) });
  });
  afterAll(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  const stores: Array<[string, () => Promise<GraphStore>]> = [
    ['a MemoryStore', async () => new MemoryStore()],
    ['a SQLite file', async () => openSqliteStore(join(dir, `${Math.random().toString(36).slice(2)}.sqlite`))],
  ];

  for (const [name, makeStore] of stores) {
    it(`guards a memory in ${name}: another embedder id, or the same id at another dimension`, async () => {
      const store = await makeStore();
      const wrote = hashEmbedder(384);
      const first = await open(store, wrote);
      await first.add(messages, { ...scope, sessionId: 'lisbon' });
      const sessions = await first.list(scope);

      await expectMismatch(await open(store, renamed(wrote, 'other/model')), wrote);
      await expectMismatch(await open(store, renamed(wrote, wrote.id, 256)), wrote);
      // Nothing was written by the refused calls: the right embedder reads what was there.
      expect(await (await open(store, wrote)).list(scope)).toEqual(sessions);
    });
  }

  it('guards checkpoints: importing another embedder\'s memory is refused and changes nothing', async () => {
    const store = new MemoryStore();
    const wrote = hashEmbedder(384);
    const source = await open(new MemoryStore(), renamed(wrote, 'other/model'));
    await source.add(messages, { ...scope, sessionId: 'lisbon' });
    const target = await open(store, wrote);
    await expect(target.import(await source.export(scope), scope)).rejects.toMatchObject({ code: 'EMBEDDER_MISMATCH' });
    expect(await target.list(scope)).toEqual([]);
  });

  it('guards memories written through remote embedders: another model, or the same model asked for fewer dimensions', async () => {
    const store = new MemoryStore();
    const remote = (model: string, dim: number) => remoteEmbedder({ url: server.baseURL, model, dim });
    const wrote = remote('small-embed', 8);
    await (await open(store, wrote)).add(messages, { ...scope, sessionId: 'lisbon' });
    await expectMismatch(await open(store, remote('large-embed', 8)), wrote);
    await expectMismatch(await open(store, renamed(remote('small-embed', 8), 'small-embed', 4)), wrote);
  });
});
