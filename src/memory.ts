import { resolveConfig, type DeepPartial, type PrismConfig } from './config.ts';
import type { Embedder } from './embed/types.ts';
import { PrismError } from './errors.ts';
import type { MemoryGraph } from './graph/memory-graph.ts';
import { LAYERS, type ChunkTurn, type EdgeType, type Layer, type MemorySnapshot } from './graph/types.ts';
import { chunkConversation, type ChunkDraft, type ChunkingOptions } from './ingest/chunking.ts';
import { checkConversation, type Conversation } from './ingest/conversation.ts';
import { chainGapEdges } from './ingest/build-graph.ts';
import { createLlmExtractor } from './ingest/extract-llm.ts';
import { createLocalExtractor } from './ingest/extract-local.ts';
import type { Extractor } from './ingest/extraction.ts';
import { planConflict, planMessageTurns, type SkippedMessage } from './ingest/identity.ts';
import { checkAddSize, checkId, dayOf, normaliseMessages, messageTime, type InputMessage, type NormalisedMessage } from './ingest/input.ts';
import { edgeVectorsFor, ingestChunks, type IngestDeps, type IngestOptions, type IngestReport } from './ingest/pipeline.ts';
import { deletionBatch } from './ingest/chunk-removal.ts';
import { fallbackChunkIds, reextractFallbackChunks, type ReextractOptions, type ReextractReport } from './ingest/reextract.ts';
import type { LlmClient } from './llm/types.ts';
import { usageTotals } from './llm/usage.ts';
import { catchUp, checkCompatible, loadPartition, partitionWhole, replaceState, writerFor, type Partition, type PartitionHost } from './memory/partition.ts';
import { lexicalIndexOf, settleLexical } from './memory/lexical-state.ts';
import { saveAfterSearch, saveFactImage } from './memory/fact-image.ts';
import { findRecord, listSessions, unitTurns, type MemoryRecord, type MemoryTurn, type SessionInfo } from './memory/records.ts';
import { answerFromContext } from './retrieve/answer.ts';
import { PrototypeBank } from './retrieve/intent.ts';
import { loadTokenCounter, type TokenCounter } from './util/tokens.ts';
import { retrieve, type RetrieveOptions, type RetrieveResult } from './retrieve/retrieve.ts';
import type { RetrieveDeps } from './retrieve/types.ts';
import type { RetrievedUnit } from './retrieve/units.ts';
import { partitionOf, resolveScope, scopeOfPartition, type ResolvedScope, type Scope } from './scope.ts';
import { decodeCheckpoint, encodeCheckpoint, replacePartition } from './store/checkpoint.ts';
import { roundVectors } from './store/vector-codec.ts';
import type { GraphStore } from './store/types.ts';
import type { IndexSet, IndexSpace } from './vector/index-set.ts';
import type { VectorIndex } from './vector/types.ts';

export { SCHEMA_VERSION } from './memory/partition.ts';

/** The parts of a memory for `Memory.open` (the open functions fill them in for you). */
export interface MemoryOptions {
  /** Where the memory lives; one store holds the memories of many scopes. */
  store: GraphStore;
  embedder: Embedder;
  /** Creates an empty vector index of the given dimension (the usearch WASM index in practice). */
  createIndex: (dim: number) => VectorIndex;
  /** An LLM makes extraction, causal consolidation, N3 rerank, N4's last tier and answers use it. Default: none (zero-LLM). */
  llm?: LlmClient | null;
  /** `llm` extraction needs `llm`. Default: `llm` when an LLM client is given, else `local`. */
  extraction?: 'local' | 'llm';
  /** How conversations are cut into Episodes. Default `{ by: 'session' }`. */
  chunking?: ChunkingOptions;
  /** Overrides of the paper's constants and PRISM's limits (`DEFAULT_CONFIG`). */
  config?: DeepPartial<PrismConfig>;
  /** Token counter for budgets and chunk windows; default o200k_base, loaded lazily (see `loadTokenCounter`). */
  countTokens?: TokenCounter;
}

