import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText, wrapLanguageModel } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prismMemoryMiddleware } from '../src/ai-sdk/middleware.ts';
import type { Memory } from '../src/memory.ts';
import { openNodeMemory } from '../src/node.ts';
import { reply, startOpenAiServer, type OpenAiTestServer } from './helpers/openai-server.ts';

/**
 * The middleware between the AI SDK and a real OpenAI-compatible HTTP server on loopback: what
 * the server receives must carry the remembered fact, and the memory must hold the new turn.
 */

let dir: string;
let memory: Memory;
let server: OpenAiTestServer;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'prism-ai-sdk-'));
  memory = await openNodeMemory({ dir });
  await memory.add([{ speaker: 'Sam', text: 'My beagle is called Biscuit and he is scared of the vacuum cleaner.' }], { userId: 'sam', sessionId: 'intro', date: '2025-03-01' });
  server = await startOpenAiServer({ handler: () => reply.content('Your beagle is Biscuit.') });
}, 120_000);

afterAll(async () => {
  await server?.close();
  await memory?.close();
  await rm(dir, { recursive: true, force: true });
});

function modelFor(userId: string) {
  const provider = createOpenAICompatible({ name: 'scripted', baseURL: server.baseURL, apiKey: 'test-key' });
  return wrapLanguageModel({ model: provider.chatModel('scripted-model'), middleware: prismMemoryMiddleware({ memory, userId, sessionId: 'chat' }) });
}

type SentMessage = { role: string; content: unknown };
const lastBody = (): SentMessage[] => server.requests.at(-1)?.body?.messages ?? [];
const textOf = (messages: readonly SentMessage[]): string => messages.map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content))).join('\n');

describe('prismMemoryMiddleware', () => {
  it('generate: the remembered fact reaches the model after the instructions, and the exchange is stored', async () => {
    const { text } = await generateText({ model: modelFor('sam'), system: 'You are a helpful assistant.', prompt: 'What is my dog called?' });
    expect(text).toBe('Your beagle is Biscuit.');
    const sent = lastBody();
    expect(sent[0]).toEqual({ role: 'system', content: 'You are a helpful assistant.' });
    expect(sent[1]?.role).toBe('system');
    expect(textOf([sent[1] as SentMessage])).toContain('My beagle is called Biscuit');
    expect(sent.at(-1)).toMatchObject({ role: 'user', content: 'What is my dog called?' });

    const stored = await memory.get('chat', { userId: 'sam' });
    expect(stored?.kind).toBe('session');
    if (stored?.kind !== 'session') return;
    expect(stored.messages.map((m) => [m.speaker, m.text])).toEqual([
      ['User', 'What is my dog called?'],
      ['Assistant', 'Your beagle is Biscuit.'],
    ]);
  }, 60_000);

  it('stream: the answer streams through unchanged and is stored once the stream ends', async () => {
    const result = streamText({ model: modelFor('sam'), prompt: 'Is Biscuit afraid of anything?' });
    expect(await result.text).toBe('Your beagle is Biscuit.');
    expect(server.requests.at(-1)?.body?.stream).toBe(true);
    expect(textOf(lastBody())).toContain('scared of the vacuum cleaner');
    const stored = await memory.get('chat', { userId: 'sam' });
    if (stored?.kind !== 'session') throw new Error('the chat session is missing');
    expect(stored.messages.slice(-2).map((m) => m.text)).toEqual(['Is Biscuit afraid of anything?', 'Your beagle is Biscuit.']);
  }, 60_000);

  it('another user gets none of it: no memory message, nothing of Sam in the request', async () => {
    await generateText({ model: modelFor('maya'), prompt: 'What is my dog called?' });
    const sent = lastBody();
    expect(sent.map((m) => m.role)).toEqual(['user']);
    expect(textOf(sent)).not.toContain('Biscuit');
    const maya = await memory.list({ userId: 'maya' });
    expect(maya.map((s) => [s.sessionId, s.messages])).toEqual([['chat', 2]]);
    const sam = await memory.list({ userId: 'sam' });
    expect(sam.find((s) => s.sessionId === 'chat')?.messages).toBe(4);
  }, 60_000);

  it('an exchange stored again (a retried call) adds nothing; the same question with another answer is a new exchange', async () => {
    const model = modelFor('rita');
    const messagesIn = async () => (await memory.list({ userId: 'rita' })).find((s) => s.sessionId === 'chat')?.messages;
    await generateText({ model, prompt: 'What is my dog called?' });
    expect(await messagesIn()).toBe(2);
    await generateText({ model, prompt: 'What is my dog called?' });
    expect(await streamText({ model, prompt: 'What is my dog called?' }).text).toBe('Your beagle is Biscuit.');
    expect(await messagesIn()).toBe(2);
    server.enqueue(reply.content('I do not know yet.'));
    await generateText({ model, prompt: 'What is my dog called?' });
    expect(await messagesIn()).toBe(4);
  }, 60_000);
});
