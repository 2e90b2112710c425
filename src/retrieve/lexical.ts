import type { GraphChanges, MemoryGraph } from '../graph/memory-graph.ts';
import { LAYERS, type ChunkTurn, type GraphNode, type Layer } from '../graph/types.ts';
import { ByteFormatError, ByteReader, ByteWriter, nextVarint, putVarint } from '../util/bytes.ts';
import { isAscii } from '../util/ascii.ts';
import { LruCache } from '../util/lru-cache.ts';
import { topK } from '../util/top-k.ts';
import { OrdinalsByNode } from './ordinals-by-node.ts';
import { scoreCandidates, scoreDocuments, type LayerHits, type LayerQuery, type ScoredDocument } from './lexical-query.ts';

/**
 * Hybrid anchors (beyond the paper): a BM25 index over the graph's text, so names and rare
 * keywords that a sentence embedding blurs still find their nodes. It scores with BM25+ as
 * minisearch does (its constants, tokenizer and averages; a test holds the two equal), over a
 * plain posting list per term: built in one pass over the text at the first search, where
 * minisearch's radix tree took half of a cold open on a memory of 10,000 chat messages.
 *
 * Documents: one per Facet (theme), FacetPoint (content) and Entity (name), and one per
 * conversation turn, which stands for its Episode (an Episode's lexical score is that of its
 * best turn; per-turn scores also pick the key turns of finer context units).
 */
export interface LexicalDoc {
  id: string;
  layer: Layer;
  nodeId: string;
  /** Turn documents only; empty otherwise. */
  dialogId: string;
  text: string;
}

/** A node's BM25 score for the query (not a cosine). */
export interface LexicalHit {
  id: string;
  score: number;
}

export interface LexicalMatches {
  /** Matching nodes per layer, best first (at most the `perLayer` best when `search` was given it). */
  layers: Record<Layer, LexicalHit[]>;
  /** BM25 of each matching turn, by Episode id, then dialog id. */
  turns: TurnScores;
}

/**
 * BM25 of the turns a query matches, read by Episode. A common word reaches tens of thousands
 * of turns in a large memory (43,000 in 8,000 Episodes at 100K messages of chat) while a search
 * reads those of a few dozen Episodes and the best of all: the scores stay as the query's hits
 * until an Episode's are asked for.
 */
export interface TurnScores {
  /** The Episode's matching turns: BM25 by dialog id, best first; undefined when none of its turns match. */
  get(episodeId: string): ReadonlyMap<string, number> | undefined;
  /** The best-scoring turn (of equals, the first the query reached); null when no turn matches. */
  readonly best: { episodeId: string; dialogId: string; score: number } | null;
  /** The same scores, for the turns of these Episodes only. */
  within(episodes: ReadonlySet<string>): TurnScores;
}

/**
 * A query's turn scores, worked out as they are read: the best turn comes from the search (or,
 * within a scope, from a pass over the scope's turns when first read), and an Episode's turns
 * are scored when asked for, from the query's hits as they were when it ran (an index update
 * since leaves them as they were).
 */
class QueryTurnScores implements TurnScores {
  private readonly byEpisode = new Map<string, ReadonlyMap<string, number> | undefined>();
  private bestTurn: TurnScores['best'] | undefined;

  /** `best`: the best turn when the search that made these scores found it, else undefined (found when read). */
  constructor(
    private readonly postings: Postings,
    private readonly query: LayerQuery,
    private readonly episodes: ReadonlySet<string> | null,
    best?: TurnScores['best'],
  ) {
    this.bestTurn = best;
  }

  get best(): TurnScores['best'] {
    if (this.bestTurn === undefined) {
      const { postings, episodes } = this;
      // One unit, the best turn of all: every turn of the scope counts for it, the others for none.
      this.bestTurn = bestTurnOf(postings, scoreCandidates(this.query, 1, (ordinal) => (episodes === null || episodes.has(postings.nodeIdOf(ordinal)) ? '' : null)));
    }
    return this.bestTurn;
  }

  get(episodeId: string): ReadonlyMap<string, number> | undefined {
    if (this.byEpisode.has(episodeId)) return this.byEpisode.get(episodeId);
    const turns =
      this.episodes !== null && !this.episodes.has(episodeId)
        ? []
        : scoreDocuments(this.query, this.postings.turnOrdinals(episodeId));
    // Best first, equals in the order a full query reaches them.
    turns.sort(byScoreThenReach);
    const scores = turns.length === 0 ? undefined : new Map(turns.map((turn) => [this.postings.dialogIdOf(turn.ordinal), turn.score]));
    this.byEpisode.set(episodeId, scores);
    return scores;
  }

  within(episodes: ReadonlySet<string>): TurnScores {
    const kept = this.episodes === null ? episodes : new Set([...episodes].filter((id) => this.episodes?.has(id)));
    return new QueryTurnScores(this.postings, this.query, kept);
  }
}

/** Higher score first; equal scores in the order a full OR query reaches the documents. */
function byScoreThenReach(a: ScoredDocument, b: ScoredDocument): number {
  return b.score - a.score || a.reachedAt - b.reachedAt || a.ordinal - b.ordinal;
}

/** The best of scored turns (of equals, the first a full query reaches), or null. */
function bestTurnOf(postings: Postings, turns: readonly ScoredDocument[]): TurnScores['best'] {
  let best: ScoredDocument | null = null;
  for (const turn of turns) if (best === null || byScoreThenReach(turn, best) < 0) best = turn;
  return best === null ? null : { episodeId: postings.nodeIdOf(best.ordinal), dialogId: postings.dialogIdOf(best.ordinal), score: best.score };
}

/** Scores of no turn: a memory searched without a lexical index. */
export const NO_TURN_SCORES: TurnScores = { best: null, get: () => undefined, within: () => NO_TURN_SCORES };

/** Scored hits the index keeps for query terms at most (12 bytes each): ~24 MB, the hits of a few dozen of a 100K-message memory's common words. */
const MAX_CACHED_HITS = 2_000_000;

