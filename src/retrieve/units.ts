import type { PrismConfig } from '../config.ts';
import type { MemoryGraph } from '../graph/memory-graph.ts';
import type { Chunk, ChunkTurn, EpisodeFact } from '../graph/types.ts';
import { turnLine, turnLineHead } from '../graph/chunk-text.ts';
import { factCosines, factPoints, type EpisodeFacts, type QueryEvidence } from './evidence.ts';
import { fallsOn } from './dates.ts';
import { SentenceWeighing, type Excerpt } from './excerpt.ts';
import { sharedTermCount } from './lexical.ts';
import { countKeptTokens, countTokens } from '../util/tokens.ts';
import { utf8Length } from '../util/ascii.ts';
import { LruCache } from '../util/lru-cache.ts';
import { vectorDot, vectorPairDot } from '../graph/vector-table.ts';
import type { ContextUnit } from './pack.ts';
import type { PathTrace, RankedEpisode } from './types.ts';

/**
 * `episode`: all turns of an Episode; `turn`: one turn of it (fine units); `excerpt`: the
 * best sentences of one turn too long for a unit (see `maxTurnTokens`).
 */
export type UnitKind = 'episode' | 'turn' | 'excerpt';

export interface RetrievedUnit extends ContextUnit {
  episodeId: string;
  kind: UnitKind;
  /** The N1 path that brought the unit's Episode into the bundle. */
  trace: PathTrace;
}

/**
 * Context units for ranked Episodes, in the order the packer should take them: whole Episodes,
 * or, given the token budget they serve (`fineBudget`), every turn of the ranked Episodes
 * scored on its own (see `turnScore`) and offered as a unit, best first, so a tight budget
 * holds the best evidence from several Episodes rather than all of one. `anchorOnly` Episodes
 * (outside the ranking) offer only their turn anchors (see `turnAnchors`), scored without an
 * Episode term.
 */
