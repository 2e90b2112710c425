import type { MemoryGraph } from '../graph/memory-graph.ts';
import { LAYERS, type ChunkTurn, type Layer } from '../graph/types.ts';
import { topK } from '../util/top-k.ts';

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
  turns: Map<string, Map<string, number>>;
}

export class LexicalIndex {
  /**
   * Each query term's hits (`termHits`), kept until the index changes: questions share most of
   * their terms (names, topics), and scoring a term's postings again is most of a search's cost.
   * Only terms the index holds are kept, so at most one entry per indexed term, each no longer
   * than that term's postings; a hit is a document slot and a score in two typed arrays (12
   * bytes: an object a hit was most of the ~90 MB that 40 searches cached on 30K messages).
   */
  private readonly hitsByTerm = new Map<string, TermHits>();
  /**
   * Slots: one per document a cached hit reached (by ordinal), shared by every term's hits, so a
   * query sums a document's scores in its slot; and one per node those documents stand for, so a
   * query keeps a node's best score in its slot. Each slot's facts sit in plain arrays.
   */
  private docSlotByOrdinal: Array<number | undefined> = [];
  private docNodeSlot: number[] = [];
  private docDialogId: string[] = [];
  private readonly nodeSlotById = new Map<string, number>();
  private nodeLayer: Layer[] = [];
  private nodeIds: string[] = [];

  private readonly postings = new Postings();

  private constructor() {}

  static fromGraph(graph: MemoryGraph): LexicalIndex {
    const lexical = new LexicalIndex();
    lexical.update(graph);
    lexical.postings.trim();
    return lexical;
  }

  get size(): number {
    return this.postings.size;
  }

  /** Brings the index in step with the graph: adds documents for new nodes and turns, drops those whose node is gone. */
  update(graph: MemoryGraph): void {
    // A search after each add runs this over the whole graph: documents it holds are only
    // marked as still wanted, and only new ones are made.
    const pass = this.postings.startPass();
    const fresh: LexicalDoc[] = [];
    forEachLexicalDocument(graph, (id, make) => {
      if (!this.postings.mark(id, pass)) fresh.push(make());
    });
    const stale = this.postings.unmarked(pass);
    this.postings.remove(stale);
    for (const doc of fresh) this.postings.add(doc);
    this.postings.forgetTokens();
    // Document count, lengths and postings feed every BM25 score; documents and nodes are found again as terms are.
    if (stale.length > 0 || fresh.length > 0) {
      this.hitsByTerm.clear();
      this.nodeSlotById.clear();
      this.docSlotByOrdinal = [];
      this.docNodeSlot = [];
      this.docDialogId = [];
      this.nodeLayer = [];
      this.nodeIds = [];
    }
  }

  /**
   * Matches for `query`; `perLayer` caps each layer's list at its best hits (all by default), as
   * anchor fusion reads only the head of each and a long tail costs a full sort per query.
   */
  search(query: string, perLayer = Infinity): LexicalMatches {
    const hits = this.queryHits(query);
    // Each node's best document score, by node slot (sized after `queryHits`, which may hand out slots).
    const nodeSlots = this.nodeIds.length;
    const best = new Float64Array(nodeSlots);
    const seen = new Uint8Array(nodeSlots);
    const reached: number[] = [];
    const turnHits: number[] = [];
    // The query's hits, in the order minisearch lists them for the whole query, and not sorted:
    // each layer's list is selected below by score and id, so only the turn hits need
    // minisearch's order, and they alone are sorted as minisearch would have (stably, so ties
    // stay in index order).
    hits.slots.forEach((slot, i) => {
      const node = this.docNodeSlot[slot] as number;
      const score = hits.scores[i] as number;
      if (seen[node] === 0) {
        seen[node] = 1;
        reached.push(node);
      }
      best[node] = Math.max(score, best[node] ?? 0);
      if (this.nodeLayer[node] === 'episode') turnHits.push(i);
    });
    const turns = new Map<string, Map<string, number>>();
    for (const i of turnHits.sort((a, b) => (hits.scores[b] as number) - (hits.scores[a] as number))) {
      const slot = hits.slots[i] as number;
      const episodeId = this.nodeIds[this.docNodeSlot[slot] as number] as string;
      let byDialog = turns.get(episodeId);
      if (!byDialog) turns.set(episodeId, (byDialog = new Map()));
      byDialog.set(this.docDialogId[slot] as string, hits.scores[i] as number);
    }
    const byLayer = new Map<Layer, Array<[string, number]>>(LAYERS.map((layer) => [layer, []]));
    for (const node of reached) byLayer.get(this.nodeLayer[node] as Layer)?.push([this.nodeIds[node] as string, best[node] ?? 0]);
    const layers = Object.fromEntries(
      LAYERS.map((layer) => [layer, topK(byLayer.get(layer) ?? [], perLayer, byScoreThenId).map(([id, score]) => ({ id, score }))]),
    ) as Record<Layer, LexicalHit[]>;
    return { layers, turns };
  }