export class LexicalIndex {
  /**
   * Each query term's hits by layer (`termHits`), kept until the index changes: questions share
   * most of their terms (names, topics), and scoring a term's postings again is most of a
   * search's cost. Only terms the index holds are kept; a hit is an ordinal and a score in two
   * typed arrays (12 bytes: an object a hit was most of the ~90 MB that 40 searches cached on
   * 30K messages). Least recently used first out past `MAX_CACHED_HITS` hits: a common word
   * holds most documents, and a process that only searches would otherwise end up holding every
   * term's postings scored.
   */
  private readonly hitsByTerm = new LruCache<string, TermHits>(MAX_CACHED_HITS, (hits) => LAYERS.reduce((sum, layer) => sum + hits[layer].ordinals.length, 0));

  /** The graph the index was last brought in step with: a saved copy found damaged only when a term of it is first used is built again from it. */
  private graph: MemoryGraph;
  /** Documents indexed again since the last `update` because a saved copy was damaged: the next `update` counts them as changed, so the copy is saved again. */
  private rebuiltDocuments = 0;

  private constructor(
    graph: MemoryGraph,
    private postings = new Postings(),
  ) {
    this.graph = graph;
  }

  static fromGraph(graph: MemoryGraph): LexicalIndex {
    const lexical = new LexicalIndex(graph);
    lexical.update(graph);
    lexical.postings.trim();
    return lexical;
  }

  /**
   * The index `toBytes` wrote, brought in step with `graph` (`update`): documents the graph no
   * longer holds leave, new ones are added; with how many documents that changed. Null when the
   * bytes are not an index this version wrote whole (another format, damage): the caller builds
   * afresh. Its scores are those of the index that wrote the bytes after the same `update`, to
   * the last bit.
   */
  static fromBytes(bytes: Uint8Array, graph: MemoryGraph): { index: LexicalIndex; changed: number } | null {
    let postings: Postings;
    try {
      postings = Postings.read(new ByteReader(bytes));
    } catch (error) {
      if (error instanceof ByteFormatError) return null;
      throw error;
    }
    const index = new LexicalIndex(graph, postings);
    return { index, changed: index.update(graph) };
  }

  /** The index as bytes for `fromBytes`: documents in order with their keys and field lengths, and each term's postings. */
  toBytes(): Uint8Array {
    const out = new ByteWriter();
    out.varint(LEXICAL_FORMAT);
    this.intact(() => this.postings.write(out));
    return out.finish();
  }

  get size(): number {
    return this.postings.size;
  }

  /**
   * Brings the index in step with the graph: adds documents for new nodes and turns, drops those
   * whose node is gone. Returns how many it added and dropped. `changes`, what changed in the graph
   * since the index was last in step with it (`MemoryGraph.takeChanges`), spares walking every node.
   */
  update(graph: MemoryGraph, changes: GraphChanges | null = null): number {
    this.graph = graph;
    const changed = this.intact(() => (changes && this.catchUpWith(graph, changes)) ?? this.catchUp(graph)) + this.rebuiltDocuments;
    this.rebuiltDocuments = 0;
    return changed;
  }

  private catchUp(graph: MemoryGraph): number {
    // An open that reads a saved copy, and a search after changes `catchUpWith` cannot follow, run
    // this over the whole graph: documents it holds are only marked as still wanted, and only new ones are made.
    const pass = this.postings.startPass();
    const fresh: Array<[GraphNode, number]> = [];
    forEachLexicalDocument(graph, (id, key, layer, position, dialogId) => {
      if (!this.postings.mark(id, key, layer, position, dialogId, pass)) fresh.push([graph.nodes.get(id) as GraphNode, position]);
    });
    return this.replace(graph, this.postings.unmarked(pass), fresh);
  }

  /** Drops the documents at `stale` (ascending), then adds `fresh` in order; how many changed. */
  private replace(graph: MemoryGraph, stale: readonly number[], fresh: ReadonlyArray<[GraphNode, number]>): number {
    this.postings.remove(stale);
    for (const [node, position] of fresh) this.postings.add(node.key, position, lexicalDocOf(graph, node, position));
    this.postings.forgetTokens();
    // Document count, lengths and postings feed every BM25 score.
    if (stale.length > 0 || fresh.length > 0) this.hitsByTerm.clear();
    return stale.length + fresh.length;
  }

  /**
   * `catchUp` from the graph's changes instead of its every node: the same documents dropped, in
   * the same order, and the new ones added in the order `catchUp` meets them (the order of
   * `nodes`, which `changes.added` keeps), so the same index to the last bit. A search after each
   * add at 100K messages spent ~100 ms walking the graph. Null, having changed nothing, where
   * that order is not known: an Episode already indexed gained a turn.
   */
  private catchUpWith(graph: MemoryGraph, { added, deletedKeys, episodes }: GraphChanges): number | null {
    const stale: number[] = [];
    for (const key of deletedKeys) if (graph.idForKey(key) === undefined) stale.push(...this.postings.ordinalsOfNode(key));
    for (const id of episodes) {
      const episode = added.has(id) ? undefined : graph.nodes.get(id);
      if (episode === undefined) continue;
      const documents = documentCount(graph, episode);
      for (let position = 0; position < documents; position++) if (!this.postings.holds(episode.key, position)) return null;
      for (const ordinal of this.postings.ordinalsOfNode(episode.key)) if (this.postings.positionOf(ordinal) >= documents) stale.push(ordinal);
    }
    const fresh: Array<[GraphNode, number]> = [];
    for (const id of added) {
      const node = graph.nodes.get(id);
      if (node === undefined) continue;
      for (let position = 0, documents = documentCount(graph, node); position < documents; position++) if (!this.postings.holds(node.key, position)) fresh.push([node, position]);
    }
    // `catchUp` finds the stale documents in ordinal order, and a removal's average length is summed in that order.
    return this.replace(graph, stale.sort((a, b) => a - b), fresh);
  }

  /**
   * Matches for `query`; `perLayer` caps each layer's list at its best hits (all by default), as
   * anchor fusion reads only the head of each: documents that cannot make a list are not scored
   * (see lexical-query.ts). The turn scores are worked out as they are read.
   */
  search(query: string, perLayer = Infinity): LexicalMatches {
    return this.intact(() => this.match(query, perLayer));
  }

  /** Whether any document holds `term` (normalised, as `termsOf` gives it). */
  holdsTerm(term: string): boolean {
    return this.postings.holdsTerm(term);
  }

