/**
 * How a BM25 query is scored over one layer's postings: pure functions over plain data, used by
 * the lexical index (lexical.ts).
 *
 * A document's score is minisearch's for an OR query: its terms' scores summed in query order (a
 * repeated term each time), times the number of distinct query terms it holds. At 100K messages
 * of chat a question's words reach up to 120,000 documents; a search reads the best few dozen of
 * each layer.
 */

/** One layer's documents holding one term: ordinals ascending, and the term's BM25+ score in each. */
export interface LayerHits {
  ordinals: Int32Array;
  scores: Float64Array;
}

/** A query over one layer. */
export interface LayerQuery {
  /** Each distinct query term's hits in the layer, in the order the terms first occur. */
  hits: readonly LayerHits[];
  /** The distinct term (an index into `hits`) at each position of the query. */
  positions: readonly number[];
}

/** A document scored for a query. */
export interface ScoredDocument {
  ordinal: number;
  score: number;
  /**
   * The first query position whose term the document holds. With the ordinal it orders
   * documents as a full OR query reaches them (term by term in query order, each term's
   * documents in index order): the order minisearch lists equal scores in.
   */
  reachedAt: number;
}

const NONE: LayerHits = { ordinals: new Int32Array(0), scores: new Float64Array(0) };

/** The first index at or after `from` whose ordinal is at least `target` (`ordinals.length` when none): a gallop, then a binary search. */
function seek(ordinals: Int32Array, from: number, target: number): number {
  if (from >= ordinals.length || (ordinals[from] as number) >= target) return from;
  let low = from;
  let step = 1;
  let high = from + step;
  while (high < ordinals.length && (ordinals[high] as number) < target) {
    low = high;
    step *= 2;
    high = from + step;
  }
  high = Math.min(high, ordinals.length);
  // ordinals[low] < target; the answer is in (low, high].
  while (low + 1 < high) {
    const mid = (low + high) >>> 1;
    if ((ordinals[mid] as number) < target) low = mid;
    else high = mid;
  }
  return high;
}

/**
 * Scores document `ordinal` into `out`, moving each term's cursor to its first hit at or after it
 * (and past it when the term holds it); the cursors only move forward, so documents go in
 * ascending order. False when the document holds no query term. The sum is taken in query
 * order, as minisearch adds it, so scores are equal to the last bit. `termScores` is scratch:
 * each term's score in the document, −1 where it has none (BM25+ scores are positive).
 */
function scoreWithCursors(query: LayerQuery, ordinal: number, cursors: Int32Array, termScores: Float64Array, out: ScoredDocument): boolean {
  const { hits, positions } = query;
  let matched = 0;
  for (let term = 0; term < hits.length; term++) {
    const list = hits[term] ?? NONE;
    const at = seek(list.ordinals, cursors[term] as number, ordinal);
    if (at < list.ordinals.length && list.ordinals[at] === ordinal) {
      termScores[term] = list.scores[at] as number;
      matched++;
      cursors[term] = at + 1;
    } else {
      termScores[term] = -1;
      cursors[term] = at;
    }
  }
  if (matched === 0) return false;
  let sum = 0;
  let reachedAt = -1;
  for (let position = 0; position < positions.length; position++) {
    const score = termScores[positions[position] as number] as number;
    if (score < 0) continue;
    if (reachedAt < 0) reachedAt = position;
    sum += score;
  }
  out.ordinal = ordinal;
  out.score = sum * matched;
  out.reachedAt = reachedAt;
  return true;
}

/** The documents `ordinals` that hold a query term, scored, in ordinal order: one pass of the cursors over them. */
export function scoreDocuments(query: LayerQuery, ordinals: readonly number[]): ScoredDocument[] {
  const cursors = new Int32Array(query.hits.length);
  const termScores = new Float64Array(query.hits.length);
  return [...ordinals]
    .sort((a, b) => a - b)
    .flatMap((ordinal) => {
      const document: ScoredDocument = { ordinal, score: 0, reachedAt: -1 };
      return scoreWithCursors(query, ordinal, cursors, termScores, document) ? [document] : [];
    });
}

/**
 * The best `k` units' scores so far, in a min-heap, and the lowest of them once there are `k`:
 * the score a document must beat to matter. It only rises, as units come in and their scores
 * rise (a unit's score rising moves it down the heap).
 */
class TopUnits {
  private readonly units: string[] = [];
  private readonly scores: number[] = [];
  private readonly slotOf = new Map<string, number>();
  threshold = Number.NEGATIVE_INFINITY;

  constructor(private readonly k: number) {}

  /** Whether it holds `k` units (the threshold is then theirs). */
  get full(): boolean {
    return this.units.length === this.k;
  }

