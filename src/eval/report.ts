import { PrismError } from '../errors.ts';
import { NDCG_K, RECALL_KS, SESSION_KS, mean, percentile, type SessionSummary } from './metrics.ts';
import type { BreakdownComparison, ComparisonKind, JudgeComparison, EvalResults, PairedComparison } from './runner.ts';

const METRIC_DEFINITIONS = [
  '**ER at budget B** (evidence recall): each system\'s ranked units are packed greedily, in rank order, into at most B tokens of the fixed o200k_base tokenizer (the same packer for every system); ER is the share of a question\'s gold evidence turns whose text is inside the packed context, averaged over questions. Systems that return summaries rather than turn text count a turn as covered when its Episode is included.',
  '**ER@K**: the share of a question\'s gold evidence turns inside the top K returned Episodes (or units, for systems that return no Episodes), before any packing — the paper\'s measure.',
  `**Session recall_any@K** (R@K): 1 when any gold session is among the first K sessions of the ranking, else 0, averaged over the questions with gold sessions (LongMemEval: \`answer_session_ids\`; abstention questions have none). A session ranks where its best-ranked unit does: for the baselines, their best turn; for PRISM, its best turn in the context at the largest budget, then its best Episode of the ranking. **NDCG@${NDCG_K}**: binary-relevance NDCG over that session ranking.`,
  '**Latest value** (LongMemEval knowledge-update): share of the questions whose turn holding the latest value (the gold turns of the latest-dated gold session) is inside the context at the budget.',
  '**Abstention questions** (the memory holds no answer) are scored for neither recall: *empty* is the share whose context is empty; *low-scoring* the share whose best unit score is below the 10th percentile of the same system\'s best scores on the answerable questions; *AUROC* the probability that an answerable question\'s best score beats an abstention question\'s (0.5: the score says nothing about whether the answer is there).',
  '**Questions without resolvable evidence** (every evidence id unresolved after normalisation) are excluded from ER and ER@K and counted under dataset statistics; `n` is the number of questions scored. Where n = 0, results.json holds ER 0 and the tables show –.',
  '**Mean context tokens**: tokens of the packed context, averaged over all questions; the summary column is at the largest budget.',
  '**Latency p50/p95**: wall time of one retrieval call per question (linear-interpolated percentiles), excluding packing and answering.',
  '**LLM calls per query**: calls the system itself made while retrieving (answer and judge calls are listed apart).',
  '**Judge score** (LLM mode): CORRECT / (CORRECT + WRONG) of the judge model on answers generated from the context packed at the judge budget; **per-1K** = judge score / (mean context tokens at that budget / 1000).',
  '**Paired 95% CI**: percentile bootstrap of the per-question difference system − reference, resampling questions (same questions for both systems). References: the best baseline at each budget; for the ablation protocol, `prism` against each of its variants (Δ = what the variant gives up); any pair asked for with `--compare system:reference`; and, per category, every baseline. **McNemar mid-p**: exact binomial test on the discordant judge labels with the mid-p correction.',
  '**Ingest per memory**: wall time of preparing one memory (PRISM: ingesting it, or restoring it when it was ingested before; baselines: embedding or indexing its turns), over the memories of the run. The dense baselines share turn and query vectors, so the first of them in the run pays for the embedding (its prepare time and latency) and the others reuse it.',
];

