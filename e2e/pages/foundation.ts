/// <reference types="vite/client" />
import { createMiniLmEmbedder, type MiniLmEmbedder, type MiniLmPrecision } from '../../src/embed/minilm.ts';
import { urlModelSource } from '../../src/embed/model-source.ts';
import type { EpisodeNode, MemorySnapshot } from '../../src/graph/types.ts';
import { loadUsearchWasm, type UsearchIndex, type UsearchWasm } from '../../src/vector/usearch-wasm.ts';
import { SCHEMA_VERSION } from '../../src/memory.ts';
import { snapshotAsBatch } from '../../src/store/snapshot.ts';
import { DEFAULT_PARTITION } from '../../src/scope.ts';
import usearchWasmUrl from '../../wasm/usearch.wasm?url';
import { MODELS_URL_PATH, sha256Hex } from '../support/site.ts';
import { withStore } from './with-store.ts';

/**
 * The whole foundation in one tab: MiniLM (onnxruntime-web) embeds texts, the texts and
 * vectors go to IndexedDB, and the usearch WASM index is rebuilt from what IndexedDB holds —
 * so a reload between `remember` and `recall` proves the memory survives it.
 */

const embedders = new Map<MiniLmPrecision, Promise<MiniLmEmbedder>>();
let usearch: Promise<UsearchWasm> | undefined;

function embedder(precision: MiniLmPrecision): Promise<MiniLmEmbedder> {
  let loading = embedders.get(precision);
  if (!loading) {
    loading = createMiniLmEmbedder({ source: urlModelSource(new URL(MODELS_URL_PATH, location.href)), precision });
    embedders.set(precision, loading);
  }
  return loading;
}

/** One episode per text, keyed 0..n-1, with its chunk, hash and vector. */
async function memoryOf(texts: readonly string[], model: MiniLmEmbedder): Promise<MemorySnapshot> {
  const vectors = await model.embed(texts);
  const snapshot: MemorySnapshot = {
    meta: { schemaVersion: SCHEMA_VERSION, embedderId: model.id, dim: model.dim, nextKey: texts.length, chunkCount: texts.length, settings: {} },
    nodes: [],
    edges: [],
    chunks: [],
    vectors: new Map(),
    hashes: new Set(),
  };
  for (const [order, text] of texts.entries()) {
    // The chunk id is the SHA-256 of its text, as ingestion makes it.
    const chunkId = await sha256Hex(new TextEncoder().encode(text));
    const episode: EpisodeNode = { layer: 'episode', id: `ep:${order}`, key: order, chunkId, summary: text, time: null, order };
    snapshot.nodes.push(episode);
    snapshot.chunks.push({ id: chunkId, sessionId: 'session-1', header: '[Session 1]', text, time: null, order, turns: [] });
    snapshot.vectors.set(episode.id, vectors[order] ?? new Float32Array());
    snapshot.hashes.add(chunkId);
  }
  return snapshot;
}

/** A flat usearch index over every stored episode vector, keyed by the episode's `key`. */
async function indexOf(snapshot: MemorySnapshot): Promise<UsearchIndex> {
  usearch ??= loadUsearchWasm(usearchWasmUrl);
  const index = (await usearch).createIndex({ dim: snapshot.meta.dim });
  const episodes = snapshot.nodes.filter((node) => snapshot.vectors.has(node.id));
  const rows = new Float32Array(episodes.length * snapshot.meta.dim);
  episodes.forEach((node, row) => rows.set(snapshot.vectors.get(node.id) ?? [], row * snapshot.meta.dim));
  index.add(
    episodes.map((node) => node.key),
    rows,
  );
  return index;
}

const foundationHarness = {
  /** MiniLM vectors for `texts`, as plain numbers so they cross to the test unchanged. */
  async embed(texts: string[], precision: MiniLmPrecision): Promise<number[][]> {
    const vectors = await (await embedder(precision)).embed(texts);
    return vectors.map((vector) => Array.from(vector));
  },

  /** Embeds `texts` and commits them (episodes, chunks, vectors, hashes) to database `name` in one batch. */
  async remember(name: string, texts: string[], precision: MiniLmPrecision): Promise<{ indexed: number }> {
    const snapshot = await memoryOf(texts, await embedder(precision));
    await withStore(name, async (store) => {
      await store.clear();
      await store.commit(DEFAULT_PARTITION, snapshotAsBatch(snapshot));
    });
    const index = await indexOf(snapshot);
    try {
      return { indexed: index.size };
    } finally {
      index.dispose();
    }
  },

  /** Loads database `name`, rebuilds the index from its vectors and returns the episode nearest to `query`. */
  async recall(
    name: string,
    query: string,
    precision: MiniLmPrecision,
  ): Promise<{ stored: number; embedderId: string; nearest: string | null; score: number | null }> {
    const snapshot = await withStore(name, (store) => store.load(DEFAULT_PARTITION));
    if (!snapshot) return { stored: 0, embedderId: '', nearest: null, score: null };
    const index = await indexOf(snapshot);
    try {
      const [queryVector] = await (await embedder(precision)).embed([query]);
      const [hit] = index.search(queryVector ?? new Float32Array(), 1)[0] ?? [];
      const node = snapshot.nodes.find((candidate) => candidate.key === hit?.key);
      return {
        stored: index.size,
        embedderId: snapshot.meta.embedderId,
        nearest: node?.layer === 'episode' ? node.summary : null,
        score: hit?.score ?? null,
      };
    } finally {
      index.dispose();
    }
  },
};

declare global {
  interface Window {
    foundationHarness: typeof foundationHarness;
  }
}

window.foundationHarness = foundationHarness;