  /**
   * Every document matching `query` with its score, as minisearch's OR query scores and lists
   * them, built from each term's own hits: a document's score is the sum of its terms' scores in
   * query order (a repeated term counts each time), times the number of distinct query terms it
   * matches; documents come in the order of the first term that reaches them.
   */
  private queryHits(query: string): { slots: number[]; scores: number[] } {
    const terms = tokenize(query).flatMap((word) => normaliseTerm(word) ?? []);
    // Looked up first: a term seen for the first time may hand out new slots.
    const hitsByPosition = terms.map((term) => this.termHits(term));
    // Sums and distinct-term counts by document slot: thousands of hits per query, no map lookups.
    const docSlots = this.docNodeSlot.length;
    const sums = new Float64Array(docSlots);
    const matched = new Uint32Array(docSlots);
    const reached: number[] = [];
    terms.forEach((term, position) => {
      const firstTime = terms.indexOf(term) === position;
      const { slots, scores } = hitsByPosition[position] ?? NO_HITS;
      slots.forEach((slot, i) => {
        if (matched[slot] === 0) reached.push(slot);
        sums[slot] = (sums[slot] ?? 0) + (scores[i] as number);
        if (firstTime) matched[slot] = (matched[slot] ?? 0) + 1;
      });
    });
    return { slots: reached, scores: reached.map((slot) => (sums[slot] ?? 0) * (matched[slot] ?? 0)) };
  }

  /** The documents holding one normalised term, each with its BM25 score for it, in the order they were indexed. */
  private termHits(term: string): TermHits {
    const known = this.hitsByTerm.get(term);
    if (known) return known;
    const slots: number[] = [];
    const scores: number[] = [];
    this.postings.forEachHit(term, (doc, ordinal, score) => {
      let slot = this.docSlotByOrdinal[ordinal];
      if (slot === undefined) {
        slot = this.docNodeSlot.length;
        this.docSlotByOrdinal[ordinal] = slot;
        this.docNodeSlot.push(this.nodeSlot(doc.layer, doc.nodeId));
        this.docDialogId.push(doc.dialogId);
      }
      slots.push(slot);
      scores.push(score);
    });
    const hits = { slots: Int32Array.from(slots), scores: Float64Array.from(scores) };
    if (slots.length > 0) this.hitsByTerm.set(term, hits);
    return hits;
  }

  /** A node's slot, by its id alone: the graph holds one node per id, whatever its layer. */
  private nodeSlot(layer: Layer, id: string): number {
    let slot = this.nodeSlotById.get(id);
    if (slot === undefined) {
      slot = this.nodeIds.length;
      this.nodeSlotById.set(id, slot);
      this.nodeLayer.push(layer);
      this.nodeIds.push(id);
    }
    return slot;
  }
}

/** A term's hits: document slots and the term's BM25 score in each, in indexing order. */
interface TermHits {
  slots: Int32Array;
  scores: Float64Array;
}

const NO_HITS: TermHits = { slots: new Int32Array(0), scores: new Float64Array(0) };

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

/** BM25+ constants (minisearch's defaults). */
const BM25 = { k: 1.2, b: 0.7, d: 0.5 } as const;

/** What a document keeps once indexed: not its text, which only tokenising needed. */
type IndexedFields = Pick<LexicalDoc, 'id' | 'layer' | 'nodeId' | 'dialogId'>;

