import type nlpDefault from 'compromise';
import { speakerLead, turnTheme } from '../graph/chunk-text.ts';
import type { EntityType } from '../graph/types.ts';
import type { ExtractedEntity, ExtractedFacetPoint, Extraction, ExtractionInput, ExtractionOutcome, Extractor } from './extraction.ts';
import { resolveTimeExpression } from './time.ts';

/** Options of the zero-LLM extractor. */
export interface LocalExtractorOptions {
  /** Sentences shorter than this many words carry no fact ("Wow!", "Thanks!"). */
  minWords: number;
  /** Longest extractive summary, in characters. */
  summaryChars: number;
  /**
   * At most this many FacetPoints per long turn (default 3). A turn longer than
   * `groupAboveChars` with more fact-bearing sentences has them grouped, in order, into this
   * many facts of about equal length, so every sentence stays in some fact and the graph grows
   * with the number of messages, not with their length: on LongMemEval chat an assistant reply
   * (a passage of up to `passageChars`) has a median of 12 such sentences.
   */
  maxFactsPerTurn: number;
  /**
   * A turn up to this many characters keeps one fact a sentence (default 400, about 100
   * tokens): a remark that short is read sentence by sentence. 9 of LoCoMo dev's 4,124 turns
   * are longer, and half of a chat assistant's passages are over 1,700.
   */
  groupAboveChars: number;
}

const DEFAULT_LOCAL_EXTRACTOR: LocalExtractorOptions = { minWords: 3, summaryChars: 600, maxFactsPerTurn: 3, groupAboveChars: 400 };

/**
 * The embedded, offline extractor. It uses compromise for sentences and named entities and
 * chrono-node for time expressions:
 * - FacetPoints: one per sentence, attributed to its speaker ("Melanie: I painted a sunrise.")
 *   and tagged with its turn's dialog id;
 * - Entities: people, places and organisations, the speakers, and concrete nouns (pets, books,
 *   activities) as `concept`;
 * - Facets: one per turn (the turn is the natural theme unit of a dialogue); graph building
 *   merges near-duplicate themes within the Episode;
 * - time: expressions resolved against the session date at the precision they carry.
 * The summary quotes the facts (`Extraction.summaryQuotes`), so the Episode's vector is composed.
 */
export function createLocalExtractor(options: Partial<LocalExtractorOptions> = {}): Extractor {
  const opts = { ...DEFAULT_LOCAL_EXTRACTOR, ...options };
  return {
    mode: 'local',
    extract: async (input) => ({ extraction: await extractLocally(input, opts), warning: null }) satisfies ExtractionOutcome,
    preload: async () => {
      await loadCompromise();
    },
  };
}

type Nlp = typeof nlpDefault;
type NlpDoc = ReturnType<Nlp>;
let compromise: Promise<Nlp> | null = null;
/** compromise (~140 KB gzip) is imported on the first extraction, so a page that only searches never loads it. */
export function loadCompromise(): Promise<Nlp> {
  compromise ??= import('compromise').then((module) => module.default);
  return compromise;
}

/**
 * compromise's hooks after tokenizing, minus `chunks`: noun/verb phrase chunking costs ~8% of a
 * parse and nothing here reads it (people, places, organisations and the tag matches below give
 * identical output without it on the LoCoMo dev conversations).
 */
function parseTurn(nlp: Nlp, text: string): NlpDoc {
  // compute() is typed as returning the base View; at run time the view carries every plugin.
  return nlp.tokenize(text).compute(nlp.hooks().filter((hook) => !TOKENIZE_HOOKS.has(hook) && hook !== 'chunks')) as NlpDoc;
}

/** Hooks `nlp.tokenize` has already run. */
const TOKENIZE_HOOKS = new Set(['contractions', 'alias', 'machine']);