  /**
   * `use` of the postings; when a term read from a saved copy turns out damaged as it is read
   * (scored or decoded), the index is built again from its graph (as an open does with a copy it cannot read
   * at all), and `use` runs again on that.
   */
  private intact<T>(use: () => T): T {
    try {
      return use();
    } catch (error) {
      if (!(error instanceof ByteFormatError)) throw error;
      this.postings = new Postings();
      this.hitsByTerm.clear();
      this.rebuiltDocuments += this.catchUp(this.graph);
      this.postings.trim();
      return use();
    }
  }

  private match(query: string, perLayer: number): LexicalMatches {
    const terms = tokenize(query).flatMap((word) => normaliseTerm(word) ?? []);
    const distinct = [...new Set(terms)];
    const positions = terms.map((term) => distinct.indexOf(term));
    const hits = distinct.map((term) => this.termHits(term));
    const queryOf = (layer: Layer): LayerQuery => ({ hits: hits.map((byLayer) => byLayer[layer]), positions });
    const layers = {} as Record<Layer, LexicalHit[]>;
    let turns: TurnScores = NO_TURN_SCORES;
    for (const layer of LAYERS) {
      const layerQuery = queryOf(layer);
      // An Episode ranks by its best turn; the best turn of all is among those scored even under a cap of 0.
      const scored = scoreCandidates(layerQuery, perLayer, (ordinal) => this.postings.nodeIdOf(ordinal));
      const bestOfNode = new Map<string, number>();
      for (const { ordinal, score } of scored) {
        const id = this.postings.nodeIdOf(ordinal);
        bestOfNode.set(id, Math.max(score, bestOfNode.get(id) ?? 0));
      }
      // Best score first; equal scores in id order, so the list does not depend on the index's document order.
      const ranked = topK([...bestOfNode], perLayer, ([idA, a], [idB, b]) => b - a || idA.localeCompare(idB));
      layers[layer] = ranked.map(([id, score]) => ({ id, score }));
      if (layer === 'episode') turns = new QueryTurnScores(this.postings, layerQuery, null, bestTurnOf(this.postings, scored));
    }
    return { layers, turns };
  }

  /** The documents holding one normalised term, by layer, each with its BM25 score for it, in ordinal order. */
  private termHits(term: string): TermHits {
    const known = this.hitsByTerm.get(term);
    if (known) return known;
    const hits = this.postings.hitsOf(term);
    if (LAYERS.some((layer) => hits[layer].ordinals.length > 0)) this.hitsByTerm.set(term, hits);
    return hits;
  }
}

/** A term's hits in each layer. */
type TermHits = Record<Layer, LayerHits>;

/** Where texts and queries are cut into words: at spaces and punctuation (minisearch's default). */
const SEPARATORS = /[\n\r\p{Z}\p{P}]+/u;

/** Whether each code unit below 128 is a separator, as `SEPARATORS` decides: the table is made from the pattern itself. */
const ASCII_SEPARATOR = Uint8Array.from({ length: 128 }, (_, code) => (SEPARATORS.test(String.fromCharCode(code)) ? 1 : 0));

/**
 * `text.split(SEPARATORS)`, empty first and last pieces included: by a table for plain ASCII
 * text, which is most chat and twice as fast as the Unicode pattern, and by the pattern
 * otherwise.
 */
function tokenize(text: string): string[] {
  const tokens: string[] = [];
  let start = 0;
  let inSeparator = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 128) return text.split(SEPARATORS);
    if (ASCII_SEPARATOR[code] === 1) {
      if (!inSeparator) tokens.push(text.slice(start, i));
      inSeparator = true;
    } else if (inSeparator) {
      start = i;
      inSeparator = false;
    }
  }
  tokens.push(inSeparator ? '' : text.slice(start));
  return tokens;
}

/**
 * Version of `LexicalIndex.toBytes`'s layout; bytes of another are rebuilt from the graph. 2: a
 * term's postings come with their byte length, so that reading the index skips them (see
 * `TermPostings.encodedAt`).
 */
const LEXICAL_FORMAT = 2;

/** Layers by their code in the byte layout. */
const LAYER_CODES: readonly Layer[] = ['episode', 'facet', 'facetPoint', 'entity'];

/**
 * Turn positions a node key spans in a document key (`docKeyOf`): 2^21, so keys below 2^32 (a
 * memory allocates ~15 a message) stay exact in a double.
 */
const TURN_SPAN = 2 ** 21;

/**
 * A document's key: its node's key for a Facet, FacetPoint or Entity, and its Episode's key with
 * the turn's position for a turn. A turn past `TURN_SPAN` in one chunk (a single add of over two
 * million messages) has none and is not indexed.
 */
function docKeyOf(nodeKey: number, position = 0): number {
  return nodeKey * TURN_SPAN + position;
}

/** BM25+ constants (minisearch's defaults). */
const BM25 = { k: 1.2, b: 0.7, d: 0.5 } as const;

/**
 * The documents holding one term, in ordinal (so indexing) order, as small integers in one
 * array: a document whose term frequency is 1 is its ordinal; any other is −(ordinal + 1)
 * followed by the frequency. Most postings are a single 1, and a map per term, or a pair per
 * posting, was most of the index's memory.
 */
interface TermPostings {
  term: string;
  /**
   * A typed array as decoded from bytes, made a plain array when the term is added to. Empty
   * while encoded (`encodedAt`).
   */
  entries: number[] | Int32Array;
  /**
   * Where the postings lie, as `toBytes` wrote them, in the bytes the index was read from
   * (`Postings.source`), until a write needs its entries (`Postings.entriesOf`; a search reads
   * them where they lie); −1 once decoded, and for a term made here. A search reads a handful of terms of the tens of thousands an
   * index holds, and decoding them all was most of reading it (18M entries, 2.8 s, at 100K
   * messages); offsets, not a view a term, which were ~9 MB of heap at 100K messages.
   */
  encodedAt: number;
  encodedEnd: number;
  /** Documents holding the term (what the idf counts); while encoded, as written, documents removed since not discounted. */
  holding: number;
}

