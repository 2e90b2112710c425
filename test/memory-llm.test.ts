import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PrismErrorCode } from '../src/errors.ts';
import type { Conversation } from '../src/ingest/conversation.ts';
import { createLlmClient, type LlmConfig } from '../src/llm/client.ts';
import { Memory } from '../src/memory.ts';
import { DEFAULT_PARTITION } from '../src/scope.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { openSqliteStore } from '../src/store/sqlite.node.ts';
import type { GraphStore } from '../src/store/types.ts';
import { conversation } from './helpers/conversation.ts';
import { reply, startOpenAiServer, type OpenAiTestServer, type RecordedRequest, type ScriptedReply } from './helpers/openai-server.ts';
import { extractionReply, promptOf, validHandler } from './helpers/prism-replies.ts';
import { testRuntime, type TestRuntime } from './helpers/runtime.ts';

/** A MemoryStore that counts its commits. */
class CountingStore extends MemoryStore {
  commits = 0;
  override async commit(...args: Parameters<MemoryStore['commit']>): ReturnType<MemoryStore['commit']> {
    this.commits++;
    return super.commit(...args);
  }
}

/**
 * The query side in LLM mode, over real HTTP: N4's LLM tier, N3's rerank and `answer()`, each
 * one call of its role, on a memory ingested without an LLM (local extraction).
 */
describe('Memory in LLM mode', () => {
  let server: OpenAiTestServer;
  let memory: Memory;
  beforeAll(async () => {
    server = await startOpenAiServer();
    const runtime = await testRuntime();
    const llm = createLlmClient({ baseURL: server.baseURL, models: { default: 'test-model', answer: 'answer-model' } });
    memory = await Memory.open({
      store: new MemoryStore(),
      embedder: runtime.embedder,
      createIndex: runtime.createIndex,
      llm,
      extraction: 'local',
      // Keep M below the number of Episodes so the rerank is not skipped.
      config: { flags: { intentRouting: true }, retrieval: { keep: 1 } },
    });
    await memory.add(conversation);
  });
  afterAll(async () => server.close());

  it('routes through the LLM tier, reranks with one call, and answers from the context', async () => {
    server.setHandler((request) => {
      const system = request.body?.messages[0]?.content ?? '';
      if (system.includes('You label questions')) return reply.json({ temporal: 0.1, causal: 0.05, multi_hop: 0.2, entity_centric: 0.9 });
      // Rerank: the passage that mentions swimming wins.
      if (system.includes('which passages')) {
        const user = request.body?.messages.at(-1)?.content ?? '';
        const passages = [...user.matchAll(/\[(\d+)\] ([^\n]*)/g)].map((m) => ({ index: Number(m[1]), text: m[2] ?? '' }));
        return reply.json({ scores: passages.map((p) => ({ index: p.index, score: /swim/i.test(p.text) ? 9 : 1 })) });
      }
      return reply.content('Max learned to swim on 17 June 2023.');
    });
    const before = server.requests.length;
    const result = await memory.answer('What new skill did the dog pick up at the seaside?');
    expect(result.retrieval.tier).toBe('llm');
    expect(result.retrieval.intent).toBe('ENTITY_CENTRIC');
    expect(result.answer).toBe('Max learned to swim on 17 June 2023.');
    expect(result.retrieval.dialogIds).toContain('D2:2');
    expect(result.llmCalls).toBe(3);
    const sent = server.requests.slice(before);
    expect(sent.map((r) => r.body?.model)).toEqual(['test-model', 'test-model', 'answer-model']);
    expect(sent.every((r) => r.body?.temperature === 0)).toBe(true);
    // The answer prompt carries the packed context with its date header and dialog ids.
    expect(sent[2]?.body?.messages.at(-1)?.content).toMatch(/\[demo session_2 · 10:00 am on 20 June, 2023\][\s\S]*\(D2:2\) Caroline: Max learned to swim/);
  });

  it('keeps working when the reranker answers garbage, with a warning', async () => {
    server.setHandler((request) => {
      const system = request.body?.messages[0]?.content ?? '';
      if (system.includes('You label questions')) return reply.json({ temporal: 0, causal: 0, multi_hop: 0, entity_centric: 0 });
      return reply.content('not json at all');
    });
    const result = await memory.search('Tell me about the painting by the lake', { budget: 256 });
    expect(result.intent).toBe('GENERAL');
    expect(result.warnings.join(' ')).toMatch(/rerank/i);
    expect(result.dialogIds.length).toBeGreaterThan(0);
    expect(result.tokens).toBeLessThanOrEqual(256);
  });

  it('zero-LLM search on the same memory makes no call', async () => {
    const before = server.requests.length;
    const result = await memory.search('When did Caroline go to the support group?', { mode: 'zero-llm', budget: 256 });
    expect(server.requests.length).toBe(before);
    expect(result).toMatchObject({ intent: 'TEMPORAL', tier: 'keyword', llmCalls: 0 });
    expect(result.dialogIds[0]).toBe('D1:1');
  });
});

