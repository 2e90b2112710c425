import { resolveConfig, type DeepPartial, type PrismConfig, type RetrievalFlags } from '../config.ts';
import { PrismError, throwIfAborted } from '../errors.ts';
import type { MemoryGraph } from '../graph/memory-graph.ts';
import { LAYERS, type Layer } from '../graph/types.ts';
import { withZeroLlmFallback } from '../llm/fallback.ts';
import type { LlmRole } from '../llm/types.ts';
import { usageTotals } from '../llm/usage.ts';
import { fuseLayerAnchors } from './anchor-fusion.ts';
import { bundleSearch } from './bundle-search.ts';
import { bundleOrder, localPrecision, rerankWithLlm, type Compression } from './compress.ts';
import type { QueryEvidence } from './evidence.ts';
import { asksForLatest, routeIntent, type IntentDecision } from './intent.ts';
import { NO_TURN_SCORES, termsOf } from './lexical.ts';
import { episodesOn, queryInstant, queryTimeSpans, type TimeSpan } from './dates.ts';
import { countKeptTokens } from '../util/tokens.ts';
import { dot } from '../util/vectors.ts';
import { packContext } from './pack.ts';
import type { Anchor, BundleEntry, Intent, IntentTier, LayerAnchors, RankedEpisode, RetrievalMode, RetrieveDeps } from './types.ts';
import { anchorsWithin, maskSpeakerNames, speakerFocus } from './speakers.ts';
import { bestLexicalTurnText, composedTurnCosines, lexicalConfidence, turnAnchors, type TurnAnchors } from './turn-anchors.ts';
import { buildUnits, fitUnit, unitLeastTokens, unitTokens, type RetrievedUnit } from './units.ts';

export interface RetrieveOptions {
  /** At most this many context tokens (o200k_base). Absent: no token limit, M Episodes. */
  budget?: number;
  /** Bundle size K (default `config.retrieval.bundleSize`). */
  k?: number;
  /**
   * Episodes kept after N3, M (default `config.retrieval.keep`). When a budget is given without
   * `m`, the whole reranked bundle is offered to the packer and the budget decides.
   */
  m?: number;
  /** Default: `llm` when the deps hold an LLM client, else `zero-llm`. */
  mode?: RetrievalMode;
  /**
   * In `llm` mode, when the endpoint fails (down, timing out, rate limited, refusing the key or
   * model): rank without the LLM and say so in `warnings` (default true), or throw (false). For
   * 30 s after such a failure, searches with the same client skip the LLM (and say so).
   */
  llmFallback?: boolean;
  /** Overlaid on `deps.config` for this query (ablation switches, constants). */
  config?: DeepPartial<PrismConfig>;
  /**
   * When the query is asked: relative time in it ("two weeks ago", "last Saturday", "in the
   * past month"; see `relativeSpans`) is resolved against this, a `Date` or a date string in a
   * form `add` takes (`2023-05-30T23:40:00`: wall-clock time, as session dates are stored).
   * Default: the current time. null: unknown, and relative time is left unresolved.
   */
  now?: Date | string | null;
  /** Aborting stops the query with `ABORTED`. Default: none. */
  signal?: AbortSignal;
}

export interface RetrieveResult {
  /** Packed evidence: date headers, then turn lines with dialog ids, in time order. */
  context: string;
  tokens: number;
  /** Units inside the context, in rank order, with scores and traces. */
  units: RetrievedUnit[];
  /** Dialog ids whose turns are in the context. */
  dialogIds: string[];
  intent: Intent;
  tier: IntentTier;
  mode: RetrievalMode;
  llmCalls: number;
  /** Prompt + completion tokens the intent and rerank roles reported during this query. */
  llmTokens: number;
  /** N1 bundle, cheapest first. */
  bundle: BundleEntry[];
  /** The bundle after N3, best first. */
  ranked: RankedEpisode[];
  warnings: string[];
}

const QUERY_ROLES: readonly LlmRole[] = ['intent', 'rerank'];

