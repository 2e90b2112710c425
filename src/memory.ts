import { resolveConfig, type DeepPartial, type PrismConfig } from './config.ts';
import type { Embedder } from './embed/types.ts';
import { PrismError } from './errors.ts';
import { MemoryGraph } from './graph/memory-graph.ts';
import { EDGE_TYPES, LAYERS, type ChunkTurn, type EdgeType, type GraphEdge, type Layer, type MemoryMeta, type MemorySnapshot } from './graph/types.ts';
import { edgeSpace, IndexSet } from './vector/index-set.ts';
import type { VectorIndex } from './vector/types.ts';
import { chunkConversation, type ChunkingOptions } from './ingest/chunking.ts';
import { checkConversation, parseSessionDate, type Conversation, type ConversationTurn } from './ingest/conversation.ts';
import { chainGapEdges } from './ingest/build-graph.ts';
import { createLlmExtractor } from './ingest/extract-llm.ts';
import { createLocalExtractor } from './ingest/extract-local.ts';
import type { Extractor } from './ingest/extraction.ts';
import { applyBatch, edgeVectorsFor, ingestChunks, type IngestDeps, type IngestOptions, type IngestReport, type MemoryState } from './ingest/pipeline.ts';
import { deletionBatch } from './ingest/chunk-removal.ts';
import { fallbackChunkIds, reextractFallbackChunks, type ReextractOptions, type ReextractReport } from './ingest/reextract.ts';
import type { LlmClient } from './llm/types.ts';
import { usageTotals } from './llm/usage.ts';
import { createSerial, type Serial } from './util/serial.ts';
import { answerFromContext } from './retrieve/answer.ts';
import { PrototypeBank } from './retrieve/intent.ts';
import { LexicalIndex } from './retrieve/lexical.ts';
import { retrieve, type RetrieveOptions, type RetrieveResult } from './retrieve/retrieve.ts';
import type { RetrieveDeps } from './retrieve/types.ts';
import { decodeCheckpoint, encodeCheckpoint, importCheckpoint } from './store/checkpoint.ts';
import type { GraphStore, WriteBatch } from './store/types.ts';

export const SCHEMA_VERSION = 1;

export interface MemoryOptions {
  store: GraphStore;
  embedder: Embedder;
  /** Creates an empty vector index of the given dimension (the usearch WASM index in practice). */
  createIndex: (dim: number) => VectorIndex;
  /** An LLM makes extraction, causal consolidation, N3 rerank, N4's last tier and answers use it. */
  llm?: LlmClient | null;
  /** `llm` extraction needs `llm`; the default follows whether one is given. */
  extraction?: 'local' | 'llm';
  chunking?: ChunkingOptions;
  config?: DeepPartial<PrismConfig>;
}

/** A message for incremental `add`: one conversational turn. */
export interface Message {
  speaker: string;
  text: string;
  /** Kept when given (e.g. `D3:12`) so retrieval can cite it; generated otherwise. */
  dialogId?: string;
}

export interface MessagesInput {
  /** Session the messages belong to; later `add`s with a new id append a new session. */
  sessionId: string;
  /** Session date/time as written, e.g. `1:56 pm on 8 May, 2023`, or an ISO string. */
  date?: string;
  messages: Message[];
  conversationId?: string;
}

export type DeleteTarget = { chunkId: string } | { sessionId: string } | 'all';

export interface AnswerResult {
  answer: string;
  /** The retrieval behind the answer: packed context, units, intent, traces. */
  retrieval: RetrieveResult;
  /** LLM use of the whole question (intent, rerank and answer roles), from the adapter's accounting. */
  llmCalls: number;
  llmTokens: number;
}

export interface MemoryStats {
  chunks: number;
  /** Chunks whose LLM extraction fell back to summary + entities; `reextract()` extracts them again. */
  fallbackChunks: string[];
  nodes: Record<Layer, number>;
  edges: Record<EdgeType, number>;
}

/**
 * A PRISM memory: the typed graph, its vector indexes and its store. All graph and scoring
 * logic works on the in-memory working set; the store only persists committed batches.
 */
export class Memory {
  readonly config: PrismConfig;
  private readonly extractor: Extractor;
  /** Bumped by every change of the graph, so derived indexes know when to catch up. */
  private version = 0;
  private lexical: LexicalIndex | null = null;
  private lexicalVersion = -1;
  private prototypes: PrototypeBank | null = null;
  /** Writes (add, delete, import) run one at a time: each reads the graph and allocates keys the next one must see. */
  private readonly exclusive: Serial = createSerial();