/** The entries of a term whose postings are still encoded. */
const NO_ENTRIES = new Int32Array(0);
/** The bytes of an index made here, not read: none of its postings lie in them. */
const NO_BYTES = new Uint8Array(0);

/** Raw tokens remembered at most: chat repeats its words, and normalising each occurrence again was a third of indexing. */
const TOKEN_CACHE_LIMIT = 1 << 17;

/** What the index remembers of a raw token: the postings of its term (null: no term), and the last document that held it. */
interface TokenEntry {
  postings: TermPostings | null;
  lastOrdinal: number;
}

/**
 * Term → documents → term frequency over one text field, with what BM25+ normalises by: the
 * document count and the average field length, kept as minisearch keeps them (a running mean of
 * each document's distinct raw tokens), so scores match it to the last bit. Removing documents
 * drops their postings at once, so scores are always those of a clean index. Documents are
 * numbered in the order they are added (ordinals are never reused), which is the order hits are
 * listed in.
 */
class Postings {
  /** The documents' ordinals by node key: a pass over every document per `update` hashes no string and boxes no number. */
  private readonly ordinalsByNode = new OrdinalsByNode();
  /** Each indexed Episode's node key, by its id: a search reads an Episode's turns by id. */
  private readonly episodeKeys = new Map<string, number>();
  /**
   * The documents by ordinal, a column per field (a removed document's node key is −1): an
   * object per document was ~40 MB at 100K messages, and a tenth of what the collector walked
   * at every open.
   */
  private docNodeKey = new Float64Array(16);
  private docPosition = new Int32Array(16);
  /** Layers by their code (`LAYER_CODES`). */
  private docLayer = new Uint8Array(16);
  private readonly docNodeId: string[] = [];
  private readonly docDialogId: string[] = [];
  private docFieldLength = new Int32Array(16);
  /** The last `update` pass that found each document wanted. */
  private docPass = new Float64Array(16);
  /**
   * Documents made, removed ones included (the next ordinal); the numeric columns above are typed
   * arrays with room for more, grown by doubling (`reserve`): made one number at a time, seven
   * columns of 600,000 documents were over a second of reading an index at 100K messages.
   */
  private ordinals = 0;
  private docCount = 0;
  /** The bytes the index was read from, which encoded postings lie in (`TermPostings.encodedAt`). */
  private source: Uint8Array = NO_BYTES;
  /** Documents when the index was read: an encoded posting names one of them (`Postings.read`). */
  private readDocuments = 0;
  /** Whether a document has been removed since the index was made or read: encoded postings may then name removed documents. */
  private removedAny = false;
  private readonly byTerm = new Map<string, TermPostings>();
  /**
   * Raw token → its entry, so a repeated word is normalised and looked up once, and a document's
   * distinct tokens (its field length) are counted in the same lookup.
   */
  private readonly tokens = new Map<string, TokenEntry>();
  private passes = 0;
  private averageFieldLength = 0;
  /** `hitsOf`'s columns for a term's postings in ordinal order, as long as the longest list read so far. */
  private scratchOrdinals = new Int32Array(0);
  private scratchTf = new Int32Array(0);

  get size(): number {
    return this.docCount;
  }

  /** Whether a document holds `term` (postings still encoded as read may count documents removed since). */
  holdsTerm(term: string): boolean {
    return (this.byTerm.get(term)?.holding ?? 0) > 0;
  }

  /** A new pass number for `mark` and `unmarked`. */
  startPass(): number {
    return ++this.passes;
  }

  /** The node id and dialog id (turns only; else empty) of the document at `ordinal`. */
  nodeIdOf(ordinal: number): string {
    return this.docNodeId[ordinal] as string;
  }

  dialogIdOf(ordinal: number): string {
    return this.docDialogId[ordinal] as string;
  }

  /** The ordinals of the documents filed under node key `nodeKey` (an Episode's in turn order; none when it has none). */
  ordinalsOfNode(nodeKey: number): number[] {
    return this.ordinalsByNode.ordinalsOf(nodeKey);
  }

  /** Whether the document at `position` of node key `nodeKey` is held. */
  holds(nodeKey: number, position: number): boolean {
    return this.ordinalsByNode.ordinalOf(nodeKey, position) !== undefined;
  }

  /** The position in its node (a turn's in its Episode; else 0) of the document at `ordinal`. */
  positionOf(ordinal: number): number {
    return this.docPosition[ordinal] as number;
  }

  /** The ordinals of an Episode's turn documents, in turn order (none when the Episode is not indexed). */
  turnOrdinals(episodeId: string): number[] {
    const key = this.episodeKeys.get(episodeId);
    return key === undefined ? [] : this.ordinalsByNode.ordinalsOf(key);
  }

  /**
   * The documents in order (a removed one's hole closed up, so ordinals are renumbered and
   * their order kept) by key (`docKeyOf`), then each term with how many documents hold it and
   * the byte length of its postings, and the postings as (ordinal gap, frequency above 1) varints.
   */
  write(out: ByteWriter): void {
    const dense = new Int32Array(this.ordinals).fill(-1);
    out.varint(this.docCount);
    out.float64(this.averageFieldLength);
    let next = 0;
    for (let ordinal = 0; ordinal < this.ordinals; ordinal++) {
      const nodeKey = this.docNodeKey[ordinal] as number;
      if (nodeKey < 0) continue;
      dense[ordinal] = next++;
      out.varint(this.docLayer[ordinal] as number);
      out.varint(this.docFieldLength[ordinal] as number);
      out.varint(docKeyOf(nodeKey, this.docPosition[ordinal] as number));
    }
    // With no document removed ordinals stay as they were read, and encoded postings are written
    // as they are. Else a term still encoded is written again from its bytes as a cursor walks
    // them, removed documents left out, and stays encoded in memory: decoding every term for this
    // left the whole index decoded after the first save that followed a delete.
    // The terms go to a writer of their own, so that their count, which comes first, is known
    // from the one walk of each term's documents that also encodes them (a term whose documents
    // were all removed is left out); two walks took ~1.3 s of a save at 100K messages after a delete.
    const terms = new ByteWriter();
    let count = 0;
    // A term's postings encoded afresh, then written after their length.
    let encoded = new Uint8Array(1 << 12);
    for (const postings of this.byTerm.values()) {
      let holding = postings.holding;
      let bytes: Uint8Array;
      if (postings.encodedAt >= 0 && !this.removedAny) bytes = this.source.subarray(postings.encodedAt, postings.encodedEnd);
      else {
        holding = 0;
        let length = 0;
        let previous = -1;
        for (const cursor = this.cursorOf(postings); cursor.next(); holding++) {
          // Two varints of a safe integer at most.
          if (length + 16 > encoded.length) encoded = grown(encoded, encoded.length * 2, Uint8Array);
          const at = dense[cursor.ordinal] as number;
          length = putVarint(encoded, length, (at - previous - 1) * 2 + (cursor.tf > 1 ? 1 : 0));
          if (cursor.tf > 1) length = putVarint(encoded, length, cursor.tf);
          previous = at;
        }
        bytes = encoded.subarray(0, length);
      }
      if (holding === 0) continue;
      terms.string(postings.term);
      terms.varint(holding);
      terms.varint(bytes.length);
      terms.bytes(bytes);
      count++;
    }
    out.varint(count);
    out.append(terms);
  }