/** A document as the index holds it, with its field length (its distinct raw tokens) and the last `update` pass that found it wanted. */
interface IndexedDoc extends IndexedFields {
  fieldLength: number;
  pass: number;
}

/**
 * The documents holding one term, in ordinal (so indexing) order, as small integers in one
 * array: a document whose term frequency is 1 is its ordinal; any other is −(ordinal + 1)
 * followed by the frequency. Most postings are a single 1, and a map per term, or a pair per
 * posting, was most of the index's memory.
 */
interface TermPostings {
  term: string;
  entries: number[];
  /** Documents holding the term (what the idf counts). */
  holding: number;
}

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
  private readonly ordinals = new Map<string, number>();
  /** Documents by ordinal; a removed document leaves a hole. One flat record each, in an array: a map entry and two objects per document were a sixth of the index. */
  private readonly docs: Array<IndexedDoc | undefined> = [];
  private docCount = 0;
  private readonly byTerm = new Map<string, TermPostings>();
  /**
   * Raw token → its entry, so a repeated word is normalised and looked up once, and a document's
   * distinct tokens (its field length) are counted in the same lookup.
   */
  private readonly tokens = new Map<string, TokenEntry>();
  private nextOrdinal = 0;
  private passes = 0;
  private averageFieldLength = 0;

  get size(): number {
    return this.docCount;
  }

  /** A new pass number for `mark` and `unmarked`. */
  startPass(): number {
    return ++this.passes;
  }

  /** Marks document `id` as wanted in `pass`; false when the index does not hold it. */
  mark(id: string, pass: number): boolean {
    const ordinal = this.ordinals.get(id);
    const entry = ordinal === undefined ? undefined : this.docs[ordinal];
    if (entry) entry.pass = pass;
    return entry !== undefined;
  }

  /** Ids of the documents `pass` did not mark, in the order they were added. */
  unmarked(pass: number): string[] {
    const ids: string[] = [];
    for (const [id, ordinal] of this.ordinals) if (this.docs[ordinal]?.pass !== pass) ids.push(id);
    return ids;
  }

  add({ id, layer, nodeId, dialogId, text }: LexicalDoc): void {
    const ordinal = this.nextOrdinal++;
    // Between documents only: a document's distinct tokens are counted by their entries.
    if (this.tokens.size >= TOKEN_CACHE_LIMIT) this.tokens.clear();
    let fieldLength = 0;
    for (const token of tokenize(text)) {
      const entry = this.entryOf(token);
      if (entry.lastOrdinal !== ordinal) {
        entry.lastOrdinal = ordinal;
        fieldLength++;
      }
      if (entry.postings) addOccurrence(entry.postings, ordinal);
    }
    const count = this.docCount;
    this.averageFieldLength = (this.averageFieldLength * count + fieldLength) / (count + 1);
    this.ordinals.set(id, ordinal);
    this.docs[ordinal] = { id, layer, nodeId, dialogId, fieldLength, pass: this.passes };
    this.docCount++;
  }

  /** Drops the raw-token cache, which speeds a run of `add`s and is dead weight between them. */
  forgetTokens(): void {
    this.tokens.clear();
  }

  /** Gives each term's entries the room they use and no more: lists grown one push at a time keep up to half again as much. */
  trim(): void {
    for (const postings of this.byTerm.values()) postings.entries = postings.entries.slice();
  }

  /** Removes documents, in order; one pass over the postings drops them all (documents leave with whole sessions). */
  remove(ids: readonly string[]): void {
    const removed = new Set<number>();
    for (const id of ids) {
      const ordinal = this.ordinals.get(id);
      const entry = ordinal === undefined ? undefined : this.docs[ordinal];
      if (ordinal === undefined || !entry) continue;
      const count = this.docCount;
      this.averageFieldLength = count === 1 ? 0 : (this.averageFieldLength * count - entry.fieldLength) / (count - 1);
      this.ordinals.delete(id);
      this.docs[ordinal] = undefined;
      this.docCount--;
      removed.add(ordinal);
    }
    if (removed.size === 0) return;
    for (const postings of this.byTerm.values()) {
      withoutDocuments(postings, removed);
      if (postings.holding === 0) this.byTerm.delete(postings.term);
    }
    // Raw tokens may still lead to a dropped list.
    this.tokens.clear();
  }

  /** Calls `visit` with each document holding `term`, its ordinal and its BM25+ score, in the order documents were added. */
  forEachHit(term: string, visit: (doc: IndexedFields, ordinal: number, score: number) => void): void {
    const postings = this.byTerm.get(term);
    if (!postings) return;
    const total = this.docCount;
    const idf = Math.log(1 + (total - postings.holding + 0.5) / (postings.holding + 0.5));
    forEachPosting(postings.entries, (ordinal, tf) => {
      const doc = this.docs[ordinal] as IndexedDoc;
      const { fieldLength } = doc;
      visit(doc, ordinal, idf * (BM25.d + (tf * (BM25.k + 1)) / (tf + BM25.k * (1 - BM25.b + (BM25.b * fieldLength) / this.averageFieldLength))));
    });
  }

  /** The entry of a raw token, made when new with the postings its term adds to (made when new; null for a token that is no term). */
  private entryOf(token: string): TokenEntry {
    let entry = this.tokens.get(token);
    if (entry === undefined) {
      const term = normaliseTerm(token);
      let postings = term === null ? null : (this.byTerm.get(term) ?? null);
      if (term !== null && postings === null) this.byTerm.set(term, (postings = { term, entries: [], holding: 0 }));
      this.tokens.set(token, (entry = { postings, lastOrdinal: -1 }));
    }
    return entry;
  }
}