/**
 * Nodes, edges and vectors without index keys, Entities named by their names, and evolution
 * edges as links between Episodes of an entity's timeline: equal for equal graphs built in a
 * different order (an Entity id records the chunk that first named it; evolution ties between
 * facts of one Episode are broken by build order).
 */
async function shape(memory: Memory) {
  const view = await memory.inspect();
  const s = view.snapshot();
  const names = new Map(s.nodes.flatMap((n) => (n.layer === 'entity' ? [[n.id, `entity:${n.name}`] as const] : [])));
  const episodeOrder = (id: string) => {
    const fact = view.graph.nodes.get(id);
    const episode = fact?.layer === 'facetPoint' ? view.graph.nodes.get(fact.episodeId) : undefined;
    return episode?.layer === 'episode' ? episode.order : -1;
  };
  const named = (id: string) => names.get(id) ?? id;
  const nodes = s.nodes.map(({ key: _key, ...n }) => ({
    ...n,
    id: named(n.id),
    ...(n.layer === 'facetPoint' && n.entityId ? { entityId: named(n.entityId) } : {}),
    ...(n.layer === 'entity' ? { chunkIds: [...n.chunkIds].sort() } : {}),
  }));
  const edges = s.edges.filter((e) => e.type !== 'evolution').map(({ key: _key, ...e }) => ({ ...e, id: `${e.type}:${named(e.from)}>${named(e.to)}`, from: named(e.from), to: named(e.to) }));
  const evolution = s.edges.filter((e) => e.type === 'evolution').map((e) => {
    const fact = view.graph.nodes.get(e.to);
    return `${fact?.layer === 'facetPoint' ? named(fact.entityId ?? '') : ''}: ${episodeOrder(e.from)} → ${episodeOrder(e.to)}`;
  });
  const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id);
  return {
    nodes: nodes.sort(byId),
    edges: edges.sort(byId),
    evolution: [...new Set(evolution)].sort(),
    vectors: s.nodes.length + s.edges.length - s.vectors.size,
    chunks: s.chunks.map(({ id, extraction }) => ({ id, extraction })).sort(byId),
  };
}