  /**
   * What `write` wrote; a `ByteFormatError` when the bytes do not hold that whole. Each term's
   * postings are kept as their bytes, checked when decoded (`entriesOf`). A document's node and
   * dialog ids are not looked up here but found by the `update` that follows, which visits every
   * document of the graph (`mark`; a lookup a document was ~0.2 s of opening a saved index at
   * 100K messages); a document whose node the graph no longer holds (keys are never reused)
   * is not marked there, and that `update` removes it.
   */
  static read(input: ByteReader): Postings {
    if (input.varint() !== LEXICAL_FORMAT) throw new ByteFormatError('not a lexical index of this format');
    const postings = new Postings();
    const count = input.varint();
    postings.averageFieldLength = input.float64();
    // A document takes three bytes at least.
    if (count > input.remaining / 3) throw new ByteFormatError('more documents than bytes');
    // Each column written in place, as `push` would (no names yet, first pass): at 100K messages
    // ~575K documents, where a `push` each was ~0.1 s more of an open's first search.
    postings.reserve(count);
    const episode = LAYER_CODES.indexOf('episode');
    for (let ordinal = 0; ordinal < count; ordinal++) {
      const layer = input.varint();
      if (layer >= LAYER_CODES.length) throw new ByteFormatError('unknown layer');
      const fieldLength = input.varint();
      const docKey = input.varint();
      const position = docKey % TURN_SPAN;
      const nodeKey = (docKey - position) / TURN_SPAN;
      if (!postings.ordinalsByNode.register(nodeKey, position, layer === episode, ordinal)) throw new ByteFormatError('document listed twice, or at a position its layer has not');
      postings.docNodeKey[ordinal] = nodeKey;
      postings.docPosition[ordinal] = position;
      postings.docLayer[ordinal] = layer;
      postings.docFieldLength[ordinal] = fieldLength;
    }
    postings.ordinals = count;
    postings.docNodeId.length = count;
    postings.docNodeId.fill('');
    postings.docDialogId.length = count;
    postings.docDialogId.fill('');
    postings.docCount = count;
    postings.readDocuments = count;
    const terms = input.varint();
    for (let t = 0; t < terms; t++) {
      const term = input.string();
      const holding = input.varint();
      const length = input.varint();
      // Each posting takes a byte at least; what they say is checked when they are decoded.
      if (holding === 0 || holding > length || holding > count || postings.byTerm.has(term)) throw new ByteFormatError('empty, overlong or repeated term');
      const encodedAt = input.skip(length);
      postings.byTerm.set(term, { term, entries: NO_ENTRIES, encodedAt, encodedEnd: encodedAt + length, holding });
    }
    if (!input.done) throw new ByteFormatError('bytes left over');
    postings.source = input.source;
    return postings;
  }

  /**
   * Marks the document at `position` of `node` as wanted in `pass`, naming its node and dialog
   * (`dialogId`: a turn's; else empty) where a read left them unnamed; false when the index does
   * not hold it. A `ByteFormatError` when the index holds it under another layer: a node's key
   * names one node of one layer for good, so the index was not written for this graph.
   */
  mark(id: string, key: number, layer: Layer, position: number, dialogId: string, pass: number): boolean {
    const ordinal = this.ordinalsByNode.ordinalOf(key, position);
    if (ordinal === undefined) return false;
    this.docPass[ordinal] = pass;
    // Once a read document is named it has been checked; one the index added is its node's own.
    if (this.docNodeId[ordinal] === '') {
      if (LAYER_CODES[this.docLayer[ordinal] as number] !== layer) throw new ByteFormatError('document of another layer than its node');
      this.docNodeId[ordinal] = id;
      this.docDialogId[ordinal] = dialogId;
      if (layer === 'episode') this.episodeKeys.set(id, key);
    }
    return true;
  }

  /** Ordinals of the documents `pass` did not mark, in the order they were added. */
  unmarked(pass: number): number[] {
    const ordinals: number[] = [];
    for (let ordinal = 0; ordinal < this.ordinals; ordinal++) if ((this.docNodeKey[ordinal] as number) >= 0 && this.docPass[ordinal] !== pass) ordinals.push(ordinal);
    return ordinals;
  }

  add(nodeKey: number, position: number, { layer, nodeId, dialogId, text }: LexicalDoc): void {
    const ordinal = this.ordinals;
    if (!this.ordinalsByNode.register(nodeKey, position, layer === 'episode', ordinal)) throw new Error(`lexical document ${position} of node key ${nodeKey} is indexed already`);
    // Between documents only: a document's distinct tokens are counted by their entries.
    if (this.tokens.size >= TOKEN_CACHE_LIMIT) this.tokens.clear();
    let fieldLength = 0;
    for (const token of tokenize(text)) {
      const entry = this.entryOf(token);
      if (entry.lastOrdinal !== ordinal) {
        entry.lastOrdinal = ordinal;
        fieldLength++;
      }
      if (entry.postings) addOccurrence(entry.postings, this.entriesOf(entry.postings), ordinal);
    }
    const count = this.docCount;
    this.averageFieldLength = (this.averageFieldLength * count + fieldLength) / (count + 1);
    this.push(nodeKey, position, layer, nodeId, dialogId, fieldLength);
    this.docCount++;
  }

