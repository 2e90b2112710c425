import MiniSearch, { type AsPlainObject, type Options } from 'minisearch';
import { PrismError } from '../errors.ts';
import type { MemoryGraph } from '../graph/memory-graph.ts';
import { LAYERS, type ChunkTurn, type Layer } from '../graph/types.ts';
import { topK } from '../util/top-k.ts';

/**
 * Hybrid anchors (beyond the paper): a BM25 index over the graph's text, so names and rare
 * keywords that a sentence embedding blurs still find their nodes. minisearch scores with
 * BM25+ and runs unchanged in browsers, workers and Node.
 *
 * Documents: one per Facet (theme), FacetPoint (content) and Entity (name), and one per
 * conversation turn, which stands for its Episode (an Episode's lexical score is that of its
 * best turn; per-turn scores also pick the key turns of finer context units).
 */
interface LexicalDoc {
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

/** What `toJSON` returns; store it as JSON and hand it back to `LexicalIndex.fromJSON`. */
export interface LexicalIndexJson {
  version: 1;
  index: AsPlainObject;
}

const JSON_VERSION = 1;

export class LexicalIndex {
  /**
   * Each query term's hits (`termHits`), kept until the index changes: questions share most of
   * their terms (names, topics), and scoring a term's postings again is most of a search's cost.
   * Only terms the index holds are kept, so at most one entry per indexed term, each no longer
   * than that term's postings.
   */
  private readonly hitsByTerm = new Map<string, readonly TermHit[]>();
  /** One `HitDoc` per document id, shared by every term's hits, so a query sums a document's scores in its slot. */
  private readonly docsById = new Map<string, HitDoc>();
  /** One `HitNode` per layer and node id, shared by the node's documents, so a query keeps a node's best score in its slot. */
  private readonly nodesByKey = new Map<string, HitNode>();
  /** Slots handed out since the index last changed. */
  private docSlots = 0;
  private nodeSlots = 0;

  private constructor(
    private readonly index: MiniSearch<LexicalDoc>,
    private readonly docIds: Set<string>,
  ) {}

  static fromGraph(graph: MemoryGraph): LexicalIndex {
    const lexical = new LexicalIndex(new MiniSearch(MINISEARCH_OPTIONS), new Set());
    lexical.update(graph);
    return lexical;
  }

  static fromJSON(json: LexicalIndexJson): LexicalIndex {
    if (json.version !== JSON_VERSION) {
      throw new PrismError('STORE_VERSION', `lexical index version ${String(json.version)}, expected ${JSON_VERSION}`);
    }
    const ids = Object.values(json.index.documentIds).map(String);
    return new LexicalIndex(MiniSearch.loadJS(json.index, MINISEARCH_OPTIONS), new Set(ids));
  }

  toJSON(): LexicalIndexJson {
    return { version: JSON_VERSION, index: this.index.toJSON() };
  }

  get size(): number {
    return this.docIds.size;
  }

  /** Brings the index in step with the graph: adds documents for new nodes and turns, drops those whose node is gone. */
  update(graph: MemoryGraph): void {
    const wanted = documentsOf(graph);
    const stale = [...this.docIds].filter((id) => !wanted.has(id));
    if (stale.length > 0) this.index.discardAll(stale);
    for (const id of stale) this.docIds.delete(id);
    const fresh = [...wanted.values()].filter((doc) => !this.docIds.has(doc.id));
    this.index.addAll(fresh);
    for (const doc of fresh) this.docIds.add(doc.id);
    // Document count, lengths and postings feed every BM25 score; documents and nodes are found again as terms are.
    if (stale.length > 0 || fresh.length > 0) {
      this.hitsByTerm.clear();
      this.docsById.clear();
      this.nodesByKey.clear();
      this.docSlots = this.nodeSlots = 0;
    }
  }

