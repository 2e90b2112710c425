import { z } from 'zod';
import { PrismError } from '../errors.ts';

/** A conversation as PRISM ingests it: sessions of speaker turns, each turn with a dialog id. */
export interface ConversationTurn {
  /** LoCoMo-style dialog id, e.g. `D3:12`; generated as `D<session>:<turn>` when absent. */
  dialogId: string;
  speaker: string;
  text: string;
}

export interface ConversationSession {
  /** Stable id within the conversation, e.g. `session_3`. */
  id: string;
  /** The session's date/time as written (e.g. `1:56 pm on 8 May, 2023`), if any. */
  dateText: string | null;
  /** The same, normalised to ISO-8601, when it parses. */
  time: string | null;
  turns: ConversationTurn[];
}

export interface Conversation {
  id: string;
  sessions: ConversationSession[];
}

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];

/**
 * Parses LoCoMo's `1:56 pm on 8 May, 2023` (and plain `8 May 2023`) into a local-time ISO
 * string without a zone — the dataset gives no zone, and dates must not shift by one.
 * Falls back to `Date.parse` for other formats.
 */
export function parseSessionDate(text: string): string | null {
  const m = /(?:(\d{1,2}):(\d{2})\s*([ap]m)\s*on\s*)?(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})/i.exec(text);
  if (m) {
    const month = MONTHS.findIndex((name) => name.startsWith((m[5] ?? '').toLowerCase().slice(0, 3)));
    if (month >= 0) {
      let hour = m[1] ? Number(m[1]) % 12 : 0;
      if (m[3]?.toLowerCase() === 'pm') hour += 12;
      const minute = m[2] ? Number(m[2]) : 0;
      return isoLocal(Number(m[6]), month + 1, Number(m[4]), hour, minute);
    }
  }
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) return null;
  const d = new Date(ms);
  return isoLocal(d.getFullYear(), d.getMonth() + 1, d.getDate(), d.getHours(), d.getMinutes());
}

function isoLocal(y: number, mo: number, d: number, h: number, mi: number): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${y}-${p(mo)}-${p(d)}T${p(h)}:${p(mi)}:00`;
}

const turnSchema = z.object({ dialogId: z.string().min(1), speaker: z.string(), text: z.string() });
const conversationSchema = z.object({
  id: z.string().min(1),
  sessions: z.array(
    z.object({ id: z.string().min(1), dateText: z.string().nullable(), time: z.string().nullable(), turns: z.array(turnSchema) }),
  ),
});

/**
 * Checks a conversation handed in from outside (plain JS callers, parsed JSON) before anything
 * is written: wrong shapes and a conversation without one non-empty turn are INVALID_INPUT.
 * Returns how many empty turns will be skipped, for the ingest report.
 */
export function checkConversation(input: unknown): { conversation: Conversation; emptyTurns: number } {
  const parsed = conversationSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? issue.path.join('.') : 'conversation';
    throw new PrismError('INVALID_INPUT', `${where}: ${issue?.message ?? 'invalid conversation'}`);
  }
  const conversation = parsed.data;
  const turns = conversation.sessions.flatMap((s) => s.turns);
  const emptyTurns = turns.filter((t) => t.text.trim() === '').length;
  if (emptyTurns === turns.length) {
    throw new PrismError('INVALID_INPUT', `nothing to add to ${conversation.id}: ${turns.length === 0 ? 'no messages' : 'every message is empty'}`);
  }
  return { conversation, emptyTurns };
}