export function buildUnits(
  graph: MemoryGraph,
  ranked: readonly RankedEpisode[],
  evidence: QueryEvidence,
  config: PrismConfig,
  fineBudget: number | null,
  anchorOnly: readonly RankedEpisode[] = [],
): RetrievedUnit[] {
  const resolve = (episode: RankedEpisode, onlyAnchored: boolean) => {
    const node = graph.nodes.get(episode.episodeId);
    const chunk = node?.layer === 'episode' ? graph.chunks.get(node.chunkId) : undefined;
    return node?.layer === 'episode' && chunk && chunk.turns.length > 0 ? [{ episode, node, chunk, onlyAnchored }] : [];
  };
  const episodes = ranked.flatMap((episode) => resolve(episode, false));
  if (fineBudget === null) {
    return episodes.map(({ episode, node, chunk }) => ({
      ...turnsText(chunk.turns),
      id: node.id,
      episodeId: node.id,
      header: chunk.header,
      score: episode.score,
      time: node.time ?? chunk.time,
      trace: episode.trace,
      kind: 'episode',
    }));
  }
  const w = config.retrieval.turnScore;
  const { reply: replyWeight, otherSpeaker } = config.retrieval.meaningRoute;
  // On the meaning route, the side of an assistant chat the query's pronouns do not point at (when they point at one).
  const isOtherSpeaker = (speaker: string): boolean => evidence.pronounSpeakers.size > 0 && !evidence.pronounSpeakers.has(speaker);
  // One long turn may take at most half the budget, so it never crowds out all other evidence.
  const maxTurnTokens = Math.min(config.retrieval.maxTurnTokens, Math.floor(fineBudget / 2));
  const fitsRemainder = config.retrieval.fitRemainder > 0;
  const lexicalMax = Math.max(0, evidence.lexicalTurns.best?.score ?? 0);
  const scores = episodes.map((e) => e.episode.score);
  const [lo, hi] = [Math.min(...scores), Math.max(...scores)];
  // Anchored turns of Episodes outside the selection join on their own turn evidence alone.
  episodes.push(...anchorOnly.flatMap((episode) => resolve(episode, true)));
  const units: RetrievedUnit[] = [];
  for (const { episode, node, chunk, onlyAnchored } of episodes) {
    const episodeWeight = onlyAnchored ? 0 : hi > lo ? (episode.score - lo) / (hi - lo) : 1;
    const anchored = evidence.turnAnchors.get(node.id);
    // The meaning route reads no fact cosine (but an excerpt of a long turn does, below).
    const facts = evidence.byMeaning ? null : factCosines(graph, node.id, evidence);
    const index = turnIndexOf(facts?.points ?? factPoints(graph, node.id), chunk, node.id);
    const ofTurn = facts ? turnFacts(facts, index, graph.vectors, evidence.queryVector, w.exchange !== 0) : [];
    const lexical = evidence.lexicalTurns.get(node.id);
    const lexicalOfTurn = chunk.turns.map((turn) => (lexicalMax > 0 ? (evidence.lexicalWeight * (lexical?.get(turn.dialogId) ?? 0)) / lexicalMax : 0));
    const factOf = (i: number): number => Math.max(0, ofTurn[i]?.fact ?? 0);
    const lexicalOf = (i: number): number => lexicalOfTurn[i] ?? 0;
    // The N1 path relevance of the Episode, shared by its turns: how close the best path to it is.
    const episodeTerm = onlyAnchored ? 0 : w.episode * episodeWeight + w.relevance * (1 - episode.cost);
    // A query naming a date asks about what was said that day, or about what happened then.
    const sessionOnDate = fallsOn(node.time ?? chunk.time, evidence.dates);
    const onDate = (i: number): boolean =>
      sessionOnDate || (evidence.dates.length > 0 && (ofTurn[i]?.points ?? []).some((index) => fallsOn(facts?.points[index]?.time ?? null, evidence.dates)));
    // exchanges[i]: the exchange of turns i and i + 1 (0 when either has no Facet).
    const exchanges = w.exchange === 0 || !facts ? [] : ofTurn.slice(1).map((next, i) => exchangeCosine(graph.vectors, ofTurn[i]?.exchangeFacet, next?.exchangeFacet));
    const anchorAt = (i: number): number | undefined => {
      const next = chunk.turns[i];
      return next ? anchored?.get(next.dialogId) : undefined;
    };
    // On the meaning route a turn is ranked by its own cosine, or by its reply's (the next turn's)
    // times `reply`: a reply often restates in general terms what the remark it answers said in
    // particular, and so can be the closer of the two to a later remark about it.
    const meaningOf = (i: number): number | undefined => {
      const own = anchorAt(i);
      const reply = replyWeight > 0 ? anchorAt(i + 1) : undefined;
      return own === undefined && reply === undefined ? undefined : Math.max(0, own ?? 0, replyWeight * (reply ?? 0));
    };
    const ofEpisode: EpisodeOfUnits = {
      episodeId: node.id,
      header: chunk.header,
      time: node.time ?? chunk.time,
      trace: episode.trace,
      // Asked for by excerpts of long turns, on the meaning route too (where `facts` is null).
      facts: () => facts ?? factCosines(graph, node.id, evidence),
      queryTerms: evidence.queryTerms,
      fitsRemainder,
    };
    chunk.turns.forEach((turn, i) => {
      const anchorCosine = anchored?.get(turn.dialogId);
      const meaning = evidence.byMeaning ? meaningOf(i) : undefined;
      if (onlyAnchored && anchorCosine === undefined && meaning === undefined) return;
      // On the meaning route turns that are neither anchors nor their remarks follow, in Episode order.
      const score = evidence.byMeaning
        ? (meaning ?? 0) * (isOtherSpeaker(turn.speaker) ? otherSpeaker : 1)
        :
        episodeTerm +
        w.fact * factOf(i) +
        w.facet * Math.max(0, ofTurn[i]?.facet ?? 0) +
        w.lexical * lexicalOf(i) +
        // A reply or the remark it answers often holds the evidence the matching turn points at.
        w.neighbourFact * Math.max(factOf(i - 1), factOf(i + 1)) +
        w.neighbourLexical * Math.max(lexicalOf(i - 1), lexicalOf(i + 1)) +
        w.exchange * Math.max(0, exchanges[i - 1] ?? 0, exchanges[i] ?? 0) +
        // A query that names a person, or whose pronouns point at a side of an assistant chat, asks
        // most of the time about what that speaker said (`speakerTermsOf`).
        (evidence.speakerTerms.get(turn.speaker) ?? 0) +
        (onDate(i) ? w.date : 0) -
        (index.asks[i] ? w.question : 0) +
        w.anchor * evidence.anchorWeight * Math.max(0, anchorCosine ?? 0);
      const unit = new TurnUnit(turn, index.lines[i] ?? turnLine(turn), index.unitIds[i] ?? `${node.id}#${turn.dialogId}`, score, index.points[i] ?? [], ofEpisode);
      // Byte-level BPE spends at least one UTF-8 byte per token, so short lines are never long.
      if ((index.bytes[i] ?? Infinity) > maxTurnTokens) unit.capAt(maxTurnTokens);
      units.push(unit);
    });
  }
  // Stable: equal scores keep Episode rank, then conversation order.
  return units.map((u, i) => ({ u, i })).sort((a, b) => b.u.score - a.u.score || a.i - b.i).map(({ u }) => u);
}