/** One more occurrence of the term in document `ordinal`, the newest document (its tokens are added together). */
function addOccurrence(postings: TermPostings, ordinal: number): void {
  const { entries } = postings;
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
function forEachPosting(entries: readonly number[], visit: (ordinal: number, tf: number) => void): void {
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as number;
    if (entry >= 0) visit(entry, 1);
    else visit(-entry - 1, entries[++i] as number);
  }
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

/** Best score first; equal scores in id order, so the list does not depend on the index's document order. */
function byScoreThenId([idA, a]: [string, number], [idB, b]: [string, number]): number {
  return b - a || idA.localeCompare(idB);
}

/** The text a turn is indexed under: "speaker: text". */
export function turnDocumentText(turn: Pick<ChunkTurn, 'speaker' | 'text'>): string {
  return `${turn.speaker}: ${turn.text}`;
}

/**
 * Calls `visit` with the id of each document the index holds for `graph`, in the graph's node
 * order, and a function that makes the document (its text is built only when asked for).
 */
function forEachLexicalDocument(graph: MemoryGraph, visit: (id: string, make: () => LexicalDoc) => void): void {
  for (const node of graph.nodes.values()) {
    switch (node.layer) {
      case 'episode': {
        const turns = graph.chunks.get(node.chunkId)?.turns ?? [];
        turns.forEach((turn, i) => {
          const id = `turn:${node.id}:${i}`;
          visit(id, () => ({ id, layer: 'episode', nodeId: node.id, dialogId: turn.dialogId, text: turnDocumentText(turn) }));
        });
        break;
      }
      case 'facet':
        visitNode(visit, 'facet', node.id, node.theme);
        break;
      case 'facetPoint':
        visitNode(visit, 'facetPoint', node.id, node.content);
        break;
      case 'entity':
        visitNode(visit, 'entity', node.id, node.name);
        break;
    }
  }
}

/** The one document of a Facet, FacetPoint or Entity: `<layer>:<node id>`, its text the node's. */
function visitNode(visit: (id: string, make: () => LexicalDoc) => void, layer: LexicalDoc['layer'], nodeId: string, text: string): void {
  const id = `${layer}:${nodeId}`;
  visit(id, () => ({ id, layer, nodeId, dialogId: '', text }));
}

/** The documents the index holds for `graph`, in the graph's node order. */
export function lexicalDocuments(graph: MemoryGraph): LexicalDoc[] {
  const docs: LexicalDoc[] = [];
  forEachLexicalDocument(graph, (_, make) => docs.push(make()));
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

/** The distinct normalised terms of a text, as the index sees them. */
export function termsOf(text: string): Set<string> {
  const terms = new Set<string>();
  for (const word of text.split(/[^\p{L}\p{N}]+/u)) {
    const term = normaliseTerm(word);
    if (term) terms.add(term);
  }
  return terms;
}