describe('LLM faults at ingest', () => {
  let server: OpenAiTestServer;
  let runtime: TestRuntime;
  beforeAll(async () => {
    [server, runtime] = await Promise.all([startOpenAiServer(), testRuntime()]);
  });
  afterAll(async () => server.close());

  function open(store: MemoryStore, overrides: Partial<LlmConfig> = {}) {
    const llm = createLlmClient({ baseURL: server.baseURL, models: { default: 'test-model' }, retry: { maxRetries: 2, baseDelayMs: 1 }, ...overrides });
    return Memory.open({ store, embedder: runtime.embedder, createIndex: runtime.createIndex, llm, extraction: 'llm' });
  }

  const refusals: Array<[string, ScriptedReply, PrismErrorCode]> = [
    ['401 (bad key)', reply.status(401, { body: JSON.stringify({ error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } }) }), 'LLM_AUTH'],
    ['403 (key without access)', reply.status(403), 'LLM_AUTH'],
    ['404 (unknown model)', reply.status(404, { body: JSON.stringify({ error: { message: 'The model `gpt-9` does not exist', type: 'invalid_request_error', code: 'model_not_found' } }) }), 'LLM_CONFIG'],
    ['400 naming an unknown model', reply.status(400, { body: JSON.stringify({ error: { message: 'Invalid model name passed in model=gpt-9', type: 'invalid_request_error', code: null } }) }), 'LLM_CONFIG'],
  ];
  it.each(refusals)('%s stops the ingest with a typed error, without retrying or committing the chunk', async (_name, refusal, code) => {
    // Session 1 extracts; session 2 is refused.
    server.setHandler((request) => (request.body?.messages.at(-1)?.content.includes('D2:1') ? refusal : validHandler(request)));
    const start = server.requests.length;
    const store = new MemoryStore();
    const memory = await open(store);
    await expect(memory.add(conversation)).rejects.toMatchObject({ code });
    const sent = server.requests.slice(start).map((r) => r.body?.messages.at(-1)?.content ?? '');
    expect(sent.filter((content) => content.includes('D2:1'))).toHaveLength(1);
    const stored = await store.load(DEFAULT_PARTITION);
    expect(stored?.chunks.map((c) => [c.sessionId, c.extraction])).toEqual([['demo/session_1', 'llm']]);
    expect(await memory.stats()).toMatchObject({ chunks: 1, fallbackChunks: [] });
  });

  it('an empty extraction is a bad answer: re-asked once, not cached, the chunk marked as a fallback', async () => {
    const empty = { episode_summary: ' ', entities: [], facet_points: [], facets: [], temporal_info: [] };
    server.setHandler((request) => (promptOf(request).includes('(D1:1)') ? reply.json(empty) : validHandler(request)));
    const cache = taggedCache();
    const start = server.requests.length;
    const store = new MemoryStore();
    const llm = createLlmClient({ baseURL: server.baseURL, models: { default: 'test-model' }, cache });
    const memory = await Memory.open({ store, embedder: runtime.embedder, createIndex: runtime.createIndex, llm, extraction: 'llm' });
    const report = await memory.add(conversation);
    expect(report.warnings.join(' ')).toMatch(/fell back[\s\S]*the extraction is empty/);
    expect(server.requests.slice(start).filter((r) => promptOf(r).includes('(D1:1)'))).toHaveLength(2);
    const [first] = (await memory.stats()).fallbackChunks;
    expect([...cache.entries.values()].some((entry) => entry.tags.includes(first ?? ''))).toBe(false);
  });

  it('a stop cancels the extractions started ahead of the failed chunk', async () => {
    const third = { id: 'session_3', dateText: '9:00 am on 1 July, 2023', time: '2023-07-01T09:00:00', turns: [{ dialogId: 'D3:1', speaker: 'Melanie', text: 'We adopted a kitten.' }] };
    server.setHandler((request) => {
      const prompt = promptOf(request);
      if (prompt.includes('(D2:1)')) return reply.status(401);
      // Session 3 was sent ahead and is still being answered when session 2 is refused.
      if (prompt.includes('(D3:1)')) return reply.json(extractionReply(prompt), { delayMs: 5_000 });
      return validHandler(request);
    });
    const memory = await open(new MemoryStore());
    await expect(memory.add({ ...conversation, sessions: [...conversation.sessions, third] })).rejects.toMatchObject({ code: 'LLM_AUTH' });
    const stoppedAt = Date.now();
    while (server.inFlight > 0 && Date.now() - stoppedAt < 2_000) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(server.inFlight).toBe(0);
  });

  it('transient faults that persist (429 with Retry-After, 500) stop at the last commit after their retries', async () => {
    for (const [fault, code] of [[reply.rateLimited(0), 'LLM_RATE_LIMITED'], [reply.status(500), 'LLM_HTTP']] as const) {
      server.setHandler((request) => (request.body?.messages.at(-1)?.content.includes('D2:1') ? fault : validHandler(request)));
      const start = server.requests.length;
      const store = new MemoryStore();
      await expect((await open(store)).add(conversation)).rejects.toMatchObject({ code });
      expect(server.requests.slice(start).filter((r) => r.body?.messages.at(-1)?.content.includes('D2:1'))).toHaveLength(3);
      expect((await store.load(DEFAULT_PARTITION))?.chunks).toHaveLength(1);
    }
  });

  it('a reply invalid twice falls back, is marked and listed; reextract() replaces it with the full chunk once the LLM answers', async () => {
    const broken = (request: RecordedRequest): ScriptedReply =>
      request.body?.messages.at(-1)?.content.includes('D1:1') ? reply.content('{"episode_summary": "cut off') : validHandler(request);
    server.setHandler(broken);
    const store = new CountingStore();
    const memory = await open(store);
    const report = await memory.add(conversation);
    expect(report.warnings.join(' ')).toMatch(/fell back/);
    const view = await memory.inspect();
    const [first, second] = [...view.graph.chunks.values()].sort((a, b) => a.order - b.order);
    expect(first?.extraction).toBe('fallback');
    expect(second?.extraction).toBe('llm');
    expect((await memory.stats()).fallbackChunks).toEqual([first?.id]);
    expect(view.graph.nodesOfLayer('facetPoint').filter((p) => p.chunkId === first?.id)).toHaveLength(0);
    const before = await shape(memory);

    // Still broken: the chunk stays as it was, marked.
    await expect(memory.reextract()).resolves.toMatchObject({ chunksReextracted: 0, chunksStillFallback: 1 });
    expect(await shape(memory)).toEqual(before);

    // A refused key stops re-extraction with the typed error and changes nothing.
    server.setHandler(() => reply.status(401));
    await expect(memory.reextract()).rejects.toMatchObject({ code: 'LLM_AUTH' });
    expect(await shape(memory)).toEqual(before);

    server.setHandler(validHandler);
    const commitsBefore = store.commits;
    const reextracted = await memory.reextract();
    expect(reextracted).toMatchObject({ chunksReextracted: 1, chunksStillFallback: 0 });
    // One atomic batch for the chunk.
    expect(store.commits - commitsBefore).toBe(1);
    expect((await memory.stats()).fallbackChunks).toEqual([]);
    expect(view.graph.chunks.get(first?.id ?? '')?.extraction).toBe('llm');

    // The same graph an ingest that never fell back builds, and the same after reopening the store.
    const fresh = await open(new MemoryStore());
    await fresh.add(conversation);
    expect(await shape(memory)).toEqual(await shape(fresh));
    const reopened = await open(store);
    expect(await shape(reopened)).toEqual(await shape(memory));
    const keys = [...view.graph.nodes.values(), ...view.graph.edges.values()].map((x) => x.key);
    expect(new Set(keys).size).toBe(keys.length);

    // The vector indexes hold one vector per node: the replaced ones left, the new ones came in.
    for (const layer of ['episode', 'facet', 'facetPoint', 'entity'] as const) expect(view.indexSize(layer)).toBe(view.graph.nodesOfLayer(layer).length);
    expect(view.graph.nodesOfLayer('facetPoint').filter((p) => p.chunkId === first?.id)).toHaveLength(3);
  });
});

