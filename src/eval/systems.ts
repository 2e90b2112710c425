import MiniSearch from 'minisearch';
import type { Embedder } from '../embed/types.ts';
import { PrismError } from '../errors.ts';
import { bruteForceSearch } from '../vector/brute-force.ts';
import type { SearchHit } from '../vector/types.ts';
import { turnLine } from '../graph/chunk-text.ts';
import { sessionHeader } from '../ingest/chunking.ts';
import type { Conversation } from '../ingest/conversation.ts';
import type { ContextUnit } from '../retrieve/pack.ts';
import { packRows } from '../util/vectors.ts';
import type { EvalSample } from './benchmark.ts';
import type { CoversTurns } from './metrics.ts';

export interface PrepareOptions {
  signal?: AbortSignal;
  /** Ingest progress (e.g. chunks done of total), forwarded to the runner's progress callback. */
  onProgress?: (done: number, total: number) => void;
}

export interface RetrieveOptions {
  /** The token budget the context will be packed to (the largest one unless `budgetSensitive`). */
  budget: number;
  /** When the question is asked (a stored time), for relative time in it; null: the benchmark gives none. */
  askedAt: string | null;
  signal?: AbortSignal;
}

export interface RetrievalResult {
  /** Ranked context units, best first; the runner packs them with `packContext` at each budget. */
  units: ContextUnit[];
  /**
   * Ranked Episodes, for systems whose units are finer than Episodes (turns under a FacetPoint);
   * ER@K is computed over these when given, else over `units`.
   */
  episodes?: CoversTurns[];
  /** LLM calls spent on this query (N4 fallback, N3 rerank); 0 for model-free systems. */
  llmCalls: number;
  /** Prompt + completion tokens of those calls. */
  llmTokens?: number;
  /** N4 routing: intent label and the tier that decided it (keyword / prototype / llm / none). */
  intent?: { label: string; tier: string };
}

/** One system under evaluation: PRISM, an ablation, or a baseline. */
export interface EvalSystem {
  readonly name: string;
  /** Baselines are the reference: the report's paired CIs compare every system with the best one. */
  readonly baseline: boolean;
  /** Changes whenever the system's behaviour does (config, embedder id); part of the resume-cache key. */
  readonly fingerprint: string;
  /**
   * The system this one is a variant (an ablation) of: the runner compares the two, paired by
   * question, as the paper's ablation protocol does.
   */
  readonly variantOf?: string;
  /**
   * When true the runner calls `retrieve` once per budget. Otherwise it calls it once, at the
   * largest budget, and packs every budget from that one ranking.
   */
  readonly budgetSensitive?: boolean;
  /** Ingests one memory's conversation; retrieval then answers questions about it. May restore a checkpoint. */
  prepare(sample: EvalSample, options?: PrepareOptions): Promise<void>;
  retrieve(question: string, options: RetrieveOptions): Promise<RetrievalResult>;
  /** Frees what `prepare` built; the runner calls it once the system has finished the run. */
  dispose?(): Promise<void>;
}

/** Inner-product search over the rows it was built from; keys are row numbers. */
export interface DenseSearch {
  search(query: Float32Array, k: number): SearchHit[];
  dispose(): void;
}

/** Builds a DenseSearch over row-major `vectors` (rows × dim). */
export type DenseSearchFactory = (vectors: Float32Array, dim: number) => DenseSearch;

/** Exact search with the project's brute-force reference: right for a few hundred turns per conversation. */
export const exactDenseSearch: DenseSearchFactory = (vectors, dim) => {
  const keys = Array.from({ length: vectors.length / dim }, (_, i) => i);
  return {
    search: (query, k) => bruteForceSearch(vectors, dim, keys, query, k)[0] ?? [],
    dispose: () => undefined,
  };
};

export interface BaselineDeps {
  embedder: Embedder;
  /** Default: exact search. */
  createDenseSearch?: DenseSearchFactory;
}

export type BaselineName = 'bm25-turns' | 'dense-turns' | 'dense-sessions' | 'full-context' | 'dense-user-turns';
export const BASELINE_NAMES: readonly BaselineName[] = ['bm25-turns', 'dense-turns', 'dense-sessions', 'full-context', 'dense-user-turns'];

/**
 * The speaker whose turns `dense-user-turns` searches: LongMemEval's speakers are roles, and the
 * flat search over the user's turns is the anchor its retrieval results are reported against.
 */
const USER_ROLE = 'user';

/**
 * The baselines of issue 5 (and the user-turn search of LongMemEval's anchor), sharing one
 * embedding cache so each conversation's turns are embedded once per run however many dense
 * systems use them.
 */