/** A message for the v0.2 `add({ sessionId, messages })` form: one conversational turn. */
export interface Message {
  speaker: string;
  text: string;
  /** Kept when given (e.g. `D3:12`) so retrieval can cite it; generated otherwise. */
  dialogId?: string;
}

/** Options of `add()`: whose memory, which session, and how to report progress. */
export interface AddOptions extends Scope, IngestOptions {
  /** The session the messages belong to. Default: the UTC day of `date` (or of now), `YYYY-MM-DD`. */
  sessionId?: string;
  /** When the session took place, in a form `SpeakerMessage.date` lists. Default: the first message's `date`, else now. */
  date?: string;
  /** Idempotency key of the whole batch: adding a batch id the scope already holds is a no-op. */
  batchId?: string;
}

/** The v0.2 form of an add: one session's messages, with the scope beside them. */
export interface MessagesInput extends Scope {
  sessionId: string;
  /** When the session took place, e.g. `1:56 pm on 8 May, 2023` or ISO 8601: the forms `SpeakerMessage.date` lists. */
  date?: string;
  messages: ReadonlyArray<Message | InputMessage>;
}

/** What `delete` removes: a session or chunk of a scope, a whole scope, or (`'all'`) everything in the store. */
export type DeleteTarget = (Scope & { sessionId?: string; chunkId?: string }) | 'all';

/** Options of `search()`/`answer()`: whose memory to read, and the retrieval settings. */
export interface SearchOptions extends Scope, RetrieveOptions {}

/** A retrieved unit with the messages behind it as structured data. */
export interface SearchUnit extends RetrievedUnit {
  turns: MemoryTurn[];
}

/** What `search()` returns: the packed context plus structured units, intent and traces. */
export interface SearchResult extends Omit<RetrieveResult, 'units'> {
  units: SearchUnit[];
}

/** What `answer()` returns: the LLM's answer and the retrieval it was given. */
export interface AnswerResult {
  answer: string;
  /** The retrieval behind the answer: packed context, units, intent, traces. */
  retrieval: SearchResult;
  /** LLM use of the whole question (intent, rerank and answer roles), from the adapter's accounting. */
  llmCalls: number;
  llmTokens: number;
}

/** What `inspect()` shows of one scope: always the current graph, even after a reload. */
export interface MemoryView {
  /** The working graph: read it, never change it (writes go through `add`/`delete`). */
  readonly graph: MemoryGraph;
  /** How many vectors one index space holds. */
  indexSize(space: IndexSpace): number;
  /** A copy of everything the scope holds, as plain data. */
  snapshot(): MemorySnapshot;
}

/** Counts of one scope's memory: chunks (Episodes' source text), nodes per layer, edges per type. */
export interface MemoryStats {
  chunks: number;
  /** Chunks whose LLM extraction fell back to summary + entities; `reextract()` extracts them again. */
  fallbackChunks: string[];
  nodes: Record<Layer, number>;
  edges: Record<EdgeType, number>;
}

/** Context budget for `answer()` when the caller gives none: about the paper's 2,023 tokens. */
const DEFAULT_ANSWER_BUDGET = 2048;

/**
 * A PRISM memory over one store: many scopes (users, agents, runs), each its own typed graph
 * with its vector indexes. Graph and scoring logic work on an in-memory working set per scope,
 * loaded on first use; the store persists committed batches, and every write first catches up
 * with what other writers (processes, tabs) committed.
 */
export class Memory {
  /** The resolved configuration (paper constants, limits, flags). */
  readonly config: PrismConfig;
  private readonly extractor: Extractor;
  private readonly host: PartitionHost;
  private readonly partitions = new Map<string, Promise<Partition>>();
  private prototypes: PrototypeBank | null = null;

  private constructor(private readonly options: MemoryOptions) {
    this.config = resolveConfig(options.config);
    const mode = options.extraction ?? (options.llm ? 'llm' : 'local');
    if (mode === 'llm' && !options.llm) throw new PrismError('LLM_NOT_CONFIGURED', 'LLM extraction needs an `llm` client');
    this.extractor = mode === 'llm' && options.llm ? createLlmExtractor(options.llm) : createLocalExtractor();
    this.host = { store: options.store, embedder: options.embedder, createIndex: options.createIndex };
  }

