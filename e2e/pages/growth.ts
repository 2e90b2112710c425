/// <reference types="vite/client" />
import ortWasmUrl from 'onnxruntime-web/ort-wasm-simd-threaded.wasm?url';
import { standInEmbedder } from '../../bench/stand-in.ts';
import type { ChatSession } from '../../bench/longmemeval-chat.ts';
import { loadBrowserRuntime, openBrowserMemory, type BrowserRuntime } from '../../src/browser.ts';
import { MINILM_DIM, miniLmEmbedderId } from '../../src/embed/minilm.ts';
import { Memory } from '../../src/memory.ts';
import { IndexedDbStore } from '../../src/store/idb.ts';
import { loadUsearchWasm } from '../../src/vector/usearch-wasm.ts';
import usearchWasmUrl from '../../wasm/usearch.wasm?url';
import { MODELS_URL_PATH } from '../support/site.ts';

/**
 * The Chromium half of the growth bench (e2e/growth.bench.ts drives it, bench/growth.bench.ts is
 * the Node half): one page load grows a memory in IndexedDB with stand-in vectors, batch by batch
 * as Node hands the sessions over; a fresh page load then opens it as an app would, with the real
 * MiniLM (openBrowserMemory), and times the first search, the next ones, adds and a delete.
 */

/** Search budget of every timed search, as the Node probe (bench/growth-probe.ts). */
const SEARCH_BUDGET = 2048;
/** Adds timed by the probe, one message each, as the Node probe. */
const PROBE_ADDS = 10;
const PROBE_SESSION = 'growth-probe';

let memory: Memory | null = null;

function opened(): Memory {
  if (!memory) throw new Error('open a memory first (growthHarness.openForGrowth or growthHarness.openCold)');
  return memory;
}

/** What a probe times, raw: Node takes the percentiles. */
export interface ColdSearches {
  /** From opening the database to the first search's result, the model already loaded. */
  coldOpenMs: number;
  /** The first search's share of `coldOpenMs`. */
  firstSearchMs: number;
  /** Each later search, query embedding included. */
  searchMs: number[];
}

export interface AddsAndDelete {
  addMs: number[];
  /** A search right after each add, the message added as its query (an agent's turn). */
  searchAfterAddMs: number[];
  deleteMs: number;
}

let runtime: BrowserRuntime | null = null;

const growthHarness = {
  /**
   * Opens `dbName` for growth: stand-in vectors under the real MiniLM's id and size (so the real
   * one opens the memory later), no model loaded; the sizes and costs measured do not depend on
   * the vectors' meaning.
   */
  async openForGrowth(dbName: string): Promise<void> {
    const usearch = await loadUsearchWasm(new URL(usearchWasmUrl, location.href));
    const store = await IndexedDbStore.open({ name: dbName });
    memory = await Memory.open({
      store,
      embedder: standInEmbedder(miniLmEmbedderId(), MINILM_DIM),
      createIndex: (dim) => usearch.createIndex({ dim }),
    });
  },

  /** Adds each session with one `add()`, as the Node bench does. */
  async addSessions(sessions: ChatSession[]): Promise<void> {
    for (const session of sessions) await opened().add(session.messages, { sessionId: session.id, date: session.date });
  },

  /** Total graph nodes and edges of the default scope. */
  async graphSize(): Promise<{ nodes: number; edges: number }> {
    const stats = await opened().stats();
    const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);
    return { nodes: sum(stats.nodes), edges: sum(stats.edges) };
  },

  /**
   * Loads the real MiniLM (model files from the Cache API after the first visit) and the usearch
   * WASM, and embeds once, so the cold open that follows times the memory, not the model.
   */
  async loadModel(): Promise<void> {
    runtime = await loadBrowserRuntime({ modelBaseUrl: MODELS_URL_PATH, usearchWasm: usearchWasmUrl, ortWasmUrl });
    await runtime.embedder.embed(['warm up the model']);
  },

  /** Opens `dbName` as an app would and runs the searches: the first one timed with the open. */
  async openCold(dbName: string, queries: string[]): Promise<ColdSearches> {
    if (!runtime) throw new Error('call growthHarness.loadModel first');
    const t0 = performance.now();
    memory = await openBrowserMemory({ runtime, dbName });
    const opened = performance.now();
    await memory.search(queries[0] ?? 'what did I say?', { budget: SEARCH_BUDGET });
    const answered = performance.now();
    const coldOpenMs = answered - t0;
    const firstSearchMs = answered - opened;
    const searchMs: number[] = [];
    for (const query of queries.slice(1)) {
      const t = performance.now();
      await memory.search(query, { budget: SEARCH_BUDGET });
      searchMs.push(performance.now() - t);
    }
    return { coldOpenMs, firstSearchMs, searchMs };
  },

  /**
   * `add()` of one message, a few times into one session, then the delete of that session; then as
   * many agent's turns (a message added, then searched with: the search timed), deleted untimed.
   */
  async addsAndDelete(): Promise<AddsAndDelete> {
    const message = (i: number) => `Probe message ${i}: I moved my piano lessons to Thursday evenings after work.`;
    const addMs: number[] = [];
    for (let i = 0; i < PROBE_ADDS; i++) {
      const t = performance.now();
      await opened().add([{ role: 'user', content: message(i) }], { sessionId: PROBE_SESSION, date: '2030-01-01' });
      addMs.push(performance.now() - t);
    }
    const t = performance.now();
    await opened().delete({ sessionId: PROBE_SESSION });
    const deleteMs = performance.now() - t;
    const searchAfterAddMs: number[] = [];
    for (let i = 0; i < PROBE_ADDS; i++) {
      const content = message(PROBE_ADDS + i);
      await opened().add([{ role: 'user', content }], { sessionId: `${PROBE_SESSION}-turns`, date: '2030-01-02' });
      const s = performance.now();
      await opened().search(content, { budget: SEARCH_BUDGET });
      searchAfterAddMs.push(performance.now() - s);
    }
    await opened().delete({ sessionId: `${PROBE_SESSION}-turns` });
    return { addMs, searchAfterAddMs, deleteMs };
  },

  async close(): Promise<void> {
    await memory?.close();
    memory = null;
  },
};

declare global {
  interface Window {
    growthHarness: typeof growthHarness;
  }
}

window.growthHarness = growthHarness;
