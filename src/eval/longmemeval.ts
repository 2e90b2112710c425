import { DEFAULT_CONFIG } from '../config.ts';
import { PrismError } from '../errors.ts';
import { storedTime, type ConversationSession } from '../ingest/conversation.ts';
import type { Benchmark, DatasetStats, EvalQuestion, EvalSample } from './benchmark.ts';
import { isLexicalGap } from './slices.ts';
import { mulberry32 } from './stats.ts';

/** LongMemEval's question types (Wu et al., 2024), in report order. */
export const LONGMEMEVAL_TYPES = [
  'single-session-user',
  'single-session-assistant',
  'single-session-preference',
  'multi-session',
  'knowledge-update',
  'temporal-reasoning',
] as const;

/** Question ids ending so are abstention questions: the haystack does not hold the answer. */
const ABSTENTION_SUFFIX = '_abs';

/** `2023/05/30 (Tue) 23:40`, as every LongMemEval date is written (weekday and time optional). */
const LONGMEMEVAL_DATE = /^(\d{4})\/(\d{2})\/(\d{2})(?:\s*\([A-Za-z]{3}\))?(?:\s+(\d{2}):(\d{2}))?$/;

function fail(where: string, expected: string, value: unknown): never {
  const got = value === undefined ? 'nothing' : value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'string' ? JSON.stringify(value.slice(0, 60)) : typeof value;
  throw new PrismError('INVALID_INPUT', `${where}: expected ${expected}, got ${got}`);
}

function field(record: Record<string, unknown>, where: string, key: string): unknown {
  if (!(key in record)) fail(`${where}.${key}`, 'a value', undefined);
  return record[key];
}

function text(record: Record<string, unknown>, where: string, key: string): string {
  const value = field(record, where, key);
  if (typeof value !== 'string') fail(`${where}.${key}`, 'a string', value);
  return value;
}

function list(value: unknown, where: string): unknown[] {
  if (!Array.isArray(value)) fail(where, 'an array', value);
  return value;
}

function record(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(where, 'an object', value);
  return value as Record<string, unknown>;
}

/** A LongMemEval date as a stored time (`2023-05-30T23:40:00`); INVALID_INPUT naming the field when it is not one. */
function longMemEvalTime(where: string, written: string): string {
  const match = LONGMEMEVAL_DATE.exec(written.trim());
  if (!match) fail(where, 'a date written as 2023/05/30 (Tue) 23:40', written);
  const [, year, month, day, hour = '00', minute = '00'] = match;
  return storedTime(where, `${year}-${month}-${day}T${hour}:${minute}:00`);
}

/**
 * One official LongMemEval record as a memory and its one question. The haystack's sessions
 * become the conversation's sessions in order, numbered `session_<n>` (haystack ids repeat
 * within a few haystacks) and dated by `haystack_dates`; each turn's speaker is its role and its
 * dialog id `D<session>:<turn>` (both counted from 1). Gold turns are the non-empty ones marked
 * `has_answer`, gold sessions the `answer_session_ids`. Abstention questions (ids ending `_abs`)
 * have neither: the haystack holds no answer. The question is asked at its `question_date`.
 */
function parseRecord(raw: unknown, index: number): EvalSample {
  const at = `longmemeval[${index}]`;
  const entry = record(raw, at);
  const id = text(entry, at, 'question_id');
  if (id === '') fail(`${at}.question_id`, 'a non-empty string', id);
  const where = `${at} (question ${id})`;
  const type = text(entry, where, 'question_type');
  if (!(LONGMEMEVAL_TYPES as readonly string[]).includes(type)) fail(`${where}.question_type`, `one of ${LONGMEMEVAL_TYPES.join(', ')}`, type);
  const question = text(entry, where, 'question');
  const answerValue = field(entry, where, 'answer');
  if (typeof answerValue !== 'string' && typeof answerValue !== 'number') fail(`${where}.answer`, 'a string or a number', answerValue);
  const askedAt = longMemEvalTime(`${where}.question_date`, text(entry, where, 'question_date'));
  const dates = list(field(entry, where, 'haystack_dates'), `${where}.haystack_dates`);
  const sessionIds = list(field(entry, where, 'haystack_session_ids'), `${where}.haystack_session_ids`);
  const rawSessions = list(field(entry, where, 'haystack_sessions'), `${where}.haystack_sessions`);
  if (dates.length !== rawSessions.length || sessionIds.length !== rawSessions.length) {
    throw new PrismError(
      'INVALID_INPUT',
      `${where}: haystack_sessions (${rawSessions.length}), haystack_dates (${dates.length}) and haystack_session_ids (${sessionIds.length}) must be as long as each other`,
    );
  }
  const answerSessions = list(field(entry, where, 'answer_session_ids'), `${where}.answer_session_ids`).map((value, i) =>
    typeof value === 'string' ? value : fail(`${where}.answer_session_ids[${i}]`, 'a string', value),
  );
  const abstention = id.endsWith(ABSTENTION_SUFFIX);
  const sessionLabels: Record<string, string> = {};
  const gold: { dialogId: string; text: string; time: string }[] = [];
  const sessions = rawSessions.map((rawSession, s): ConversationSession => {
    const sessionAt = `${where}.haystack_sessions[${s}]`;
    const label = sessionIds[s];
    if (typeof label !== 'string') fail(`${where}.haystack_session_ids[${s}]`, 'a string', label);
    const dateText = dates[s];
    if (typeof dateText !== 'string') fail(`${where}.haystack_dates[${s}]`, 'a date written as 2023/05/30 (Tue) 23:40', dateText);
    const time = longMemEvalTime(`${where}.haystack_dates[${s}]`, dateText);
    const sessionId = `session_${s + 1}`;
    sessionLabels[sessionId] = label;
    const turns = list(rawSession, sessionAt).map((rawTurn, t) => {
      const turnAt = `${sessionAt}[${t}]`;
      const turn = record(rawTurn, turnAt);
      const hasAnswer = turn['has_answer'] ?? false;
      if (typeof hasAnswer !== 'boolean') fail(`${turnAt}.has_answer`, 'a boolean', hasAnswer);
      const content = text(turn, turnAt, 'content');
      const dialogId = `D${s + 1}:${t + 1}`;
      if (hasAnswer && !abstention && content.trim() !== '') gold.push({ dialogId, text: content, time });
      return { dialogId, speaker: text(turn, turnAt, 'role'), text: content };
    });
    return { id: sessionId, dateText, time, turns };
  });
  const latestTime = gold.reduce((latest, g) => (g.time > latest ? g.time : latest), '');
  const evalQuestion: EvalQuestion = {
    key: `${id}#0`,
    question,
    answer: String(answerValue),
    category: type,
    gold: gold.map((g) => g.dialogId),
    lexicalGap: isLexicalGap(
      question,
      gold.map((g) => g.text),
    ),
    askedAt,
    goldSessions: abstention ? null : answerSessions,
    abstention,
    latestGold: type === 'knowledge-update' && !abstention ? gold.filter((g) => g.time === latestTime).map((g) => g.dialogId) : null,
  };
  return { conversation: { id, sessions }, sessionLabels, questions: [evalQuestion] };
}