  /** Opens the memory in `store` (creating it when empty). The default scope is loaded at once, others on first use. */
  static async open(options: MemoryOptions): Promise<Memory> {
    if (typeof options !== 'object' || options === null || !options.store || !options.embedder || typeof options.createIndex !== 'function') {
      throw new PrismError('INVALID_INPUT', 'Memory.open needs { store, embedder, createIndex }');
    }
    const memory = new Memory(options);
    // Opening a scope counts no tokens, so the counter (o200k: a 2 MB module a browser fetches
    // and compiles) loads while the default scope is read, not before it.
    await Promise.all([loadTokenCounter(options.countTokens), memory.partition({})]);
    return memory;
  }

  get llm(): LlmClient | null {
    return this.options.llm ?? null;
  }

  get embedder(): Embedder {
    return this.options.embedder;
  }

  private partition(scope: Scope | ResolvedScope | undefined): Promise<Partition> {
    const name = partitionOf(resolveScope(scope));
    let partition = this.partitions.get(name);
    if (!partition) {
      partition = loadPartition(this.host, name);
      partition.catch(() => this.partitions.delete(name));
      this.partitions.set(name, partition);
    }
    return partition;
  }

  /**
   * The partition with what its open left unread read (see `partitionWhole`): for every use but a
   * search. Where that read fails, the call fails with its error and the next opens the partition again.
   */
  private async whole(scope: Scope | ResolvedScope | undefined): Promise<Partition> {
    const pending = this.partition(scope);
    const partition = await pending;
    try {
      await partitionWhole(partition);
    } catch (error) {
      const name = partition.name;
      if (this.partitions.get(name) === pending) {
        this.partitions.delete(name);
        await partition.serial(async () => partition.state.indexes.dispose());
      }
      throw error;
    }
    return partition;
  }

  /** Runs a write of this process on the partition, one at a time. */
  private async write<T>(scope: Scope | ResolvedScope | undefined, task: (partition: Partition) => Promise<T>): Promise<T> {
    const partition = await this.whole(scope);
    return partition.serial(async () => {
      partition.writing++;
      try {
        return await task(partition);
      } finally {
        partition.writing--;
      }
    });
  }

  /**
   * The partition for a read, reloaded when another process or tab committed since. Whole (see
   * `partitionWhole`) unless it is for a search, which never reads what an open leaves unread.
   */
  private async read(scope: Scope | undefined, forSearch = false): Promise<Partition> {
    const partition = await (forSearch ? this.partition(scope) : this.whole(scope));
    if (partition.writing === 0) await catchUp(this.host, partition);
    return partition;
  }

