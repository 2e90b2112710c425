import { PrismError } from '../errors.ts';
import { EVAL_CATEGORIES, RECALL_KS, categoryName, type CategoryName } from './metrics.ts';
import type { ComparisonKind, JudgeComparison, LocomoEvalResults, PairedComparison } from './runner.ts';

const CATEGORY_COLUMNS: readonly CategoryName[] = EVAL_CATEGORIES.map(categoryName);

const METRIC_DEFINITIONS = [
  '**ER at budget B** (evidence recall): each system\'s ranked units are packed greedily, in rank order, into at most B tokens of the fixed o200k_base tokenizer (the same packer for every system); ER is the share of a question\'s gold evidence turns whose text is inside the packed context, averaged over questions. Systems that return summaries rather than turn text count a turn as covered when its Episode is included.',
  '**ER@K**: the share of a question\'s gold evidence turns inside the top K returned Episodes (or units, for systems that return no Episodes), before any packing — the paper\'s measure.',
  '**Questions without resolvable evidence** (every evidence id unresolved after normalisation) are excluded from ER and ER@K and counted under dataset statistics; `n` is the number of questions scored. Where n = 0, results.json holds ER 0 and the tables show –.',
  '**Mean context tokens**: tokens of the packed context, averaged over all questions; the summary column is at the largest budget.',
  '**Latency p50/p95**: wall time of one retrieval call per question (linear-interpolated percentiles), excluding packing and answering.',
  '**LLM calls per query**: calls the system itself made while retrieving (answer and judge calls are listed apart).',
  '**Judge score** (LLM mode): CORRECT / (CORRECT + WRONG) of the judge model on answers generated from the context packed at the judge budget; **per-1K** = judge score / (mean context tokens at that budget / 1000).',
  '**Paired 95% CI**: percentile bootstrap of the per-question difference system − reference, resampling questions (same questions for both systems). References: the best baseline at each budget; for the ablation protocol, `prism` against each of its variants (Δ = what the variant gives up); and any pair asked for with `--compare system:reference`. **McNemar mid-p**: exact binomial test on the discordant judge labels with the mid-p correction.',
];