/** The query pipeline (design §3): N4 → anchors (dense + lexical) → N1 with N2 costs → N3 → units → packing. */
export async function retrieve(query: string, deps: RetrieveDeps, options: RetrieveOptions = {}): Promise<RetrieveResult> {
  // The clock is read here, once: everything below is a function of `now`.
  const asked = { ...options, now: queryInstant(options.now === undefined ? new Date() : options.now) };
  // LLM endpoint fallback (see `llmFallback`).
  if (deps.llm && (options.mode ?? 'llm') === 'llm' && options.llmFallback !== false) {
    return withZeroLlmFallback(deps.llm, (mode) => retrieveInMode(query, deps, { ...asked, mode }));
  }
  return retrieveInMode(query, deps, asked);
}

/** The options `retrieve` passes down: `now` read into wall-clock milliseconds (null: unknown). */
type AskedOptions = Omit<RetrieveOptions, 'now'> & { now: number | null };

async function retrieveInMode(query: string, deps: RetrieveDeps, options: AskedOptions): Promise<RetrieveResult> {
  if (query.trim() === '') throw new PrismError('INVALID_INPUT', 'empty query');
  for (const [name, value] of [['budget', options.budget], ['k', options.k], ['m', options.m]] as const) {
    if (value !== undefined && !(Number.isInteger(value) && value > 0)) {
      throw new PrismError('INVALID_INPUT', `${name} must be a positive integer, got ${String(value)}`);
    }
  }
  const config = options.config ? resolveConfig(options.config, deps.config) : deps.config;
  const mode = options.mode ?? (deps.llm ? 'llm' : 'zero-llm');
  const llm = deps.llm;
  if (mode === 'llm' && !llm) throw new PrismError('LLM_NOT_CONFIGURED', 'llm mode needs an LLM client');
  const { signal } = options;
  const tokensBefore = llm ? usageTotals(llm.usage(), QUERY_ROLES).tokens : 0;

  const queryTerms = termsOf(query);
  // A misspelt speaker's name is a word no turn holds, which only the lexical index can tell.
  const { lexical: lexicalIndex } = deps;
  const focus = speakerFocus(deps.graph, queryTerms, config.flags.nameTypos && lexicalIndex ? { query, heldTerm: (term) => lexicalIndex.holdsTerm(term) } : null);
  const dates = config.flags.dateFocus ? await queryTimeSpans(query, config.flags.relativeDates ? options.now : null) : [];
  // Speaker scope: the named speakers' Episodes, when they are fewer than all (see `speakerScope`).
  const scope = config.flags.speakerScope ? focus.episodes : null;
  const queryVector = await deps.embedQuery(config.flags.maskSpeakerNames ? maskSpeakerNames(query, focus.nameTerms) : query, signal);
  throwIfAborted(signal);

  const routed: IntentDecision = config.flags.intentRouting
    ? await routeIntent(query, { queryVector, prototypes: deps.prototypes, ...(llm ? { llm } : {}), config, mode, ...(signal ? { signal } : {}) })
    : { intent: 'GENERAL', tier: 'none', llmCalls: 0, warnings: [] };
  throwIfAborted(signal);

  // In a scope, each search fetches enough hits for about as many to fall inside it.
  const overFetch = scope ? Math.min(config.retrieval.maxScopedFetch, Math.ceil(focus.episodeCount / scope.size)) : 1;
  const { anchorsPerLayer, lexicalAnchors } = config.retrieval;
  // Fine units serve a token budget; without one the context is the M Episodes, as in the paper.
  const fineBudget = config.flags.fineUnits && options.budget !== undefined ? options.budget : null;
  // Fusion reads the best `lexicalAnchors` hits of each layer, so the index selects only those.
  const lexicalFound = lexicalIndex?.search(query, lexicalAnchors * overFetch);
  const lexical =
    lexicalFound && scope
      ? { layers: anchorsWithin(deps.graph, lexicalFound.layers, scope, lexicalAnchors), turns: lexicalFound.turns.within(scope) }
      : lexicalFound;
  const lexicalTurns = lexical?.turns ?? NO_TURN_SCORES;
  // How far BM25 is trusted for this query (see `lexicalConfidence`); null without a lexical index.
  const confidence = lexical ? lexicalConfidence(queryTerms, bestLexicalTurnText(deps.graph, lexicalTurns), config.retrieval.lexicalFullShare) : null;
  // Adaptive fusion weighs every lexical signal by it (there are none without an index).
  const lexicalWeight = config.flags.adaptiveFusion ? (confidence ?? 0) : 1;
  // Fine units of a query the meaning route takes are ranked by each turn's own cosine (see `meaningRoute`).
  // With speaker names masked out of the query vector every cosine drops by what the name matched,
  // so the closest turn's cosine says how oblique the query is only when no name was masked.
  const masked = config.flags.maskSpeakerNames && focus.nameTerms.size > 0;
  // A date the query names is evidence the route would not weigh (date focus): such a query keeps to the structure.
  const routeOpen = fineBudget !== null && config.flags.meaningRoute && dates.length === 0;
  const takesRoute = (closestTurn: number) => routeOpen && takesMeaningRoute(confidence, masked ? null : closestTurn, config.retrieval.meaningRoute);
  // The Facet layer is scanned once, for as many as turn anchors read: `meaningRoute.turns` for a
  // query the route may take (it would with no turn close), else `turnAnchors`; its anchors are
  // the first of them (hits are a total order, best score then smaller key, so fewer are a prefix of more).
  const turnsRead = fineBudget === null ? 0 : Math.max(config.retrieval.turnAnchors, takesRoute(-Infinity) ? config.retrieval.meaningRoute.turns : 0);
  // Entity anchors span Episodes and are kept whole (`anchorsWithin`), so only the other layers fetch more.
  const anchorHits = (layer: Layer) => (layer === 'entity' ? anchorsPerLayer : anchorsPerLayer * overFetch);
  const scans = await denseAnchors(deps, queryVector, (layer) => (layer === 'facet' ? Math.max(anchorsPerLayer, turnsRead) * overFetch : anchorHits(layer)));
  const denseFound = Object.fromEntries(LAYERS.map((layer) => [layer, scans[layer].slice(0, anchorHits(layer))])) as LayerAnchors;
  const dense = scope ? anchorsWithin(deps.graph, denseFound, scope, anchorsPerLayer) : denseFound;
  const byMeaning = takesRoute(dense.facet[0]?.score ?? 0);
  const anchors =
    lexical && config.flags.hybridAnchors && (!byMeaning || config.flags.meaningRouteLexicalAnchors)
      ? fuseLayerAnchors(dense, lexical.layers, {
          queryVector,
          vectors: deps.graph.vectors,
          rrfK: config.retrieval.rrfK,
          lexicalPerLayer: lexicalAnchors,
          lexicalWeight,
        })
      : dense;
  throwIfAborted(signal);

  const k = options.k ?? config.retrieval.bundleSize;
  // Fine units may draw on more Episodes than the K that N3 and ER@K see (`unitEpisodes`).
  const searched =
    fineBudget === null
      ? bundleSearch(deps.graph, anchors, queryVector, routed.intent, config, k, scope)
      : searchForUnits(deps.graph, anchors, { queryVector, intent: routed.intent, config }, Math.max(k, config.retrieval.unitEpisodes), config.retrieval.unitBudgets * fineBudget, scope);
  const bundle = searched.slice(0, k);
  // Turn anchors serve fine units; the Facet layer's dense anchors are a dense search over turns.
  const anchorCount = byMeaning ? config.retrieval.meaningRoute.turns : config.retrieval.turnAnchors;
  const turnSearch: TurnSearch = { graph: deps.graph, facets: scans.facet, scope, overFetch };
  const turnAnchorsFound: TurnAnchors =
    fineBudget === null
      ? new Map()
      : turnAnchors(
          deps.graph,
          byMeaning && config.flags.composedTurns
            ? composedTurnHits(turnSearch, queryVector, dense.facet, dense.facetPoint, anchorCount)
            : turnAnchorHits(turnSearch, dense.facet, anchorCount),
          anchorCount,
        );
  const anchorWeight = config.flags.adaptiveFusion ? 1 - lexicalWeight : 1;
  // Only speakers the memory has: a memory of people talking (LoCoMo) has no side a pronoun points at.
  const pronounSpeakers = new Set(config.flags.pronounSpeakers ? addressedRoles(query, config.flags).filter((role) => deps.graph.speaks(role)) : []);
  const speakerTerms = speakerTermsOf(focus.speakers, pronounSpeakers, config.retrieval.turnScore);
  const evidence: QueryEvidence = { queryVector, lexicalTurns, queryTerms, speakerTerms, pronounSpeakers, dates, lexicalWeight, turnAnchors: turnAnchorsFound, anchorWeight, byMeaning, factCosines: new Map() };
  const keep = options.m ?? config.retrieval.keep;

  let compression: Compression;
  if (!config.flags.compression) compression = bundleOrder(bundle);
  else if (mode === 'llm' && llm) compression = await rerankWithLlm(query, bundle, deps.graph, llm, config, { keep, ...(signal ? { signal } : {}) });
  // The local step is cheap, so it scores every searched Episode; the LLM reranker sees the bundle only.
  else compression = localPrecision(fineBudget === null ? bundle : searched, deps.graph, evidence, config);

  // −N3 passes the whole bundle on, as in the paper's ablation; with a budget and no explicit M
  // the budget decides how many of the ranked Episodes fit.
  const selectAll = !config.flags.compression || (options.budget !== undefined && options.m === undefined);
  const selected = selectAll ? [...compression.ranked, ...beyondBundle(searched, compression.ranked)] : compression.ranked.slice(0, keep);
  // Date focus serves fine units, as turn anchors do; without a budget the context is the M Episodes.
  const chosen = fineBudget === null ? selected : [...selected, ...datedEpisodes(deps.graph, anchors, selected, scope, dates, { queryVector, intent: routed.intent, config })];
  const outside = anchorEpisodes(deps.graph, dense.facet, chosen, evidence.turnAnchors, { queryVector, intent: routed.intent, config });
  const built = buildUnits(deps.graph, chosen, evidence, config, fineBudget, outside);
  const recency = config.retrieval.turnScore.recency;
  const units = recency > 0 && asksForLatest(query) ? preferRecent(built, recency) : built;
  const fitFrom = config.retrieval.fitRemainder;
  const packed = packContext(units, options.budget ?? Infinity, { of: unitTokens, least: unitLeastTokens }, fitFrom > 0 ? (unit, room) => (room >= fitFrom ? fitUnit(unit, room) : null) : undefined);

  return {
    context: packed.text,
    tokens: packed.tokens,
    // As plain data: a long turn's unit works out its text when first read (see `buildUnits`).
    units: packed.units.map((unit) => ({ ...unit })),
    dialogIds: packed.dialogIds,
    intent: routed.intent,
    tier: routed.tier,
    mode,
    llmCalls: routed.llmCalls + compression.llmCalls,
    llmTokens: llm ? usageTotals(llm.usage(), QUERY_ROLES).tokens - tokensBefore : 0,
    bundle,
    ranked: compression.ranked,
    warnings: [...routed.warnings, ...compression.warnings],
  };
}

