import type { InputMessage } from '../../src/ingest/input.ts';
import type { Memory } from '../../src/memory.ts';
import type { SessionInfo } from '../../src/memory/records.ts';
import { formatTrace } from '../../src/retrieve/bundle-search.ts';
import type { ResolvedScope } from '../../src/scope.ts';

/**
 * What a user's memory is asked over HTTP in the "one Durable Object per user" test, run by the
 * same code in workerd (test/edge/workerd-memory.ts) and in Node (the reference): plain JSON in
 * and out, so the test compares the two byte for byte.
 */
export type MemoryAction =
  | { action: 'add'; sessionId: string; date: string; messages: InputMessage[] }
  | { action: 'search'; query: string }
  | { action: 'overview' };

export interface AddAnswer {
  chunksAdded: number;
  nodesAdded: number;
  edgesAdded: number;
}

export interface SearchAnswer {
  query: string;
  dialogIds: string[];
  units: { id: string; score: number; trace: string; turns: { id: string; userId: string; text: string }[] }[];
}

export interface OverviewAnswer {
  /** Every scope the user's store holds: only the user's own. */
  scopes: ResolvedScope[];
  sessions: SessionInfo[];
  chunks: number;
}

export type ActionAnswer = AddAnswer | SearchAnswer | OverviewAnswer;

/** Runs one action on `userId`'s memory. */
export async function runMemoryAction(memory: Memory, userId: string, request: MemoryAction): Promise<ActionAnswer> {
  const scope = { userId };
  switch (request.action) {
    case 'add': {
      // `ms` and warnings vary from run to run; the counts do not.
      const { chunksAdded, nodesAdded, edgesAdded } = await memory.add(request.messages, { ...scope, sessionId: request.sessionId, date: request.date });
      return { chunksAdded, nodesAdded, edgesAdded };
    }
    case 'search': {
      const result = await memory.search(request.query, { ...scope, budget: 256 });
      return {
        query: request.query,
        dialogIds: result.dialogIds,
        units: result.units.map((unit) => ({
          id: unit.id,
          score: unit.score,
          trace: formatTrace(unit.trace),
          turns: unit.turns.map((turn) => ({ id: turn.id, userId: turn.userId, text: turn.text })),
        })),
      };
    }
    case 'overview':
      return { scopes: await memory.scopes(), sessions: await memory.list(scope), chunks: (await memory.stats(scope)).chunks };
  }
}