/** report.md for one evaluation run. */
export function renderReport(results: LocomoEvalResults): string {
  const names = Object.keys(results.systems);
  const out: string[] = [];
  out.push('# LoCoMo evaluation', '');
  out.push(
    `Data: \`${results.data ?? '(in memory)'}\` · mode: ${results.mode} · ${results.questions} questions (categories 1–4) · ` +
      `${results.dataset.conversations} conversations · wall time ${formatDuration(results.timings.wallMs)}`,
    '',
  );

  out.push('## Summary', '');
  const summaryHead = [
    'system',
    ...results.budgets.map((b) => `ER@${b} tok`),
    ...RECALL_KS.map((k) => `ER@${k}`),
    'ctx tokens',
    'judge',
    'per-1K',
    'LLM calls/q',
    'p50 ms',
    'p95 ms',
  ];
  out.push(
    ...table(
      summaryHead,
      names.map((name) => {
        const s = results.systems[name];
        if (!s) return [name];
        return [
          systemLabel(name, s.baseline),
          ...results.budgets.map((b) => recall(s.erAtBudget[String(b)], s.n)),
          ...RECALL_KS.map((k) => recall(s.erAtK[String(k)], s.n)),
          integer(s.meanContextTokens),
          ratio(s.judge),
          ratio(s.judgePer1k),
          decimal(s.llmCallsPerQuery, 2),
          decimal(s.latencyMs.p50, 1),
          decimal(s.latencyMs.p95, 1),
        ];
      }),
    ),
    '',
  );

  for (const budget of results.budgets) {
    const key = String(budget);
    out.push(`## ER at ${budget} tokens, by category`, '');
    const anySystem = results.systems[names[0] ?? ''];
    const head = ['system', ...CATEGORY_COLUMNS.map((c) => `${c} (n=${anySystem?.perCategory[c].n ?? 0})`), 'overall', 'mean tokens'];
    out.push(
      ...table(
        head,
        names.map((name) => {
          const s = results.systems[name];
          if (!s) return [name];
          return [
            systemLabel(name, s.baseline),
            ...CATEGORY_COLUMNS.map((c) => recall(s.perCategory[c].erAtBudget[key], s.perCategory[c].n)),
            recall(s.erAtBudget[key], s.n),
            integer(s.meanContextTokensAtBudget[key]),
          ];
        }),
      ),
      '',
    );
  }

  const gapSize = results.systems[names[0] ?? '']?.lexicalGap.n ?? 0;
  out.push(
    `## Lexical-gap slice (n=${gapSize}): gold turns share no content word with the question`,
    '',
    ...table(
      ['system', ...results.budgets.map((b) => `ER@${b}`)],
      names.map((name) => {
        const s = results.systems[name];
        if (!s) return [name];
        return [systemLabel(name, s.baseline), ...results.budgets.map((b) => recall(s.lexicalGap.erAtBudget[String(b)], s.lexicalGap.n))];
      }),
    ),
    '',
  );

  if (results.mode === 'llm') {
    out.push('## Judge score by category', '');
    out.push(
      ...table(
        ['system', ...CATEGORY_COLUMNS, 'overall', 'per-1K', 'answer+judge calls/q', 'answer+judge tokens/q'],
        names.map((name) => {
          const s = results.systems[name];
          if (!s) return [name];
          return [
            systemLabel(name, s.baseline),
            ...CATEGORY_COLUMNS.map((c) => ratio(s.perCategory[c].judge)),
            ratio(s.judge),
            ratio(s.judgePer1k),
            decimal(s.answerLlm?.callsPerQuery ?? null, 2),
            integer(s.answerLlm?.tokensPerQuery ?? null),
          ];
        }),
      ),
      '',
    );
  }

  out.push('## Paired comparison with the best baseline (ER at budget)', '');
  if (results.comparisons.length === 0) out.push('No baseline in this run, or nothing to compare.', '');
  else out.push(...erComparisonTable(results.comparisons), '');
  if (results.judgeComparisons.length > 0) {
    out.push('## Paired comparison with the best baseline (judge labels)', '');
    out.push(...judgeComparisonTable(results.judgeComparisons), '');
  }
  if (results.paired.length > 0) {
    out.push('## Paired comparisons: PRISM against its variants, and requested pairs (ER at budget)', '');
    out.push(...erComparisonTable(results.paired), '');
  }
  if (results.pairedJudge.length > 0) {
    out.push('## Paired comparisons: PRISM against its variants, and requested pairs (judge labels)', '');
    out.push(...judgeComparisonTable(results.pairedJudge), '');
  }

  for (const [name, breakdown] of Object.entries(results.routing)) {
    out.push(`## N4 routing: ${name}`, '');
    out.push(
      ...table(
        ['tier', 'questions', 'share', ...CATEGORY_COLUMNS],
        Object.entries(breakdown).map(([tier, row]) => [
          tier,
          String(row.total),
          `${(row.share * 100).toFixed(1)}%`,
          ...CATEGORY_COLUMNS.map((c) => String(row.byCategory[c])),
        ]),
      ),
      '',
    );
  }

  const d = results.dataset;
  out.push('## Dataset', '');
  out.push(
    `${d.conversations} conversations, ${d.sessions} sessions, ${d.turns} turns. Questions per category: ` +
      CATEGORY_COLUMNS.map((c) => `${c} ${d.questionsPerCategory[c]}`).join(', ') +
      `; adversarial (category 5) skipped: ${d.adversarialSkipped}.`,
    '',
    `Evidence ids after normalisation: ${d.evidenceIds}; unresolved: ${d.unresolvedIds.length}` +
      (d.unresolvedIds.length > 0 ? ` (${d.unresolvedIds.map((u) => `\`${u.id}\` in ${u.question}`).join(', ')})` : '') +
      `. Questions without any resolvable evidence (excluded from ER): ${d.questionsWithoutEvidence.length}` +
      (d.questionsWithoutEvidence.length > 0 ? ` (${d.questionsWithoutEvidence.join(', ')})` : '') +
      '.',
    '',
  );

  out.push('## Run config and timings', '');
  const config = Object.entries(results.config).map(([key, value]) => `- ${key}: \`${JSON.stringify(value)}\``);
  out.push(...config, '');
  out.push(
    ...table(
      ['system', 'prepare', 'retrieve', 'answer+judge', 'conversations from cache'],
      Object.entries(results.timings.systems).map(([name, t]) => [
        name,
        formatDuration(t.prepareMs),
        formatDuration(t.retrieveMs),
        formatDuration(t.judgeMs),
        String(t.cachedConversations),
      ]),
    ),
    '',
    'Timings of conversations restored from the cache are those of the run that computed them.',
    '',
  );

  out.push('## Metrics', '', ...METRIC_DEFINITIONS.map((line) => `- ${line}`), '');
  return out.join('\n');
}

/** A point on the accuracy–context plane: one system at one budget. */
interface FrontierPoint {
  system: string;
  kind: 'baseline' | 'PRISM';
  budget: number;
  tokens: number;
  er: number;
}

/**
 * vega and vega-lite are optional peer dependencies (`npm i prism-memory` installs no plotting);
 * the eval CLI calls this before a run so a missing one is reported at once, not after it.
 */
