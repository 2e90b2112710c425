import type { DeepPartial, PrismConfig } from '../config.ts';
import { recallSummary, type QuestionOutcome } from './metrics.ts';

/** One setting of the weights and thresholds under choice, as an overlay on the defaults. */
export interface LocoCandidate {
  name: string;
  overlay: DeepPartial<PrismConfig>;
}

/**
 * The settings `prism eval locomo --loco` chooses among: the weight taken off a turn that ends
 * by asking (`question`), the weight of the exchange with an adjacent turn (`exchange`), at the
 * anchor terms 0.5 and 1; the heavier speaker term (0.4) at anchor term 0.5; and named speakers left in the query
 * (no masking, no speaker scope) at the previous choice; at the shipped point, the date term
 * (`turnScore.date`) at 0 (date focus off), 0.25 and 0.5 beside the shipped 1, which every other
 * candidate but the first carries; and at the shipped point, the fine units' Episodes sized by
 * text (`unitBudgets`) at 0 (off) and 3 beside the shipped 5, which every other candidate
 * carries. Fusion (adaptive, full BM25 trust at half the query's terms) and turn anchors (10)
 * are the earlier stops' LOCO choices over a wider
 * grid (plain reciprocal-rank fusion, no anchors, anchor terms 0.25 to 16, 20 and 30 anchors);
 * the first candidate, the v0.3 scoring, keeps one point of it in every report.
 */
interface GridPoint {
  fusion: 'rrf' | 'adaptive0.5';
  turnAnchors: number;
  anchor: number;
  question?: number;
  exchange?: number;
  /** The speaker term (default `BASE_SPEAKER`). */
  speaker?: number;
  /** `masked`: names out of the query vector, scoped search (the default); `kept`: neither. */
  names?: 'masked' | 'kept';
  /** The date term (default: the shipped `turnScore.date`); 0 turns date focus off. */
  date?: number;
  /** `retrieval.unitBudgets` (default: the shipped one). */
  unitBudgets?: number;
}
/** The speaker term of the v0.3 scoring, which the turn terms were first tried with. */
const BASE_SPEAKER = 0.2;
const TURN_TERMS: ReadonlyArray<Pick<GridPoint, 'question' | 'exchange'>> = [
  { question: 0.2, exchange: 0 },
  { question: 0, exchange: 0.5 },
  { question: 0.1, exchange: 0.5 },
  { question: 0.2, exchange: 0.25 },
  { question: 0.2, exchange: 0.5 },
  { question: 0.2, exchange: 1 },
  { question: 0.4, exchange: 0.5 },
];
const GRID: readonly GridPoint[] = [
  { fusion: 'rrf', turnAnchors: 0, anchor: 0, names: 'kept', date: 0 },
  ...[0.5, 1].flatMap((anchor) => TURN_TERMS.map((terms): GridPoint => ({ fusion: 'adaptive0.5', turnAnchors: 10, anchor, ...terms }))),
  ...TURN_TERMS.map((terms): GridPoint => ({ fusion: 'adaptive0.5', turnAnchors: 10, anchor: 0.5, ...terms, speaker: 0.4 })),
  ...[0.5, 1].map((exchange): GridPoint => ({ fusion: 'adaptive0.5', turnAnchors: 10, anchor: 0.5, question: 0.2, exchange, names: 'kept' })),
  ...[0, 0.25, 0.5].map((date): GridPoint => ({ fusion: 'adaptive0.5', turnAnchors: 10, anchor: 0.5, question: 0.2, exchange: 0.5, speaker: 0.4, date })),
  ...[0, 3].map((unitBudgets): GridPoint => ({ fusion: 'adaptive0.5', turnAnchors: 10, anchor: 0.5, question: 0.2, exchange: 0.5, speaker: 0.4, unitBudgets })),
];

function candidateName({ fusion, turnAnchors, anchor, question, exchange, speaker, names, date, unitBudgets }: GridPoint): string {
  const terms = `${anchor ? `w${anchor}` : ''}${question ? `q${question}` : ''}${exchange ? `x${exchange}` : ''}${speaker === undefined ? '' : `s${speaker}`}${date === undefined ? '' : `d${date}`}${unitBudgets === undefined ? '' : `u${unitBudgets}`}`;
  return `loco:anchors${turnAnchors}${terms}+${fusion}${names === 'kept' ? '+names' : ''}`;
}

/**
 * This stop's candidates, at the shipped point: the meaning route off, and its thresholds and
 * reply weight around the shipped ones (lexical confidence 0.5, closest-turn cosine 0.5, reply 0.9).
 */
