import type { Conversation } from '../../src/ingest/conversation.ts';

/** A small hand-written conversation whose graph is known by construction (see ingest.test.ts). */
export const conversation: Conversation = {
  id: 'demo',
  sessions: [
    {
      id: 'session_1',
      dateText: '1:56 pm on 8 May, 2023',
      time: '2023-05-08T13:56:00',
      turns: [
        { dialogId: 'D1:1', speaker: 'Caroline', text: 'I went to the LGBTQ support group yesterday. It was so powerful.' },
        { dialogId: 'D1:2', speaker: 'Melanie', text: 'That is wonderful! I painted a sunrise over the lake last week.' },
        { dialogId: 'D1:3', speaker: 'Caroline', text: 'My dog Max loves running on the beach.' },
      ],
    },
    {
      id: 'session_2',
      dateText: '10:00 am on 20 June, 2023',
      time: '2023-06-20T10:00:00',
      turns: [
        { dialogId: 'D2:1', speaker: 'Melanie', text: 'We went camping in the mountains with the kids.' },
        { dialogId: 'D2:2', speaker: 'Caroline', text: 'Max learned to swim at the beach last Saturday.' },
      ],
    },
  ],
};

/**
 * Session `s` of a chat of long turns, several of them cut into many facts, one with a time
 * expression ("Last Tuesday", "yesterday"): what the fact columns and the fact image are tested on.
 */
export function longTurnSession(s: number): Conversation['sessions'][number] {
  return {
    id: `s${s}`,
    dateText: `${10 + s} May 2024`,
    time: `2024-05-${10 + s}T09:00:00`,
    turns: [
      { dialogId: `D${s}:1`, speaker: 'User', text: `I adopted a cat named Biscuit in week ${s}. She sleeps on the red sofa. My sister Ana visits on Sundays and brings plums.` },
      { dialogId: `D${s}:2`, speaker: 'Assistant', text: `Biscuit sounds lovely. Cats like warm places; a heated bed helps in winter. Ana could bring catnip as well. Week ${s} was busy for you.` },
      { dialogId: `D${s}:3`, speaker: 'User', text: `Last Tuesday I ran ${5 + s} kilometres by the river with Tom, and yesterday I swam.` },
    ],
  };
}
