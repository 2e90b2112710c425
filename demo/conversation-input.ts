import { PrismError } from '../src/errors.ts';
import { parseSessionDate, type Conversation, type ConversationSession, type ConversationTurn } from '../src/ingest/conversation.ts';
import { parseLocomo } from '../src/ingest/locomo.ts';

/**
 * What the demo accepts in its "load" box, turned into PRISM conversations:
 *
 * - plain text: `# <date>` starts a session (e.g. `# 2:15 pm on 3 March, 2024`), every
 *   `Speaker: text` line is a turn, other lines continue the turn before them;
 * - a LoCoMo-format JSON array (every sample becomes a conversation);
 * - a JSON conversation `{ id?, sessions: [{ id?, date?, turns: [{ speaker, text, dialogId? }] }] }`.
 *
 * Turns without dialog ids get LoCoMo-style ones, `D<session>:<turn>`, so answers can cite them.
 */
export function parseConversationInput(input: string, fallbackId: string): Conversation[] {
  const text = input.trim();
  if (text === '') throw new PrismError('INVALID_INPUT', 'nothing to load: paste a conversation or pick the sample');
  if (text.startsWith('[') || text.startsWith('{')) {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (cause) {
      throw new PrismError('INVALID_INPUT', 'the input starts like JSON but does not parse', { cause });
    }
    return Array.isArray(json) ? parseLocomo(json).map((sample) => sample.conversation) : [parseJsonConversation(json, fallbackId)];
  }
  return [parsePlainText(text, fallbackId)];
}

const SESSION_HEADER = /^#+\s*(.*)$/;
const TURN_LINE = /^([^:\n]{1,40}):\s+(.+)$/;

function parsePlainText(text: string, id: string): Conversation {
  const sessions: ConversationSession[] = [];
  let current: ConversationSession | null = null;
  const startSession = (dateText: string | null): ConversationSession => {
    const session = makeSession(sessions.length + 1, dateText, []);
    sessions.push(session);
    return session;
  };
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '') continue;
    const header = SESSION_HEADER.exec(line);
    if (header) {
      current = startSession(header[1]?.trim() || null);
      continue;
    }
    current ??= startSession(null);
    const turn = TURN_LINE.exec(line);
    const last = current.turns.at(-1);
    if (turn) current.turns.push({ dialogId: `D${sessions.length}:${current.turns.length + 1}`, speaker: turn[1]?.trim() ?? '', text: turn[2]?.trim() ?? '' });
    else if (last) last.text = `${last.text} ${line}`;
    else throw new PrismError('INVALID_INPUT', `line "${line.slice(0, 60)}" is not "Speaker: text"`);
  }
  const filled = sessions.filter((s) => s.turns.length > 0);
  if (filled.length === 0) throw new PrismError('INVALID_INPUT', 'no "Speaker: text" lines found');
  return { id, sessions: filled };
}

function makeSession(number: number, dateText: string | null, turns: ConversationTurn[], id = `session_${number}`): ConversationSession {
  return { id, dateText, time: dateText ? parseSessionDate(dateText) : null, turns };
}

function parseJsonConversation(json: unknown, fallbackId: string): Conversation {
  const root = record(json, 'the conversation');
  if (!Array.isArray(root.sessions)) throw new PrismError('INVALID_INPUT', 'a JSON conversation needs a "sessions" array (or paste a LoCoMo array)');
  const sessions = root.sessions.map((raw, i) => {
    const session = record(raw, `sessions[${i}]`);
    const date = session.date ?? session.dateText;
    if (!Array.isArray(session.turns)) throw new PrismError('INVALID_INPUT', `sessions[${i}] needs a "turns" array`);
    const turns = session.turns.map((rawTurn, j): ConversationTurn => {
      const turn = record(rawTurn, `sessions[${i}].turns[${j}]`);
      if (typeof turn.speaker !== 'string' || typeof turn.text !== 'string') {
        throw new PrismError('INVALID_INPUT', `sessions[${i}].turns[${j}] needs string "speaker" and "text"`);
      }
      return { dialogId: typeof turn.dialogId === 'string' ? turn.dialogId : `D${i + 1}:${j + 1}`, speaker: turn.speaker, text: turn.text };
    });
    return makeSession(i + 1, typeof date === 'string' ? date : null, turns, typeof session.id === 'string' ? session.id : undefined);
  });
  return { id: typeof root.id === 'string' && root.id !== '' ? root.id : fallbackId, sessions };
}

function record(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new PrismError('INVALID_INPUT', `${where} must be an object`);
  return value as Record<string, unknown>;
}