  private constructor(
    private readonly options: MemoryOptions,
    private state: MemoryState,
  ) {
    this.config = resolveConfig(options.config);
    const mode = options.extraction ?? (options.llm ? 'llm' : 'local');
    if (mode === 'llm' && !options.llm) throw new PrismError('LLM_NOT_CONFIGURED', 'LLM extraction needs an `llm` client');
    this.extractor = mode === 'llm' && options.llm ? createLlmExtractor(options.llm) : createLocalExtractor();
  }

  /** Opens the memory in `store` (creating it when empty) and builds its indexes from the stored vectors. */
  static async open(options: MemoryOptions): Promise<Memory> {
    const snapshot = await options.store.load();
    if (snapshot && snapshot.meta.embedderId !== options.embedder.id) {
      throw new PrismError(
        'STORE_VERSION',
        `this memory was embedded with ${snapshot.meta.embedderId}; open it with the same embedder (got ${options.embedder.id})`,
      );
    }
    return new Memory(options, stateFrom(snapshot ?? emptySnapshot(options.embedder), options));
  }

  /** The graph as plain data (read-only use: retrieval, inspection, demos). */
  get graph(): MemoryGraph {
    return this.state.graph;
  }

  get indexes(): IndexSet {
    return this.state.indexes;
  }

  get llm(): LlmClient | null {
    return this.options.llm ?? null;
  }

  get embedder(): Embedder {
    return this.options.embedder;
  }

  /**
   * Ingests a whole conversation or a batch of messages. Chunks already ingested (same SHA-256)
   * are skipped, so re-adding is a no-op and an interrupted add resumes where it stopped.
   */
  add(input: Conversation | MessagesInput, options: IngestOptions = {}): Promise<IngestReport> {
    return this.exclusive(() => this.ingest(input, options));
  }

  private async ingest(input: Conversation | MessagesInput, options: IngestOptions): Promise<IngestReport> {
    const sessionTurns = 'sessions' in input ? [] : this.turnsOfSession(input);
    if (!('sessions' in input) && isResentBatch(input.messages, sessionTurns)) {
      // Generated dialog ids would make a re-sent batch look new to the SHA-256 dedup.
      return { chunksAdded: 0, chunksSkipped: 1, nodesAdded: 0, edgesAdded: 0, causalEdgesAdded: 0, warnings: [], ms: 0 };
    }
    const { conversation, emptyTurns } = checkConversation('sessions' in input ? input : messagesToConversation(input, sessionTurns.length));
    const drafts = chunkConversation(conversation, this.options.chunking ?? { by: 'session' });
    this.version++;
    const report = await ingestChunks(drafts, this.ingestDeps(), options);
    if (emptyTurns > 0) report.warnings.unshift(`${emptyTurns} empty message${emptyTurns === 1 ? '' : 's'} skipped`);
    return report;
  }

  private ingestDeps(): IngestDeps {
    return {
      state: this.state,
      store: this.options.store,
      embedder: this.options.embedder,
      extractor: this.extractor,
      llm: this.options.llm ?? null,
      config: this.config,
      extractAhead: this.extractor.mode === 'llm' ? 4 : 0,
    };
  }

  /**
   * Extracts the chunks listed in `stats().fallbackChunks` again with the LLM (after its answer
   * stayed invalid at ingest), replacing each one's nodes and edges atomically once the answer is valid.
   */
  reextract(options: ReextractOptions = {}): Promise<ReextractReport> {
    return this.exclusive(() => {
      this.version++;
      return reextractFallbackChunks(this.ingestDeps(), options);
    });
  }

  /** The turns already stored for the session of `input`, in ingestion order. */
  private turnsOfSession(input: MessagesInput): ChunkTurn[] {
    const sessionId = `${input.conversationId ?? DEFAULT_CONVERSATION}/${input.sessionId}`;
    return [...this.state.graph.chunks.values()]
      .filter((chunk) => chunk.sessionId === sessionId)
      .sort((a, b) => a.order - b.order)
      .flatMap((chunk) => chunk.turns);
  }


