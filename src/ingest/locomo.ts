import { PrismError } from '../errors.ts';
import { parseSessionDate, type Conversation, type ConversationTurn } from './conversation.ts';

/** LoCoMo question categories (raw `category` field). 5 (adversarial) is excluded from evaluation. */
export type LocomoCategory = 1 | 2 | 3 | 4 | 5;
export const CATEGORY_NAMES: Record<LocomoCategory, string> = {
  1: 'multi-hop',
  2: 'temporal',
  3: 'open-domain',
  4: 'single-hop',
  5: 'adversarial',
};

export interface LocomoQuestion {
  question: string;
  answer: string;
  /** Gold evidence dialog ids exactly as the file gives them (may be malformed). */
  evidence: string[];
  category: LocomoCategory;
}

export interface LocomoSample {
  conversation: Conversation;
  questions: LocomoQuestion[];
}

/**
 * Reads a LoCoMo-format JSON value (a list of samples). Image turns keep their BLIP caption
 * as text, since the caption is often the evidence.
 */
export function parseLocomo(json: unknown): LocomoSample[] {
  if (!Array.isArray(json)) throw new PrismError('INVALID_INPUT', 'LoCoMo data must be a JSON array of samples');
  return json.map((raw, i) => parseSample(raw, i));
}

function parseSample(raw: unknown, index: number): LocomoSample {
  const sample = asRecord(raw, `sample ${index}`);
  const id = typeof sample.sample_id === 'string' ? sample.sample_id : `sample-${index}`;
  const conv = asRecord(sample.conversation, `${id}.conversation`);
  const sessionNumbers = Object.keys(conv)
    .map((k) => /^session_(\d+)$/.exec(k)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
  const sessions = sessionNumbers.map((n) => {
    const dateText = typeof conv[`session_${n}_date_time`] === 'string' ? (conv[`session_${n}_date_time`] as string) : null;
    const rawTurns = conv[`session_${n}`];
    const turns: ConversationTurn[] = (Array.isArray(rawTurns) ? rawTurns : []).map((t, j) => parseTurn(t, n, j));
    return { id: `session_${n}`, dateText, time: dateText ? parseSessionDate(dateText) : null, turns };
  });
  const qa = Array.isArray(sample.qa) ? sample.qa : [];
  const questions = qa.map((q, j) => parseQuestion(q, `${id}.qa[${j}]`));
  return { conversation: { id, sessions }, questions };
}

function parseTurn(raw: unknown, session: number, index: number): ConversationTurn {
  const turn = asRecord(raw, `session ${session} turn ${index}`);
  const text = typeof turn.text === 'string' ? turn.text : '';
  const caption = typeof turn.blip_caption === 'string' ? turn.blip_caption : null;
  return {
    dialogId: typeof turn.dia_id === 'string' ? turn.dia_id : `D${session}:${index + 1}`,
    speaker: typeof turn.speaker === 'string' ? turn.speaker : 'unknown',
    text: caption ? `${text} [shares a photo: ${caption}]` : text,
  };
}

function parseQuestion(raw: unknown, where: string): LocomoQuestion {
  const q = asRecord(raw, where);
  const category = Number(q.category);
  if (![1, 2, 3, 4, 5].includes(category)) throw new PrismError('INVALID_INPUT', `${where}: unknown category ${String(q.category)}`);
  const answer = q.answer ?? q.adversarial_answer ?? '';
  return {
    question: String(q.question ?? ''),
    answer: String(answer),
    evidence: Array.isArray(q.evidence) ? q.evidence.map(String) : [],
    category: category as LocomoCategory,
  };
}

function asRecord(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new PrismError('INVALID_INPUT', `${where} must be an object`);
  }
  return value as Record<string, unknown>;
}