export function createBaselines(deps: BaselineDeps, names: readonly BaselineName[] = BASELINE_NAMES): EvalSystem[] {
  const embeddings = new SharedEmbeddings(deps.embedder);
  const createDenseSearch = deps.createDenseSearch ?? exactDenseSearch;
  return names.map((name) => {
    switch (name) {
      case 'bm25-turns':
        return bm25TurnsSystem();
      case 'dense-turns':
        return denseTurnsSystem('dense-turns', embeddings, createDenseSearch, () => true);
      case 'dense-user-turns':
        return denseTurnsSystem('dense-user-turns', embeddings, createDenseSearch, (entry) => entry.speaker === USER_ROLE);
      case 'dense-sessions':
        return denseSessionsSystem(embeddings, createDenseSearch);
      case 'full-context':
        return fullContextSystem();
    }
  });
}

/** A turn as every baseline sees it: the unit it packs and the text it matches against. */
interface TurnEntry {
  unit: ContextUnit;
  /** `speaker: text` without the dialog id, which would only add noise to matching. */
  searchText: string;
  speaker: string;
  sessionIndex: number;
}

/** Non-empty turns in conversation order (the ones chunking.ts also keeps), as context units. */
function turnEntries(conversation: Conversation): TurnEntry[] {
  return conversation.sessions.flatMap((session, sessionIndex) => {
    const header = sessionHeader(conversation.id, session);
    return session.turns
      .filter((turn) => turn.text.trim().length > 0)
      .map((turn) => ({
        unit: {
          id: `${conversation.id}#${turn.dialogId}`,
          header,
          text: turnLine(turn),
          dialogIds: [turn.dialogId],
          score: 0,
          time: session.time,
        },
        searchText: `${turn.speaker}: ${turn.text}`,
        speaker: turn.speaker,
        sessionIndex,
      }));
  });
}

function withScore(unit: ContextUnit, score: number): ContextUnit {
  return { ...unit, score };
}

/** Per-run memo of turn and query embeddings, keyed by the parsed conversation object. */
class SharedEmbeddings {
  private readonly turns = new WeakMap<Conversation, Promise<Float32Array>>();
  private readonly queries = new Map<string, Promise<Float32Array>>();
  constructor(readonly embedder: Embedder) {}

  /** Row-major vectors of `turnEntries(conversation)`. */
  turnVectors(conversation: Conversation, entries: readonly TurnEntry[], options: PrepareOptions): Promise<Float32Array> {
    let pending = this.turns.get(conversation);
    if (!pending) {
      pending = this.embedRows(
        entries.map((e) => e.searchText),
        options,
      );
      // A failed or aborted embedding must not poison later attempts.
      pending.catch(() => this.turns.delete(conversation));
      this.turns.set(conversation, pending);
    }
    return pending;
  }

  query(text: string, signal: AbortSignal | undefined): Promise<Float32Array> {
    let pending = this.queries.get(text);
    if (!pending) {
      pending = this.embedRows([text], { signal });
      pending.catch(() => this.queries.delete(text));
      this.queries.set(text, pending);
    }
    return pending;
  }

  private async embedRows(texts: readonly string[], options: PrepareOptions): Promise<Float32Array> {
    return packRows(await this.embedder.embed(texts, options), this.embedder.dim);
  }
}

function requirePrepared<T>(state: T | null, name: string): T {
  if (state === null) throw new PrismError('INVALID_INPUT', `${name}: retrieve called before prepare`);
  return state;
}

/** Okapi BM25 (k1 1.2, b 0.75) over single turns, via MiniSearch. Only matching turns are ranked. */
export function bm25TurnsSystem(): EvalSystem {
  const name = 'bm25-turns';
  let state: { entries: TurnEntry[]; index: MiniSearch<{ id: number; text: string }> } | null = null;
  return {
    name,
    baseline: true,
    fingerprint: `${name}/okapi-k1.2-b0.75`,
    async prepare(sample) {
      const entries = turnEntries(sample.conversation);
      // d = 0 turns MiniSearch's BM25+ back into classic Okapi BM25.
      const index = new MiniSearch<{ id: number; text: string }>({
        fields: ['text'],
        searchOptions: { bm25: { k: 1.2, b: 0.75, d: 0 } },
      });
      index.addAll(entries.map((e, id) => ({ id, text: e.searchText })));
      state = { entries, index };
    },
    async retrieve(question) {
      const { entries, index } = requirePrepared(state, name);
      const units = index.search(question).map((hit) => withScore((entries[hit.id as number] as TurnEntry).unit, hit.score));
      return { units, llmCalls: 0 };
    },
  };
}

