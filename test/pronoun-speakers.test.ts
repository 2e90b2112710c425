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

  const search = (userId: string, query: string, flags: { pronounSpeakers: boolean; pastSecondPerson?: boolean; userByDefault?: boolean }) =>
    memory.search(query, { userId, budget: 1024, now: null, config: { flags: { userByDefault: false, ...flags } } });
  const scoreOf = (result: SearchResult, dialogId: string) => result.units.find((u) => u.dialogIds.includes(dialogId))?.score ?? Number.NaN;
  const gain = async (userId: string, query: string, dialogId: string, pastSecondPerson = true, userByDefault = false) =>
    scoreOf(await search(userId, query, { pronounSpeakers: true, pastSecondPerson, userByDefault }), dialogId) - scoreOf(await search(userId, query, { pronounSpeakers: false }), dialogId);

  it('gives the user\'s turns the speaker term for a first-person query, the assistant\'s for a second-person one', async () => {
    const speaker = memory.config.retrieval.turnScore.pronounSpeaker;
    expect(await gain('roles', 'What is the name of my dog?', 'D1:1')).toBeCloseTo(speaker, 12);
    expect(await gain('roles', 'What is the name of my dog?', 'D1:2')).toBe(0);
    expect(await gain('roles', 'What did you say keeps beagles healthy?', 'D1:2')).toBeCloseTo(speaker, 12);
    expect(await gain('roles', 'What did you say keeps beagles healthy?', 'D1:1')).toBe(0);
    // Neither pronoun, with userByDefault off (`gain`'s default): nothing changes.
    expect(await gain('roles', 'What is the beagle called?', 'D1:1')).toBe(0);
  });

  it('reads a request in the second person as asking for something new, not for what the assistant said', async () => {
    const speaker = memory.config.retrieval.turnScore.pronounSpeaker;
    for (const request of ['Can you suggest a toy for my beagle Rex who loves the park?', 'Do you have any tips on the park for my beagle Rex?']) {
      expect(await gain('roles', request, 'D1:1')).toBeCloseTo(speaker, 12);
      expect(await gain('roles', request, 'D1:2')).toBe(0);
      // Read as naming the assistant wherever "you" is, both speakers gain alike.
      expect(await gain('roles', request, 'D1:2', false)).toBeCloseTo(speaker, 12);
    }
    // What was said before: a past verb, "your", a verb of memory.
    for (const recalled of ['Which park have you recommended for beagles?', 'What was your advice on beagles?', 'Can you remind me what keeps beagles healthy?']) {
      expect(await gain('roles', recalled, 'D1:2')).toBeCloseTo(speaker, 12);
    }
    // "you need" is not a past verb.
    expect(await gain('roles', 'What do you need to keep a beagle healthy?', 'D1:2')).toBe(0);
  });

  it('with userByDefault, reads a query pointing at neither side as the user\'s', async () => {
    const speaker = memory.config.retrieval.turnScore.pronounSpeaker;
    const byDefault = (userId: string, query: string, dialogId: string) => gain(userId, query, dialogId, true, true);
    for (const query of ['What is the beagle called?', 'Can you suggest a toy for a beagle that loves the park?']) {
      expect(await byDefault('roles', query, 'D1:1')).toBeCloseTo(speaker, 12);
      expect(await byDefault('roles', query, 'D1:2')).toBe(0);
    }
    // Pointing at what the assistant said, and at it alone: the user's turns gain nothing.
    expect(await byDefault('roles', 'What did you say keeps beagles healthy?', 'D1:1')).toBe(0);
    expect(await byDefault('roles', 'What did you say keeps beagles healthy?', 'D1:2')).toBeCloseTo(speaker, 12);
    // Speakers who are people: no side is the user's.
    expect(await byDefault('names', 'What is the beagle called?', 'D1:1')).toBe(0);
  });

  it('on the meaning route, counts the side the pronouns do not point at at otherSpeaker times its score', async () => {
    // A lexical-confidence threshold above 1 sends every query down the meaning route.
    const run = (query: string, otherSpeaker: number, userByDefault = true) =>
      memory.search(query, { userId: 'roles', budget: 1024, now: null, config: { flags: { userByDefault }, retrieval: { meaningRoute: { lexicalConfidence: 1.01, otherSpeaker } } } });
    const firstPerson = 'Any advice on long walks for my dog?';
    const [full, half] = [await run(firstPerson, 1), await run(firstPerson, 0.5)];
    expect(scoreOf(full, 'D1:2')).toBeGreaterThan(0);
    expect(scoreOf(half, 'D1:2')).toBeCloseTo(scoreOf(full, 'D1:2') / 2, 12);
    expect(scoreOf(half, 'D1:1')).toBe(scoreOf(full, 'D1:1'));
    // No pronoun pointing at one side: the user's side under userByDefault, else both count in full.
    const neither = 'Any advice on long walks for a beagle?';
    expect(scoreOf(await run(neither, 0.5), 'D1:2')).toBeCloseTo(scoreOf(await run(neither, 1), 'D1:2') / 2, 12);
    expect(scoreOf(await run(neither, 0.5, false), 'D1:2')).toBe(scoreOf(await run(neither, 1, false), 'D1:2'));
  });

  it('leaves memories whose speakers are people alone', async () => {
    expect(await gain('names', 'What is the name of my dog?', 'D1:1')).toBe(0);
    expect(await gain('names', 'What did you say keeps beagles healthy?', 'D1:2')).toBe(0);
    // On the meaning route, no side of theirs is the other side.
    const onRoute = (otherSpeaker: number) =>
      memory.search('Any advice on long walks for my dog?', { userId: 'names', budget: 1024, now: null, config: { retrieval: { meaningRoute: { lexicalConfidence: 1.01, otherSpeaker } } } });
    expect(scoreOf(await onRoute(0.5), 'D1:2')).toBe(scoreOf(await onRoute(1), 'D1:2'));
  });
});
