/**
 * PRISM's `Memory` in workerd, one SQLite-backed Durable Object per user (spawned by
 * test/edge.test.ts). `POST /<userId>` goes to the object named after the user
 * (`idFromName(userId)`), whose Memory lives over `openDurableObjectStore(ctx.storage)`; the
 * body is a `MemoryAction` plus the MiniLM vectors Node computed for its texts (MiniLM cannot
 * run in workerd, see workerd-main.ts). The usearch index loads from the precompiled module.
 */
import usearchModule from './usearch.wasm';
import { Memory } from '../../src/memory.ts';
import { openDurableObjectStore } from '../../src/store/durable-object.ts';
import type { Env, ObjectState } from './workerd-bindings.ts';
import type { GraphStore } from '../../src/store/types.ts';
import { loadUsearchWasm } from '../../src/vector/usearch-wasm.ts';
import { runMemoryAction, type MemoryAction } from './memory-actions.ts';
import { tableEmbedder, type VectorTable } from './vector-table.ts';

export type MemoryRequest = MemoryAction & { embedderId: string; dim: number; vectors: VectorTable };


export class UserMemory {
  private readonly store: GraphStore;
  /** Every vector a request brought; the embedder reads it at call time. */
  private readonly vectors: VectorTable = {};
  private memory: Promise<Memory> | undefined;

  constructor(state: ObjectState) {
    this.store = openDurableObjectStore(state.storage);
  }

  /** The Memory opens on the first request, which names the embedder. */
  private open(embedderId: string, dim: number): Promise<Memory> {
    this.memory ??= loadUsearchWasm(usearchModule).then((usearch) =>
      Memory.open({ store: this.store, embedder: tableEmbedder(embedderId, dim, this.vectors), createIndex: (d) => usearch.createIndex({ dim: d }), llm: null }),
    );
    return this.memory;
  }

  async fetch(request: Request): Promise<Response> {
    try {
      const userId = decodeURIComponent(new URL(request.url).pathname.slice(1));
      const { embedderId, dim, vectors, ...action } = (await request.json()) as MemoryRequest;
      Object.assign(this.vectors, vectors);
      return Response.json(await runMemoryAction(await this.open(embedderId, dim), userId, action as MemoryAction));
    } catch (error) {
      return new Response(error instanceof Error ? `${error.name}: ${error.message}\n${error.stack ?? ''}` : String(error), { status: 500 });
    }
  }
}

export default {
  fetch(request: Request, env: Env): Promise<Response> {
    const userId = decodeURIComponent(new URL(request.url).pathname.slice(1));
    return env.MEMORY.get(env.MEMORY.idFromName(userId)).fetch(request);
  },
};