/**
 * Reads LongMemEval's official format (a JSON array of question records, as in
 * `longmemeval_s_cleaned.json`, `longmemeval_oracle.json` or a part of them) into the runner's
 * benchmark: one memory per question (see `parseRecord`). Bad records are INVALID_INPUT naming
 * the record and the field.
 */
export function longMemEvalBenchmark(json: unknown): Benchmark {
  const records = list(json, 'LongMemEval data (a JSON array of question records)');
  const samples = records.map(parseRecord);
  const ids = new Set<string>();
  for (const sample of samples) {
    if (ids.has(sample.conversation.id)) throw new PrismError('INVALID_INPUT', `LongMemEval data: question_id ${sample.conversation.id} appears twice`);
    ids.add(sample.conversation.id);
  }
  return {
    name: 'longmemeval',
    title: 'LongMemEval',
    categories: LONGMEMEVAL_TYPES,
    samples,
    dataset: datasetStats(samples),
  };
}

function datasetStats(samples: readonly EvalSample[]): DatasetStats {
  const dataset: DatasetStats = {
    conversations: samples.length,
    sessions: 0,
    turns: 0,
    questionsPerCategory: Object.fromEntries(LONGMEMEVAL_TYPES.map((type) => [type, 0])),
    skipped: null,
    abstention: 0,
    evidenceIds: 0,
    unresolvedIds: [],
    questionsWithoutEvidence: [],
  };
  for (const sample of samples) {
    const labels = new Set(Object.values(sample.sessionLabels ?? {}));
    dataset.sessions += sample.conversation.sessions.length;
    dataset.turns += sample.conversation.sessions.reduce((n, s) => n + s.turns.length, 0);
    for (const q of sample.questions) {
      dataset.questionsPerCategory[q.category] = (dataset.questionsPerCategory[q.category] ?? 0) + 1;
      dataset.evidenceIds += q.gold.length;
      if (q.abstention) dataset.abstention++;
      else if (q.gold.length === 0) dataset.questionsWithoutEvidence.push(q.key);
      // A gold session the haystack lacks can never be found: counted like an unresolved evidence id.
      const missing = (q.goldSessions ?? []).filter((label) => !labels.has(label));
      dataset.unresolvedIds.push(...missing.map((label) => ({ question: q.key, id: `session ${label}` })));
    }
  }
  return dataset;
}

/**
 * A stratified sample for quick runs: `perType` questions of each type (all of a type that has
 * fewer), drawn by a seeded shuffle of each type's questions, kept in file order. Each type's
 * shuffle is its own, so a larger `perType` keeps every question a smaller one drew: a run
 * grown from 15 to 30 per type reuses the 15 from the cache.
 */
export function sampleByType(benchmark: Benchmark, perType: number, seed: number = DEFAULT_CONFIG.seed): Benchmark {
  if (!Number.isInteger(perType) || perType < 1) throw new PrismError('INVALID_INPUT', `--sample: expected a whole number ≥ 1 of questions per type, got ${perType}`);
  const chosen = new Set<EvalSample>();
  for (const type of benchmark.categories) {
    const ofType = benchmark.samples.filter((s) => s.questions[0]?.category === type);
    const random = mulberry32(seed);
    for (let i = ofType.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [ofType[i], ofType[j]] = [ofType[j] as EvalSample, ofType[i] as EvalSample];
    }
    for (const sample of ofType.slice(0, perType)) chosen.add(sample);
  }
  const samples = benchmark.samples.filter((s) => chosen.has(s));
  return { ...benchmark, samples, dataset: datasetStats(samples) };
}
