import type { InputLimits } from '../config.ts';
import type { ChunkTurn } from '../graph/types.ts';
import { splitPassages, type NormalisedMessage } from './input.ts';

/** Why `add()` did not store a message. */
export type SkipReason =
  /** The scope already holds a message with this id (added earlier, by this or another handle). */
  | 'already-stored'
  /** An earlier message of the same add has this id. */
  | 'repeated-in-add';

/** A message `add()` did not store, with the id it was matched on. */
export interface SkippedMessage {
  /** The message's own id (the caller's). */
  id: string;
  reason: SkipReason;
  /** The stored turn id it matched (`id`, or `id#1` when the stored message was cut into passages). */
  matched: string;
}

/** Which turns an add stores, with their ids, and which of its messages it skips. */
export interface IdentityPlan {
  turns: ChunkTurn[];
  /** Per turn: the index (in the messages planned) of the message it came from. */
  sources: number[];
  skipped: SkippedMessage[];
}

/**
 * Decides message identity for one add against the turn ids a scope holds (`held`), a pure
 * function of its inputs so it can be re-run under the writer lock against the committed
 * state. A caller's id the scope (or an earlier message of the add) holds is skipped; every
 * other message becomes turns. Generated ids continue the session's numbering
 * (`<session>:<n>`, from `turnsBefore + 1`) and step over any id already taken, held or
 * given by the caller, so they never collide. A message over `passageChars` becomes passages
 * `<id>#1`, `<id>#2`, … that keep its speaker, time and id family.
 */
export function planMessageTurns(
  messages: readonly NormalisedMessage[],
  sessionId: string,
  held: Pick<ReadonlySet<string>, 'has'>,
  turnsBefore: number,
  limits: Pick<InputLimits, 'passageChars'>,
): IdentityPlan {
  const heldMatch = (id: string): string | null => (held.has(id) ? id : held.has(`${id}#1`) ? `${id}#1` : null);
  const given = new Set<string>();
  for (const message of messages) if (message.id !== null) given.add(message.id);
  const taken = new Set<string>();
  const skipped: SkippedMessage[] = [];
  const turns: ChunkTurn[] = [];
  const sources: number[] = [];
  let next = turnsBefore;
  const generatedId = (): string => {
    for (;;) {
      const id = `${sessionId}:${++next}`;
      if (!given.has(id) && !taken.has(id) && heldMatch(id) === null) return id;
    }
  };
  messages.forEach((message, index) => {
    if (message.id !== null) {
      const stored = heldMatch(message.id);
      if (stored !== null) {
        skipped.push({ id: message.id, reason: 'already-stored', matched: stored });
        return;
      }
      if (taken.has(message.id)) {
        skipped.push({ id: message.id, reason: 'repeated-in-add', matched: message.id });
        return;
      }
    }
    const id = message.id ?? generatedId();
    taken.add(id);
    const base = { speaker: message.speaker, time: message.time, ...(message.metadata ? { metadata: message.metadata } : {}) };
    const passages = message.text.length <= limits.passageChars ? [message.text] : splitPassages(message.text, limits.passageChars);
    passages.forEach((text, k) => {
      turns.push({ dialogId: passages.length === 1 ? id : `${id}#${k + 1}`, text, ...base });
      sources.push(index);
    });
  });
  return { turns, sources, skipped };
}

/**
 * Why a plan made from an earlier view no longer holds against the committed state (`held`),
 * or null when it does: one of the turns about to be stored took an id the scope now holds
 * (another writer stored it, or generated the same id), or a message skipped as stored is no
 * longer there (another writer deleted it).
 */
export function planConflict(turns: readonly ChunkTurn[], skipped: readonly SkippedMessage[], held: Pick<ReadonlySet<string>, 'has'>): string | null {
  const clash = turns.find((turn) => held.has(turn.dialogId));
  if (clash) return `message id ${JSON.stringify(clash.dialogId)} was stored by another writer`;
  const gone = skipped.find((s) => s.reason === 'already-stored' && !held.has(s.matched));
  if (gone) return `message id ${JSON.stringify(gone.matched)} was deleted by another writer`;
  return null;
}