  /**
   * Remembers messages: `{ speaker, text }` or OpenAI chat messages (`{ role, content, name? }`;
   * system, developer and tool messages are skipped and counted in the report's warnings).
   * Messages whose `id` the scope already holds, and a `batchId` already added, are skipped;
   * without ids, repeated messages are kept. A message over `limits.passageChars` is stored as
   * passages; an add over `limits.maxAddChars` is refused with `INPUT_TOO_LARGE`.
   *
   * The v0.2 form `add({ sessionId, date, messages, ...scope })` and a whole multi-session
   * `Conversation` (see `addConversation`) are accepted too.
   */
  async add(input: ReadonlyArray<InputMessage> | MessagesInput | Conversation, options: AddOptions = {}): Promise<IngestReport> {
    if (typeof input === 'object' && input !== null && !Array.isArray(input) && 'sessions' in input) return this.addConversation(input, options);
    const { messages, ...rest } = Array.isArray(input) ? { messages: input } : checkMessagesInput(input);
    const merged: AddOptions = { ...options, ...rest };
    checkId('sessionId', merged.sessionId, this.config.limits);
    checkId('batchId', merged.batchId, this.config.limits);
    const scope = resolveScope(merged);
    const normalised = normaliseMessages(messages);
    checkAddSize(normalised.messages, this.config.limits);
    if (normalised.messages.length === 0 && normalised.skippedRoles === 0) throw new PrismError('INVALID_INPUT', 'messages: nothing to add (no message has text)');
    const time = (merged.date !== undefined ? messageTime('date', merged.date) : normalised.messages[0]?.time) ?? new Date().toISOString().slice(0, 19);
    const sessionId = merged.sessionId ?? dayOf(time);
    return this.write(scope, async (partition) => {
      const report = emptyReport(skipWarnings(normalised.skippedRoles, normalised.emptyMessages, []));
      // Identity is planned against the latest committed state and re-checked under the writer
      // lock right before each chunk commits. When another writer (handle, process, tab) stored,
      // generated or deleted a message id in between, the rest of the add is planned again, this
      // time holding the lock throughout, so it cannot conflict again (and cannot starve).
      // Turns of a message whose first passages already committed keep their ids.
      let pending: NormalisedMessage[] = normalised.messages;
      let pinned: ChunkTurn[] = [];
      // A batch's chunks are numbered across attempts, so a retry never reuses a committed chunk's key.
      let chunksBefore = 0;
      const attempt = async (lockHeld: boolean): Promise<IngestReport> => {
        if (!lockHeld) await catchUp(this.host, partition);
        const { graph } = partition.state;
        const plan = planMessageTurns(pending, sessionId, graph.dialogIds(), graph.turnsInSession(sessionId), this.config.limits);
        const turns = [...pinned, ...plan.turns];
        const committed = new Set<string>();
        try {
          if (turns.length > 0) {
            const conversation: Conversation = { id: '', sessions: [{ id: sessionId, dateText: merged.date ?? time, time, turns }] };
            const drafts = chunkConversation(conversation, this.options.chunking ?? { by: 'session' }).map(
              (draft, i): ChunkDraft => (merged.batchId === undefined ? draft : { ...draft, dedupKey: `batch\u001f${merged.batchId}\u001f${chunksBefore + i}` }),
            );
            const confirm = (chunk: { turns: readonly ChunkTurn[] }) => {
              const conflict = planConflict(turns.filter((t) => !committed.has(t.dialogId)), plan.skipped, partition.state.graph.dialogIds());
              if (conflict !== null) throw new IdentityConflict(conflict);
              for (const turn of chunk.turns) committed.add(turn.dialogId);
              chunksBefore++;
            };
            addReports(report, await this.ingestDrafts(partition, drafts, merged, { confirm, lockHeld }));
          }
          report.skipped.push(...plan.skipped);
          report.warnings.push(...skipWarnings(0, 0, plan.skipped));
          return report;
        } catch (err) {
          if (err instanceof IdentityConflict) {
            // Messages with any turn stored are done, but for their passages still to come.
            const touched = new Set(plan.sources.filter((_, j) => committed.has(plan.turns[j]?.dialogId ?? '')));
            pinned = [...pinned, ...plan.turns.filter((_, j) => touched.has(plan.sources[j] ?? -1))].filter((t) => !committed.has(t.dialogId));
            pending = pending.filter((_, i) => !touched.has(i));
          }
          throw err;
        }
      };
      try {
        return await attempt(false);
      } catch (err) {
        if (!(err instanceof IdentityConflict)) throw err;
        return writerFor(this.host, partition).locked(() => attempt(true));
      }
    });
  }

  /**
   * Remembers a whole multi-session conversation (e.g. an imported chat history or a LoCoMo
   * sample). Its sessions are named `<conversation id>/<session id>`. Chunks already ingested
   * (same SHA-256) are skipped, so re-adding is a no-op and an interrupted add resumes.
   */
  async addConversation(conversation: Conversation, options: Scope & IngestOptions = {}): Promise<IngestReport> {
    const checked = checkConversation(conversation, this.config.limits);
    return this.write(options, async (partition) => {
      const drafts = chunkConversation(checked.conversation, this.options.chunking ?? { by: 'session' });
      const report = await this.ingestDrafts(partition, drafts, options);
      if (checked.emptyTurns > 0) report.warnings.unshift(`${checked.emptyTurns} empty message${checked.emptyTurns === 1 ? '' : 's'} skipped`);
      return report;
    });
  }

