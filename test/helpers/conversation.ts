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