  /** Drops the raw-token cache, which speeds a run of `add`s and is dead weight between them. */
  forgetTokens(): void {
    this.tokens.clear();
  }

  /** Gives each term's entries the room they use and no more: lists grown one push at a time keep up to half again as much. */
  trim(): void {
    for (const postings of this.byTerm.values()) if (postings.encodedAt < 0) postings.entries = postings.entries.slice();
  }

  /** Removes documents by ordinal, in order; one pass over the postings drops them all (documents leave with whole sessions). */
  remove(ordinals: readonly number[]): void {
    const removed = new Set<number>();
    for (const ordinal of ordinals) {
      const nodeKey = this.docNodeKey[ordinal];
      if (ordinal >= this.ordinals || nodeKey === undefined || nodeKey < 0) continue;
      const count = this.docCount;
      this.averageFieldLength = count === 1 ? 0 : (this.averageFieldLength * count - (this.docFieldLength[ordinal] as number)) / (count - 1);
      this.ordinalsByNode.unregister(nodeKey, this.docPosition[ordinal] as number);
      const nodeId = this.docNodeId[ordinal] as string;
      if (!this.ordinalsByNode.holdsNode(nodeKey) && this.episodeKeys.get(nodeId) === nodeKey) this.episodeKeys.delete(nodeId);
      // A removed document keeps its ids (a few bytes): a search that ran before the removal
      // still names, when its turn scores are read, the documents it found.
      this.docNodeKey[ordinal] = -1;
      this.docCount--;
      removed.add(ordinal);
    }
    if (removed.size === 0) return;
    this.removedAny = true;
    for (const postings of this.byTerm.values()) {
      // Encoded postings leave out removed documents when decoded.
      if (postings.encodedAt >= 0) continue;
      withoutDocuments(postings, removed);
      if (postings.holding === 0) this.byTerm.delete(postings.term);
    }
    // Raw tokens may still lead to a dropped list.
    this.tokens.clear();
  }

  /**
   * The documents holding `term`, by layer in the order they were added, with their BM25+ scores:
   * one pass over the postings counts each layer's share into scratch columns kept for the next
   * term (the idf needs the count before any score), one over those columns fills lists made at
   * that size. A common word is held by most documents of a memory, and each new word of a query
   * is read this way once. Postings still encoded are read where they lie and left so
   * (`PostingCursor`): decoding them, as a search once did, made an array of the term's size to
   * keep, and one more to copy it to; reading them twice, as the count once did, cost as much again.
   */
  hitsOf(term: string): TermHits {
    const postings = this.byTerm.get(term);
    const cursor = this.cursorOf(postings);
    const perCode = new Int32Array(LAYER_CODES.length);
    let held = 0;
    while (cursor.next()) {
      if (held === this.scratchOrdinals.length) this.growScratch();
      const code = this.docLayer[cursor.ordinal] as number;
      perCode[code] = (perCode[code] as number) + 1;
      this.scratchOrdinals[held] = cursor.ordinal;
      this.scratchTf[held] = cursor.tf;
      held++;
    }
    const lists = LAYER_CODES.map((_, code): LayerHits => ({ ordinals: new Int32Array(perCode[code] as number), scores: new Float64Array(perCode[code] as number) }));
    const filled = new Int32Array(LAYER_CODES.length);
    const idf = Math.log(1 + (this.docCount - held + 0.5) / (held + 0.5));
    const { k, b, d } = BM25;
    for (let i = 0; i < held; i++) {
      const ordinal = this.scratchOrdinals[i] as number;
      const tf = this.scratchTf[i] as number;
      const code = this.docLayer[ordinal] as number;
      const list = lists[code] as LayerHits;
      const score = idf * (d + (tf * (k + 1)) / (tf + k * (1 - b + (b * (this.docFieldLength[ordinal] as number)) / this.averageFieldLength)));
      const at = filled[code] as number;
      list.ordinals[at] = ordinal;
      list.scores[at] = score;
      filled[code] = at + 1;
    }
    return Object.fromEntries(LAYER_CODES.map((layer, code) => [layer, lists[code] as LayerHits])) as TermHits;
  }

  /** Room for a term's postings as `hitsOf` reads them, doubled when a longer list comes. */
  private growScratch(): void {
    const ordinals = new Int32Array(Math.max(1024, this.scratchOrdinals.length * 2));
    const tf = new Int32Array(ordinals.length);
    ordinals.set(this.scratchOrdinals);
    tf.set(this.scratchTf);
    this.scratchOrdinals = ordinals;
    this.scratchTf = tf;
  }

  /** A cursor over the postings of a term of this index (none: no term). */
  private cursorOf(postings: TermPostings | undefined): PostingCursor {
    return new PostingCursor(postings, this.source, this.readDocuments, this.removedAny ? this.docNodeKey : null);
  }

  /**
   * A term's entries, decoded from the bytes it was read from when first asked for, without the
   * documents removed since; a `ByteFormatError` when those bytes are not postings of the
   * documents read (`LexicalIndex` then builds the index again from its graph).
   */
  entriesOf(postings: TermPostings): number[] | Int32Array {
    if (postings.encodedAt < 0) return postings.entries;
    const entries = new Int32Array(postings.holding * 2);
    let used = 0;
    let held = 0;
    for (const cursor = this.cursorOf(postings); cursor.next(); held++) {
      if (cursor.tf === 1) entries[used++] = cursor.ordinal;
      else {
        entries[used++] = -(cursor.ordinal + 1);
        entries[used++] = cursor.tf;
      }
    }
    postings.entries = entries.slice(0, used);
    postings.encodedAt = -1;
    postings.encodedEnd = -1;
    postings.holding = held;
    return postings.entries;
  }

  /** Room in the numeric columns for `more` documents beyond those made. */
  private reserve(more: number): void {
    const needed = this.ordinals + more;
    if (needed <= this.docNodeKey.length) return;
    const size = Math.max(needed, this.docNodeKey.length * 2);
    this.docNodeKey = grown(this.docNodeKey, size, Float64Array);
    this.docPosition = grown(this.docPosition, size, Int32Array);
    this.docLayer = grown(this.docLayer, size, Uint8Array);
    this.docFieldLength = grown(this.docFieldLength, size, Int32Array);
    this.docPass = grown(this.docPass, size, Float64Array);
  }