  offer(unit: string, score: number): void {
    // At or under the threshold a score changes nothing, whether its unit is held or not: most
    // documents end here once the top is full, without looking their unit up.
    if (this.full && score <= this.threshold) return;
    const at = this.slotOf.get(unit);
    if (at !== undefined) {
      if (score <= (this.scores[at] as number)) return;
      this.scores[at] = score;
      this.siftDown(at);
    } else if (this.units.length < this.k) {
      this.units.push(unit);
      this.scores.push(score);
      this.slotOf.set(unit, this.units.length - 1);
      this.siftUp(this.units.length - 1);
    } else {
      if (score <= this.threshold) return;
      // The unit at the threshold leaves (one of them, when several share it).
      this.slotOf.delete(this.units[0] as string);
      this.units[0] = unit;
      this.scores[0] = score;
      this.slotOf.set(unit, 0);
      this.siftDown(0);
    }
    if (this.full) this.threshold = this.scores[0] as number;
  }

  private siftUp(from: number): void {
    let at = from;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if ((this.scores[parent] as number) <= (this.scores[at] as number)) return;
      this.swap(at, parent);
      at = parent;
    }
  }

  private siftDown(from: number): void {
    let at = from;
    for (;;) {
      const left = 2 * at + 1;
      const right = left + 1;
      let least = at;
      if (left < this.units.length && (this.scores[left] as number) < (this.scores[least] as number)) least = left;
      if (right < this.units.length && (this.scores[right] as number) < (this.scores[least] as number)) least = right;
      if (least === at) return;
      this.swap(at, least);
      at = least;
    }
  }

  private swap(a: number, b: number): void {
    const [unitA, unitB] = [this.units[a] as string, this.units[b] as string];
    [this.units[a], this.units[b]] = [unitB, unitA];
    [this.scores[a], this.scores[b]] = [this.scores[b] as number, this.scores[a] as number];
    this.slotOf.set(unitB, a);
    this.slotOf.set(unitA, b);
  }
}

/**
 * Documents a block of the accumulation covers: their sums and counts (`sums`, 16 bytes a
 * document) stay in the core's cache while every query position adds into them.
 */
const BLOCK_DOCUMENTS = 1 << 14;

/**
 * Each document of the block being added up: its sum of its terms' scores (at 2 × its place in
 * the block) and count of distinct query terms (at 2 × its place + 1), side by side, so that a
 * posting reads and writes one place. Zero wherever no block is being added up: each block sets
 * back what it touched. At 100K messages of chat a question's postings are spread over ~600,000
 * documents; sums by ordinal for all of them (~10 MB) missed the cache at most postings, and
 * reaching them was most of what adding them up cost.
 */
const sums = new Float64Array(2 * BLOCK_DOCUMENTS);

/**
 * A query's documents in the order it reaches them (block by block, and within a block in the
 * order it first reaches them), the first query position that reaches each, and
 * their scores: room for as many as the longest query's postings, kept between queries (a
 * search at 100K messages reached ~60,000 documents, and made ~1 MB of these for the collector).
 * `unitOf` only names a document's unit: scoring is never re-entered while they are in use.
 */
let touchedRoom = new Int32Array(0);
let reachedAtRoom = new Int32Array(0);
let scoresRoom = new Float64Array(0);

function reserveDocuments(count: number): void {
  if (touchedRoom.length >= count) return;
  const size = Math.max(count, 2 * touchedRoom.length, 1024);
  touchedRoom = new Int32Array(size);
  reachedAtRoom = new Int32Array(size);
  scoresRoom = new Float64Array(size);
}

/**
 * The `k`-th best unit's score (a unit scores as its best document), or −∞ when fewer units hold
 * a query term; `scores[i]` is document `touched[i]`'s. Only the best documents are named: the
 * units of the best few times `k` documents hold every unit whose score is above the lowest of
 * those documents', so once they are `k` or more units, their `k`-th best is the one of all. Fewer
 * (an Episode's turns are many documents of one unit, and `unitOf` may leave documents out), it
 * takes four times as many.
 */
function unitThreshold(scores: Float64Array, touched: Int32Array, k: number, unitOf: (ordinal: number) => string | null): number {
  for (let count = 4 * k; ; count *= 4) {
    const best = bestPlaces(scores, count);
    // A top 0 lists nothing: the best one is as good a bar as any.
    const top = new TopUnits(Math.max(1, k));
    for (const i of best) {
      const unit = unitOf(touched[i] as number);
      if (unit !== null) top.offer(unit, scores[i] as number);
    }
    if (top.full || best.length === scores.length) return top.threshold;
  }
}

/**
 * The places of the `count` highest of `scores` (all of them when there are no more), in no
 * particular order: a min-heap of places over the typed scores. `util/top-k.ts`'s `topK` gives
 * the same set, but over an array of ~60,000 places with a comparator call each it took a 100K
 * search's BM25 scoring from ~6 to ~11 ms.
 */
