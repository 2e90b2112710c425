import { mulberry32 } from '../../src/eval/stats.ts';

/**
 * A long, made-up chat for load tests: `sessions` sessions of `perSession` messages, two speakers
 * taking turns, every message a plain sentence about people, pets, places and plans, picked by a
 * seeded generator so every run sends the same text.
 */
export interface CorpusSession {
  sessionId: string;
  date: string;
  messages: { speaker: string; text: string }[];
}

const PEOPLE = ['Alma', 'Bruno', 'Chen', 'Dalia', 'Emeka', 'Freya', 'Goran', 'Hana', 'Ivo', 'Jonas', 'Keiko', 'Lars'];
const PETS = ['a beagle named Pip', 'a grey cat called Smoke', 'two goldfish', 'a parrot named Kiwi', 'a rescue greyhound', 'a tortoise called Atlas'];
const PLACES = ['Lisbon', 'the lake house', 'Kyoto', 'the climbing gym', 'Rotterdam', 'the farmers market', 'Oslo', 'the community garden', 'Marrakesh', 'the night school'];
const ACTIVITIES = ['learning the cello', 'training for a half marathon', 'baking sourdough', 'restoring an old bicycle', 'studying Portuguese', 'painting watercolours', 'building a kayak', 'volunteering at the shelter'];
const FEELINGS = ['really proud of it', 'a bit nervous about it', 'tired but happy', 'surprised how much fun it is', 'still getting used to it'];
const TIMES = ['last weekend', 'yesterday', 'two weeks ago', 'this morning', 'on Tuesday', 'last month'];

export function chatCorpus(sessions: number, perSession: number, seed = 7): CorpusSession[] {
  const next = mulberry32(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
  const sentence = (): string => {
    switch (Math.floor(next() * 5)) {
      case 0:
        return `${pick(PEOPLE)} visited ${pick(PLACES)} ${pick(TIMES)} and came back ${pick(FEELINGS)}.`;
      case 1:
        return `I have been ${pick(ACTIVITIES)} since ${pick(TIMES)}, and I am ${pick(FEELINGS)}.`;
      case 2:
        return `My neighbour ${pick(PEOPLE)} adopted ${pick(PETS)} ${pick(TIMES)}.`;
      case 3:
        return `Are you still ${pick(ACTIVITIES)}? ${pick(PEOPLE)} told me you went to ${pick(PLACES)}.`;
      default:
        return `We are planning a trip to ${pick(PLACES)} with ${pick(PEOPLE)}; I want to bring ${pick(PETS)}.`;
    }
  };
  return Array.from({ length: sessions }, (_, s) => ({
    sessionId: `load-${s + 1}`,
    date: new Date(Date.UTC(2024, 0, 1 + s * 3, 9)).toISOString().slice(0, 19),
    messages: Array.from({ length: perSession }, (_, m) => ({ speaker: m % 2 === 0 ? 'Sam' : 'Riley', text: sentence() })),
  }));
}