/**
 * The packer's `fit` for fine units: a turn that does not fit whole in what is left of the
 * budget is offered as its best sentences that do (whole sentences only, as an excerpt), so
 * better-ranked evidence goes in before lower-ranked turns fill the rest. An Episode unit, or a
 * turn whose best sentence does not fit, has none.
 */
export function fitUnit(unit: RetrievedUnit, maxTokens: number): RetrievedUnit | null {
  const excerpt = unit instanceof TurnUnit ? unit.within(maxTokens) : null;
  if (excerpt === null) return null;
  const fitted: RetrievedUnit = { ...unit, text: excerpt.text, kind: 'excerpt' };
  excerptTokens.set(fitted, excerpt.tokens);
  return fitted;
}

/** Token counts of the excerpts `fitUnit` made, by the unit: weighing its sentences counted them. */
const excerptTokens = new WeakMap<RetrievedUnit, number>();

/**
 * Tokens of a unit's text: a whole turn's as its record kept them, an excerpt's as weighing it
 * counted them, any other counted (the packer weighs hundreds of units per query).
 */
export function unitTokens(unit: RetrievedUnit): number {
  return unit instanceof TurnUnit ? unit.tokens() : (excerptTokens.get(unit) ?? countTokens(unit.text));
}

/**
 * Tokens a unit's text has at least: the packer's way past a long turn whose excerpt cannot fit
 * what is left of the budget without making the excerpt. Once the budget is nearly full, packing
 * reads on through the ranking for units small enough, and most long turns it meets there
 * would be weighed sentence by sentence only to be skipped (on LongMemEval chat, tens a query);
 * where its line's head alone is over `room`, the tokens left for it, not even its best sentence
 * is looked for. Exact for any other unit.
 */
export function unitLeastTokens(unit: RetrievedUnit, room: number): number {
  return unit instanceof TurnUnit ? unit.leastTokens(room) : unitTokens(unit);
}

/** What the turn units of one Episode share: their Episode's fields, and what weighing their sentences reads. */
interface EpisodeOfUnits {
  episodeId: string;
  header: string;
  time: string | null;
  trace: PathTrace;
  /** The Episode's fact cosines to the query. */
  facts: () => EpisodeFacts;
  queryTerms: ReadonlySet<string>;
  /** Whether packing may fit a turn's best sentences into what is left of the budget (`fitRemainder`). */
  fitsRemainder: boolean;
}