describe('re-extracting a chunk in the middle of the timeline', () => {
  // Over SQLite the memory is reopened first: its open leaves the relation edges in the store, and re-extraction changes the graph ahead of it.
  it.each(['memory', 'reopened SQLite'] as const)('links its facts between the earlier and later facts of each entity, as an ingest that never fell back (%s store)', async (kind) => {
    const server = await startOpenAiServer();
    try {
      const runtime = await testRuntime();
      const sessions = ['the lake', 'the hills', 'the coast'].map((place, s) => ({
        id: `walk_${s + 1}`,
        dateText: `10:00 am on ${s + 1} July, 2023`,
        time: `2023-07-0${s + 1}T10:00:00`,
        turns: [{ dialogId: `D${s + 1}:1`, speaker: 'Ann', text: `Ann walked around ${place} with her dog Rex.` }],
      }));
      const walks: Conversation = { id: 'walks', sessions };
      const open = (store: GraphStore) =>
        Memory.open({ store, embedder: runtime.embedder, createIndex: runtime.createIndex, llm: createLlmClient({ baseURL: server.baseURL, models: { default: 'm' } }), extraction: 'llm' });
      server.setHandler((request) => (promptOf(request).includes('(D2:1)') ? reply.content('not json') : validHandler(request)));
      const path = join(await mkdtemp(join(tmpdir(), 'prism-reextract-')), 'memory.sqlite');
      const store = async () => (kind === 'memory' ? new MemoryStore() : openSqliteStore(path));
      let memory = await open(await store());
      await memory.add(walks);
      expect((await memory.stats()).fallbackChunks).toHaveLength(1);
      // Walks 1 and 3 were linked directly while walk 2 had no facts.
      expect((await shape(memory)).evolution).toEqual(['entity:Ann: 0 → 2']);
      if (kind === 'reopened SQLite') {
        await memory.close();
        memory = await open(await store());
      }

      server.setHandler(validHandler);
      await expect(memory.reextract()).resolves.toMatchObject({ chunksReextracted: 1 });
      const fresh = await open(new MemoryStore());
      await fresh.add(walks);
      expect((await shape(memory)).evolution).toEqual(['entity:Ann: 0 → 1', 'entity:Ann: 1 → 2']);
      expect(await shape(memory)).toEqual(await shape(fresh));
      await memory.close();
    } finally {
      await server.close();
    }
  });
});

