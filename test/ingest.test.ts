import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { turnLine } from '../src/graph/chunk-text.ts';
import { chunkConversation } from '../src/ingest/chunking.ts';
import { extractLocally } from '../src/ingest/extract-local.ts';
import { createLlmClient } from '../src/llm/client.ts';
import { Memory, type MemoryOptions } from '../src/memory.ts';
import { DEFAULT_PARTITION } from '../src/scope.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { openSqliteStore } from '../src/store/sqlite.node.ts';
import type { GraphStore, WriteBatch } from '../src/store/types.ts';
import type { Embedder } from '../src/embed/types.ts';
import type { MemoryGraph } from '../src/graph/memory-graph.ts';
import { COMPOSABLE_EDGE_TYPES, type FacetPointNode } from '../src/graph/types.ts';
import type { Conversation } from '../src/ingest/conversation.ts';
import { countTokens } from '../src/retrieve/pack.ts';
import { sha256Hex } from '../src/util/hash.ts';
import { reply, startOpenAiServer, type OpenAiTestServer } from './helpers/openai-server.ts';
import { testRuntime, type TestRuntime } from './helpers/runtime.ts';
import { conversation } from './helpers/conversation.ts';

let runtime: TestRuntime;
beforeAll(async () => {
  runtime = await testRuntime();
});

function options(store: GraphStore, extra: Partial<MemoryOptions> = {}): MemoryOptions {
  return { store, embedder: runtime.embedder, createIndex: runtime.createIndex, ...extra };
}

/** Ids, keys and contents of everything in a memory, for whole-graph equality. */
async function fingerprint(memory: Memory) {
  const s = (await memory.inspect()).snapshot();
  return {
    meta: s.meta,
    nodes: [...s.nodes].sort((a, b) => a.id.localeCompare(b.id)),
    edges: [...s.edges].sort((a, b) => a.id.localeCompare(b.id)),
    chunks: s.chunks.map((c) => c.id).sort(),
    vectors: [...s.vectors.keys()].sort(),
    hashes: [...s.hashes].sort(),
  };
}

/** Relation edges that carry a stored vector (embedded from their description): all of them under `edgeVectors: embedded`. */
function storedRelationEdges(graph: MemoryGraph, embedded = false): number {
  return [...graph.edges.values()].filter((e) => e.type !== 'belongs_to' && (embedded || !COMPOSABLE_EDGE_TYPES.has(e.type))).length;
}

