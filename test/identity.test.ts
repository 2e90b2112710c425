import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { planConflict, planMessageTurns } from '../src/ingest/identity.ts';
import type { NormalisedMessage } from '../src/ingest/input.ts';
import { handlesAdding, openHandle, processesAdding, staleHandleAfterDelete } from './faults/identity-scenarios.ts';

const message = (text: string, id: string | null = null): NormalisedMessage => ({ at: 'messages[0]', id, speaker: 'Ann', text, time: null });
const limits = { passageChars: 40 };

describe('message identity, planned', () => {
  it('skips ids the scope holds (naming the stored turn) and ids repeated within the add', () => {
    const plan = planMessageTurns(
      [message('one', 'a'), message('two', 'b'), message('three', 'a'), message('four', 'long')],
      's',
      new Set(['b', 'long#1']),
      0,
      limits,
    );
    expect(plan.turns.map((t) => [t.dialogId, t.text])).toEqual([['a', 'one']]);
    expect(plan.skipped).toEqual([
      { id: 'b', reason: 'already-stored', matched: 'b' },
      { id: 'a', reason: 'repeated-in-add', matched: 'a' },
      { id: 'long', reason: 'already-stored', matched: 'long#1' },
    ]);
  });

  it('generated ids continue the session, step over held and given ids, and passages keep the family', () => {
    const long = 'A first sentence of the note. A second sentence follows here. And a third.';
    const plan = planMessageTurns([message('x'), message('y', 's:2'), message(long), message('z')], 's', new Set(['s:3']), 0, limits);
    expect(plan.turns.map((t) => t.dialogId)).toEqual(['s:1', 's:2', 's:4#1', 's:4#2', 's:4#3', 's:5']);
    expect(plan.sources).toEqual([0, 1, 2, 2, 2, 3]);
    expect(planMessageTurns([message('x')], 's', new Set(), 7, limits).turns[0]?.dialogId).toBe('s:8');
  });

  it('a plan conflicts once another writer stored one of its ids or deleted one it skipped', () => {
    const plan = planMessageTurns([message('one', 'a'), message('two', 'b')], 's', new Set(['b']), 0, limits);
    expect(planConflict(plan.turns, plan.skipped, new Set(['b']))).toBeNull();
    expect(planConflict(plan.turns, plan.skipped, new Set(['a', 'b']))).toMatch(/"a" was stored/);
    expect(planConflict(plan.turns, plan.skipped, new Set())).toMatch(/"b" was deleted/);
  });
});

describe('message identity across handles of one SQLite store', () => {
  let dir = '';
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'prism-identity-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a handle opened earlier skips a message another handle stored, and reports what it matched', async () => {
    const path = join(dir, 'memory.sqlite');
    const a = await openHandle(path);
    const b = await openHandle(path);
    try {
      await a.list();
      await b.add([{ speaker: 'Bo', text: 'The boat leaves at nine.', id: 'msg-42' }], { sessionId: 'chat' });
      const report = await a.add([{ speaker: 'Bo', text: 'The boat leaves at nine.', id: 'msg-42' }], { sessionId: 'chat' });
      expect(report.skipped).toEqual([{ id: 'msg-42', reason: 'already-stored', matched: 'msg-42' }]);
      expect(report.chunksAdded).toBe(0);
      const [session] = await b.list();
      expect(session?.messages).toBe(1);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('4 handles adding shared and generated ids at once store each message exactly once', async () => {
    for (const mode of ['shared', 'generated'] as const) {
      expect(await handlesAdding(join(dir, mode), 4, 8, mode)).toEqual({ lost: 0, duplicated: 0, clean: true });
    }
  }, 60_000);

  it('3 processes adding shared and generated ids at once store each message exactly once', async () => {
    for (const mode of ['shared', 'generated'] as const) {
      expect(await processesAdding(join(dir, mode), 3, 6, mode)).toEqual({ lost: 0, duplicated: 0, clean: true });
    }
  }, 120_000);

  it('a stale handle re-using an id another handle deleted stores the new message', async () => {
    expect(await staleHandleAfterDelete(dir)).toEqual({ lost: 0, reportedSkip: false });
  });
});