/**
 * The cheapest N1 Episodes whose turns fine units are drawn from: at least `least` of them, and
 * more while they hold fewer than `tokens` tokens (`unitBudgets`). When the Episodes found hold
 * too little, the search asks again for more, until no more are reachable.
 */
function searchForUnits(
  graph: MemoryGraph,
  anchors: LayerAnchors,
  query: { queryVector: Float32Array; intent: Intent; config: PrismConfig },
  least: number,
  tokens: number,
  scope: ReadonlySet<string> | null,
): BundleEntry[] {
  const search = (size: number) => bundleSearch(graph, anchors, query.queryVector, query.intent, query.config, size, scope);
  // Off (`unitBudgets` 0): the `least` cheapest, without counting their text.
  if (tokens <= 0) return search(least);
  let size = least;
  for (;;) {
    const found = search(size);
    let held = 0;
    for (const [i, entry] of found.entries()) {
      held += episodeTokens(graph, entry.episodeId);
      if (held >= tokens && i + 1 >= least) return found.slice(0, i + 1);
    }
    if (found.length < size) return found;
    // As many Episodes as the text per Episode found so far suggests, a quarter more, at least twice as many.
    size = Math.max(2 * size, held > 0 ? Math.ceil((1.25 * size * tokens) / held) : 0);
  }
}