/** Cosine nearest turns among those `searched` keeps, every one of them ranked (the vectors of all turns are shared). */
function denseTurnsSystem(name: BaselineName, embeddings: SharedEmbeddings, createDenseSearch: DenseSearchFactory, searched: (entry: TurnEntry) => boolean): EvalSystem {
  let state: { entries: TurnEntry[]; search: DenseSearch } | null = null;
  return {
    name,
    baseline: true,
    fingerprint: `${name}/${embeddings.embedder.id}`,
    async prepare(sample, options = {}) {
      const all = turnEntries(sample.conversation);
      const vectors = await embeddings.turnVectors(sample.conversation, all, options);
      const dim = embeddings.embedder.dim;
      const rows = all.flatMap((entry, row) => (searched(entry) ? [row] : []));
      const kept = rows.length === all.length ? vectors : packRows(rows.map((row) => vectors.subarray(row * dim, (row + 1) * dim)), dim);
      state?.search.dispose();
      state = { entries: rows.map((row) => all[row] as TurnEntry), search: createDenseSearch(kept, dim) };
    },
    async retrieve(question, options) {
      const { entries, search } = requirePrepared(state, name);
      const query = await embeddings.query(question, options.signal);
      const units = search
        .search(query, entries.length)
        .map((hit) => withScore((entries[hit.key] as TurnEntry).unit, hit.score));
      return { units, llmCalls: 0 };
    },
    async dispose() {
      state?.search.dispose();
      state = null;
    },
  };
}

/**
 * Cosine nearest whole sessions. A session's vector is the normalised mean of its turn vectors:
 * MiniLM reads at most 256 word pieces, so embedding the session text would see only its start.
 */
function denseSessionsSystem(embeddings: SharedEmbeddings, createDenseSearch: DenseSearchFactory): EvalSystem {
  const name = 'dense-sessions';
  let state: { sessions: ContextUnit[]; search: DenseSearch } | null = null;
  return {
    name,
    baseline: true,
    fingerprint: `${name}/mean-of-turns/${embeddings.embedder.id}`,
    async prepare(sample, options = {}) {
      const { conversation } = sample;
      const entries = turnEntries(conversation);
      const turnVectors = await embeddings.turnVectors(conversation, entries, options);
      const dim = embeddings.embedder.dim;
      const sessions: ContextUnit[] = [];
      const centroids: Float32Array[] = [];
      conversation.sessions.forEach((session, sessionIndex) => {
        const rows = entries.flatMap((e, row) => (e.sessionIndex === sessionIndex ? [row] : []));
        if (rows.length === 0) return;
        const turnUnits = rows.map((row) => (entries[row] as TurnEntry).unit);
        sessions.push({
          id: `${conversation.id}/${session.id}`,
          header: sessionHeader(conversation.id, session),
          text: turnUnits.map((u) => u.text).join('\n'),
          dialogIds: turnUnits.flatMap((u) => u.dialogIds),
          score: 0,
          time: session.time,
        });
        centroids.push(normalisedMean(rows.map((row) => turnVectors.subarray(row * dim, (row + 1) * dim))));
      });
      state?.search.dispose();
      state = { sessions, search: createDenseSearch(packRows(centroids, dim), dim) };
    },
    async retrieve(question, options) {
      const { sessions, search } = requirePrepared(state, name);
      const query = await embeddings.query(question, options.signal);
      const units = search
        .search(query, sessions.length)
        .map((hit) => withScore(sessions[hit.key] as ContextUnit, hit.score));
      return { units, llmCalls: 0 };
    },
    async dispose() {
      state?.search.dispose();
      state = null;
    },
  };
}

function normalisedMean(vectors: readonly Float32Array[]): Float32Array {
  const sum = new Float32Array(vectors[0]?.length ?? 0);
  for (const v of vectors) v.forEach((x, d) => (sum[d] = (sum[d] as number) + x));
  const norm = Math.hypot(...sum) || 1;
  return sum.map((x) => x / norm);
}

/**
 * The whole conversation, truncated to the budget the way a chat window is: the most recent
 * turns are ranked first, so packing keeps the latest turns that fit (rendered in time order).
 */
export function fullContextSystem(): EvalSystem {
  const name = 'full-context';
  let newestFirst: ContextUnit[] | null = null;
  return {
    name,
    baseline: true,
    fingerprint: `${name}/newest-first`,
    async prepare(sample) {
      const entries = turnEntries(sample.conversation);
      newestFirst = entries.map((e, i) => withScore(e.unit, i)).reverse();
    },
    async retrieve() {
      return { units: requirePrepared(newestFirst, name), llmCalls: 0 };
    },
  };
}
