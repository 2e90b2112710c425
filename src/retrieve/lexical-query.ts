/**
 * How a BM25 query is scored over one layer's postings without touching every document its
 * common words hold (MaxScore, Turtle and Flood 1995): pure functions over plain data, used by
 * the lexical index (lexical.ts).
 *
 * A document's score is minisearch's for an OR query: its terms' scores summed in query order (a
 * repeated term each time), times the number of distinct query terms it holds. A document that
 * holds only terms whose best possible contribution cannot reach the `k`-th best score found so
 * far cannot enter a top `k`, so the lists of those terms (the common words, long and low in
 * IDF) are no longer walked, only looked into for the documents the other lists bring. At 100K
 * messages of chat a question's words reach up to 120,000 documents; a search reads the best
 * few dozen of each layer.
 */

/** One layer's documents holding one term: ordinals ascending, the term's BM25+ score in each, and the highest of them. */
export interface LayerHits {
  ordinals: Int32Array;
  scores: Float64Array;
  max: number;
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

const NONE: LayerHits = { ordinals: new Int32Array(0), scores: new Float64Array(0), max: 0 };

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

  offer(unit: string, score: number): void {
    // At or under the threshold a score changes nothing, whether its unit is held or not: most
    // documents end here once the top is full, without looking their unit up.
    if (this.units.length === this.k && score <= this.threshold) return;
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
    if (this.units.length === this.k) this.threshold = this.scores[0] as number;
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
 * The documents of the layer that place their units among the best `k`, scored, in ordinal
 * order: every document whose score is at least the `k`-th best unit score (all of them when
 * there are fewer units), with the score a full query gives it. A unit is what a ranking lists:
 * `unitOf` names a document's (a Facet for its one document, an Episode for each of its turns,
 * which it ranks by the best), or null for a document to leave out. So the best `k` units, ties
 * included whatever breaks them, and each one's best document are all here. `k` = ∞ scores every
 * document the query reaches.
 */
export function scoreCandidates(query: LayerQuery, k: number, unitOf: (ordinal: number) => string | null): ScoredDocument[] {
  const { hits, positions } = query;
  // Each term's most a document can take from it: its best score, once per query position it holds.
  const bound = hits.map(() => 0);
  for (const term of positions) bound[term] = (bound[term] as number) + (hits[term] ?? NONE).max;
  // Terms by that bound, smallest first: the first `skippable` of them are walked no more.
  const order = hits.map((_, term) => term).sort((a, b) => (bound[a] as number) - (bound[b] as number));
  let skippable = 0;
  /** The sum of the skippable terms' bounds. */
  let skippedBound = 0;
  const cursors = new Int32Array(hits.length);
  const termScores = new Float64Array(hits.length);
  // A top 0 lists nothing: the best one is as good a bar as any.
  const top = new TopUnits(Math.max(1, k));
  const scored: ScoredDocument[] = [];
  // Scratch for the document being scored: most are dropped, so only those kept are copied.
  const document: ScoredDocument = { ordinal: 0, score: 0, reachedAt: -1 };
  for (;;) {
    let next = Number.POSITIVE_INFINITY;
    for (let i = skippable; i < order.length; i++) {
      const term = order[i] as number;
      const list = hits[term] ?? NONE;
      const at = cursors[term] as number;
      if (at < list.ordinals.length && (list.ordinals[at] as number) < next) next = list.ordinals[at] as number;
    }
    if (next === Number.POSITIVE_INFINITY) break;
    const unit = unitOf(next);
    if (unit === null) {
      // Left out: the walked lists step past it; the others catch up at the next document.
      for (let i = skippable; i < order.length; i++) {
        const term = order[i] as number;
        if ((hits[term] ?? NONE).ordinals[cursors[term] as number] === next) cursors[term] = (cursors[term] as number) + 1;
      }
      continue;
    }
    scoreWithCursors(query, next, cursors, termScores, document);
    const before = top.threshold;
    // Under the threshold now, it is under it at the end (it only rises): not kept.
    if (document.score >= before) scored.push({ ...document });
    if (k === Number.POSITIVE_INFINITY) continue;
    top.offer(unit, document.score);
    if (top.threshold === before) continue;
    // A document holding only terms of the first `skippable` scores at most their bounds' sum
    // times their count; below the threshold (strictly: an equal score could still win a tie) it
    // cannot rank.
    while (skippable < order.length && (skippedBound + (bound[order[skippable] as number] as number)) * (skippable + 1) < top.threshold) {
      skippedBound += bound[order[skippable] as number] as number;
      skippable++;
    }
  }
  // Documents scored before the threshold rose to them are dropped now.
  return scored.filter((document) => document.score >= top.threshold);
}
