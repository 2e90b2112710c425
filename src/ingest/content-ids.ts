import { sha256Hex } from '../util/hash.ts';
import { dayOf, messageTime, type InputMessage } from './input.ts';

/** Hex digits of SHA-256 kept in a content id: 64 bits, so ids of different messages of a scope do not collide in practice. */
const CONTENT_ID_HEX = 16;

/** The UTC day (`YYYY-MM-DD`) of `date` as `add` reads dates, or of now when there is none: the session of a caller that names none. */
export function sessionDay(date: string | undefined): string {
  return dayOf(messageTime('date', date) ?? new Date().toISOString());
}

/**
 * Gives every message without an `id` an id derived from its content, so that sending the same
 * messages again stores nothing new (`Memory.add` skips a message whose id the scope holds).
 * Two messages are the same when they have the same `sessionId`, the same call `date` (or both
 * none), the same speaker (`speaker`, or `role` and `name`), the same text (`text`, or `content`
 * as given), the same message `date` (or both none), and the same place among such messages of
 * their call: the second "ok" of a call is not its first, so a call that repeats a message stores
 * it twice, and sending that call again stores neither. With `together`, the call's messages are
 * one unit (a question and its answer): each id covers the whole call, so a message is skipped
 * only when the same call was stored before. A message with its own `id` keeps it.
 */
export async function withContentIds<M extends InputMessage>(messages: readonly M[], call: ContentIdCall): Promise<M[]> {
  const keys = messages.map(contentKey);
  const unit = call.together === true ? keys : null;
  const seen = new Map<string, number>();
  return Promise.all(
    messages.map(async (message, i) => {
      const key = keys[i] ?? '';
      const occurrence = seen.get(key) ?? 0;
      seen.set(key, occurrence + 1);
      if (message.id !== undefined) return message;
      const digest = await sha256Hex(JSON.stringify([call.sessionId, call.date ?? null, unit, key, occurrence]));
      return { ...message, id: digest.slice(0, CONTENT_ID_HEX) };
    }),
  );
}

/** What besides its own content identifies a message (`withContentIds`). */
export interface ContentIdCall {
  sessionId: string;
  /** The call's own `date` (the add's), when it gives one. */
  date?: string | undefined;
  /** The messages are one unit: each id covers them all. */
  together?: boolean;
}

/** A message's speaker, text and date as given, as one string. */
function contentKey(message: InputMessage): string {
  const content = 'role' in message ? ['role', message.role, message.name ?? null, message.content] : ['speaker', message.speaker, null, message.text];
  return JSON.stringify([...content, message.date ?? null]);
}