  /**
   * Retrieves a small, precise context for `query` (design §3): N4 intent, N1 bundle search
   * under N2 edge costs, N3 compression (an LLM rerank, or the local precision step), then
   * packing into `budget` tokens. Zero-LLM unless an LLM client is configured (or `mode` says).
   */
  async search(query: string, options: RetrieveOptions = {}): Promise<RetrieveResult> {
    return retrieve(query, this.retrieveDeps(), options);
  }

  /** Answers from the packed context with the `answer` role; needs an LLM client. */
  async answer(query: string, options: RetrieveOptions = {}): Promise<AnswerResult> {
    const llm = this.options.llm;
    if (!llm) throw new PrismError('LLM_NOT_CONFIGURED', 'answer() needs an LLM client; search() works without one');
    const before = usageTotals(llm.usage());
    const retrieval = await this.search(query, { budget: DEFAULT_ANSWER_BUDGET, ...options });
    const answer = await answerFromContext(llm, query, retrieval.context, options.signal);
    const after = usageTotals(llm.usage());
    return { answer, retrieval, llmCalls: after.calls - before.calls, llmTokens: after.tokens - before.tokens };
  }

  private retrieveDeps(): RetrieveDeps {
    const { graph, indexes } = this.state;
    const embedder = this.options.embedder;
    const lexical = (this.lexical ??= LexicalIndex.fromGraph(graph));
    if (this.lexicalVersion !== this.version) {
      lexical.update(graph);
      this.lexicalVersion = this.version;
    }
    this.prototypes ??= new PrototypeBank((texts) => embedder.embed(texts));
    const llm = this.options.llm;
    return {
      graph,
      config: this.config,
      prototypes: this.prototypes,
      lexical,
      ...(llm ? { llm } : {}),
      embedQuery: async (text, signal) => {
        const [vector] = await embedder.embed([text], signal ? { signal } : {});
        if (!vector) throw new PrismError('INVALID_INPUT', 'the embedder returned no vector');
        return vector;
      },
      searchLayer: async (layer, vector, k) =>
        indexes.search(layer, vector, k).flatMap((hit) => {
          const id = graph.idForKey(hit.key);
          return id ? [{ id, score: hit.score }] : [];
        }),
    };
  }

  /** Removes a chunk, a session or everything: nodes, edges, vectors, chunk text and hash, everywhere. */
  delete(target: DeleteTarget): Promise<{ chunksDeleted: number }> {
    return this.exclusive(() => this.deleteNow(target));
  }

  private async deleteNow(target: DeleteTarget): Promise<{ chunksDeleted: number }> {
    this.version++;
    if (target === 'all') {
      const chunks = this.state.graph.chunks.size;
      await this.options.store.clear();
      this.state.indexes.dispose();
      this.state = stateFrom(emptySnapshot(this.options.embedder), this.options);
      return { chunksDeleted: chunks };
    }
    const chunkIds = new Set(
      'chunkId' in target
        ? [target.chunkId].filter((id) => this.state.graph.chunks.has(id))
        : [...this.state.graph.chunks.values()].filter((c) => c.sessionId === target.sessionId).map((c) => c.id),
    );
    if (chunkIds.size === 0) return { chunksDeleted: 0 };
    const batch = deletionBatch(this.state, chunkIds);
    // Deleting a middle session must not cut the chronological Episode chain in two.
    let nextKey = this.state.meta.nextKey;
    const removed = new Set(batch.deleteNodes);
    const bridges = chainGapEdges(this.state.graph, removed, () => nextKey++);
    if (bridges.length > 0) {
      batch.putEdges = bridges;
      batch.putVectors = await edgeVectorsFor(bridges, this.options.embedder, 'embedded', () => undefined);
      batch.meta = { ...this.state.meta, nextKey };
    }
    await this.options.store.commit(batch);
    applyBatch(this.state, batch);
    return { chunksDeleted: chunkIds.size };
  }

  /** One portable checkpoint (bytes) that opens in any store backend. */
  export(): Uint8Array {
    return encodeCheckpoint(this.snapshot());
  }

  /** Replaces this memory with a checkpoint's, atomically; bad bytes throw `CORRUPT_CHECKPOINT` and change nothing. */
  import(bytes: Uint8Array): Promise<void> {
    return this.exclusive(() => this.importNow(bytes));
  }