  private ingestDrafts(
    partition: Partition,
    drafts: readonly ChunkDraft[],
    options: IngestOptions,
    identity?: { confirm: NonNullable<IngestDeps['confirm']>; lockHeld: boolean },
  ): Promise<IngestReport> {
    const deps = this.ingestDeps(partition, identity?.lockHeld);
    return ingestChunks(drafts, identity ? { ...deps, confirm: identity.confirm } : deps, {
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
  }

  private ingestDeps(partition: Partition, lockHeld = false): IngestDeps {
    return {
      state: partition.state,
      writer: writerFor(this.host, partition, lockHeld),
      embedder: this.options.embedder,
      extractor: this.extractor,
      llm: this.options.llm ?? null,
      config: this.config,
      extractAhead: this.extractor.mode === 'llm' ? 4 : 0,
    };
  }

  /**
   * Extracts the chunks of one scope listed in `stats().fallbackChunks` again with the LLM (their
   * answer stayed invalid at ingest), replacing each one's nodes and edges in one atomic batch
   * once the answer is valid. Endpoint failures throw as in `add()`; chunks replaced before stay.
   */
  async reextract(options: Scope & ReextractOptions = {}): Promise<ReextractReport> {
    checkOptions('reextract', options);
    return this.write(options, (partition) => reextractFallbackChunks(this.ingestDeps(partition), options.signal ? { signal: options.signal } : {}));
  }

  /**
   * Loads every module `add()` imports on first use (the local extractor's parser; in LLM mode
   * the reply schemas too), so a page that went offline can keep adding. Search needs nothing
   * more than `open` loaded.
   */
  preload(): Promise<void> {
    return this.extractor.preload();
  }

  /**
   * Retrieves a small, precise context for `query` from one scope's memory (design §3): N4
   * intent, N1 bundle search under N2 edge costs, N3 compression (an LLM rerank, or the local
   * precision step), then packing into `budget` tokens. Each unit carries its messages as
   * structured turns. Zero-LLM unless an LLM client is configured (or `mode` says). Relative
   * time in the query ("two weeks ago") is read against `now` (default: the current time).
   */
  async search(query: string, options: SearchOptions = {}): Promise<SearchResult> {
    if (typeof query !== 'string' || query.trim() === '') throw new PrismError('INVALID_INPUT', `search: expected a non-empty query string, got ${typeof query === 'string' ? 'an empty string' : typeof query}`);
    checkOptions('search', options);
    const partition = await this.read(options, true);
    // The graph and indexes taken now are read to the end, even if a reload replaces them meanwhile.
    const { graph, indexes } = partition.state;
    return indexes.reading(async () => {
      const result = await retrieve(query, await this.retrieveDeps(partition, graph, indexes), options);
      saveAfterSearch(this.options.store, partition);
      return { ...result, units: result.units.map((unit) => ({ ...unit, turns: unitTurns(graph, unit.episodeId, unit.dialogIds, partition.scope) })) };
    });
  }

  /** Answers from the packed context with the `answer` role; needs an LLM client. */
  async answer(query: string, options: SearchOptions = {}): Promise<AnswerResult> {
    const llm = this.options.llm;
    if (!llm) throw new PrismError('LLM_NOT_CONFIGURED', 'answer() needs an LLM client; search() works without one');
    const before = usageTotals(llm.usage());
    const retrieval = await this.search(query, { budget: DEFAULT_ANSWER_BUDGET, ...options });
    const answer = await answerFromContext(llm, query, retrieval.context, options.signal);
    const after = usageTotals(llm.usage());
    return { answer, retrieval, llmCalls: after.calls - before.calls, llmTokens: after.tokens - before.tokens };
  }

  private async retrieveDeps(partition: Partition, graph: MemoryGraph, indexes: IndexSet): Promise<RetrieveDeps> {
    const embedder = this.options.embedder;
    const lexical = await lexicalIndexOf(this.options.store, partition);
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

  /** The sessions of one scope's memory, in the order they were added, with message and fact counts. */
  async list(options: Scope = {}): Promise<SessionInfo[]> {
    checkOptions('list', options);
    const partition = await this.read(options);
    return listSessions(partition.state.graph, partition.scope);
  }

  /** A session (with its messages and facts), a message or a fact of one scope, by id; null when the scope holds none. */
  async get(id: string, options: Scope = {}): Promise<MemoryRecord | null> {
    if (typeof id !== 'string' || id === '') throw new PrismError('INVALID_INPUT', 'get: expected a session, message or fact id');
    checkOptions('get', options);
    const partition = await this.read(options);
    return findRecord(partition.state.graph, partition.scope, id);
  }

  /** The scopes this store holds a memory for. */
  async scopes(): Promise<ResolvedScope[]> {
    return (await this.options.store.partitions()).map(scopeOfPartition);
  }

  /**
   * Removes a session (`{ sessionId, ...scope }`, the id given to `add()`), one chunk, a whole
   * scope (`{ userId }` and no session), or everything (`'all'`): nodes, edges, vectors, text,
   * hashes and the cached LLM replies made for them. An unknown session or chunk id is a
   * `NOT_FOUND` error and deletes nothing.
   */
  async delete(target: DeleteTarget): Promise<{ chunksDeleted: number }> {
    if (target === 'all') return this.deleteEverything();
    if (typeof target !== 'object' || target === null) throw new PrismError('INVALID_INPUT', "delete: expected { sessionId?, chunkId?, userId?, agentId?, runId? } or 'all'");
    const { sessionId, chunkId, ...scope } = target;
    const named = sessionId !== undefined || chunkId !== undefined;
    if (!named && scope.userId === undefined && scope.agentId === undefined && scope.runId === undefined) {
      throw new PrismError('INVALID_INPUT', "delete: name a sessionId or chunkId, a scope to delete whole, or 'all'");
    }
    for (const [name, value] of [['sessionId', sessionId], ['chunkId', chunkId]] as const) {
      if (value !== undefined && (typeof value !== 'string' || value === '')) throw new PrismError('INVALID_INPUT', `delete: ${name} must be a non-empty string`);
    }
    if (!named) return this.replaceScope(scope, (name) => this.deleteScope(name));
    return this.write(scope, async (partition) => {
      const writer = writerFor(this.host, partition);
      return writer.locked(async () => {
        const { graph } = partition.state;
        const chunkIds = new Set([...graph.chunks.values()].filter((c) => c.id === chunkId || c.sessionId === sessionId).map((c) => c.id));
        if (chunkIds.size === 0) {
          throw new PrismError('NOT_FOUND', `delete: no ${sessionId !== undefined ? `session ${JSON.stringify(sessionId)}` : `chunk ${JSON.stringify(chunkId)}`} in this scope`);
        }
        await this.options.store.deleteCached([...chunkIds]);
        const batch = deletionBatch(graph, partition.state.meta, chunkIds);
        // Deleting a middle session must not cut the chronological Episode chain in two. The bridge
        // gets its vector as the chain's own edges do (composed by default: no model is loaded).
        let nextKey = partition.state.meta.nextKey;
        const bridges = chainGapEdges(graph, new Set(batch.deleteNodes), () => nextKey++);
        if (bridges.length > 0) {
          batch.putEdges = bridges;
          batch.putVectors = await edgeVectorsFor(bridges, this.options.embedder, this.config.ingest.edgeVectors);
          batch.meta = { ...partition.state.meta, nextKey };
        }
        await writer.commit(batch);
        return { chunksDeleted: chunkIds.size };
      });
    });
  }

  /** Deletes one scope whole (its cached LLM replies too), reading its chunk ids from the store: see `replaceScope`. */
  private async deleteScope(name: string): Promise<ScopeReplacement<{ chunksDeleted: number }>> {
    const store = this.options.store;
    const held = await store.load(name);
    const chunkIds = held?.chunks.map((c) => c.id) ?? [];
    // Cleared even without chunks: a damaged meta alone would fail every read of the scope.
    if (held) {
      await store.deleteCached(chunkIds);
      await store.clear(name);
    }
    return { result: { chunksDeleted: chunkIds.length }, snapshot: null, revision: await store.revision(name) };
  }

  /**
   * Runs a write that replaces a scope's whole memory (import, whole-scope delete) under the
   * store's writer lock. `task` reads what the scope holds from the store and never loads it,
   * so a scope whose stored memory is damaged (CORRUPT_CHECKPOINT on every read) or was written
   * with another embedder is replaced all the same. The working set, when this process holds
   * one, takes on what `task` left.
   */
  private async replaceScope<T>(scope: Scope, task: (name: string) => Promise<ScopeReplacement<T>>): Promise<T> {
    const name = partitionOf(resolveScope(scope));
    const replace = (partition: Partition | null): Promise<T> =>
      this.options.store.withWriteLock(name, async () => {
        const { result, snapshot, revision } = await task(name);
        if (partition) replaceState(this.host, partition, snapshot, revision);
        return result;
      });
    const loads = await this.whole(scope).then(
      () => true,
      () => false,
    );
    return loads ? this.write(scope, replace) : replace(null);
  }

  private async deleteEverything(): Promise<{ chunksDeleted: number }> {
    let chunks = 0;
    // Counted from the store, not from working sets: a scope too damaged to load goes too.
    for (const name of await this.options.store.partitions()) chunks += (await this.options.store.load(name))?.chunks.length ?? 0;
    await this.options.store.clear();
    for (const [name, pending] of this.partitions) {
      const partition = await pending.catch(() => null);
      await partition?.serial(async () => replaceState(this.host, partition, null, await this.options.store.revision(name)));
    }
    return { chunksDeleted: chunks };
  }

  /** One scope's memory as a portable checkpoint (bytes) that opens in any store backend. */
  async export(options: Scope = {}): Promise<Uint8Array> {
    checkOptions('export', options);
    const partition = await this.read(options);
    return encodeCheckpoint(snapshotOf(partition));
  }

  /**
   * Replaces one scope's memory with a checkpoint's, atomically. Every record is checked first
   * (ids, keys, references, dimensions, fields): bad bytes throw `CORRUPT_CHECKPOINT` (another
   * embedder `EMBEDDER_MISMATCH`, another schema `STORE_VERSION`) and change nothing. A scope
   * whose stored memory is damaged is replaced all the same.
   */
  async import(bytes: Uint8Array, options: Scope = {}): Promise<void> {
    if (!(bytes instanceof Uint8Array)) throw new PrismError('INVALID_INPUT', 'import: expected checkpoint bytes (a Uint8Array)');
    checkOptions('import', options);
    const decoded = decodeCheckpoint(bytes);
    checkCompatible(decoded.meta, this.options.embedder, 'the checkpoint');
    // As every commit: the working set holds the vectors as this store keeps them.
    const incoming = { ...decoded, vectors: new Map(roundVectors([...decoded.vectors], this.options.store.vectorPrecision)) };
    return this.replaceScope(options, async (name) => ({ result: undefined, snapshot: incoming, revision: await replacePartition(this.options.store, name, incoming) }));
  }

  /** Node, edge and chunk counts of one scope's memory. */
  async stats(options: Scope = {}): Promise<MemoryStats> {
    checkOptions('stats', options);
    const { state } = await this.read(options);
    const nodes = Object.fromEntries(LAYERS.map((layer) => [layer, state.graph.countOfLayer(layer)])) as Record<Layer, number>;
    return { chunks: state.graph.chunks.size, fallbackChunks: fallbackChunkIds(state.graph), nodes, edges: state.graph.edgeCountsByType() };
  }

  /** A live, read-only view of one scope's graph and indexes, for inspection tools and the eval harness. */
  async inspect(options: Scope = {}): Promise<MemoryView> {
    checkOptions('inspect', options);
    const partition = await this.read(options);
    return {
      get graph() {
        return partition.state.graph;
      },
      indexSize: (space) => partition.state.indexes.size(space),
      snapshot: () => snapshotOf(partition),
    };
  }

  async close(): Promise<void> {
    for (const pending of this.partitions.values()) {
      const partition = await pending.catch(() => null);
      if (!partition) continue;
      // A save of the lexical index in flight finishes first: it writes to the store closed below.
      await settleLexical(this.options.store, partition);
      // After a write, so that the next open reads the facts without their rows.
      await saveFactImage(this.options.store, partition).catch(() => undefined);
      await partition.serial(async () => partition.state.indexes.dispose());
    }
    this.partitions.clear();
    await this.options.store.close();
  }
}

function snapshotOf(partition: Partition): MemorySnapshot {
  const { graph, meta, hashes } = partition.state;
  return {
    meta,
    nodes: [...graph.nodes.values()],
    edges: [...graph.edges.values()],
    chunks: [...graph.chunks.values()],
    vectors: new Map(graph.vectors),
    hashes: new Set(hashes),
  };
}

/** What a write that replaces a scope's whole memory leaves: its result, the scope's memory (null: none) and its revision. */
interface ScopeReplacement<T> {
  result: T;
  snapshot: MemorySnapshot | null;
  revision: number;
}

function emptyReport(warnings: string[]): IngestReport {
  return { chunksAdded: 0, chunksSkipped: 0, nodesAdded: 0, edgesAdded: 0, causalEdgesAdded: 0, warnings, skipped: [], ms: 0 };
}

/** Adds the counts of one ingest into `total` (an add that was planned again runs several). */
function addReports(total: IngestReport, part: IngestReport): void {
  total.chunksAdded += part.chunksAdded;
  total.chunksSkipped += part.chunksSkipped;
  total.nodesAdded += part.nodesAdded;
  total.edgesAdded += part.edgesAdded;
  total.causalEdgesAdded += part.causalEdgesAdded;
  total.warnings.push(...part.warnings);
  total.skipped.push(...part.skipped);
  total.ms += part.ms;
}

/** Another writer changed the ids an add planned against; the rest of the add is planned again. */
class IdentityConflict extends Error {}

function skipWarnings(skippedRoles: number, emptyMessages: number, skipped: readonly SkippedMessage[]): string[] {
  const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
  const stored = skipped.filter((s) => s.reason === 'already-stored').length;
  const repeated = skipped.length - stored;
  return [
    ...(skippedRoles > 0 ? [`${plural(skippedRoles, 'system/developer/tool message')} not remembered`] : []),
    ...(emptyMessages > 0 ? [`${plural(emptyMessages, 'empty message')} skipped`] : []),
    ...(stored > 0 ? [`${plural(stored, 'message')} skipped: their ids are already remembered`] : []),
    ...(repeated > 0 ? [`${plural(repeated, 'message')} skipped: their ids repeat an earlier message of this add`] : []),
  ];
}

/** The v0.2 `{ sessionId, messages }` form: `dialogId` is the message id. */
function checkMessagesInput(input: unknown): { messages: unknown[] } & Omit<AddOptions, 'signal' | 'onProgress'> {
  if (typeof input !== 'object' || input === null) {
    throw new PrismError('INVALID_INPUT', `add: expected an array of messages, { sessionId, messages } or a conversation, got ${input === null ? 'null' : typeof input}`);
  }
  const { messages, sessionId, date, userId, agentId, runId } = input as Partial<MessagesInput>;
  if (!Array.isArray(messages)) throw new PrismError('INVALID_INPUT', 'messages: expected an array of { speaker, text } or { role, content } messages');
  const withIds = messages.map((m: unknown) => {
    if (typeof m !== 'object' || m === null || !('dialogId' in m)) return m;
    const { dialogId, ...rest } = m as Message;
    return { ...rest, id: dialogId };
  });
  return {
    messages: withIds,
    ...(sessionId !== undefined ? { sessionId } : {}),
    ...(date !== undefined ? { date } : {}),
    ...(userId !== undefined ? { userId } : {}),
    ...(agentId !== undefined ? { agentId } : {}),
    ...(runId !== undefined ? { runId } : {}),
  };
}

function checkOptions(method: string, options: unknown): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new PrismError('INVALID_INPUT', `${method}: options must be an object, got ${options === null ? 'null' : typeof options}`);
  }
}

