/// <reference lib="webworker" />
import ortWasmUrl from 'onnxruntime-web/ort-wasm-simd-threaded.wasm?url';
import { loadBrowserRuntime, openBrowserMemory, type BrowserRuntime } from '../src/browser.ts';
import { PrismError } from '../src/errors.ts';
import { chunkConversation } from '../src/ingest/chunking.ts';
import type { Conversation } from '../src/ingest/conversation.ts';
import type { IngestReport } from '../src/ingest/pipeline.ts';
import type { Memory } from '../src/memory.ts';
import { formatTrace } from '../src/retrieve/bundle-search.ts';
import type { RetrievalMode } from '../src/retrieve/types.ts';
import usearchWasmUrl from '../wasm/usearch.wasm?url';
import { neighbourhood } from './neighbourhood.ts';
import type { AskView, DemoSettings, Envelope, ErrorView, IngestView, MemoryView, SessionView, UnitView, WorkerMessage, WorkerReplies, WorkerRequest } from './protocol.ts';

/**
 * The demo's memory lives here, off the main thread: the MiniLM model, the usearch indexes
 * and the IndexedDB store, so ingesting (seconds per session) never freezes the page.
 * Requests run one at a time in arrival order; only `cancel-ingest` jumps the queue.
 */

declare const self: DedicatedWorkerGlobalScope;

const DB_NAME = 'prism-demo';
/** The demo shows which N4 tier decided the intent, so routing is on (the paper's default run keeps it off). */
const DEMO_CONFIG = { flags: { intentRouting: true } };

let runtime: { modelBaseUrl: string; loading: Promise<BrowserRuntime> } | null = null;
let memory: Memory | null = null;
let ingestAbort: AbortController | null = null;
let queue: Promise<unknown> = Promise.resolve();

function post(message: WorkerMessage): void {
  self.postMessage(message);
}

self.onmessage = (event: MessageEvent<Envelope>) => {
  const { id, request } = event.data;
  if (request.type === 'cancel-ingest') {
    ingestAbort?.abort();
    post({ kind: 'reply', id, ok: true, value: null });
    return;
  }
  queue = queue.then(async () => {
    try {
      post({ kind: 'reply', id, ok: true, value: await run(id, request) });
    } catch (err) {
      post({ kind: 'reply', id, ok: false, error: errorView(err) });
    }
  });
};

async function run(id: number, request: Exclude<WorkerRequest, { type: 'cancel-ingest' }>): Promise<WorkerReplies[WorkerRequest['type']]> {
  switch (request.type) {
    case 'open':
      return open(request.settings);
    case 'ingest':
      return ingest(id, request.conversations);
    case 'ask':
      return ask(request.query, request.budget, request.mode, request.answer);
    case 'forget': {
      const { chunksDeleted } = await opened().delete(request.target);
      return { chunksDeleted, memory: await memoryView(opened()) };
    }
  }
}

function opened(): Memory {
  if (!memory) throw new PrismError('INVALID_INPUT', 'the memory is not open yet');
  return memory;
}

async function open(settings: DemoSettings): Promise<MemoryView> {
  if (runtime?.modelBaseUrl !== settings.modelBaseUrl) {
    post({ kind: 'status', text: 'Loading MiniLM and the usearch index…' });
    const loading = loadBrowserRuntime({
      modelBaseUrl: settings.modelBaseUrl,
      usearchWasm: usearchWasmUrl,
      // Pages that are not cross-origin isolated cannot run WASM threads anyway.
      miniLm: { wasmPaths: { wasm: ortWasmUrl }, numThreads: 1 },
    });
    runtime = { modelBaseUrl: settings.modelBaseUrl, loading };
    loading.catch(() => {
      if (runtime?.loading === loading) runtime = null;
    });
  }
  const loaded = await runtime.loading;
  post({ kind: 'status', text: 'Opening the memory in IndexedDB…' });
  await memory?.close();
  memory = null;
  memory = await openBrowserMemory({
    runtime: loaded,
    dbName: DB_NAME,
    llm: settings.llm,
    extraction: settings.llm && settings.llmExtraction ? 'llm' : 'local',
    config: DEMO_CONFIG,
  });
  // The demo keeps ingesting offline: load what add() would otherwise fetch on first use.
  await memory.preload();
  return memoryView(memory);
}

