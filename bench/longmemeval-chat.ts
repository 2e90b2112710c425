import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';

/** One LongMemEval haystack session as chat: role messages, its id and its date (ISO). */
export interface ChatSession {
  id: string;
  date: string;
  messages: Array<{ role: 'user' | 'assistant'; content: string }>;
}

interface LongMemEvalRecord {
  question: string;
  haystack_session_ids: string[];
  haystack_dates: string[];
  haystack_sessions: Array<Array<{ role: 'user' | 'assistant'; content: string }>>;
}

/** The LongMemEval S file: `PRISM_LONGMEMEVAL`, by default the developers' half in ../shared beside the checkout. */
export function longMemEvalPath(): string {
  return process.env['PRISM_LONGMEMEVAL'] ?? resolve(import.meta.dirname, '..', '..', 'shared', 'data', 'longmemeval', 'longmemeval-s-dev.json.gz');
}

/** `2023/05/30 (Tue) 23:40` → `2023-05-30T23:40:00`. */
function isoOf(date: string): string {
  const match = /^(\d{4})\/(\d{2})\/(\d{2})\D+(\d{2}):(\d{2})/.exec(date);
  if (!match) throw new Error(`not a LongMemEval date: ${date}`);
  const [, y, m, d, hh, mm] = match;
  return `${y}-${m}-${d}T${hh}:${mm}:00`;
}

/**
 * Real user–assistant chat for growth benches: the distinct haystack sessions of the file in
 * order, and its questions (as queries).
 */
export async function longMemEvalChat(path = longMemEvalPath()): Promise<{ sessions: ChatSession[]; questions: string[] }> {
  const raw = await readFile(path);
  const records = JSON.parse((path.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8')) as LongMemEvalRecord[];
  const seen = new Set<string>();
  const sessions: ChatSession[] = [];
  for (const record of records) {
    record.haystack_sessions.forEach((messages, i) => {
      const id = record.haystack_session_ids[i] ?? '';
      const date = record.haystack_dates[i];
      if (seen.has(id) || !date || messages.length === 0) return;
      seen.add(id);
      sessions.push({ id, date: isoOf(date), messages: messages.map(({ role, content }) => ({ role, content })) });
    });
  }
  return { sessions, questions: records.map((r) => r.question) };
}