const MEANING_ROUTES: ReadonlyArray<{ lexicalConfidence: number; bestCosine: number; reply: number } | 'off'> = [
  'off',
  { lexicalConfidence: 0.5, bestCosine: 0, reply: 0.9 },
  { lexicalConfidence: 0.5, bestCosine: 0.45, reply: 0.9 },
  { lexicalConfidence: 0.6, bestCosine: 0.5, reply: 0.9 },
  { lexicalConfidence: 0.5, bestCosine: 0.5, reply: 0 },
  { lexicalConfidence: 0.5, bestCosine: 0.5, reply: 0.8 },
];

const MEANING_CANDIDATES: readonly LocoCandidate[] = [
  ...MEANING_ROUTES.map((route) =>
    route === 'off'
      ? { name: 'loco:meaning-off', overlay: { flags: { meaningRoute: false } } }
      : { name: `loco:meaning-l${route.lexicalConfidence}c${route.bestCosine}r${route.reply}`, overlay: { retrieval: { meaningRoute: route } } },
  ),
  // At the shipped point: turns ranked by their Facet's cosine instead of their sentences' (`flags.composedTurns`).
  { name: 'loco:meaning-facet-cosine', overlay: { flags: { composedTurns: false } } },
  // At the shipped point: BM25's anchors kept in N1 on the route (`flags.meaningRouteLexicalAnchors`).
  { name: 'loco:meaning-lexical-anchors', overlay: { flags: { meaningRouteLexicalAnchors: true } } },
  // At the shipped point: a speaker's name misspelt by one letter left unread (`flags.nameTypos`).
  { name: 'loco:name-typos-off', overlay: { flags: { nameTypos: false } } },
];

const GRID_CANDIDATES: readonly LocoCandidate[] = GRID.map((point) => ({
  name: candidateName(point),
  overlay: {
    flags: { adaptiveFusion: point.fusion !== 'rrf', maskSpeakerNames: point.names !== 'kept', speakerScope: point.names !== 'kept', dateFocus: point.date !== 0 },
    retrieval: {
      turnAnchors: point.turnAnchors,
      turnScore: {
        anchor: point.anchor,
        question: point.question ?? 0,
        exchange: point.exchange ?? 0,
        speaker: point.speaker ?? BASE_SPEAKER,
        ...(point.date === undefined || point.date === 0 ? {} : { date: point.date }),
      },
      ...(point.fusion === 'rrf' ? {} : { lexicalFullShare: 0.5 }),
      ...(point.unitBudgets === undefined ? {} : { unitBudgets: point.unitBudgets }),
    },
  },
}));

export const LOCO_CANDIDATES: readonly LocoCandidate[] = [...GRID_CANDIDATES, ...MEANING_CANDIDATES];

/**
 * How pronouns may be read: as naming the speakers, the second person only where it points at
 * what was said or anywhere, their turns gaining `turnScore.pronounSpeaker` at 0.4 (the named
 * speaker's term), 0.8 or 1.2, and the other side's turns on the meaning route counting in
 * full or at half (`meaningRoute.otherSpeaker` 1 or 0.5); or as naming no one.
 */
const PRONOUN_READINGS: readonly { label: string; overlay: DeepPartial<PrismConfig> }[] = [
  ...[true, false].flatMap((pastSecondPerson) =>
    [0.4, 0.8, 1.2].flatMap((pronounSpeaker) =>
      [1, 0.5].map((otherSpeaker) => ({
        label: `-pronouns${pronounSpeaker}${pastSecondPerson ? '' : '-any-you'}${otherSpeaker === 1 ? '' : `-other${otherSpeaker}`}`,
        overlay: { flags: { pronounSpeakers: true, pastSecondPerson }, retrieval: { turnScore: { pronounSpeaker }, meaningRoute: { otherSpeaker } } },
      })),
    ),
  ),
  { label: '-pronouns-off', overlay: { flags: { pronounSpeakers: false } } },
];

/**
 * The settings `prism eval longmemeval --loco` chooses among: each reading of pronouns
 * (`PRONOUN_READINGS`), with relative time in the query resolved against the time it is asked
 * (`flags.relativeDates`) and no recency term; and, at the defaults, the recency term at 0.5
 * (`turnScore.recency`, which no fold chose at 0.25 or 0.5 in the runs before pronoun readings
 * joined the grid) or relative time left unresolved; and, at the defaults, a query in neither
 * person read as naming no one (`flags.userByDefault` off); and, at the defaults, fitting the
 * remainder (`retrieval.fitRemainder`) off or from 128 tokens left. (From 6 or 32 tokens it
 * recalls more here, but less on LoCoMo's pooled memory or its implicit-recall pairs.) Every
 * LongMemEval question is its own conversation, so leaving one conversation out leaves one
 * question out.
 */