/** Tokens of an Episode's chunk text (kept by the chunk, else counted and remembered); 0 for an unknown one. */
function episodeTokens(graph: MemoryGraph, episodeId: string): number {
  const node = graph.nodes.get(episodeId);
  const chunk = node?.layer === 'episode' ? graph.chunks.get(node.chunkId) : undefined;
  return chunk ? countKeptTokens(chunk.text, chunk.textTokens) : 0;
}

/**
 * Searched Episodes that N3 did not rank (the LLM reranker sees the bundle only), after the
 * ranked ones in N1 order, at the lowest ranked score so no bundle Episode loses to them on it.
 */
function beyondBundle(searched: readonly BundleEntry[], ranked: readonly RankedEpisode[]): RankedEpisode[] {
  const seen = new Set(ranked.map((e) => e.episodeId));
  const floor = lowestScore(ranked);
  return searched.filter((e) => !seen.has(e.episodeId)).map((entry) => ({ ...entry, score: floor }));
}

/** The lowest score of a ranking, where Episodes joining after it are placed (0 for none). */
function lowestScore(ranked: readonly RankedEpisode[]): number {
  return ranked.length > 0 ? Math.min(...ranked.map((e) => e.score)) : 0;
}

/**
 * The speakers of a chat with an assistant, as `add` names OpenAI roles (`User`, `Assistant`)
 * and as chat logs write them (`user`, `assistant`), by the person a query addresses them in.
 */
