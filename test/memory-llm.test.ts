import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLlmClient } from '../src/llm/client.ts';
import { Memory } from '../src/memory.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { conversation } from './helpers/conversation.ts';
import { reply, startOpenAiServer, type OpenAiTestServer } from './helpers/openai-server.ts';
import { testRuntime } from './helpers/runtime.ts';

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
