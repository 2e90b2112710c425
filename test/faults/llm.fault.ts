/**
 * LLM endpoint faults during ingest, over real HTTP against the local OpenAI-compatible server:
 * each run ingests a conversation through `Memory` into a `MemoryStore` with the fault injected
 * at one session, then checks that every chunk acknowledged before is still stored, that the
 * outcome is the typed one, and that the memory recovers once the endpoint answers properly.
 */
import type { PrismErrorCode } from '../../src/errors.ts';
import type { Conversation } from '../../src/ingest/conversation.ts';
import { createLlmClient } from '../../src/llm/client.ts';
import { Memory } from '../../src/memory.ts';
import { DEFAULT_PARTITION } from '../../src/scope.ts';
import { MemoryStore } from '../../src/store/memory.ts';
import { reply, startOpenAiServer, type OpenAiTestServer, type ScriptedReply } from '../helpers/openai-server.ts';
import { promptOf, validHandler } from '../helpers/prism-replies.ts';
import { testRuntime, type TestRuntime } from '../helpers/runtime.ts';
import type { Fault, FaultOutcome } from './fault.ts';

const SESSIONS = 4;

const conversation: Conversation = {
  id: 'faults',
  sessions: Array.from({ length: SESSIONS }, (_, s) => ({
    id: `s${s + 1}`,
    dateText: `10:00 am on ${s + 1} June, 2023`,
    time: `2023-06-0${s + 1}T10:00:00`,
    turns: [
      { dialogId: `D${s + 1}:1`, speaker: 'Ann', text: `On day ${s + 1} Ann repaired bicycle number ${s + 1}.` },
      { dialogId: `D${s + 1}:2`, speaker: 'Bo', text: `Bo painted fence number ${s + 1} that afternoon.` },
    ],
  })),
};

/** How the memory should come out of the fault. */
type Expected = { throws: PrismErrorCode } | { fallsBack: true };

interface LlmFault {
  name: string;
  /** The reply to every request for the faulty session while the fault lasts. */
  fault: ScriptedReply;
  expected: Expected;
}

let runtime: Promise<TestRuntime> | null = null;

/** Runs `scenario` against a fresh server (closed afterwards so the runner can exit), with the embedder loaded once. */
async function withServer(scenario: (server: OpenAiTestServer, runtime: TestRuntime) => Promise<FaultOutcome>): Promise<FaultOutcome> {
  runtime ??= testRuntime();
  const server = await startOpenAiServer();
  try {
    return await scenario(server, await runtime);
  } finally {
    await server.close();
  }
}

/**
 * Run `i` acknowledges sessions before the faulty one with a first `add`, then adds the whole
 * conversation with the fault at session `1 + i % (SESSIONS - 1)`, then again after the
 * endpoint recovers (or calls `reextract()` for a fallback).
 */
async function runFault({ fault, expected }: LlmFault, i: number, server: OpenAiTestServer, runtime: TestRuntime): Promise<FaultOutcome> {
  const faulty = 1 + (i % (SESSIONS - 1));
  const marker = `(D${faulty + 1}:1)`;
  let failing = true;
  server.setHandler((request) => (failing && promptOf(request).includes(marker) ? fault : validHandler(request)));
  const store = new MemoryStore();
  const llm = createLlmClient({ baseURL: server.baseURL, models: { default: 'fault-model' }, timeoutMs: 300, retry: { maxRetries: 1, baseDelayMs: 1 } });
  const memory = await Memory.open({ store, embedder: runtime.embedder, createIndex: runtime.createIndex, llm, extraction: 'llm' });

  await memory.addConversation({ ...conversation, sessions: conversation.sessions.slice(0, faulty) });
  const acknowledged = (await store.load(DEFAULT_PARTITION))?.chunks.map((c) => c.id) ?? [];
  const lost = async () => {
    const stored = new Set((await store.load(DEFAULT_PARTITION))?.chunks.map((c) => c.id));
    return acknowledged.filter((id) => !stored.has(id)).length;
  };

  const outcome = await memory.addConversation(conversation).then(
    () => ({ code: null }),
    (err: unknown) => ({ code: (err as { code?: PrismErrorCode }).code ?? 'untyped' }),
  );
  const stats = await memory.stats();
  const typed =
    'throws' in expected
      ? // Stopped with the typed error, nothing of the faulty session or after it committed.
        outcome.code === expected.throws && stats.chunks === faulty && stats.fallbackChunks.length === 0
      : // Went on past the bad answer: every chunk in, the faulty one marked and listed.
        outcome.code === null && stats.chunks === SESSIONS && stats.fallbackChunks.length === 1;
  const lostAfterFault = await lost();

  failing = false;
  if ('throws' in expected) await memory.addConversation(conversation);
  else await memory.reextract();
  const recovered = await store.load(DEFAULT_PARTITION);
  const whole = recovered?.chunks.length === SESSIONS && recovered.chunks.every((c) => c.extraction === 'llm');
  await memory.close();
  return { survived: typed && whole, recordsLost: lostAfterFault + (await lost()) };
}

const LLM_FAULTS: LlmFault[] = [
  { name: 'LLM 401 (bad key)', fault: reply.status(401), expected: { throws: 'LLM_AUTH' } },
  { name: 'LLM 429 that persists (Retry-After 0)', fault: reply.rateLimited(0), expected: { throws: 'LLM_RATE_LIMITED' } },
  { name: 'LLM 500 that persists', fault: reply.status(500), expected: { throws: 'LLM_HTTP' } },
  { name: 'LLM timeout (reply after 2 s, limit 300 ms)', fault: reply.content('{}', { delayMs: 2_000 }), expected: { throws: 'LLM_TIMEOUT' } },
  { name: 'LLM bad JSON (twice: reply and re-ask)', fault: reply.content('{"episode_summary": "cut off'), expected: { fallsBack: true } },
];

export const faults: Fault[] = LLM_FAULTS.map((fault) => ({ name: fault.name, runs: 3, run: (i) => withServer((server, runtime) => runFault(fault, i, server, runtime)) }));