describe('zero-LLM ingestion of a hand-written conversation', () => {
  it('builds the expected layers, merges and edges', async () => {
    const memory = await Memory.open(options(new MemoryStore()));
    const view = await memory.inspect();
    const report = await memory.add(conversation);
    expect(report.chunksAdded).toBe(2);
    expect(report.warnings).toEqual([]);
    const g = view.graph;

    const episodes = g.nodesOfLayer('episode').sort((a, b) => a.order - b.order);
    expect(episodes).toHaveLength(2);
    // Chronological chain between the two Episodes.
    expect(g.edgesFrom(episodes[0]!.id, 'temporal').map((e) => e.to)).toContain(episodes[1]!.id);

    // Speakers are Entities merged across sessions by exact name.
    const entities = g.nodesOfLayer('entity');
    const caroline = entities.filter((e) => e.name === 'Caroline');
    expect(caroline).toHaveLength(1);
    expect(caroline[0]!.chunkIds).toHaveLength(2);
    const max = entities.filter((e) => e.name.toLowerCase() === 'max');
    expect(max).toHaveLength(1);

    // Relative times resolve against the session date.
    const points = g.nodesOfLayer('facetPoint');
    const support = points.find((p) => p.content.includes('support group'));
    expect(support?.time).toBe('2023-05-07');
    expect(support?.dialogIds).toEqual(['D1:1']);
    const swim = points.find((p) => p.content.includes('swim'));
    expect(swim?.time).toBe('2023-06-17');

    // Every FacetPoint reaches its Episode through its Facet.
    for (const p of points) {
      const [toFacet] = g.edgesFrom(p.id, 'belongs_to');
      expect(toFacet?.to).toBe(p.facetId);
      expect(g.edgesFrom(p.facetId, 'belongs_to')[0]?.to).toBe(p.episodeId);
    }

    // Temporal: "last week" (≈ 1 May) happened before "yesterday" (7 May) within session 1.
    const sunrise = points.find((p) => p.content.includes('sunrise'));
    expect(sunrise?.time?.startsWith('2023-05-0')).toBe(true);
    expect(g.edgesFrom(sunrise!.id, 'temporal').map((e) => e.to)).toContain(support!.id);

    // Evolution: Max's earlier fact links to the later one across sessions.
    const maxFacts = points.filter((p) => p.entityId === max[0]!.id);
    expect(maxFacts.length).toBeGreaterThanOrEqual(2);
    const beach = maxFacts.find((p) => p.content.includes('loves running')) as FacetPointNode;
    expect(g.edgesFrom(beach.id, 'evolution').map((e) => e.to)).toContain(swim!.id);

    // Relation edges embedded from their description have a stored vector; belongs_to edges have
    // none, and neither do the composable types (N2 composes theirs from the endpoints).
    for (const e of g.edges.values()) expect(g.vectors.has(e.id)).toBe(e.type !== 'belongs_to' && !COMPOSABLE_EDGE_TYPES.has(e.type));
    // And every node is in its layer index.
    for (const layer of ['episode', 'facet', 'facetPoint', 'entity'] as const) {
      expect(view.indexSize(layer)).toBe(g.nodesOfLayer(layer).length);
    }
  });

  it('re-ingesting is a no-op', async () => {
    const memory = await Memory.open(options(new MemoryStore()));
    await memory.inspect();
    await memory.add(conversation);
    const before = await fingerprint(memory);
    const again = await memory.add(conversation);
    expect(again.chunksAdded).toBe(0);
    expect(again.chunksSkipped).toBe(2);
    expect(await fingerprint(memory)).toEqual(before);
  });

  it('names a chunk by 16 hex digits of its hash, and skips a chunk an older memory holds under the full hash', async () => {
    const store = new MemoryStore();
    const [first, second] = chunkConversation(conversation, { by: 'session' });
    const [firstDigest, secondDigest] = await Promise.all([sha256Hex(first!.text), sha256Hex(second!.text)]);
    const earlier = await Memory.open(options(store));
    await earlier.add([{ role: 'user', content: 'An earlier remark about nothing much.' }], { sessionId: 'earlier' });
    await earlier.close();
    const [earlierId] = (await store.load(DEFAULT_PARTITION))!.hashes;
    expect(earlierId).toMatch(/^[0-9a-f]{16}$/);
    // What a memory written before chunk ids were cut holds for the first session: its full hash.
    await store.commit(DEFAULT_PARTITION, { putHashes: [firstDigest] });
    const memory = await Memory.open(options(store));
    const report = await memory.add(conversation);
    expect(report).toMatchObject({ chunksAdded: 1, chunksSkipped: 1 });
    const view = await memory.inspect();
    expect([...view.graph.chunks.keys()].sort()).toEqual([earlierId, secondDigest.slice(0, 16)].sort());
    expect((await fingerprint(memory)).hashes).toEqual([earlierId, firstDigest, secondDigest.slice(0, 16)].sort());
  });

  it('a crash mid-ingest resumes to the identical graph', async () => {
    const reference = await Memory.open(options(new MemoryStore()));
    await reference.add(conversation);

    const durable = new MemoryStore();
    let commits = 0;
    // Fault injection: the second commit dies as a killed process would, before anything is written.
    const crashing: GraphStore = {
      partitions: () => durable.partitions(),
      load: (p) => durable.load(p),
      revision: (p) => durable.revision(p),
      withWriteLock: (p, fn) => durable.withWriteLock(p, fn),
      commit: async (p, batch: WriteBatch) => {
        if (++commits === 2) throw new Error('simulated crash');
        return durable.commit(p, batch);
      },
      clear: (p) => durable.clear(p),
      getCached: (k) => durable.getCached(k),
      putCached: (k, v, tags) => durable.putCached(k, v, tags),
      deleteCached: (tags) => durable.deleteCached(tags),
      close: async () => {},
    };
    const first = await Memory.open(options(crashing));
    await expect(first.add(conversation)).rejects.toThrow('simulated crash');
    expect((await durable.load(DEFAULT_PARTITION))?.chunks).toHaveLength(1);

    const resumed = await Memory.open(options(durable));
    const report = await resumed.add(conversation);
    expect(report).toMatchObject({ chunksAdded: 1, chunksSkipped: 1 });
    expect(await fingerprint(resumed)).toEqual(await fingerprint(reference));
  });

  it('a chunk keeps its text\'s tokens, and each turn its line\'s, under the default counter (a custom one keeps none: see tokens.test.ts)', async () => {
    const store = new MemoryStore();
    const memory = await Memory.open(options(store));
    await memory.add(conversation);
    const chunks = (await store.load(DEFAULT_PARTITION))?.chunks ?? [];
    expect(chunks.length).toBeGreaterThan(0);
    for (const chunk of chunks) {
      expect(chunk.textTokens).toBe(countTokens(chunk.text));
      for (const turn of chunk.turns) expect(turn.lineTokens).toBe(countTokens(turnLine(turn)));
    }
    await memory.close();
  });

  it('delete removes a session everywhere', async () => {
    const onlyFirst = await Memory.open(options(new MemoryStore()));
    await onlyFirst.add({ ...conversation, sessions: conversation.sessions.slice(0, 1) });

    const store = new MemoryStore();
    const memory = await Memory.open(options(store));
    const view = await memory.inspect();
    await memory.add(conversation);
    const result = await memory.delete({ sessionId: 'demo/session_2' });
    expect(result.chunksDeleted).toBe(1);
    const a = await fingerprint(memory);
    const b = await fingerprint(onlyFirst);
    // Same graph as if session 2 never came, except for the key counter and chunk count history.
    expect(a.nodes).toEqual(b.nodes);
    expect(a.edges).toEqual(b.edges);
    expect(a.vectors).toEqual(b.vectors);
    expect(a.hashes).toEqual(b.hashes);
    // The store agrees, and the indexes hold nothing of the deleted session.
    const stored = await store.load(DEFAULT_PARTITION);
    expect(stored?.nodes.length).toBe(a.nodes.length);
    expect(view.indexSize('facetPoint')).toBe(b.nodes.filter((n) => n.layer === 'facetPoint').length);

    await memory.delete('all');
    expect((await memory.stats()).chunks).toBe(0);
    expect(await store.load(DEFAULT_PARTITION)).toBeNull();
  });

  it('makes an Entity of a name when a second session names it, across a reopen; deleting that session makes it a mention again', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prism-mentions-'));
    const path = join(dir, 'memory.sqlite');
    try {
      const first = await Memory.open(options(await openSqliteStore(path)));
      await first.add({ ...conversation, sessions: conversation.sessions.slice(0, 1) });
      const onlyFirst = await fingerprint(first);
      await first.close();

      const memory = await Memory.open(options(await openSqliteStore(path)));
      const { graph } = await memory.inspect();
      // Named by session 1 only: a mention its chunk keeps, read back from the file.
      const max = graph.mentionNamed('max');
      expect(max?.mention).toMatchObject({ name: 'Max' });
      const id = max?.mention.id ?? '';
      expect(graph.nodes.has(id)).toBe(false);
      expect(graph.edgesTo(id, 'involves_entity')).toHaveLength(1);

      await memory.add({ ...conversation, sessions: conversation.sessions.slice(1) });
      const second = [...graph.chunks.values()].find((c) => c.sessionId === 'demo/session_2');
      expect(graph.nodes.get(id)).toMatchObject({ layer: 'entity', name: 'Max', chunkIds: [second?.id, max?.chunkId] });
      expect(graph.vectors.has(id)).toBe(true);
      expect(graph.edgesTo(id, 'involves_entity')).toHaveLength(2);
      expect(graph.mentionNamed('max')).toBeUndefined();

      await memory.delete({ sessionId: 'demo/session_2' });
      const after = await fingerprint(memory);
      expect(after.nodes).toEqual(onlyFirst.nodes);
      expect(after.edges).toEqual(onlyFirst.edges);
      expect(after.vectors).toEqual(onlyFirst.vectors);
      expect(graph.mentionNamed('max')).toEqual(max);
      await memory.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('export → import moves the memory between stores', async () => {
    const memory = await Memory.open(options(new MemoryStore()));
    await memory.inspect();
    await memory.add(conversation);
    const other = await Memory.open(options(new MemoryStore()));
    await other.import(await memory.export());
    expect(await fingerprint(other)).toEqual(await fingerprint(memory));
    await expect(other.import(new Uint8Array([1, 2, 3]))).rejects.toMatchObject({ code: 'CORRUPT_CHECKPOINT' });
    expect(await fingerprint(other)).toEqual(await fingerprint(memory));
  });

  it('messages append incrementally to the same graph', async () => {
    const memory = await Memory.open(options(new MemoryStore()));
    const view = await memory.inspect();
    await memory.add({ sessionId: 's1', date: '8 May, 2023', messages: [{ speaker: 'Ann', text: 'I started learning the violin today.' }] });
    await memory.add({ sessionId: 's1', date: '8 May, 2023', messages: [{ speaker: 'Bob', text: 'Nice, I play the cello in an orchestra.' }] });
    const turns = [...view.graph.chunks.values()].flatMap((c) => c.turns.map((t) => t.dialogId));
    expect(turns).toEqual(['s1:1', 's1:2']);
    expect((await memory.stats()).nodes.episode).toBe(2);
  });

  it('repeated messages are kept; message ids and batch ids make a re-send a no-op; concurrent adds both land with distinct keys', async () => {
    const memory = await Memory.open(options(new MemoryStore()));
    const view = await memory.inspect();
    const ok = { speaker: 'Ann', text: 'ok' };
    await memory.add([ok, ok], { sessionId: 's1', date: '8 May, 2023' });
    await memory.add([ok], { sessionId: 's1', date: '8 May, 2023' });
    expect([...view.graph.chunks.values()].flatMap((c) => c.turns.map((t) => t.dialogId))).toEqual(['s1:1', 's1:2', 's1:3']);

    const withIds = [{ ...ok, id: 'm1' }, { speaker: 'Bob', text: 'Cool!', id: 'm2' }];
    expect(await memory.add(withIds, { sessionId: 's1' })).toMatchObject({ chunksAdded: 1 });
    const before = await fingerprint(memory);
    const again = await memory.add([...withIds, { speaker: 'Bob', text: 'And one more.', id: 'm3' }], { sessionId: 's1' });
    expect(again).toMatchObject({ chunksAdded: 1, warnings: ['2 messages skipped: their ids are already remembered'] });
    expect(await memory.add(withIds, { sessionId: 's1' })).toMatchObject({ chunksAdded: 0 });
    expect((await fingerprint(memory)).chunks).toHaveLength(before.chunks.length + 1);

    const batch = [{ speaker: 'Ann', text: 'Same words, named batch.' }];
    expect(await memory.add(batch, { sessionId: 's9', batchId: 'b-1' })).toMatchObject({ chunksAdded: 1 });
    expect(await memory.add(batch, { sessionId: 's9', batchId: 'b-1' })).toMatchObject({ chunksAdded: 0, chunksSkipped: 1 });

    const [a, b] = await Promise.all([
      memory.add({ sessionId: 's2', date: '9 May, 2023', messages: [{ speaker: 'Ann', text: 'My violin teacher is from Vienna.' }] }),
      memory.add({ sessionId: 's3', date: '10 May, 2023', messages: [{ speaker: 'Bob', text: 'The orchestra plays Mahler in June.' }] }),
    ]);
    expect([a.chunksAdded, b.chunksAdded]).toEqual([1, 1]);
    const snapshot = view.snapshot();
    const keys = [...snapshot.nodes, ...snapshot.edges].map((x) => x.key);
    expect(new Set(keys).size).toBe(keys.length);
    expect(Math.max(...keys)).toBeLessThan(snapshot.meta.nextKey);
  });

  it('reports progress by stage and stops at a committed chunk when aborted; a re-run finishes the rest', async () => {
    const reference = await Memory.open(options(new MemoryStore()));
    await reference.add(conversation);

    const store = new MemoryStore();
    const memory = await Memory.open(options(store));
    await memory.inspect();
    const controller = new AbortController();
    const seen: string[] = [];
    const run = memory.add(conversation, {
      signal: controller.signal,
      onProgress: (p) => {
        seen.push(`${p.stage}:${p.chunksDone}/${p.chunksTotal}`);
        if (p.stage === 'extract' && p.chunksDone === 1) controller.abort();
      },
    });
    await expect(run).rejects.toMatchObject({ code: 'ABORTED' });
    expect(seen).toEqual(['extract:0/2', 'embed:0/2', 'commit:0/2', 'extract:1/2']);
    expect((await store.load(DEFAULT_PARTITION))?.chunks).toHaveLength(1);

    const stages: string[] = [];
    const report = await memory.add(conversation, { onProgress: (p) => stages.push(p.stage) });
    expect(report).toMatchObject({ chunksAdded: 1, chunksSkipped: 1 });
    expect(stages.at(-1)).toBe('done');
    expect(await fingerprint(memory)).toEqual(await fingerprint(reference));
  });

  // Relation edges carry stored vectors only when embedded (by default they are composed when read).
  const embeddedEdges = { config: { ingest: { edgeVectors: 'embedded' as const } } };

  it('deleting a middle session keeps the Episode chain whole, and the bridge goes with its chunk', async () => {
    const third = { id: 'session_3', dateText: '9:00 am on 1 July, 2023', time: '2023-07-01T09:00:00', turns: [{ dialogId: 'D3:1', speaker: 'Melanie', text: 'The kids loved the lake trip.' }] };
    const memory = await Memory.open(options(new MemoryStore(), embeddedEdges));
    const view = await memory.inspect();
    await memory.add({ ...conversation, sessions: [...conversation.sessions, third] });
    const chain = () => {
      const episodes = view.graph.nodesOfLayer('episode').sort((a, b) => a.order - b.order);
      return episodes.slice(1).map((ep, i) => view.graph.edgesFrom(episodes[i]!.id, 'temporal').some((e) => e.to === ep.id));
    };
    expect(chain()).toEqual([true, true]);
    await memory.delete({ sessionId: 'demo/session_2' });
    expect(chain()).toEqual([true]);
    const [first, last] = view.graph.nodesOfLayer('episode').sort((a, b) => a.order - b.order);
    const bridge = view.graph.edgesFrom(first!.id, 'temporal').find((e) => e.to === last!.id);
    expect(bridge?.chunkId).toBe(last!.chunkId);
    expect(view.graph.vectors.has(bridge!.id)).toBe(true);
    expect(view.indexSize('edge_relation')).toBe(storedRelationEdges(view.graph, true));
    await memory.delete({ sessionId: 'demo/session_3' });
    expect(view.graph.edges.has(bridge!.id)).toBe(false);
  });

  it('delete of one chunk empties its vectors from every index, relation edges included', async () => {
    const memory = await Memory.open(options(new MemoryStore(), embeddedEdges));
    const view = await memory.inspect();
    await memory.add(conversation);
    const [, second] = [...view.graph.chunks.values()].sort((a, b) => a.order - b.order);
    const relationEdges = () => storedRelationEdges(view.graph, true);
    expect(view.indexSize('edge_relation')).toBe(relationEdges());
    const before = view.indexSize('edge_relation');
    await memory.delete({ chunkId: second!.id });
    expect(view.indexSize('edge_relation')).toBe(relationEdges());
    expect(view.indexSize('edge_relation')).toBeLessThan(before);
    for (const e of view.graph.edges.values()) expect(e.chunkId).not.toBe(second!.id);
    expect(view.snapshot().hashes.has(second!.id)).toBe(false);
    await expect(memory.delete({ chunkId: 'no-such-chunk' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('local extraction of long turns', () => {
  const sentences = Array.from({ length: 11 }, (_, i) => `Point ${i + 1} is that the ${['garden', 'budget', 'recipe', 'trip'][i % 4]} plan changes on day ${i + 2}.`);
  const extract = (text: string) =>
    extractLocally({ chunkId: 'c', header: '[s]', time: '2024-05-08T00:00:00.000Z', turns: [{ dialogId: 'd1', speaker: 'assistant', text }] });

  it('groups a long turn into at most three facts that keep every sentence, in order', async () => {
    const extraction = await extract(sentences.join(' '));
    expect(extraction.facetPoints).toHaveLength(3);
    const joined = extraction.facetPoints.map((p) => p.content.replace(/^assistant: /, '')).join(' ');
    expect(joined).toBe(sentences.join(' '));
    // About equal shares: no group holds more than half of the sentences.
    for (const p of extraction.facetPoints) expect(p.content.split('Point').length - 1).toBeLessThanOrEqual(5);
    expect(extraction.facets).toEqual([{ theme: expect.stringMatching(/^assistant: Point 1/), pointIndices: [0, 1, 2] }]);
  });

  it('keeps one fact a sentence while a turn has no more than three, or is short', async () => {
    const three = await extract(sentences.slice(0, 3).join(' '));
    expect(three.facetPoints.map((p) => p.content)).toEqual(sentences.slice(0, 3).map((s) => `assistant: ${s}`));
    const short = ['I moved.', 'The cat is fine.', 'We got a new sofa.', 'Work is busy.', 'Mum visits soon.'];
    const remark = await extract(short.join(' '));
    expect(remark.facetPoints.map((p) => p.content)).toEqual(short.filter((s) => s.split(' ').length >= 3).map((s) => `assistant: ${s}`));
  });

  it('keeps the text between grouped sentences as written', async () => {
    const extraction = await extract(sentences.join('\n\n'));
    expect(extraction.facetPoints).toHaveLength(3);
    expect(extraction.facetPoints.map((p) => p.content.replace(/^assistant: /, '')).join('\n\n')).toBe(sentences.join('\n\n'));
  });
});

describe('LLM-mode ingestion over real HTTP', () => {
  let server: OpenAiTestServer;
  beforeAll(async () => {
    server = await startOpenAiServer();
  });
  afterAll(async () => server.close());

  it('malformed extraction output falls back to summary + entities and is counted', async () => {
    server.setHandler(() => reply.content('this is { not json'));
    const llm = createLlmClient({ baseURL: server.baseURL, models: { default: 'test-model' }, retry: { maxRetries: 0 } });
    const memory = await Memory.open(options(new MemoryStore(), { llm, extraction: 'llm' }));
    const view = await memory.inspect();
    const report = await memory.add({ ...conversation, sessions: conversation.sessions.slice(0, 1) });
    expect(report.chunksAdded).toBe(1);
    expect(report.warnings).toHaveLength(1);
    expect(report.warnings[0]).toMatch(/fell back/);
    expect((await memory.stats()).nodes.episode).toBe(1);
    expect((await memory.stats()).nodes.facetPoint).toBe(0);
    // One chunk names them: its mentions (an Entity is made when a second chunk names one).
    expect([...view.graph.chunks.values()].flatMap((chunk) => chunk.mentions ?? []).map((m) => m.name)).toContain('Caroline');
  });

  it('an endpoint that stays down stops the ingest at its last committed chunk; a re-run extracts the rest properly', async () => {
    const extraction = (user: string) => ({
      episode_summary: user.includes('D1:1') ? 'Caroline went to a support group.' : 'Melanie went camping.',
      entities: [{ name: 'Caroline', entity_type: 'person' }],
      facet_points: [{ content: user.includes('D1:1') ? 'Caroline went to a support group.' : 'Melanie went camping.', related_entity_name: 'Caroline', timestamp_text: null }],
      facets: [{ theme: 'events', facet_point_indices: [0] }],
      temporal_info: [],
    });
    let down = false;
    server.setHandler((request) => {
      const user = request.body?.messages.at(-1)?.content ?? '';
      if (down || user.includes('D2:1')) {
        down = true;
        return reply.status(503);
      }
      return reply.json(extraction(user));
    });
    const store = new MemoryStore();
    const llm = createLlmClient({ baseURL: server.baseURL, models: { default: 'test-model' }, retry: { maxRetries: 1, baseDelayMs: 1 } });
    const memory = await Memory.open(options(store, { llm, extraction: 'llm' }));
    await memory.inspect();
    await expect(memory.add(conversation)).rejects.toMatchObject({ code: 'LLM_HTTP', status: 503 });
    expect((await store.load(DEFAULT_PARTITION))?.chunks).toHaveLength(1);

    server.setHandler((request) => reply.json(extraction(request.body?.messages.at(-1)?.content ?? '')));
    const report = await memory.add(conversation);
    expect(report).toMatchObject({ chunksAdded: 1, chunksSkipped: 1, warnings: [] });
    expect((await memory.stats()).nodes.facetPoint).toBe(2);
  });

  it('valid extraction builds the graph and causal consolidation adds only confident, known pairs', async () => {
    server.setHandler((request) => {
      const system = request.body?.messages[0]?.content ?? '';
      const user = request.body?.messages.at(-1)?.content ?? '';
      if (system.includes('cause-and-effect')) {
        return reply.json({
          causal_pairs: [
            { cause_id: 'E1', effect_id: 'E2', description: 'the support group led to the camping trip', confidence: 0.9 },
            { cause_id: 'E1', effect_id: 'E2', description: 'duplicate', confidence: 0.95 },
            { cause_id: 'E2', effect_id: 'E1', description: 'weak', confidence: 0.4 },
            { cause_id: 'E1', effect_id: 'E9', description: 'unknown id', confidence: 0.99 },
          ],
        });
      }
      const first = user.includes('D1:1');
      return reply.json({
        episode_summary: first ? 'Caroline went to a support group on 7 May 2023.' : 'Melanie went camping.',
        entities: [{ name: first ? 'Caroline' : 'Melanie', entity_type: 'person' }],
        facet_points: [{ content: first ? 'Caroline went to an LGBTQ support group.' : 'Melanie went camping with her kids.', related_entity_name: first ? 'Caroline' : 'Melanie', timestamp_text: first ? 'yesterday' : 'the week of the big storm', dialog_ids: [first ? 'D1:1' : 'D2:1', 'D99:9'] }],
        facets: [{ theme: first ? 'support group' : 'camping', facet_point_indices: [0, 7] }],
        // chrono-node cannot date "the week of the big storm"; the model's normalised time can.
        temporal_info: first ? [] : [{ subject: 'camping', time_expression: 'The week of the big storm', normalized_time: '2023-06-12', relation: 'during' }],
      });
    });
    const llm = createLlmClient({ baseURL: server.baseURL, models: { default: 'test-model' } });
    const memory = await Memory.open(options(new MemoryStore(), { llm, extraction: 'llm', config: { ingest: { consolidateEvery: 2 } } }));
    const view = await memory.inspect();
    const report = await memory.add(conversation);
    expect(report.warnings).toEqual([]);
    expect(report.causalEdgesAdded).toBe(1);
    const causal = [...view.graph.edges.values()].filter((e) => e.type === 'causal');
    expect(causal).toHaveLength(1);
    expect(causal[0]?.confidence).toBe(0.9);
    const [ep1, ep2] = view.graph.nodesOfLayer('episode').sort((a, b) => a.order - b.order);
    expect(causal[0]).toMatchObject({ from: ep1?.id, to: ep2?.id });
    const fp = view.graph.nodesOfLayer('facetPoint').find((p) => p.content.includes('support group'));
    expect(fp).toMatchObject({ time: '2023-05-07', dialogIds: ['D1:1'] });
    expect(view.graph.nodesOfLayer('facetPoint').find((p) => p.content.includes('camping'))).toMatchObject({ time: '2023-06-12' });
    expect(llm.usage().extract.calls).toBe(2);
    expect(llm.usage().consolidate.calls).toBe(1);
  });

  it('a consolidation landing while a chunk is being committed never reuses index keys; the store reopens to the same graph', async () => {
    const sessions = Array.from({ length: 6 }, (_, i) => ({
      id: `session_${i + 1}`,
      dateText: `10:00 am on ${i + 1} June, 2023`,
      time: `2023-06-0${i + 1}T10:00:00`,
      turns: [{ dialogId: `D${i + 1}:1`, speaker: 'Ann', text: `On day ${i + 1} Ann fixed bike number ${i + 1}.` }],
    }));
    // Forces the overlap: while a chunk is between building (keys taken) and committing — embedding
    // its Episode-chain edge — a consolidation reply arrives and wants keys of its own.
    let consolidationAsked = false;
    const overlapping: Embedder = {
      id: runtime.embedder.id,
      dim: runtime.embedder.dim,
      async embed(texts, opts) {
        if (consolidationAsked && texts.some((t) => t.includes('happened before'))) {
          consolidationAsked = false;
          await new Promise((r) => setTimeout(r, 300));
        }
        return runtime.embedder.embed(texts, opts);
      },
    };
    server.setHandler((request) => {
      const system = request.body?.messages[0]?.content ?? '';
      const user = request.body?.messages.at(-1)?.content ?? '';
      if (system.includes('cause-and-effect')) {
        consolidationAsked = true;
        return reply.json({ causal_pairs: [{ cause_id: 'E1', effect_id: 'E2', description: 'the first repair led to the second', confidence: 0.9 }] }, { delayMs: 50 });
      }
      const day = /D(\d+):1/.exec(user)?.[1] ?? '0';
      return reply.json({
        episode_summary: `Ann fixed bike ${day}.`,
        entities: [{ name: 'Ann', entity_type: 'person' }],
        facet_points: [{ content: `Ann fixed bike ${day}.`, related_entity_name: 'Ann', timestamp_text: null, dialog_ids: [`D${day}:1`] }],
        facets: [{ theme: 'repairs', facet_point_indices: [0] }],
        temporal_info: [],
      });
    });
    const llm = createLlmClient({ baseURL: server.baseURL, models: { default: 'test-model' } });
    const store = new MemoryStore();
    const memory = await Memory.open(options(store, { llm, embedder: overlapping, extraction: 'llm', config: { ingest: { consolidateEvery: 2 } } }));
    const view = await memory.inspect();
    const stages: string[] = [];
    const report = await memory.add({ id: 'bikes', sessions }, { onProgress: (p) => stages.push(p.stage) });
    expect(report.warnings).toEqual([]);
    // Windows: Episodes 1–2, 1–4 (its E1→E2 duplicates the first edge, dropped), 2–6 (E1→E2 is 2→3).
    expect(report.causalEdgesAdded).toBe(2);
    expect(stages).toContain('consolidate');
    const snapshot = view.snapshot();
    const keys = [...snapshot.nodes, ...snapshot.edges].map((x) => x.key);
    expect(new Set(keys).size).toBe(keys.length);
    expect(Math.max(...keys)).toBeLessThan(snapshot.meta.nextKey);
    const reopened = await Memory.open(options(store, { llm, embedder: overlapping, extraction: 'llm' }));
    expect(await fingerprint(reopened)).toEqual(await fingerprint(memory));
  });
});

describe('bad and extreme input', () => {
  it('refuses input with nothing to add or of the wrong shape, and writes nothing', async () => {
    const store = new MemoryStore();
    const memory = await Memory.open(options(store));
    await memory.inspect();
    const invalid = (message: string) => ({ code: 'INVALID_INPUT', message: expect.stringContaining(message) });
    await expect(memory.add({ sessionId: 's', messages: [] })).rejects.toMatchObject(invalid('nothing to add'));
    await expect(memory.add({ sessionId: 's', messages: [{ speaker: 'A', text: ' \n\t' }] })).rejects.toMatchObject(invalid('nothing to add'));
    await expect(memory.add({ sessionId: 's', messages: [{ speaker: 'A', text: 'fine' }, { speaker: 'A', text: 42 as unknown as string }] })).rejects.toMatchObject(invalid('messages[1].text: expected a string, got number 42'));
    await expect(memory.add([{ role: 'user', content: 'hi' }, { content: 'no role' }] as never)).rejects.toMatchObject(invalid('messages[1].speaker'));
    await expect(memory.add(null as never)).rejects.toMatchObject(invalid('add: expected'));
    await expect(memory.search(42 as never)).rejects.toMatchObject(invalid('search: expected a non-empty query'));
    await expect(memory.add([{ speaker: 'A', text: 'x'.repeat(50) }], { userId: 7 as never })).rejects.toMatchObject(invalid('scope.userId'));
    await expect(memory.add({ sessionId: 's', messages: 'hi' as unknown as [] })).rejects.toMatchObject(invalid('messages'));
    const noDialogId = { id: 'c', sessions: [{ id: 's1', dateText: null, time: null, turns: [{ speaker: 'A', text: 'hi' }] }] };
    await expect(memory.add(noDialogId as unknown as Conversation)).rejects.toMatchObject(invalid('sessions.0.turns.0.dialogId'));
    expect((await memory.stats()).chunks).toBe(0);
    expect(await store.load(DEFAULT_PARTITION)).toBeNull();
  });

  it('skips empty messages with a warning and keeps the rest', async () => {
    const memory = await Memory.open(options(new MemoryStore()));
    const view = await memory.inspect();
    const report = await memory.add({ sessionId: 's', date: '8 May, 2023', messages: [{ speaker: 'A', text: '' }, { speaker: 'B', text: 'I adopted a cat named Pixel.' }] });
    expect(report.chunksAdded).toBe(1);
    expect(report.warnings).toEqual(['1 empty message skipped']);
    expect([...view.graph.chunks.values()][0]?.turns.map((t) => t.dialogId)).toEqual(['s:1']);
  });

  it('offers a turn too long for the budget as an excerpt of its best sentences', async () => {
    const memory = await Memory.open(options(new MemoryStore()));
    const view = await memory.inspect();
    const chores = ['the weather was mild', 'we cooked pasta for dinner', 'the train was late again', 'I read a novel about sailors'];
    const diary = Array.from({ length: 120 }, (_, i) => `On day ${i + 1} ${chores[i % chores.length]}.`);
    diary.splice(71, 0, 'My sister Lena moved to Porto last spring.');
    await memory.add({ sessionId: 'diary', date: '3 March, 2024', messages: [{ speaker: 'Ana', text: diary.join(' ') }] });
    await memory.add({ sessionId: 'chat', date: '4 March, 2024', messages: [{ speaker: 'Ben', text: 'My brother moved to Berlin.' }] });
    expect(countTokens(diary.join(' '))).toBeGreaterThan(1000);

    for (const budget of [120, 400, 4000]) {
      const result = await memory.search('Where did Lena move?', { budget });
      expect(result.tokens).toBeLessThanOrEqual(budget);
      const excerpt = result.units.find((u) => u.kind === 'excerpt');
      // The 4,000-character message was stored as passages of at most 2,000 (`diary:1#k`).
      expect(excerpt?.dialogIds).toEqual([expect.stringMatching(/^diary:1#\d$/)]);
      expect(excerpt?.text).toMatch(/^\(diary:1#\d\) Ana: … .*My sister Lena moved to Porto last spring\./);
      // At most half the budget, and never more than maxTurnTokens.
      expect(countTokens(excerpt?.text ?? '')).toBeLessThanOrEqual(Math.min(budget / 2, memory.config.retrieval.maxTurnTokens));
      // Worked out when packing read it, handed out as plain data.
      for (const unit of result.units) expect(Object.getOwnPropertyDescriptor(unit, 'text')).toHaveProperty('value', unit.text);
      expect(JSON.parse(JSON.stringify(result.units)).map((u: { text: string }) => u.text)).toEqual(result.units.map((u) => u.text));
    }

    // Whether a turn fits whole is read from the count its record kept (`lineTokens`), not counted again.
    const passages = [...view.graph.chunks.values()].flatMap((chunk) => chunk.turns).filter((turn) => turn.dialogId.startsWith('diary:1#'));
    expect(passages.length).toBeGreaterThan(1);
    expect(passages.filter((turn) => (turn.lineTokens ?? 0) > memory.config.retrieval.maxTurnTokens).length).toBeGreaterThan(0);
    const kinds = async () => (await memory.search('Where did Lena move?', { budget: 4000 })).units.filter((u) => u.dialogIds[0]?.startsWith('diary:1#')).map((u) => u.kind);
    expect(await kinds()).toContain('excerpt');
    for (const turn of passages) turn.lineTokens = 1;
    expect(await kinds()).not.toContain('excerpt');
  });
});

describe('chunking', () => {
  it('carries headers and dialog ids, and splits by turns within sessions', () => {
    const drafts = chunkConversation(conversation, { by: 'turns', size: 2 });
    expect(drafts.map((d) => d.turns.map((t) => t.dialogId))).toEqual([['D1:1', 'D1:2'], ['D1:3'], ['D2:1', 'D2:2']]);
    expect(drafts[0]?.text.split('\n')[0]).toBe('[demo session_1 · 1:56 pm on 8 May, 2023]');
    expect(drafts[0]?.text).toContain('(D1:2) Melanie: That is wonderful!');
  });

  it('cuts token windows by o200k tokens of the turn lines, within sessions', () => {
    const lines = conversation.sessions[0]?.turns.map((t) => countTokens(`(${t.dialogId}) ${t.speaker}: ${t.text}`) + 1) ?? [];
    const [first = 0, second = 0] = lines;
    const drafts = chunkConversation(conversation, { by: 'tokens', maxTokens: first + second });
    expect(drafts[0]?.turns.map((t) => t.dialogId)).toEqual(['D1:1', 'D1:2']);
    expect(drafts.flatMap((d) => d.turns.map((t) => t.dialogId))).toEqual(['D1:1', 'D1:2', 'D1:3', 'D2:1', 'D2:2']);
    // A budget smaller than any turn still makes progress: one turn per window.
    expect(chunkConversation(conversation, { by: 'tokens', maxTokens: 1 })).toHaveLength(5);
  });
});