describe('LLM-mode search with a failing endpoint', () => {
  let server: OpenAiTestServer;
  let runtime: TestRuntime;
  let store: MemoryStore;
  beforeAll(async () => {
    [server, runtime] = await Promise.all([startOpenAiServer(), testRuntime()]);
    store = new MemoryStore();
    const local = await Memory.open({ store, embedder: runtime.embedder, createIndex: runtime.createIndex });
    await local.add(conversation);
  });
  afterAll(async () => server.close());

  /** The memory in `store`, searched in LLM mode (LLM intent tier and rerank) through `baseURL`. */
  function open(baseURL: string) {
    const llm = createLlmClient({ baseURL, models: { default: 'test-model' }, retry: { maxRetries: 1, baseDelayMs: 1 } });
    return Memory.open({
      store,
      embedder: runtime.embedder,
      createIndex: runtime.createIndex,
      llm,
      extraction: 'local',
      config: { flags: { intentRouting: true }, retrieval: { keep: 1 } },
    });
  }
  const query = 'What new skill did the dog pick up at the seaside?';

  it('a dead endpoint falls back to zero-LLM ranking with a warning, or throws with llmFallback: false', async () => {
    const dead = await startOpenAiServer();
    const deadURL = dead.baseURL;
    await dead.close();
    const memory = await open(deadURL);
    const zeroLlm = await memory.search(query, { mode: 'zero-llm', budget: 256 });
    const result = await memory.search(query, { budget: 256 });
    expect(result.mode).toBe('zero-llm');
    expect(result.warnings[0]).toMatch(/^LLM unavailable, ranked without it: LLM_HTTP/);
    expect(result.context).toBe(zeroLlm.context);
    expect(result.dialogIds).toContain('D2:2');
    await expect(memory.search(query, { budget: 256, llmFallback: false })).rejects.toMatchObject({ code: 'LLM_HTTP' });
  });

  it('a refused key still falls back, and the warning says it will not pass by itself', async () => {
    server.setHandler(() => reply.status(401));
    const memory = await open(server.baseURL);
    const start = server.requests.length;
    const result = await memory.search(query, { budget: 256 });
    expect(result.mode).toBe('zero-llm');
    expect(result.warnings[0]).toMatch(/LLM_AUTH \(check the API key, model and base URL: this will not pass by itself\)/);
    expect(server.requests.length - start).toBe(1);
    // Right after a failure the next search does not ask again, and says so.
    const next = await memory.search(query, { budget: 256 });
    expect(next.warnings[0]).toMatch(/not asked: it failed \d+ s ago\): LLM_AUTH/);
    expect(server.requests.length - start).toBe(1);
    await expect(memory.search(query, { llmFallback: false })).rejects.toMatchObject({ code: 'LLM_AUTH' });
    expect(server.requests.length - start).toBe(2);
  });

  it('a bad answer is not an endpoint failure: the search stays in LLM mode', async () => {
    server.setHandler(() => reply.content('no json here'));
    const result = await (await open(server.baseURL)).search(query, { budget: 256 });
    expect(result.mode).toBe('llm');
    expect(result.warnings.join(' ')).not.toMatch(/LLM unavailable/);
  });
});