  private push(nodeKey: number, position: number, layer: Layer, nodeId: string, dialogId: string, fieldLength: number): void {
    this.reserve(1);
    const ordinal = this.ordinals++;
    this.docNodeKey[ordinal] = nodeKey;
    this.docPosition[ordinal] = position;
    this.docLayer[ordinal] = LAYER_CODES.indexOf(layer);
    this.docNodeId.push(nodeId);
    this.docDialogId.push(dialogId);
    this.docFieldLength[ordinal] = fieldLength;
    this.docPass[ordinal] = this.passes;
    if (layer === 'episode' && nodeId !== '') this.episodeKeys.set(nodeId, nodeKey);
  }

  /** The entry of a raw token, made when new with the postings its term adds to (made when new; null for a token that is no term). */
  private entryOf(token: string): TokenEntry {
    let entry = this.tokens.get(token);
    if (entry === undefined) {
      const term = normaliseTerm(token);
      let postings = term === null ? null : (this.byTerm.get(term) ?? null);
      if (term !== null && postings === null) this.byTerm.set(term, (postings = { term, entries: [], encodedAt: -1, encodedEnd: -1, holding: 0 }));
      this.tokens.set(token, (entry = { postings, lastOrdinal: -1 }));
    }
    return entry;
  }
}

/**
 * Walks a term's postings document by document (`ordinal`, `tf`), in ordinal order, documents
 * removed since left out: its decoded entries, or its bytes where they lie in what the index was
 * read from (`TermPostings.encodedAt`), checked as they are read: a `ByteFormatError` when they
 * are not postings of the documents read (`LexicalIndex` then builds the index again).
 */
class PostingCursor {
  /** The posting `next` moved to: its document's ordinal, and how often the term occurs there. */
  ordinal = -1;
  tf = 0;
  /** The next entry's index, or where the next posting's bytes start (as `nextVarint` moves it). */
  private readonly position: { at: number };
  /** Encoded postings read so far, removed documents included, and the last one's ordinal. */
  private found = 0;
  private lastOrdinal = -1;

  constructor(
    private readonly postings: TermPostings | undefined,
    private readonly source: Uint8Array,
    private readonly readDocuments: number,
    /**
     * The documents' node keys (a removed document's −1) once any was removed since the index
     * was read, else null: until then no encoded posting names a removed document, and a term's
     * postings are read without looking each document up in a column of ~600,000 at 100K messages.
     */
    private readonly docNodeKey: Float64Array | null,
  ) {
    this.position = { at: postings && postings.encodedAt >= 0 ? postings.encodedAt : 0 };
  }

  /** Moves to the next posting; false past the last. */
  next(): boolean {
    const postings = this.postings;
    if (!postings) return false;
    if (postings.encodedAt < 0) {
      const entries = postings.entries;
      if (this.position.at >= entries.length) return false;
      const entry = entries[this.position.at++] as number;
      this.ordinal = entry >= 0 ? entry : -entry - 1;
      this.tf = entry >= 0 ? 1 : (entries[this.position.at++] as number);
      return true;
    }
    const end = postings.encodedEnd;
    while (this.position.at < end) {
      const code = nextVarint(this.source, this.position, end);
      const ordinal = (this.lastOrdinal += Math.floor(code / 2) + 1);
      const tf = code % 2 === 0 ? 1 : nextVarint(this.source, this.position, end);
      if (ordinal >= this.readDocuments || (code % 2 === 1 && tf < 2) || ++this.found > postings.holding) throw new ByteFormatError('postings not of the documents read');
      if (this.docNodeKey !== null && (this.docNodeKey[ordinal] as number) < 0) continue;
      this.ordinal = ordinal;
      this.tf = tf;
      return true;
    }
    if (this.found !== postings.holding) throw new ByteFormatError('postings fewer than written');
    return false;
  }
}

/** One more occurrence of the term in document `ordinal`, the newest document (its tokens are added together); `decoded`: its entries (`Postings.entriesOf`). */
function addOccurrence(postings: TermPostings, decoded: number[] | Int32Array, ordinal: number): void {
  const entries = Array.isArray(decoded) ? decoded : Array.from(decoded);
  postings.entries = entries;
  const last = entries.length - 1;
  if (last >= 1 && (entries[last - 1] as number) < 0) {
    // The last entry is a frequency; the one before it names its document.
    if (entries[last - 1] === -(ordinal + 1)) {
      entries[last] = (entries[last] as number) + 1;
      return;
    }
  } else if (last >= 0 && entries[last] === ordinal) {
    entries[last] = -(ordinal + 1);
    entries.push(2);
    return;
  }
  entries.push(ordinal);
  postings.holding++;
}

/** Calls `visit` with each (ordinal, term frequency) of a term's entries, in order. */
function forEachPosting(entries: ArrayLike<number>, visit: (ordinal: number, tf: number) => void): void {
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as number;
    if (entry >= 0) visit(entry, 1);
    else visit(-entry - 1, entries[++i] as number);
  }
}

/** An Episode's turn ordinals by position, the positions it no longer holds left out. */
/** `values` in a new array of `size` of the same type. */
function grown<A extends Float64Array | Int32Array | Uint8Array>(values: A, size: number, make: new (size: number) => A): A {
  const next = new make(size);
  next.set(values);
  return next;
}

/** Drops the postings of `removed` documents from a term's entries, in place. */
function withoutDocuments(postings: TermPostings, removed: ReadonlySet<number>): void {
  const kept: number[] = [];
  forEachPosting(postings.entries, (ordinal, tf) => {
    if (removed.has(ordinal)) return;
    if (tf === 1) kept.push(ordinal);
    else kept.push(-(ordinal + 1), tf);
  });
  if (kept.length === postings.entries.length) return;
  postings.entries = kept;
  postings.holding = 0;
  forEachPosting(kept, () => postings.holding++);
}