  /**
   * Matches for `query`; `perLayer` caps each layer's list at its best hits (all by default), as
   * anchor fusion reads only the head of each and a long tail costs a full sort per query.
   */
  search(query: string, perLayer = Infinity): LexicalMatches {
    const hits = this.queryHits(query);
    // Each node's best document score, by node slot (sized after `queryHits`, which may hand out slots).
    const best = new Float64Array(this.nodeSlots);
    const seen = new Uint8Array(this.nodeSlots);
    const reached: HitNode[] = [];
    const turnHits: TermHit[] = [];
    // The query's hits, in the order minisearch lists them for the whole query, and not sorted:
    // each layer's list is selected below by score and id, so only the turn hits need
    // minisearch's order, and they alone are sorted as minisearch would have (stably, so ties
    // stay in index order).
    for (const hit of hits) {
      const { node } = hit.doc;
      if (seen[node.slot] === 0) {
        seen[node.slot] = 1;
        reached.push(node);
      }
      best[node.slot] = Math.max(hit.score, best[node.slot] ?? 0);
      if (node.layer === 'episode') turnHits.push(hit);
    }
    const turns = new Map<string, Map<string, number>>();
    for (const hit of turnHits.sort((a, b) => b.score - a.score)) {
      let byDialog = turns.get(hit.doc.node.id);
      if (!byDialog) turns.set(hit.doc.node.id, (byDialog = new Map()));
      byDialog.set(hit.doc.dialogId, hit.score);
    }
    const byLayer = new Map<Layer, Array<[string, number]>>(LAYERS.map((layer) => [layer, []]));
    for (const node of reached) byLayer.get(node.layer)?.push([node.id, best[node.slot] ?? 0]);
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
  private queryHits(query: string): TermHit[] {
    const terms = TOKENIZE(query).flatMap((word) => normaliseTerm(word) ?? []);
    // Looked up first: a term seen for the first time may hand out new slots.
    const hitsByPosition = terms.map((term) => this.termHits(term));
    // Sums and distinct-term counts by document slot: thousands of hits per query, no map lookups.
    const sums = new Float64Array(this.docSlots);
    const matched = new Uint32Array(this.docSlots);
    const reached: HitDoc[] = [];
    terms.forEach((term, position) => {
      const firstTime = terms.indexOf(term) === position;
      for (const { doc, score } of hitsByPosition[position] ?? []) {
        if (matched[doc.slot] === 0) reached.push(doc);
        sums[doc.slot] = (sums[doc.slot] ?? 0) + score;
        if (firstTime) matched[doc.slot] = (matched[doc.slot] ?? 0) + 1;
      }
    });
    return reached.map((doc) => ({ doc, score: (sums[doc.slot] ?? 0) * (matched[doc.slot] ?? 0) }));
  }

  /**
   * The documents holding one normalised term, each with its BM25 score for it, in minisearch's
   * order. A dirty index (documents discarded, not yet vacuumed) drops dead postings while it
   * scores, which moves the term's IDF, so then nothing is kept and each use scores afresh, as
   * a whole-query search would.
   */
  private termHits(term: string): readonly TermHit[] {
    const known = this.hitsByTerm.get(term);
    if (known) return known;
    const hits: TermHit[] = [];
    this.index.search(term, {
      // The term is already normalised: it is looked up as it is.
      tokenize: (text) => [text],
      processTerm: (text) => text,
      // Collects in minisearch's order and keeps no result list (see `search`).
      filter: (result) => {
        const id = String(result.id);
        let doc = this.docsById.get(id);
        if (!doc) {
          doc = { slot: this.docSlots++, node: this.hitNode(result['layer'] as Layer, String(result['nodeId'])), dialogId: String(result['dialogId']) };
          this.docsById.set(id, doc);
        }
        hits.push({ doc, score: result.score });
        return false;
      },
    });
    if (hits.length > 0 && this.index.dirtCount === 0) this.hitsByTerm.set(term, hits);
    return hits;
  }

  private hitNode(layer: Layer, id: string): HitNode {
    const key = `${layer}:${id}`;
    let node = this.nodesByKey.get(key);
    if (!node) this.nodesByKey.set(key, (node = { layer, id, slot: this.nodeSlots++ }));
    return node;
  }
}

/** A node documents stand for (a turn's Episode; a Facet, FacetPoint or Entity itself), and its slot in a query's per-node arrays. */
interface HitNode {
  layer: Layer;
  id: string;
  slot: number;
}

/** A matching document: its node, its dialog id (turns only), and its slot in a query's score arrays. */
interface HitDoc {
  node: HitNode;
  dialogId: string;
  slot: number;
}

/** A document's BM25 score for one query term, or for the whole query. */
interface TermHit {
  doc: HitDoc;
  score: number;
}

/** How minisearch cuts texts into words, queries included (the index keeps its default). */
const TOKENIZE = MiniSearch.getDefault('tokenize') as (text: string) => string[];

/** Best score first; equal scores in id order, so the list does not depend on the index's document order. */
function byScoreThenId([idA, a]: [string, number], [idB, b]: [string, number]): number {
  return b - a || idA.localeCompare(idB);
}

/** The text a turn is indexed under: "speaker: text". */
export function turnDocumentText(turn: Pick<ChunkTurn, 'speaker' | 'text'>): string {
  return `${turn.speaker}: ${turn.text}`;
}

function documentsOf(graph: MemoryGraph): Map<string, LexicalDoc> {
  const docs = new Map<string, LexicalDoc>();
  const put = (doc: LexicalDoc): void => void docs.set(doc.id, doc);
  for (const node of graph.nodes.values()) {
    switch (node.layer) {
      case 'episode':
        graph.chunks.get(node.chunkId)?.turns.forEach((turn, i) =>
          put({ id: `turn:${node.id}:${i}`, layer: 'episode', nodeId: node.id, dialogId: turn.dialogId, text: turnDocumentText(turn) }),
        );
        break;
      case 'facet':
        put({ id: `facet:${node.id}`, layer: 'facet', nodeId: node.id, dialogId: '', text: node.theme });
        break;
      case 'facetPoint':
        put({ id: `facetPoint:${node.id}`, layer: 'facetPoint', nodeId: node.id, dialogId: '', text: node.content });
        break;
      case 'entity':
        put({ id: `entity:${node.id}`, layer: 'entity', nodeId: node.id, dialogId: '', text: node.name });
        break;
    }
  }
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

const MINISEARCH_OPTIONS: Options<LexicalDoc> = {
  idField: 'id',
  fields: ['text'],
  storeFields: ['layer', 'nodeId', 'dialogId'],
  processTerm: normaliseTerm,
};