describe('LLM response cache tags', () => {
  it('tags extraction replies with their chunk and consolidation replies with the chunks of their window', async () => {
    const server = await startOpenAiServer({ handler: validHandler });
    try {
      const runtime = await testRuntime();
      const cache = taggedCache();
      const llm = createLlmClient({ baseURL: server.baseURL, models: { default: 'test-model' }, cache });
      const memory = await Memory.open({
        store: new MemoryStore(),
        embedder: runtime.embedder,
        createIndex: runtime.createIndex,
        llm,
        extraction: 'llm',
        config: { ingest: { consolidateEvery: 2 } },
      });
      await memory.add(conversation);
      const [first, second] = [...(await memory.inspect()).graph.chunks.values()].sort((a, b) => a.order - b.order).map((c) => c.id);
      expect([...cache.entries.values()].map((e) => e.tags).sort()).toEqual([[first], [second], [first, second]].sort());

      // Forgetting the first chunk forgets its extraction and the window it was part of.
      await cache.deleteCached([first ?? '']);
      expect([...cache.entries.values()].map((e) => e.tags)).toEqual([[second]]);
      const requests = server.requests.length;
      const fresh = await Memory.open({ store: new MemoryStore(), embedder: runtime.embedder, createIndex: runtime.createIndex, llm, extraction: 'llm' });
      await fresh.add(conversation);
      // Only the first chunk is asked for again; the second comes from the cache.
      expect(server.requests.slice(requests).map((r) => r.body?.messages.at(-1)?.content.includes('D1:1'))).toEqual([true]);
    } finally {
      await server.close();
    }
  });
});

describe('LLM replies cached in the store', () => {
  it('go with their chunk when delete() removes it', async () => {
    const server = await startOpenAiServer({ handler: validHandler });
    try {
      const runtime = await testRuntime();
      const store = new RecordingStore();
      const llm = createLlmClient({ baseURL: server.baseURL, models: { default: 'test-model' }, cache: store });
      const memory = await Memory.open({ store, embedder: runtime.embedder, createIndex: runtime.createIndex, llm, extraction: 'llm', config: { ingest: { consolidateEvery: 2 } } });
      await memory.add(conversation);
      const chunks = [...(await memory.inspect()).graph.chunks.values()];
      const first = chunks.find((c) => c.sessionId === 'demo/session_1')?.id ?? '';
      expect(store.tagsByKey.size).toBe(3);

      await memory.delete({ sessionId: 'demo/session_1' });
      // The first chunk's extraction and the consolidation window it was in are gone; the second chunk's extraction stays.
      const kept = await Promise.all([...store.tagsByKey].map(async ([key, tags]) => ({ tags, kept: (await store.getCached(key)) !== undefined })));
      expect(kept.filter((entry) => entry.kept).map((entry) => entry.tags)).toEqual(kept.filter((entry) => !entry.tags.includes(first)).map((entry) => entry.tags));
      expect(kept.filter((entry) => entry.kept)).toHaveLength(1);
    } finally {
      await server.close();
    }
  });
});

/** A MemoryStore that remembers the tags each cache entry was written with. */
class RecordingStore extends MemoryStore {
  readonly tagsByKey = new Map<string, readonly string[]>();
  override async putCached(key: string, value: string, tags: readonly string[] = []): Promise<void> {
    this.tagsByKey.set(key, tags);
    return super.putCached(key, value, tags);
  }
}

/** The store contract's tagged cache (`putCached` with tags, `deleteCached`), kept in a Map. */
function taggedCache() {
  const entries = new Map<string, { value: string; tags: readonly string[] }>();
  return {
    entries,
    getCached: (key: string) => Promise.resolve(entries.get(key)?.value),
    putCached: (key: string, value: string, tags: readonly string[]) => {
      entries.set(key, { value, tags: [...tags] });
      return Promise.resolve();
    },
    deleteCached: (tags: readonly string[]) => {
      for (const [key, entry] of entries) if (entry.tags.some((tag) => tags.includes(tag))) entries.delete(key);
      return Promise.resolve();
    },
  };
}