/**
 * A unit made of one turn. What packing asks of it besides its fields (its tokens, the least an
 * excerpt of it can have, its best sentences within a number of tokens) it answers from private
 * fields, which a spread or JSON does not copy: hundreds are built per query, and a closure and
 * a WeakMap entry per unit for each of them were most of what building them cost.
 */
class TurnUnit implements RetrievedUnit {
  // Declared in the order the plain units had their fields, so results read the same.
  text: string;
  dialogIds: string[];
  id: string;
  episodeId: string;
  header: string;
  score: number;
  time: string | null;
  trace: PathTrace;
  kind: UnitKind = 'turn';
  readonly #turn: ChunkTurn;
  /** Indices of the turn's FacetPoints in its Episode's `EpisodeFacts`. */
  readonly #points: readonly number[];
  readonly #episode: EpisodeOfUnits;
  /** Made when an excerpt or its bound is first asked for, then shared by them. */
  #weighing: SentenceWeighing | undefined;
  /** Tokens of the excerpt the unit became (`capAt`). */
  #excerptTokens: number | undefined;
  /** For a turn `capAt` may cut: the least tokens its text can have. */
  #least: ((room: number) => number) | undefined;

  constructor(turn: ChunkTurn, line: string, id: string, score: number, points: readonly number[], episode: EpisodeOfUnits) {
    this.text = line;
    this.dialogIds = [turn.dialogId];
    this.id = id;
    this.episodeId = episode.episodeId;
    this.header = episode.header;
    this.score = score;
    this.time = episode.time;
    this.trace = episode.trace;
    this.#turn = turn;
    this.#points = points;
    this.#episode = episode;
  }