export async function loadVega(): Promise<[typeof import('vega-lite'), typeof import('vega')]> {
  try {
    return await Promise.all([import('vega-lite'), import('vega')]);
  } catch (cause) {
    throw new PrismError('INVALID_INPUT', 'prism eval draws frontier.svg with vega and vega-lite: npm i -D vega vega-lite', { cause });
  }
}

/**
 * frontier.svg: ER (y) against mean packed-context tokens (x), one line per system through its
 * budgets. vega-lite compiles the chart and vega renders it headless (no canvas needed); both
 * load on demand so the rest of the harness does not pull them in.
 */
export async function renderFrontier(results: LocomoEvalResults): Promise<string> {
  const [vegaLite, vega] = await loadVega();
  const points: FrontierPoint[] = Object.entries(results.systems).flatMap(([system, s]) =>
    results.budgets.flatMap((budget) => {
      const tokens = s.meanContextTokensAtBudget[String(budget)];
      const er = s.erAtBudget[String(budget)];
      return tokens == null || er === undefined || s.n === 0 ? [] : [{ system, kind: s.baseline ? 'baseline' : 'PRISM', budget, tokens, er }];
    }),
  );
  const spec = vegaLite.compile({
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: 'Evidence recall against context size (LoCoMo)',
    width: 560,
    height: 360,
    data: { values: points },
    mark: { type: 'line', point: true },
    encoding: {
      x: { field: 'tokens', type: 'quantitative', title: 'mean context tokens (o200k_base)' },
      y: { field: 'er', type: 'quantitative', title: 'evidence recall (ER at budget)', scale: { domain: [0, 1] } },
      // Eleven systems outgrow a 10-colour palette; dashes set the baselines apart from PRISM and its variants.
      color: { field: 'system', type: 'nominal', title: 'system', scale: { scheme: 'tableau20' }, legend: { labelLimit: 240 } },
      strokeDash: { field: 'kind', type: 'nominal', title: 'kind', scale: { domain: ['PRISM', 'baseline'], range: [[1, 0], [5, 3]] } },
      order: { field: 'budget', type: 'quantitative' },
      tooltip: [{ field: 'system' }, { field: 'budget' }, { field: 'tokens', format: '.0f' }, { field: 'er', format: '.3f' }],
    },
  }).spec;
  const view = new vega.View(vega.parse(spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

const KIND_LABELS: Record<ComparisonKind, string> = { 'best-baseline': 'best baseline', variant: 'variant', requested: 'requested' };

function erComparisonTable(comparisons: readonly PairedComparison[]): string[] {
  return table(
    ['budget', 'system', 'reference', 'reference is', 'Δ ER', '95% CI', 'n'],
    comparisons.map((c) => [String(c.budget), c.system, c.reference, KIND_LABELS[c.kind], signed(c.diff), `[${signed(c.low)}, ${signed(c.high)}]`, String(c.n)]),
  );
}

function judgeComparisonTable(comparisons: readonly JudgeComparison[]): string[] {
  return table(
    ['system', 'reference', 'reference is', 'Δ judge', '95% CI', 'system only correct', 'reference only correct', 'McNemar mid-p', 'n'],
    comparisons.map((c) => [
      c.system,
      c.reference,
      KIND_LABELS[c.kind],
      signed(c.diff),
      `[${signed(c.low)}, ${signed(c.high)}]`,
      String(c.systemOnly),
      String(c.referenceOnly),
      c.midP.toPrecision(3),
      String(c.n),
    ]),
  );
}

function table(head: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const escape = (cell: string) => cell.replaceAll('|', '\\|');
  return [
    `| ${head.map(escape).join(' | ')} |`,
    `|${head.map(() => '---').join('|')}|`,
    ...rows.map((row) => `| ${row.map(escape).join(' | ')} |`),
  ];
}

function systemLabel(name: string, baseline: boolean): string {
  return baseline ? `${name} (baseline)` : `**${name}**`;
}

function ratio(value: number | null | undefined): string {
  return value == null ? '–' : value.toFixed(3);
}

/** An ER figure: over no scored question (n = 0) its 0 is a convention, shown as –. */
function recall(value: number | undefined, n: number): string {
  return n === 0 ? '–' : ratio(value);
}

/** A figure with `digits` decimals, or – when there is none. */
export function decimal(value: number | null | undefined, digits: number): string {
  return value == null ? '–' : value.toFixed(digits);
}

function integer(value: number | null | undefined): string {
  return value == null ? '–' : Math.round(value).toLocaleString('en-US');
}

/** A difference with its sign and three decimals ("+0.012", "−0.004"), as every paired table prints it. */
export function signed(value: number): string {
  return `${value >= 0 ? '+' : '−'}${Math.abs(value).toFixed(3)}`;
}

function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}