export async function extractLocally(input: ExtractionInput, opts: LocalExtractorOptions = DEFAULT_LOCAL_EXTRACTOR): Promise<Extraction> {
  const nlp = await loadCompromise();
  const entities = new Map<string, ExtractedEntity>();
  const addEntity = (name: string, type: EntityType) => {
    const clean = cleanName(name);
    // Contractions ("I'm") and words too generic to anchor anything are not entities.
    if (clean.length < 2 || /'(?:m|d|ll|ve|re|s)$/i.test(clean) || GENERIC_NOUNS.has(clean.toLowerCase())) return null;
    const key = clean.toLowerCase();
    const existing = entities.get(key);
    if (!existing) entities.set(key, { name: clean, type });
    return existing?.name ?? clean;
  };
  const facetPoints: ExtractedFacetPoint[] = [];
  const facets: Extraction['facets'] = [];
  const temporal: Extraction['temporal'] = [];

  const speakers = new Set<string>();
  for (const turn of input.turns) {
    const speaker = addEntity(turn.speaker, 'person');
    if (speaker !== null) speakers.add(speaker.toLowerCase());
    const indices: number[] = [];
    // One parse per turn: its sentence views carry the same tags a parse of each sentence alone
    // gives (checked on LoCoMo: identical entities and concepts) at half the cost.
    const views: NlpDoc[] = [];
    // compromise types forEach's views as its base View; at run time they carry every plugin.
    parseTurn(nlp, turn.text)
      .sentences()
      .forEach((view) => views.push(view as NlpDoc));
    let cursor = 0;
    for (const group of factGroups(views, turn.text.length > opts.groupAboveChars ? opts.maxFactsPerTurn : Infinity, opts.minWords)) {
      const span = spanOf(turn.text, group, cursor);
      cursor = span?.end ?? cursor;
      const sentence = span ? turn.text.slice(span.start, span.end) : group.map((s) => s.sentence).join(' ');
      const named = group.flatMap((s) => namedEntities(s.view)).map((e) => addEntity(e.name, e.type)).filter((n): n is string => n !== null && n !== speaker);
      const concepts = group.flatMap((s) => conceptNouns(s.view)).map((n) => addEntity(n, 'concept')).filter((n): n is string => n !== null);
      const resolved = resolveTimeExpression(sentence, input.time);
      const content = speakerLead(turn.speaker) + sentence;
      indices.push(facetPoints.length);
      facetPoints.push({
        content,
        entityName: named[0] ?? concepts[0] ?? speaker,
        timeText: resolved?.text ?? null,
        time: resolved?.iso ?? null,
        dialogIds: [turn.dialogId],
      });
      if (resolved) {
        temporal.push({ subject: content, timeExpression: resolved.text, normalizedTime: resolved.iso, relation: 'at' });
      }
    }
    if (indices.length > 0) facets.push({ theme: turnTheme(turn.speaker, turn.text), pointIndices: indices });
  }

  const summary = summarise(input, facetPoints, opts.summaryChars);
  // Entities are what a fact is about, and the speakers. Any other name or noun would get no
  // involves_entity edge, so no N1 path would reach an Episode from it: stored, it would only
  // take a slot among the Entity anchors (on LongMemEval chat, 3 of every 4 names found).
  const about = new Set([...facetPoints.flatMap((p) => (p.entityName ? [p.entityName.toLowerCase()] : [])), ...speakers]);
  return {
    summary: summary.text,
    entities: [...entities.values()].filter((e) => about.has(e.name.toLowerCase())),
    facetPoints,
    facets,
    temporal,
    summaryQuotes: summary.pointIndices,
  };
}

interface Sentence {
  view: NlpDoc;
  /** The sentence's trimmed text. */
  sentence: string;
}

/**
 * The turn's fact-bearing sentences (at least `minWords` words) in order, as at most `maxGroups`
 * groups of consecutive sentences: one sentence a group while they fit, else groups of about
 * equal length in characters (each cut where the running length passes the next equal share).
 */
function factGroups(views: readonly NlpDoc[], maxGroups: number, minWords: number): Sentence[][] {
  const sentences = views
    .map((view) => ({ view, sentence: view.text().trim() }))
    .filter(({ sentence }) => sentence.length > 0 && sentence.split(/\s+/).length >= minWords);
  const groupCount = Math.max(1, maxGroups);
  if (sentences.length <= groupCount) return sentences.map((s) => [s]);
  const total = sentences.reduce((sum, s) => sum + s.sentence.length, 0);
  const groups: Sentence[][] = [];
  let current: Sentence[] = [];
  let length = 0;
  sentences.forEach((s, i) => {
    current.push(s);
    length += s.sentence.length;
    const left = sentences.length - 1 - i;
    const groupsLeft = groupCount - groups.length - 1;
    // Close the group at its share of the text, or when each sentence left needs a group of its own.
    if (groupsLeft > 0 && left > 0 && (length >= (total * (groups.length + 1)) / groupCount || left <= groupsLeft)) {
      groups.push(current);
      current = [];
    }
  });
  if (current.length > 0) groups.push(current);
  return groups;
}

/**
 * Where a group of consecutive sentences sits in its turn's text, searched from `from`: the
 * fact is then that stretch of the text as written (so a store can keep it as offsets into the
 * turn), or null when the sentences are not found verbatim.
 */
function spanOf(text: string, group: readonly Sentence[], from: number): { start: number; end: number } | null {
  const first = group[0]?.sentence;
  const last = group.at(-1)?.sentence;
  if (first === undefined || last === undefined) return null;
  const start = text.indexOf(first, from);
  const lastStart = start < 0 ? -1 : text.indexOf(last, start + (group.length > 1 ? first.length : 0));
  return lastStart < 0 ? null : { start, end: lastStart + last.length };
}

function namedEntities(doc: NlpDoc): ExtractedEntity[] {
  const out: ExtractedEntity[] = [];
  for (const name of doc.people().out('array') as string[]) out.push({ name, type: 'person' });
  for (const name of doc.places().out('array') as string[]) out.push({ name, type: 'place' });
  for (const name of doc.organizations().out('array') as string[]) out.push({ name, type: 'organization' });
  // Other proper nouns (a pet's name, a book title) are anchors too, typed by what they are not.
  for (const name of doc.match('#ProperNoun+').not('(#Person|#Place|#Organization|#Date|#Pronoun|#Contraction)').out('array') as string[]) out.push({ name, type: 'other' });
  return out;
}

/** Head nouns of noun phrases, minus pronouns, dates and numbers: the concrete items of a fact. */
function conceptNouns(doc: NlpDoc): string[] {
  const nouns = doc.match('#Noun+').not('(#Pronoun|#Date|#Value|#Person|#Place|#Organization|#ProperNoun|#Verb|#Gerund|#Copula)');
  return (nouns.out('array') as string[])
    .map((n) => n.toLowerCase().replace(/^(?:my|your|his|her|our|their|its|the|a|an|this|that|these|those)\s+/, ''))
    .filter((n) => n.length > 3 && !GENERIC_NOUNS.has(n));
}

/** Nouns too generic to anchor anything. */
const GENERIC_NOUNS = new Set(['thing', 'things', 'time', 'times', 'lot', 'lots', 'way', 'ways', 'stuff', 'something', 'anything', 'everything', 'nothing', 'today', 'yesterday', 'tomorrow', 'week', 'month', 'year', 'day', 'days', 'kind', 'bit', 'people', 'guys', 'hey', 'wow', 'thanks', 'yours', 'mine', 'fyi', 'there', 'here', 'none', 'someone', 'anyone', 'everyone']);

function cleanName(name: string): string {
  return name
    .replace(/[^\p{L}\p{N}\s'&.-]/gu, ' ')
    .replace(/^[\s.'-]+|[\s.'-]+$/g, '')
    .replace(/'s$/i, '')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Extractive summary: the session header, the speakers' longest facts in order, capped; with the facts it quotes. */
function summarise(input: ExtractionInput, points: ExtractedFacetPoint[], maxChars: number): { text: string; pointIndices: number[] } {
  const ranked = points
    .map((p, i) => ({ i, p }))
    .sort((a, b) => b.p.content.length - a.p.content.length)
    .slice(0, 8)
    .sort((a, b) => a.i - b.i);
  let text = input.header;
  const pointIndices: number[] = [];
  for (const { i, p } of ranked) {
    if (text.length + p.content.length + 1 > maxChars) break;
    text += ` ${p.content}`;
    pointIndices.push(i);
  }
  return { text, pointIndices };
}