const ROLE_SPEAKERS = { first: ['User', 'user'], second: ['Assistant', 'assistant'] } as const;
const FIRST_PERSON = /\b(i|me|my|mine|myself)\b/i;
const SECOND_PERSON = /\b(you|your|yours|yourself)\b/i;
/**
 * The second person pointing at the assistant's earlier words (`flags.pastSecondPerson`): "you"
 * as the subject of a past verb, regular ("you mentioned", "you've suggested"; not "you need") or
 * one of the common irregular ones, "did you", "your", or a verb of memory ("remind me").
 */
const SECOND_PERSON_PAST =
  /\b(?:you(?:'ve|\s+have|\s+had)?\s+(?:\w*[^\We]ed|said|told|gave|wrote|made|came|found|chose|brought|taught|sent|put|thought|meant|drew|built|did|were|had|knew|saw|got|went|left|showed|shown)|did\s+you|your|yours|remind|remember|recall)\b/i;

/**
 * The speakers a query's pronouns point at (`flags.pronounSpeakers`): in a memory of chats with
 * an assistant, a question in the first person ("what is my…", "how many did I…") is the user's
 * about themself, whose facts their own turns state; one in the second person ("what did you
 * recommend?") asks what the assistant said, and with `pastSecondPerson` only when it points at
 * what was said (a request, "can you suggest…?", does not). With `userByDefault`, a query
 * pointing at neither is the user's. A memory without such speakers has no turn of theirs to
 * gain anything.
 */
function addressedRoles(query: string, { pastSecondPerson, userByDefault }: Pick<RetrievalFlags, 'pastSecondPerson' | 'userByDefault'>): readonly string[] {
  const second = (pastSecondPerson ? SECOND_PERSON_PAST : SECOND_PERSON).test(query);
  const first = FIRST_PERSON.test(query) || (userByDefault && !second);
  return [...(first ? ROLE_SPEAKERS.first : []), ...(second ? ROLE_SPEAKERS.second : [])];
}

/** The speaker term by speaker: `speaker` for those the query names, `pronounSpeaker` for those its pronouns point at (the larger where both). */
function speakerTermsOf(named: ReadonlySet<string>, addressed: ReadonlySet<string>, weights: { speaker: number; pronounSpeaker: number }): ReadonlyMap<string, number> {
  const terms = new Map<string, number>();
  for (const speaker of named) terms.set(speaker, weights.speaker);
  for (const speaker of addressed) terms.set(speaker, Math.max(terms.get(speaker) ?? 0, weights.pronounSpeaker));
  return terms;
}

/**
 * For a query asking for the latest or current value (`asksForLatest`): each unit gains `weight`
 * × how recent its session is among the units' sessions, by rank (the oldest 0, the newest 1),
 * so that where a value changed the later statement wins what was close to a tie. Units without
 * a time gain nothing. Stable: equal scores keep their order.
 */
function preferRecent(units: readonly RetrievedUnit[], weight: number): RetrievedUnit[] {
  const times = [...new Set(units.flatMap((u) => (u.time ? [u.time] : [])))].sort();
  if (times.length < 2) return [...units];
  const recency = new Map(times.map((time, i) => [time, i / (times.length - 1)]));
  // Rescored in place: the units are this search's own, and as built they answer what packing
  // asks of them (a copy of a turn's unit could not be fitted as an excerpt; see `fitUnit`).
  for (const unit of units) unit.score += weight * (unit.time ? (recency.get(unit.time) ?? 0) : 0);
  return units
    .map((unit, i) => ({ unit, i }))
    .sort((a, b) => b.unit.score - a.unit.score || a.i - b.i)
    .map(({ unit }) => unit);
}

/**
 * Episodes of sessions in a time the query points at (`flags.dateFocus`) that the selection left
 * out, within the speaker scope, after it at its lowest score, so no selected Episode loses to
 * them on it. Each comes with its cheapest N1 path: from the query's anchors, or from the
 * Episode itself as an anchor at its own cosine to the query, whichever costs less, so that every
 * one of them has a path.
 */
function datedEpisodes(
  graph: MemoryGraph,
  anchors: LayerAnchors,
  selected: readonly RankedEpisode[],
  scope: ReadonlySet<string> | null,
  dates: readonly TimeSpan[],
  query: { queryVector: Float32Array; intent: Intent; config: PrismConfig },
): RankedEpisode[] {
  const wanted = episodesOn(graph, dates, scope, new Set(selected.map((e) => e.episodeId)));
  if (wanted.size === 0) return [];
  const own = [...wanted].map((id) => {
    const vector = graph.vectors.get(id);
    return { id, score: vector ? dot(vector, query.queryVector) : 0 };
  });
  const withOwn: LayerAnchors = { ...anchors, episode: [...anchors.episode, ...own] };
  const floor = lowestScore(selected);
  return bundleSearch(graph, withOwn, query.queryVector, query.intent, query.config, wanted.size, wanted).map((entry) => ({ ...entry, score: floor }));
}

/**
 * The Episodes of turn anchors that the selection left out, each with its cheapest Facet
 * anchor's N1 path (`Fc→Ep`) as trace. Their score is 0: `buildUnits` scores their anchored
 * turns without an Episode term.
 */
function anchorEpisodes(
  graph: MemoryGraph,
  facetAnchors: readonly Anchor[],
  selected: readonly RankedEpisode[],
  anchored: TurnAnchors,
  query: { queryVector: Float32Array; intent: Intent; config: PrismConfig },
): RankedEpisode[] {
  const chosen = new Set(selected.map((e) => e.episodeId));
  const missing = new Set([...anchored.keys()].filter((id) => !chosen.has(id)));
  if (missing.size === 0) return [];
  const wanted = facetAnchors.filter((a) => {
    const node = graph.nodes.get(a.id);
    return node?.layer === 'facet' && missing.has(node.episodeId);
  });
  const only = { episode: [], facet: wanted, facetPoint: [], entity: [] } satisfies LayerAnchors;
  return bundleSearch(graph, only, query.queryVector, query.intent, query.config, missing.size).map((entry) => ({ ...entry, score: 0 }));
}

/**
 * The meaning route (beyond the paper, `flags.meaningRoute`): a query shares too few words with
 * any turn (its lexical confidence is below `lexicalConfidence`), or, short of full lexical
 * confidence, no turn comes close to it in meaning (the best turn cosine is below `bestCosine`).
 * Either is null when not measured (no lexical index; a speaker name masked out of the query
 * vector). Such a query, a remark that touches an
 * earlier statement in other words more often than a question, is poorly served by what the
 * Episode ranking and the turn terms rest on (shared words, a session's overall theme, a fact
 * sentence matching part of a long turn); the turn's own cosine ranks its evidence best.
 */
export function takesMeaningRoute(lexicalConfidence: number | null, bestTurnCosine: number | null, route: { lexicalConfidence: number; bestCosine: number }): boolean {
  if (lexicalConfidence !== null && lexicalConfidence < route.lexicalConfidence) return true;
  // A query whose words one turn holds in full is not oblique, however far that turn's meaning.
  return (lexicalConfidence === null || lexicalConfidence < 1) && bestTurnCosine !== null && bestTurnCosine < route.bestCosine;
}

/**
 * The Facet hits turn anchors are read from: the Facet layer's dense anchors when they are
 * enough, else more of that layer's scan (within the speaker scope), so the number of turns
 * that enter on their own cosine is not bound to the number of N1 anchors.
 */
function turnAnchorHits({ graph, facets, scope, overFetch }: TurnSearch, facetAnchors: readonly Anchor[], count: number): readonly Anchor[] {
  if (count <= facetAnchors.length) return facetAnchors;
  const found = facets.slice(0, count * overFetch);
  if (!scope) return found;
  return found.filter((anchor) => {
    const node = graph.nodes.get(anchor.id);
    return node?.layer === 'facet' && scope.has(node.episodeId);
  });
}

/**
 * The meaning route's turn anchors under `flags.composedTurns`: the Facets of `turnAnchorHits`
 * and those holding the FacetPoint anchors (in the scope, as they are), scored by their
 * sentences taken together (`composedTurnCosines`).
 */
function composedTurnHits(search: TurnSearch, queryVector: Float32Array, facetAnchors: readonly Anchor[], pointAnchors: readonly Anchor[], count: number): Anchor[] {
  const { graph } = search;
  const facets = turnAnchorHits(search, facetAnchors, count);
  const pointFacets = pointAnchors.flatMap((anchor) => {
    const point = graph.nodes.get(anchor.id);
    return point?.layer === 'facetPoint' ? [point.facetId] : [];
  });
  return composedTurnCosines(graph, [...facets.map((anchor) => anchor.id), ...pointFacets], queryVector);
}

/** Where turn anchors are read: the graph, its Facet scan, and the speaker scope with the factor each search fetches more by in it. */
interface TurnSearch {
  graph: MemoryGraph;
  /** The Facet layer's scan: at least as many hits as any turn-anchor count times the over-fetch. */
  facets: readonly Anchor[];
  scope: ReadonlySet<string> | null;
  overFetch: number;
}

async function denseAnchors(deps: RetrieveDeps, queryVector: Float32Array, k: (layer: Layer) => number): Promise<LayerAnchors> {
  const lists = await Promise.all(LAYERS.map((layer) => deps.searchLayer(layer, queryVector, k(layer))));
  return Object.fromEntries(LAYERS.map((layer, i) => [layer, lists[i] ?? []])) as Record<Layer, LayerAnchors[Layer]>;
}