  private async importNow(bytes: Uint8Array): Promise<void> {
    const incoming = decodeCheckpoint(bytes);
    if (incoming.meta.embedderId !== this.options.embedder.id) {
      throw new PrismError('STORE_VERSION', `checkpoint was embedded with ${incoming.meta.embedderId}, this memory uses ${this.options.embedder.id}`);
    }
    await importCheckpoint(this.options.store, bytes);
    this.version++;
    this.state.indexes.dispose();
    this.state = stateFrom(incoming, this.options);
  }

  stats(): MemoryStats {
    const nodes = Object.fromEntries(LAYERS.map((l) => [l, 0])) as Record<Layer, number>;
    const edges = Object.fromEntries(EDGE_TYPES.map((t) => [t, 0])) as Record<EdgeType, number>;
    for (const node of this.state.graph.nodes.values()) nodes[node.layer]++;
    for (const edge of this.state.graph.edges.values()) edges[edge.type]++;
    return { chunks: this.state.graph.chunks.size, fallbackChunks: fallbackChunkIds(this.state.graph), nodes, edges };
  }

  snapshot(): MemorySnapshot {
    const { graph, meta, hashes } = this.state;
    return {
      meta,
      nodes: [...graph.nodes.values()],
      edges: [...graph.edges.values()],
      chunks: [...graph.chunks.values()],
      vectors: new Map(graph.vectors),
      hashes: new Set(hashes),
    };
  }

  async close(): Promise<void> {
    this.state.indexes.dispose();
    await this.options.store.close();
  }
}

/** Context budget for `answer()` when the caller gives none: about the paper's 2,023 tokens. */
const DEFAULT_ANSWER_BUDGET = 2048;

function emptySnapshot(embedder: Embedder): MemorySnapshot {
  const meta: MemoryMeta = { schemaVersion: SCHEMA_VERSION, embedderId: embedder.id, dim: embedder.dim, nextKey: 1, chunkCount: 0, settings: {} };
  return { meta, nodes: [], edges: [], chunks: [], vectors: new Map(), hashes: new Set() };
}

function stateFrom(snapshot: MemorySnapshot, options: MemoryOptions): MemoryState {
  const graph = new MemoryGraph({ nodes: [], edges: [], chunks: [], vectors: new Map() });
  const state: MemoryState = { graph, indexes: new IndexSet(snapshot.meta.dim, options.createIndex), meta: snapshot.meta, hashes: new Set() };
  applyBatch(state, {
    putChunks: snapshot.chunks,
    putNodes: snapshot.nodes,
    putEdges: snapshot.edges,
    putVectors: [...snapshot.vectors],
    putHashes: [...snapshot.hashes],
    meta: snapshot.meta,
  });
  return state;
}

const DEFAULT_CONVERSATION = 'conversation';

/** True when `messages` (none carrying its own dialog id) already appear, in order and back to back, among the session's turns. */
function isResentBatch(messages: readonly Message[], turns: readonly ChunkTurn[]): boolean {
  if (!Array.isArray(messages) || messages.length === 0 || messages.length > turns.length) return false;
  if (messages.some((m) => typeof m?.text !== 'string' || typeof m.speaker !== 'string' || m.dialogId !== undefined)) return false;
  const same = (m: Message, t: ChunkTurn) => m.speaker.trim() === t.speaker.trim() && m.text.normalize('NFC').trim() === t.text.normalize('NFC').trim();
  const matchesAt = (start: number) => messages.every((m, i) => {
    const t = turns[start + i];
    return t !== undefined && same(m, t);
  });
  for (let start = 0; start + messages.length <= turns.length; start++) if (matchesAt(start)) return true;
  return false;
}

/**
 * Messages become one session; generated dialog ids continue the session's numbering. Shapes
 * are checked afterwards by `checkConversation` (message i becomes `sessions.0.turns.i`).
 */
function messagesToConversation(input: MessagesInput, turnsBefore: number): Conversation {
  if (!Array.isArray(input.messages)) throw new PrismError('INVALID_INPUT', 'messages: expected an array of { speaker, text }');
  const turns: ConversationTurn[] = input.messages.map((m, i) => ({
    dialogId: m?.dialogId ?? `${input.sessionId}:${turnsBefore + i + 1}`,
    speaker: m?.speaker,
    text: m?.text,
  }));
  const date = input.date ?? null;
  const time = date ? parseSessionDate(date) : null;
  return { id: input.conversationId ?? DEFAULT_CONVERSATION, sessions: [{ id: input.sessionId, dateText: date, time, turns }] };
}