function bestPlaces(scores: Float64Array, count: number): Int32Array {
  if (scores.length <= count) return Int32Array.from(scores.keys());
  const heap = new Int32Array(count);
  const below = (a: number, b: number) => (scores[heap[a] as number] as number) < (scores[heap[b] as number] as number);
  const swap = (a: number, b: number) => {
    const held = heap[a] as number;
    heap[a] = heap[b] as number;
    heap[b] = held;
  };
  const siftDown = (from: number, size: number) => {
    for (let at = from; ; ) {
      const left = 2 * at + 1;
      let least = at;
      if (left < size && below(left, least)) least = left;
      if (left + 1 < size && below(left + 1, least)) least = left + 1;
      if (least === at) return;
      swap(at, least);
      at = least;
    }
  };
  for (let i = 0; i < count; i++) heap[i] = i;
  for (let i = (count >> 1) - 1; i >= 0; i--) siftDown(i, count);
  for (let i = count; i < scores.length; i++) {
    // Most documents score under the lowest of the best so far: one comparison each.
    if ((scores[i] as number) <= (scores[heap[0] as number] as number)) continue;
    heap[0] = i;
    siftDown(0, count);
  }
  return heap;
}

/**
 * The documents of the layer that place their units among the best `k`, scored, in ordinal
 * order: every document whose score is at least the `k`-th best unit score (all of them when
 * there are fewer units), with the score a full query gives it. A unit is what a ranking lists:
 * `unitOf` names a document's (a Facet for its one document, an Episode for each of its turns,
 * which it ranks by the best), or null for a document to leave out. So the best `k` units, ties
 * included whatever breaks them, and each one's best document are all here. `k` = ∞ scores every
 * document the query reaches.
 *
 * Term at a time, a block of documents at a time: within each block of `BLOCK_DOCUMENTS`
 * ordinals, each query position's list adds its scores into the documents' sums, in query order,
 * so every sum is the one a document-at-a-time walk takes, to the last bit. A posting costs an
 * add into a block that stays in the cache; walking the lists document by document, skipping the
 * common words' lists once they could no longer rank a document (MaxScore), cost about a
 * microsecond a document, and at 100K messages a question's walk went through 4,000–34,000 of
 * them, since a top of 30 units often needs the documents that hold one common word alone.
 */
export function scoreCandidates(query: LayerQuery, k: number, unitOf: (ordinal: number) => string | null): ScoredDocument[] {
  const { hits, positions } = query;
  let end = 0;
  let postings = 0;
  for (const list of hits) {
    const held = list.ordinals.length;
    if (held > 0) end = Math.max(end, (list.ordinals[held - 1] as number) + 1);
    postings += held;
  }
  reserveDocuments(postings);
  const touched = touchedRoom;
  const reachedAt = reachedAtRoom;
  const documentScores = scoresRoom;
  let reached = 0;
  // Where each distinct term's list enters the block, and where it leaves it (every position of a repeated term reads the same stretch).
  const entered = new Int32Array(hits.length);
  const left = new Int32Array(hits.length);
  const counted = new Uint8Array(hits.length);
  for (let blockStart = 0; blockStart < end; blockStart += BLOCK_DOCUMENTS) {
    const blockEnd = blockStart + BLOCK_DOCUMENTS;
    const firstOfBlock = reached;
    counted.fill(0);
    for (let position = 0; position < positions.length; position++) {
      const term = positions[position] as number;
      const { ordinals, scores } = hits[term] ?? NONE;
      // A repeated term adds its score again, but counts once.
      const firstTime = counted[term] === 0;
      counted[term] = 1;
      let i = entered[term] as number;
      for (; i < ordinals.length; i++) {
        const ordinal = ordinals[i] as number;
        if (ordinal >= blockEnd) break;
        const at = 2 * (ordinal - blockStart);
        if (sums[at + 1] === 0) {
          touched[reached] = ordinal;
          reachedAt[reached++] = position;
        }
        sums[at] = (sums[at] as number) + (scores[i] as number);
        if (firstTime) sums[at + 1] = (sums[at + 1] as number) + 1;
      }
      left[term] = i;
    }
    entered.set(left);
    for (let d = firstOfBlock; d < reached; d++) {
      const at = 2 * ((touched[d] as number) - blockStart);
      documentScores[d] = (sums[at] as number) * (sums[at + 1] as number);
      sums[at] = 0;
      sums[at + 1] = 0;
    }
  }
  const scoresOfReached = documentScores.subarray(0, reached);
  const threshold = k === Number.POSITIVE_INFINITY ? Number.NEGATIVE_INFINITY : unitThreshold(scoresOfReached, touched, k, unitOf);
  const scored: ScoredDocument[] = [];
  for (let i = 0; i < reached; i++) {
    const score = scoresOfReached[i] as number;
    if (score >= threshold && unitOf(touched[i] as number) !== null) scored.push({ ordinal: touched[i] as number, score, reachedAt: reachedAt[i] as number });
  }
  return scored.sort((a, b) => a.ordinal - b.ordinal);
}