/** report.md for one evaluation run. */
export function renderReport(results: EvalResults): string {
  const names = Object.keys(results.systems);
  const out: string[] = [];
  const categories = results.categories;
  const sessionsRanked = Object.values(results.systems).some((s) => s.sessions.n > 0);
  out.push(`# ${results.title} evaluation`, '');
  out.push(
    `Data: \`${results.data ?? '(in memory)'}\` · mode: ${results.mode} · ${results.questions} questions · ` +
      `${results.dataset.conversations} memories · wall time ${formatDuration(results.timings.wallMs)}`,
    '',
  );

  out.push('## Summary', '');
  const summaryHead = [
    'system',
    ...results.budgets.map((b) => `ER@${b} tok`),
    ...RECALL_KS.map((k) => `ER@${k}`),
    ...(sessionsRanked ? sessionHeads() : []),
    'ctx tokens',
    'judge',
    'per-1K',
    'LLM calls/q',
    'p50 ms',
    'p95 ms',
    'ingest/memory',
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
          ...(sessionsRanked ? sessionCells(s.sessions) : []),
          integer(s.meanContextTokens),
          ratio(s.judge),
          ratio(s.judgePer1k),
          decimal(s.llmCallsPerQuery, 2),
          decimal(s.latencyMs.p50, 1),
          decimal(s.latencyMs.p95, 1),
          formatDuration(mean(results.timings.systems[name]?.prepareMsByMemory ?? []) ?? 0),
        ];
      }),
    ),
    '',
  );

  for (const budget of results.budgets) {
    const key = String(budget);
    out.push(`## ER at ${budget} tokens, by category`, '');
    const anySystem = results.systems[names[0] ?? ''];
    const head = ['system', ...categories.map((c) => `${c} (n=${anySystem?.perCategory[c]?.n ?? 0})`), 'overall', 'mean tokens'];
    out.push(
      ...table(
        head,
        names.map((name) => {
          const s = results.systems[name];
          if (!s) return [name];
          return [
            systemLabel(name, s.baseline),
            ...categories.map((c) => recall(s.perCategory[c]?.erAtBudget[key], s.perCategory[c]?.n ?? 0)),
            recall(s.erAtBudget[key], s.n),
            integer(s.meanContextTokensAtBudget[key]),
          ];
        }),
      ),
      '',
    );
  }

  if (sessionsRanked) out.push(...sessionSection(results));
  out.push(...latestSection(results), ...abstentionSection(results));

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
        ['system', ...categories, 'overall', 'per-1K', 'answer+judge calls/q', 'answer+judge tokens/q'],
        names.map((name) => {
          const s = results.systems[name];
          if (!s) return [name];
          return [
            systemLabel(name, s.baseline),
            ...categories.map((c) => ratio(s.perCategory[c]?.judge)),
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
  if (results.breakdown.length > 0) out.push(...breakdownSection(results.breakdown));
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
        ['tier', 'questions', 'share', ...categories],
        Object.entries(breakdown).map(([tier, row]) => [
          tier,
          String(row.total),
          `${(row.share * 100).toFixed(1)}%`,
          ...categories.map((c) => String(row.byCategory[c] ?? 0)),
        ]),
      ),
      '',
    );
  }

  const d = results.dataset;
  out.push('## Dataset', '');
  out.push(
    `${d.conversations} memories, ${d.sessions} sessions, ${d.turns} turns. Questions per category: ` +
      categories.map((c) => `${c} ${d.questionsPerCategory[c] ?? 0}`).join(', ') +
      (d.abstention > 0 ? `; of them abstention: ${d.abstention}` : '') +
      (d.skipped ? `; ${d.skipped.reason} skipped: ${d.skipped.count}` : '') +
      '.',
    '',
    `Evidence turns named: ${d.evidenceIds}; unresolved ids: ${d.unresolvedIds.length}` +
      (d.unresolvedIds.length > 0 ? ` (${d.unresolvedIds.map((u) => `\`${u.id}\` in ${u.question}`).join(', ')})` : '') +
      `. Questions without any resolvable evidence (excluded from ER): ${d.questionsWithoutEvidence.length}` +
      (d.questionsWithoutEvidence.length > 0 ? ` (${d.questionsWithoutEvidence.join(', ')})` : '') +
      '.',
    '',
  );

  out.push('## Run config and timings', '');
  // A LongMemEval run lists hundreds of memories: results.json keeps them, the report counts them.
  const shown = (value: unknown) => (Array.isArray(value) && value.length > 12 ? `${value.length} items: ${JSON.stringify(value.slice(0, 3)).slice(0, -1)}, …]` : JSON.stringify(value));
  const config = Object.entries(results.config).map(([key, value]) => `- ${key}: \`${shown(value)}\``);
  out.push(...config, '');
  out.push(
    ...table(
      ['system', 'prepare', 'per memory: mean', 'p50', 'p95', 'retrieve', 'answer+judge', 'memories from cache'],
      Object.entries(results.timings.systems).map(([name, t]) => [
        name,
        formatDuration(t.prepareMs),
        formatDuration(mean(t.prepareMsByMemory) ?? 0),
        formatDuration(percentile(t.prepareMsByMemory, 50) ?? 0),
        formatDuration(percentile(t.prepareMsByMemory, 95) ?? 0),
        formatDuration(t.retrieveMs),
        formatDuration(t.judgeMs),
        String(t.cachedConversations),
      ]),
    ),
    '',
    'Timings of memories restored from the cache are those of the run that computed them.',
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
export async function renderFrontier(results: EvalResults): Promise<string> {
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
    title: `Evidence recall against context size (${results.title})`,
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

function sessionHeads(): string[] {
  return [...SESSION_KS.map((k) => `sess R@${k}`), `sess NDCG@${NDCG_K}`];
}

function sessionCells(s: SessionSummary): string[] {
  return [...SESSION_KS.map((k) => recall(s.recallAny[String(k)], s.n)), recall(s.ndcg, s.n)];
}

/** Session recall_any@K and NDCG by category, one row per system and category. */
function sessionSection(results: EvalResults): string[] {
  return [
    '## Session ranking by category',
    '',
    ...table(
      ['system', 'category', 'n', ...sessionHeads()],
      Object.entries(results.systems).flatMap(([name, s]) => [
        ...results.categories.flatMap((c) => {
          const summary = s.perCategory[c];
          return summary ? [[systemLabel(name, s.baseline), c, String(summary.sessions.n), ...sessionCells(summary.sessions)]] : [];
        }),
        [systemLabel(name, s.baseline), 'all', String(s.sessions.n), ...sessionCells(s.sessions)],
      ]),
    ),
    '',
  ];
}

/** The latest-value share per budget, when the benchmark has such questions. */
function latestSection(results: EvalResults): string[] {
  const n = Object.values(results.systems)[0]?.latest.n ?? 0;
  if (n === 0) return [];
  return [
    `## Latest value in the context (n=${n})`,
    '',
    ...table(
      ['system', ...results.budgets.map((b) => `@${b}`)],
      Object.entries(results.systems).map(([name, s]) => [systemLabel(name, s.baseline), ...results.budgets.map((b) => ratio(s.latest.atBudget[String(b)]))]),
    ),
    '',
  ];
}

/** What each system does on the abstention questions, when the benchmark has them. */
function abstentionSection(results: EvalResults): string[] {
  const n = Object.values(results.systems)[0]?.abstention.n ?? 0;
  if (n === 0) return [];
  return [
    `## Abstention questions (n=${n}): the memory holds no answer`,
    '',
    ...table(
      ['system', ...results.budgets.map((b) => `empty @${b}`), 'low-scoring', 'AUROC'],
      Object.entries(results.systems).map(([name, s]) => [
        systemLabel(name, s.baseline),
        ...results.budgets.map((b) => ratio(s.abstention.emptyAtBudget[String(b)])),
        ratio(s.abstention.lowScoring),
        ratio(s.abstention.auroc),
      ]),
    ),
    '',
  ];
}

/** Per-category paired differences against every baseline: one row per (system, baseline, category), one column per metric. */
function breakdownSection(comparisons: readonly BreakdownComparison[]): string[] {
  const metrics = [...new Set(comparisons.map((c) => c.metric))];
  const rows = new Map<string, { head: string[]; cells: Map<string, BreakdownComparison> }>();
  for (const c of comparisons) {
    const key = `${c.system}\u0000${c.reference}\u0000${c.category ?? ''}`;
    let row = rows.get(key);
    if (!row) rows.set(key, (row = { head: [c.system, c.reference, c.category ?? 'all'], cells: new Map() }));
    row.cells.set(c.metric, c);
  }
  const cell = (c: BreakdownComparison | undefined) => (c ? `${signed(c.diff)} [${signed(c.low)}, ${signed(c.high)}] (n=${c.n})` : '–');
  return [
    '## Paired comparison with every baseline, by category',
    '',
    'Δ = system − baseline, paired by question, with its bootstrap 95% CI and the questions compared (ER: those with gold turns; session metrics: those with gold sessions).',
    '',
    ...table(
      ['system', 'baseline', 'category', ...metrics],
      [...rows.values()].map((row) => [...row.head, ...metrics.map((m) => cell(row.cells.get(m)))]),
    ),
    '',
  ];
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