  /** Makes the unit its excerpt within `maxTokens` if its line is over that (worked out when its text or kind is first read). */
  capAt(maxTokens: number): void {
    const line = this.text;
    const long = () => countKeptTokens(line, this.#turn.lineTokens) > maxTokens;
    const resolved = resolveWhenRead(this, () => {
      if (!long()) return { text: line, kind: 'turn' };
      const excerpt = this.#weigh().excerpt(maxTokens);
      this.#excerptTokens = excerpt.tokens;
      return { text: excerpt.text, kind: 'excerpt' };
    });
    // Before it is resolved, an excerpt's least tokens (see `unitLeastTokens`).
    this.#least = (room) => (resolved() || !long() ? this.tokens() : this.#weigh().leastTokens(maxTokens, room));
  }

  tokens(): number {
    return this.kind === 'turn' ? countKeptTokens(this.text, this.#turn.lineTokens) : (this.#excerptTokens ?? countTokens(this.text));
  }

  /** `unitLeastTokens`: any bound over `room` may be given once one is known. */
  leastTokens(room: number): number {
    return this.#least?.(room) ?? this.tokens();
  }

  /** Its best sentences within `maxTokens` (`SentenceWeighing.within`); null when packing fits no remainder. */
  within(maxTokens: number): Excerpt | null {
    return this.#episode.fitsRemainder ? this.#weigh().within(maxTokens) : null;
  }

  #weigh(): SentenceWeighing {
    // The Episode's fact cosines are read only once sentences are ranked: on the meaning route
    // they are worked out for an Episode when first needed, and a turn packing passes by needs none.
    this.#weighing ??= new SentenceWeighing(this.#turn, () => sentenceScore(this.#episode.facts(), this.#points, this.#episode.queryTerms));
    return this.#weighing;
  }
}

/**
 * Makes a unit's `text` and `kind` what `resolve` gives, worked out when they are first read.
 * Whether a long-looking turn is over `maxTurnTokens`, and its excerpt if so, cost counting its
 * line and weighing its sentences: most of a search's work on long chat turns, while packing reads
 * only the units it reaches, a small share of those built. Both stay enumerable, so a spread or
 * JSON reads the resolved values. Returns whether they have been worked out yet.
 */
function resolveWhenRead(unit: RetrievedUnit, resolve: () => Pick<RetrievedUnit, 'text' | 'kind'>): () => boolean {
  let resolved: Pick<RetrievedUnit, 'text' | 'kind'> | undefined;
  const read = () => (resolved ??= resolve());
  Object.defineProperties(unit, {
    text: { get: () => read().text, enumerable: true },
    kind: { get: () => read().kind, enumerable: true },
  });
  return () => resolved !== undefined;
}

/** A Facet by id and its cosine to the query. */
interface FacetCosine {
  id: string;
  cosine: number;
}

/** What the FacetPoints taken from one turn say about the query. */
interface TurnFacts {
  /** Best cosine of one of them (`turnScore.fact`). */
  fact: number;
  /** Best cosine of a Facet holding one of them (`turnScore.facet`). */
  facet: number;
  /** The Facet closest to the query among those holding one of them and having a vector (`turnScore.exchange`). */
  exchangeFacet: FacetCosine | undefined;
  /** Their indices in the Episode's `EpisodeFacts`, in its order (for excerpts of long turns). */
  points: readonly number[];
}

/**
 * What fine units need of an Episode's turns that is the same for every query: each turn's
 * FacetPoints and Facets, line, unit id. Kept for the graph's FacetPoint list for the Episode (the
 * graph replaces that list when a node or edge changes), the Episodes searches reached lately
 * only (`turnIndexes`); one string per line is also one token-count lookup that needs no
 * rehashing. Vectors are not kept here: they are read from the graph every query.
 */
interface TurnIndex {
  chunk: Chunk;
  episodeId: string;
  /** The Episode's Facets, in the order their FacetPoints come. */
  facetIds: readonly string[];
  /** By turn position in the chunk: indices of its FacetPoints in `EpisodeFacts.points`, in order (null: none). */
  points: readonly (readonly number[] | null)[];
  /** By turn position: slots in `facetIds` of the Facets holding those FacetPoints, first seen first. */
  facets: readonly (readonly number[])[];
  /** By turn position: the turn's unit id, `<episodeId>#<dialogId>`. */
  unitIds: readonly string[];
  /** By turn position: does the turn end by asking (see `endsAsking`)? */
  asks: readonly boolean[];
  /** By turn position: the turn's line (`turnLine`) and its UTF-8 length (see `utf8Length`). */
  lines: readonly string[];
  bytes: readonly number[];
}

/**
 * Turn indexes by FacetPoint list, least recently used first out past 8M characters of turn
 * text. Kept for as long as each list lived, they grew with every Episode a long-running process
 * had searched, to a second copy of its whole text in turn lines.
 */
const turnIndexes = new LruCache<readonly EpisodeFact[], TurnIndex>(8_000_000, (index) => index.chunk.text.length);

function turnIndexOf(points: readonly EpisodeFact[], chunk: Chunk, episodeId: string): TurnIndex {
  const known = turnIndexes.get(points);
  if (known?.chunk === chunk && known.episodeId === episodeId) return known;
  const facetSlots = new Map<string, number>();
  const byDialog = new Map<string, { points: number[]; facets: number[] }>();
  points.forEach((point, index) => {
    let slot = facetSlots.get(point.facetId);
    if (slot === undefined) facetSlots.set(point.facetId, (slot = facetSlots.size));
    for (const dialogId of point.dialogIds) {
      let turn = byDialog.get(dialogId);
      if (!turn) byDialog.set(dialogId, (turn = { points: [], facets: [] }));
      turn.points.push(index);
      if (!turn.facets.includes(slot)) turn.facets.push(slot);
    }
  });
  const ofTurn = chunk.turns.map((turn) => byDialog.get(turn.dialogId));
  const lines = chunk.turns.map(turnLine);
  const index: TurnIndex = {
    chunk,
    episodeId,
    facetIds: [...facetSlots.keys()],
    points: ofTurn.map((t) => t?.points ?? null),
    facets: ofTurn.map((t) => t?.facets ?? []),
    unitIds: chunk.turns.map((turn) => `${episodeId}#${turn.dialogId}`),
    asks: chunk.turns.map((turn) => endsAsking(turn.text)),
    lines,
    bytes: chunk.turns.map(turnLineBytes),
  };
  turnIndexes.set(points, index);
  return index;
}

/**
 * The Episode's fact cosines gathered by turn, in the chunk's turn order (undefined: the turn
 * gave no FacetPoint). The exchange Facet is looked up only when `exchange` is on.
 */
function turnFacts(facts: EpisodeFacts, index: TurnIndex, vectors: ReadonlyMap<string, Float32Array>, queryVector: Float32Array, exchange: boolean): (TurnFacts | undefined)[] {
  // A Facet holds several FacetPoints: its cosine is taken once per query (0 without a vector),
  // from the kept vector without decoding it.
  const facetCosines = index.facetIds.map((id) => vectorDot(vectors, id, queryVector));
  return index.points.map((points, i) => {
    if (points === null) return undefined;
    let fact = -1;
    for (const p of points) fact = Math.max(facts.cosines[p] ?? 0, fact);
    let facet = -1;
    let exchangeFacet: TurnFacts['exchangeFacet'];
    for (const slot of index.facets[i] ?? []) {
      const cosine = facetCosines[slot] ?? 0;
      facet = Math.max(cosine, facet);
      if (!exchange || facetCosines[slot] === undefined || cosine <= (exchangeFacet?.cosine ?? -Infinity)) continue;
      exchangeFacet = { id: index.facetIds[slot] as string, cosine };
    }
    return { fact, facet, exchangeFacet, points };
  });
}

/**
 * Cosine between the query and the normalised sum of two unit vectors a and b, from their own
 * cosines to the query: (q·a + q·b) / |a + b|, where |a + b|² = 2 + 2 a·b. The dot a·b is read
 * from the kept records, neither vector decoded: decoding them was ~7% of a search at 100K
 * messages.
 */
function exchangeCosine(vectors: ReadonlyMap<string, Float32Array>, a: FacetCosine | undefined, b: FacetCosine | undefined): number {
  if (!a || !b) return 0;
  const ab = vectorPairDot(vectors, a.id, b.id);
  if (ab === undefined) return 0;
  return (a.cosine + b.cosine) / Math.sqrt(Math.max(2 + 2 * ab, Number.EPSILON));
}

/** Characters that may close a question after its "?": quotes, brackets, spaces. */
const CLOSERS = new Set(['"', "'", '\u201d', '\u2019', ')', ']', ' ', '\n', '\t']);

/** Does the text end by asking: is its last character, closing quotes and brackets aside, a "?"? */
export function endsAsking(text: string): boolean {
  let i = text.length - 1;
  while (i >= 0 && CLOSERS.has(text[i] as string)) i--;
  return text[i] === '?';
}

function turnsText(turns: readonly ChunkTurn[]): { text: string; dialogIds: string[] } {
  return { text: turns.map(turnLine).join('\n'), dialogIds: turns.map((t) => t.dialogId) };
}

/**
 * `utf8Length` of the turn's line, from its parts: reading the line itself would flatten it
 * into a copy of the turn's text, kept as long as the index is (~10 MB on 10K chat messages
 * after 40 searches).
 */
function turnLineBytes(turn: ChunkTurn): number {
  return utf8Length(turnLineHead(turn)) + utf8Length(turn.text);
}


/**
 * How well one sentence of a long turn answers the query: the cosine of the turn's FacetPoint
 * that holds the sentence (the local extractor makes one per sentence), plus the share of the
 * query's terms the sentence contains (which also covers FacetPoints an LLM paraphrased).
 */
function sentenceScore(facts: EpisodeFacts, points: readonly number[], queryTerms: ReadonlySet<string>): (sentence: string) => number {
  return (sentence) => {
    let semantic = 0;
    for (const index of points) if (facts.points[index]?.content.includes(sentence)) semantic = Math.max(semantic, facts.cosines[index] ?? 0);
    if (queryTerms.size === 0) return semantic;
    return semantic + sharedTermCount(sentence, queryTerms) / queryTerms.size;
  };
}