export const LONGMEMEVAL_CANDIDATES: readonly LocoCandidate[] = [
  ...PRONOUN_READINGS.map(({ label, overlay }) => ({
    name: `loco:recency0${label}`,
    overlay: {
      flags: { ...overlay.flags, relativeDates: true },
      retrieval: { ...overlay.retrieval, turnScore: { ...overlay.retrieval?.turnScore, recency: 0 } },
    },
  })),
  { name: 'loco:recency0.5', overlay: { retrieval: { turnScore: { recency: 0.5 } } } },
  { name: 'loco:relative-off', overlay: { flags: { relativeDates: false } } },
  { name: 'loco:user-by-default-off', overlay: { flags: { userByDefault: false } } },
  ...[0, 128].map((fitRemainder) => ({ name: `loco:fit${fitRemainder}`, overlay: { retrieval: { fitRemainder } } })),
];

/** One set of questions the choice is made on, with every candidate's outcomes over the same questions. */
export interface LocoSlice {
  name: string;
  outcomes: Readonly<Record<string, readonly QuestionOutcome[]>>;
  /**
   * Makes the slice a guard instead of an objective: a candidate qualifies only where its mean ER
   * over the budgets reaches this reference's (a baseline's outcomes on the same questions).
   */
  floor?: { name: string; outcomes: readonly QuestionOutcome[] };
}

/** ER per budget over `n` scored questions. */
export interface LocoScore {
  er: Record<string, number>;
  n: number;
}

export interface LocoFold {
  /** The conversation held out. */
  conversationId: string;
  /** The candidate with the best objective on the other conversations. */
  chosen: string;
  /** The chosen candidate on the held-out conversation, per slice. */
  heldOut: Record<string, LocoScore>;
}

export interface LocoReport {
  budgets: number[];
  /** Slice names, the first one's conversations defining the folds. */
  slices: string[];
  /** The guard slices and the reference each must reach. */
  guards: Array<{ slice: string; reference: string }>;
  folds: LocoFold[];
  /** Per slice, the question-weighted mean over the folds of the held-out ER, per budget. */
  loco: Record<string, LocoScore>;
  /** The candidate chosen on all conversations, and its (in-sample) score per slice. */
  inSample: { chosen: string; scores: Record<string, LocoScore> };
  /** Every candidate's score per slice on all conversations. */
  candidates: Record<string, Record<string, LocoScore>>;
}

/**
 * Is the conversation `id` the conversation `of`, or derived from it: its id extends that one's
 * by a suffix after a hyphen (a set stitched into `conv-26` as `conv-26-cog`)? A derived
 * conversation is selected, and held out, with the one it is derived from.
 */
export function derivedFrom(id: string, of: string): boolean {
  return id === of || id.startsWith(`${of}-`);
}

/**
 * Leave-one-conversation-out choice: for each conversation of the first slice, the best candidate
 * on the other conversations, scored on the held-out one. A candidate's objective is the mean over
 * the objective slices of each one's mean ER over `budgets`; among the candidates that reach every
 * guard slice's floor (its mean ER over the budgets at least the reference's, on the same
 * conversations) the best objective wins, else the one that falls least short (ties: earlier
 * candidate). This is the issue's order of goals: never below a baseline first, then the highest
 * recall. A slice with no question on the training conversations sits that fold out. Questions
 * without resolvable evidence are left out.
 */