async function ingest(id: number, conversations: readonly Conversation[]): Promise<IngestView> {
  const target = opened();
  const totals = conversations.map((c) => chunkConversation(c, { by: 'session' }).length);
  const overallTotal = totals.reduce((a, b) => a + b, 0);
  const reports: IngestReport[] = [];
  ingestAbort = new AbortController();
  let before = 0;
  // Progress posts wait for the memory view they carry; chained, so they arrive in order and all before the reply.
  let progressPosts = Promise.resolve();
  const reply = async (cancelled: boolean): Promise<IngestView> => {
    await progressPosts;
    return { reports, memory: await memoryView(target), cancelled };
  };
  try {
    for (const [i, conversation] of conversations.entries()) {
      const done = before;
      reports.push(
        await target.addConversation(conversation, {
          signal: ingestAbort.signal,
          onProgress: (progress) => {
            progressPosts = progressPosts.then(async () =>
              post({ kind: 'progress', id, progress: { ...progress, overallDone: done + progress.chunksDone, overallTotal, memory: await memoryView(target) } }),
            );
          },
        }),
      );
      before += totals[i] ?? 0;
    }
    return await reply(false);
  } catch (err) {
    if (err instanceof PrismError && err.code === 'ABORTED') return reply(true);
    throw err;
  } finally {
    ingestAbort = null;
  }
}

async function ask(query: string, budget: number, mode: RetrievalMode, withAnswer: boolean): Promise<AskView> {
  const target = opened();
  const started = performance.now();
  const answered = withAnswer && target.llm ? await target.answer(query, { budget, mode }) : null;
  const retrieval = answered?.retrieval ?? (await target.search(query, { budget, mode }));
  const ms = performance.now() - started;
  // The query's vector is in the embedder's cache by now; the graph view ranks FacetPoints by it.
  const [queryVector] = await target.embedder.embed([query]);
  const units: UnitView[] = retrieval.units.map((unit) => ({
    id: unit.id,
    episodeId: unit.episodeId,
    kind: unit.kind,
    turns: unit.turns.map(({ id, speaker, text, date, sessionId }) => ({ id, speaker, text, date, sessionId })),
    dialogIds: unit.dialogIds,
    score: unit.score,
    template: unit.trace.template,
    pathCost: unit.trace.total,
    trace: formatTrace(unit.trace),
    pathNodeIds: unit.trace.nodes.map((n) => n.id),
    pathEdgeIds: unit.trace.edges.map((e) => e.id),
  }));
  return {
    query,
    intent: retrieval.intent,
    tier: retrieval.tier,
    mode: retrieval.mode,
    budget,
    context: retrieval.context,
    tokens: retrieval.tokens,
    units,
    dialogIds: retrieval.dialogIds,
    answer: answered?.answer ?? null,
    llmCalls: answered?.llmCalls ?? retrieval.llmCalls,
    llmTokens: answered?.llmTokens ?? retrieval.llmTokens,
    warnings: retrieval.warnings,
    ms,
    neighbourhood: neighbourhood((await target.inspect()).graph, retrieval.units, queryVector ?? new Float32Array(target.embedder.dim)),
  };
}

async function memoryView(target: Memory): Promise<MemoryView> {
  const [stats, sessions] = await Promise.all([target.stats(), target.list()]);
  return {
    embedderId: target.embedder.id,
    llm: target.llm !== null,
    stats,
    sessions: sessions
      .map(({ sessionId, date, messages, facts }): SessionView => ({ sessionId, date, messages, facts }))
      .sort((a, b) => (a.date ?? '').localeCompare(b.date ?? '') || a.sessionId.localeCompare(b.sessionId)),
  };
}

function errorView(err: unknown): ErrorView {
  if (err instanceof PrismError) return { code: err.code, message: err.message };
  return { code: 'UNEXPECTED', message: err instanceof Error ? err.message : String(err) };
}