/** The text a turn is indexed under: "speaker: text". */
export function turnDocumentText(turn: Pick<ChunkTurn, 'speaker' | 'text'>): string {
  return `${turn.speaker}: ${turn.text}`;
}

/**
 * Calls `visit` with the node and position (a turn's in its Episode; 0 for any other) of each
 * document the index holds for `graph`, in the graph's node order; `lexicalDocOf` makes one.
 */
/**
 * Visits every document of the graph: its node's id, key and layer, its position there, and its
 * dialog id (a turn's; else empty). A fact the graph holds as columns is not made a node for it.
 */
function forEachLexicalDocument(graph: MemoryGraph, visit: (id: string, key: number, layer: Layer, position: number, dialogId: string) => void): void {
  graph.forEachNodeBrief((id, key, layer, chunkId) => {
    if (layer !== 'episode') visit(id, key, layer, 0, '');
    else {
      const turns = (chunkId !== null && graph.chunks.get(chunkId)?.turns) || [];
      for (let i = 0, documents = turnDocuments(turns); i < documents; i++) visit(id, key, layer, i, (turns[i] as ChunkTurn).dialogId);
    }
  });
}

/** How many documents the index holds for `node`: an Episode's turns (up to `TURN_SPAN`), else one. */
function documentCount(graph: MemoryGraph, node: GraphNode): number {
  return node.layer === 'episode' ? turnDocuments(graph.chunks.get(node.chunkId)?.turns ?? []) : 1;
}

/** How many of an Episode's turns the index holds as documents: up to `TURN_SPAN`. */
function turnDocuments(turns: readonly ChunkTurn[]): number {
  return Math.min(turns.length, TURN_SPAN);
}

/**
 * The document at `position` of `node`: turn `position` of an Episode (`turn:<episode>:<i>`, its
 * text "speaker: text"), or the one of a Facet, FacetPoint or Entity (`<layer>:<node id>`, its
 * theme, content or name).
 */
function lexicalDocOf(graph: MemoryGraph, node: GraphNode, position: number): LexicalDoc {
  switch (node.layer) {
    case 'episode': {
      const turn = graph.chunks.get(node.chunkId)?.turns[position];
      return { id: `turn:${node.id}:${position}`, layer: 'episode', nodeId: node.id, dialogId: turn?.dialogId ?? '', text: turn ? turnDocumentText(turn) : '' };
    }
    case 'facet':
      return { id: `facet:${node.id}`, layer: 'facet', nodeId: node.id, dialogId: '', text: node.theme };
    case 'facetPoint':
      return { id: `facetPoint:${node.id}`, layer: 'facetPoint', nodeId: node.id, dialogId: '', text: node.content };
    case 'entity':
      return { id: `entity:${node.id}`, layer: 'entity', nodeId: node.id, dialogId: '', text: node.name };
  }
}

/** The documents the index holds for `graph`, in the graph's node order. */
export function lexicalDocuments(graph: MemoryGraph): LexicalDoc[] {
  const docs: LexicalDoc[] = [];
  forEachLexicalDocument(graph, (id, _key, _layer, position) => docs.push(lexicalDocOf(graph, graph.nodes.get(id) as GraphNode, position)));
  return docs;
}

/** Function words that would only add noise to BM25 over chat turns and questions. */
const STOP_WORDS = new Set(
  (
    'a about above after again all am an and any are as at be been being both but by can could did do does doing ' +
    'down during each few for from further had has have having he her here hers herself him himself his how i if in ' +
    'into is it its itself just me more most my myself no nor not now of off on once only or other our ours out over ' +
    'own same she should so some such than that the their theirs them then there these they this those through to ' +
    'too under until up very was we were what when where which while who whom why will with would you your yours ' +
    'also any ever get got go going gonna oh ok okay really yeah yes hey hi thanks thank lot much many well like one'
  ).split(' '),
);

/**
 * Lowercases, drops function words, and strips common English suffixes so "painting",
 * "painted" and "paints" meet at "paint" and "party"/"parties" at "parti". The same function runs on documents and queries,
 * so its rough edges ("tree" → "tre") cancel out.
 */
export function normaliseTerm(term: string): string | null {
  const t = term.toLowerCase();
  if (t.length < 2 || STOP_WORDS.has(t)) return null;
  let stem = t;
  if (stem.length > 5 && stem.endsWith('ing')) stem = stem.slice(0, -3);
  else if (stem.length > 4 && stem.endsWith('ies')) stem = `${stem.slice(0, -3)}i`;
  else if (stem.length > 4 && stem.endsWith('ed')) stem = stem.slice(0, -2);
  else if (stem.length > 3 && stem.endsWith('s') && !stem.endsWith('ss')) stem = stem.slice(0, -1);
  if (stem.length > 3 && stem.endsWith('e')) stem = stem.slice(0, -1);
  else if (stem.length > 3 && stem.endsWith('y')) stem = `${stem.slice(0, -1)}i`;
  const last = stem[stem.length - 1];
  if (stem.length > 3 && last === stem[stem.length - 2] && last !== 'l' && last !== 's') stem = stem.slice(0, -1);
  return stem;
}

/**
 * How many of `terms` (normalised, as `termsOf` gives them) `termsOf(text)` holds, without
 * normalising every word where none can be there. A normalised term is a prefix of its word
 * lowercased, or such a prefix and an "i" (`normaliseTerm`), so in ASCII text a term whose prefix
 * does not occur in the text lowercased is not there. The sentences of long turns are scored
 * this way, and most hold none of a query's terms.
 */
export function sharedTermCount(text: string, terms: ReadonlySet<string>): number {
  if (terms.size === 0) return 0;
  if (isAscii(text)) {
    const lower = text.toLowerCase();
    let possible = false;
    for (const term of terms) possible ||= lower.includes(term.endsWith('i') ? term.slice(0, -1) : term);
    if (!possible) return 0;
  }
  let shared = 0;
  for (const term of termsOf(text)) if (terms.has(term)) shared++;
  return shared;
}

/** The distinct normalised terms of a text, as the index sees them. */
export function termsOf(text: string): Set<string> {
  const terms = new Set<string>();
  for (const word of text.split(/[^\p{L}\p{N}]+/u)) {
    const term = normaliseTerm(word);
    if (term) terms.add(term);
  }
  return terms;
}