export function leaveOneConversationOut(slices: readonly LocoSlice[], budgets: readonly number[]): LocoReport {
  const [first] = slices;
  const names = Object.keys(first?.outcomes ?? {});
  const resolvable = (list: readonly QuestionOutcome[]) => list.filter((o) => o.recall !== null);
  const scored = (slice: LocoSlice, name: string) => resolvable(slice.outcomes[name] ?? []);
  const score = (list: readonly QuestionOutcome[]): LocoScore => ({ er: recallSummary(list, budgets).erAtBudget, n: list.length });
  const meanOverBudgets = ({ er }: LocoScore): number => budgets.reduce((s, b) => s + (er[String(b)] ?? 0), 0) / budgets.length;
  const objective = (name: string, keep: (o: QuestionOutcome) => boolean): number => {
    const values = slices.filter((slice) => !slice.floor).map((slice) => score(scored(slice, name).filter(keep))).filter((s) => s.n > 0);
    return values.reduce((sum, s) => sum + meanOverBudgets(s), 0) / Math.max(1, values.length);
  };
  const shortfall = (name: string, keep: (o: QuestionOutcome) => boolean): number =>
    slices.reduce((sum, slice) => {
      if (!slice.floor) return sum;
      const own = score(scored(slice, name).filter(keep));
      if (own.n === 0) return sum;
      return sum + Math.max(0, meanOverBudgets(score(resolvable(slice.floor.outcomes).filter(keep))) - meanOverBudgets(own));
    }, 0);
  const best = (keep: (o: QuestionOutcome) => boolean): string => {
    let chosen = names[0] ?? '';
    let top: [number, number] = [Infinity, -Infinity];
    for (const name of names) {
      const value: [number, number] = [shortfall(name, keep), objective(name, keep)];
      if (value[0] < top[0] || (value[0] === top[0] && value[1] > top[1])) [chosen, top] = [name, value];
    }
    return chosen;
  };
  const perSlice = (name: string, keep: (o: QuestionOutcome) => boolean): Record<string, LocoScore> =>
    Object.fromEntries(slices.map((slice) => [slice.name, score(scored(slice, name).filter(keep))]));
  const conversations = first ? [...new Set(scored(first, names[0] ?? '').map((o) => o.conversationId))] : [];
  // A slice's conversations derived from a held-out one are held out with it.
  const heldOut = (o: QuestionOutcome, conversationId: string) => derivedFrom(o.conversationId, conversationId);
  const folds = conversations.map((conversationId) => {
    const chosen = best((o) => !heldOut(o, conversationId));
    return { conversationId, chosen, heldOut: perSlice(chosen, (o) => heldOut(o, conversationId)) };
  });
  const pooledFolds = (slice: string): LocoScore => {
    const n = folds.reduce((s, f) => s + (f.heldOut[slice]?.n ?? 0), 0);
    const weighted = (b: number) => folds.reduce((s, f) => s + (f.heldOut[slice]?.er[String(b)] ?? 0) * (f.heldOut[slice]?.n ?? 0), 0);
    return { er: Object.fromEntries(budgets.map((b) => [String(b), n === 0 ? 0 : weighted(b) / n])), n };
  };
  const chosen = best(() => true);
  return {
    budgets: [...budgets],
    slices: slices.map((slice) => slice.name),
    guards: slices.flatMap((slice) => (slice.floor ? [{ slice: slice.name, reference: slice.floor.name }] : [])),
    folds,
    loco: Object.fromEntries(slices.map((slice) => [slice.name, pooledFolds(slice.name)])),
    inSample: { chosen, scores: perSlice(chosen, () => true) },
    candidates: Object.fromEntries(names.map((name) => [name, perSlice(name, () => true)])),
  };
}

/** The report section of a leave-one-conversation-out choice. */
export function renderLoco(report: LocoReport): string {
  const ers = (score: LocoScore | undefined) => report.budgets.map((b) => (score?.er[String(b)] ?? 0).toFixed(3));
  const head = (first: readonly string[]) => [`| ${[...first, ...report.budgets.map((b) => `ER@${b}`)].join(' | ')} |`, `|${' --- |'.repeat(first.length + report.budgets.length)}`];
  const row = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  const [main = '', ...further] = report.slices;
  return [
    '## Leave-one-conversation-out choice of weights',
    '',
    `Objective: mean of ER@${report.budgets.join(' and ER@')} on the other conversations${report.guards.length > 0 ? `, among the candidates whose mean there on ${report.guards.map((g) => `${g.slice} is at least that of ${g.reference}`).join(' and ')}` : ''}. Folds and held-out ER below are on ${main}.`,
    '',
    ...head(['held out', 'chosen', 'n']),
    ...report.folds.map((f) => row([f.conversationId, f.chosen, String(f.heldOut[main]?.n ?? 0), ...ers(f.heldOut[main])])),
    ...report.slices.flatMap((slice) => [
      row([`**LOCO${slice === main ? '' : `, ${slice}`}**`, '', String(report.loco[slice]?.n ?? 0), ...ers(report.loco[slice])]),
      row([`**in-sample${slice === main ? '' : `, ${slice}`}**`, report.inSample.chosen, '', ...ers(report.inSample.scores[slice])]),
    ]),
    '',
    ...head(['candidate', 'slice']),
    ...Object.entries(report.candidates).flatMap(([name, scores]) => [main, ...further].map((slice) => row([name, slice, ...ers(scores[slice])]))),
    '',
  ].join('\n');
}
