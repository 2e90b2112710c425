/// <reference types="vite/client" />
import { openBrowserMemory } from '../../src/browser.ts';
import type { DeleteTarget, Memory } from '../../src/memory.ts';
import type { SessionInfo } from '../../src/memory/records.ts';
import type { Scope } from '../../src/scope.ts';
import usearchWasmUrl from '../../wasm/usearch.wasm?url';
import { MODELS_URL_PATH } from '../support/site.ts';

/**
 * A whole `Memory` in one tab, opened with `openBrowserMemory` (MiniLM on onnxruntime-web, the
 * usearch WASM, IndexedDB): the page the two-tab tests (e2e/store-memory.spec.ts and
 * test/faults/browser.fault.ts) open twice on one database.
 */

export interface HarnessMessage {
  speaker: string;
  text: string;
  id: string;
}

let memory: Memory | null = null;

function opened(): Memory {
  if (!memory) throw new Error('call memoryHarness.open first');
  return memory;
}

const memoryHarness = {
  async open(dbName: string): Promise<void> {
    memory = await openBrowserMemory({
      dbName,
      modelBaseUrl: MODELS_URL_PATH,
      usearchWasm: usearchWasmUrl,
    });
  },

  /** Adds one session (to `scope`, default the default scope); resolves with the chunks it committed. */
  async add(sessionId: string, date: string, messages: HarnessMessage[], scope: Scope = {}): Promise<number> {
    return (await opened().add(messages, { ...scope, sessionId, date })).chunksAdded;
  },

  async list(scope: Scope = {}): Promise<SessionInfo[]> {
    return opened().list(scope);
  },

  /** The dialog ids and message texts a search (of `scope`, default the default scope) finds. */
  async search(query: string, scope: Scope = {}): Promise<{ dialogIds: string[]; texts: string[] }> {
    const result = await opened().search(query, { ...scope, budget: 256 });
    return { dialogIds: result.dialogIds, texts: result.units.flatMap((unit) => unit.turns.map((turn) => turn.text)) };
  },

  async delete(target: DeleteTarget): Promise<number> {
    return (await opened().delete(target)).chunksDeleted;
  },

  async close(): Promise<void> {
    await memory?.close();
    memory = null;
  },
};

declare global {
  interface Window {
    memoryHarness: typeof memoryHarness;
  }
}

window.memoryHarness = memoryHarness;
