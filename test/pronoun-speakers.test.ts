import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Conversation } from '../src/ingest/conversation.ts';
import { Memory, type SearchResult } from '../src/memory.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { testRuntime } from './helpers/runtime.ts';

function chat(id: string, speakers: [string, string]): Conversation {
  return {
    id,
    sessions: [
      {
        id: 'session_1',
        dateText: null,
        time: '2023-05-02T10:00:00',
        turns: [
          { dialogId: 'D1:1', speaker: speakers[0], text: 'I adopted a beagle named Rex last spring; he loves the park.' },
          { dialogId: 'D1:2', speaker: speakers[1], text: 'Beagles are wonderful companions: long walks in the park keep them healthy and happy.' },
        ],
      },
    ],
  };
}

describe('pronouns name the speakers of a chat with an assistant', () => {
  let memory: Memory;
  beforeAll(async () => {
    const runtime = await testRuntime();
    memory = await Memory.open({ store: new MemoryStore(), embedder: runtime.embedder, createIndex: runtime.createIndex, llm: null });
    await memory.addConversation(chat('roles', ['user', 'assistant']), { userId: 'roles' });
    await memory.addConversation(chat('names', ['Alice', 'Bob']), { userId: 'names' });
  });
  afterAll(async () => {
    await memory.close();
  });

  const search = (userId: string, query: string, pronounSpeakers: boolean) =>
    memory.search(query, { userId, budget: 1024, now: null, config: { flags: { pronounSpeakers } } });
  const scoreOf = (result: SearchResult, dialogId: string) => result.units.find((u) => u.dialogIds.includes(dialogId))?.score ?? Number.NaN;
  const gain = async (userId: string, query: string, dialogId: string) => scoreOf(await search(userId, query, true), dialogId) - scoreOf(await search(userId, query, false), dialogId);

  it('gives the user\'s turns the speaker term for a first-person query, the assistant\'s for a second-person one', async () => {
    const speaker = memory.config.retrieval.turnScore.speaker;
    expect(await gain('roles', 'What is the name of my dog?', 'D1:1')).toBeCloseTo(speaker, 12);
    expect(await gain('roles', 'What is the name of my dog?', 'D1:2')).toBe(0);
    expect(await gain('roles', 'What did you say keeps beagles healthy?', 'D1:2')).toBeCloseTo(speaker, 12);
    expect(await gain('roles', 'What did you say keeps beagles healthy?', 'D1:1')).toBe(0);
    // Neither pronoun: nothing changes.
    expect(await gain('roles', 'What is the beagle called?', 'D1:1')).toBe(0);
  });

  it('leaves memories whose speakers are people alone', async () => {
    expect(await gain('names', 'What is the name of my dog?', 'D1:1')).toBe(0);
    expect(await gain('names', 'What did you say keeps beagles healthy?', 'D1:2')).toBe(0);
  });
});
