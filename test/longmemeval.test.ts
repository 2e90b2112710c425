import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { PrismError } from '../src/errors.ts';
import type { EvalSample } from '../src/eval/benchmark.ts';
import { evalCommand } from '../src/eval/cli.node.ts';
import { LONGMEMEVAL_CANDIDATES } from '../src/eval/loco.ts';
import { longMemEvalBenchmark, sampleByType } from '../src/eval/longmemeval.ts';
import { ndcgAtK, recallAny, sessionRanking } from '../src/eval/metrics.ts';
import { renderReport } from '../src/eval/report.ts';
import { runEval, type EvalResults } from '../src/eval/runner.ts';
import { createBaselines, type EvalSystem, type RetrieveOptions } from '../src/eval/systems.ts';
import type { ContextUnit } from '../src/retrieve/pack.ts';
import { testRuntime } from './helpers/runtime.ts';

type Turn = { role: string; content: string; has_answer?: boolean };

/** A hand-made record in the official format (field for field as `longmemeval_s_cleaned.json` has them). */
function record(id: string, type: string, question: string, answer: string | number, date: string, sessions: Array<[string, string, Turn[]]>, answerSessions: string[]) {
  return {
    question_id: id,
    question_type: type,
    question,
    answer,
    question_date: date,
    haystack_dates: sessions.map(([, d]) => d),
    haystack_session_ids: sessions.map(([sid]) => sid),
    haystack_sessions: sessions.map(([, , turns]) => turns),
    answer_session_ids: answerSessions,
  };
}

const BREAD: Turn[] = [
  { role: 'user', content: 'What is a good recipe for banana bread?', has_answer: false },
  { role: 'assistant', content: 'Mash three ripe bananas, mix in flour, sugar and butter, and bake for an hour.', has_answer: false },
];

const RECORDS = [
  record(
    'ku-1',
    'knowledge-update',
    'Where do I currently keep my old sneakers?',
    'in a shoe rack in my closet',
    '2023/06/01 (Thu) 10:00',
    [
      ['noise_1', '2023/05/01 (Mon) 09:00', BREAD],
      [
        'ans_1',
        '2023/05/10 (Wed) 12:00',
        [
          { role: 'user', content: 'I keep my old sneakers under the bed for now.', has_answer: true },
          { role: 'assistant', content: 'That works until you find a better spot.', has_answer: false },
        ],
      ],
      [
        'ans_2',
        '2023/05/20 (Sat) 08:30',
        [
          { role: 'user', content: 'I moved my old sneakers to a shoe rack in my closet.', has_answer: true },
          { role: 'assistant', content: 'A shoe rack keeps them tidy.' },
        ],
      ],
      // The same session again, later: LongMemEval haystacks repeat a few session ids.
      ['noise_1', '2023/05/25 (Thu) 07:00', BREAD],
    ],
    ['ans_1', 'ans_2'],
  ),
  record(
    'ssa-1',
    'single-session-assistant',
    'Which trail near Denver did you recommend to me?',
    'the Royal Arch Trail',
    '2023/04/02 (Sun) 18:00',
    [
      [
        'trail',
        '2023/03/30 (Thu) 11:15',
        [
          { role: 'user', content: 'Recommend a hiking trail near Denver for a weekend.', has_answer: false },
          { role: 'assistant', content: 'Try the Royal Arch Trail in Boulder: steep but short.', has_answer: true },
        ],
      ],
      ['taxes', '2023/03/31 (Fri) 09:00', [{ role: 'user', content: 'How do I file my taxes online?' }, { role: 'assistant', content: 'Use the IRS Free File service.' }]],
    ],
    ['trail'],
  ),
  record(
    'ssu-1_abs',
    'single-session-user',
    'How many hamsters did I adopt last spring?',
    2,
    '2023/05/02 (Tue) 08:00',
    [['pets', '2023/05/01 (Mon) 20:00', [{ role: 'user', content: 'I adopted two guinea pigs.' }, { role: 'assistant', content: 'They need a large cage.' }]]],
    ['pets'],
  ),
];

describe('LongMemEval format', () => {
  it('reads each record as its own memory: sessions dated, speakers as roles, gold turns and sessions mapped', () => {
    const benchmark = longMemEvalBenchmark(RECORDS);
    expect(benchmark.name).toBe('longmemeval');
    expect(benchmark.samples.map((s) => s.conversation.id)).toEqual(['ku-1', 'ssa-1', 'ssu-1_abs']);
    const [ku, ssa, abs] = benchmark.samples as [EvalSample, EvalSample, EvalSample];
    // Sessions are numbered (the haystack repeats noise_1); the labels keep the haystack's ids.
    expect(ku.conversation.sessions.map((s) => s.id)).toEqual(['session_1', 'session_2', 'session_3', 'session_4']);
    expect(ku.sessionLabels).toEqual({ session_1: 'noise_1', session_2: 'ans_1', session_3: 'ans_2', session_4: 'noise_1' });
    expect(ku.conversation.sessions[1]).toMatchObject({ dateText: '2023/05/10 (Wed) 12:00', time: '2023-05-10T12:00:00' });
    expect(ku.conversation.sessions[2]!.turns).toEqual([
      { dialogId: 'D3:1', speaker: 'user', text: 'I moved my old sneakers to a shoe rack in my closet.' },
      { dialogId: 'D3:2', speaker: 'assistant', text: 'A shoe rack keeps them tidy.' },
    ]);
    expect(ku.questions).toEqual([
      {
        key: 'ku-1#0',
        question: 'Where do I currently keep my old sneakers?',
        answer: 'in a shoe rack in my closet',
        category: 'knowledge-update',
        gold: ['D2:1', 'D3:1'],
        lexicalGap: false,
        askedAt: '2023-06-01T10:00:00',
        goldSessions: ['ans_1', 'ans_2'],
        abstention: false,
        // The latest-dated gold session holds the value that counts now.
        latestGold: ['D3:1'],
      },
    ]);
    // An assistant turn can be the evidence.
    expect(ssa.questions[0]).toMatchObject({ gold: ['D1:2'], goldSessions: ['trail'], latestGold: null, askedAt: '2023-04-02T18:00:00' });
    // Abstention: no gold of either kind; a number answer is read as text.
    expect(abs.questions[0]).toMatchObject({ abstention: true, gold: [], goldSessions: null, answer: '2', category: 'single-session-user' });
    expect(benchmark.dataset).toMatchObject({
      conversations: 3,
      sessions: 7,
      turns: 14,
      abstention: 1,
      evidenceIds: 3,
      unresolvedIds: [],
      questionsWithoutEvidence: [],
      skipped: null,
    });
    expect(benchmark.dataset.questionsPerCategory).toMatchObject({ 'knowledge-update': 1, 'single-session-assistant': 1, 'single-session-user': 1, 'multi-session': 0 });
  });

  it('refuses malformed records with a typed error naming the record and the field', () => {
    const [first] = RECORDS;
    const bad = (change: Record<string, unknown>) => () => longMemEvalBenchmark([{ ...first, ...change }]);
    const expectInvalid = (fn: () => unknown, message: RegExp) => {
      expect(fn).toThrow(PrismError);
      expect(fn).toThrow(message);
    };
    expectInvalid(() => longMemEvalBenchmark({ questions: [] }), /LongMemEval data \(a JSON array of question records\): expected an array/);
    expectInvalid(bad({ question_date: '2023-06-01' }), /longmemeval\[0\] \(question ku-1\)\.question_date: expected a date written as 2023\/05\/30/);
    expectInvalid(bad({ question_date: '2023/02/30 (Thu) 10:00' }), /question_date: not a date.*February 2023 has 28 days/);
    expectInvalid(bad({ question_type: 'trivia' }), /question_type: expected one of single-session-user/);
    expectInvalid(bad({ haystack_dates: ['2023/05/01 (Mon) 09:00'] }), /must be as long as each other/);
    expectInvalid(bad({ answer: null }), /\.answer: expected a string or a number, got null/);
    const turnWithoutRole = { ...first, haystack_sessions: [[{ content: 'hi' }], ...first!.haystack_sessions.slice(1)] };
    expectInvalid(() => longMemEvalBenchmark([turnWithoutRole]), /haystack_sessions\[0\]\[0\]\.role: expected a value, got nothing/);
    expectInvalid(() => longMemEvalBenchmark([first, first]), /question_id ku-1 appears twice/);
    // A gold session the haystack lacks is counted as unresolved.
    expect(longMemEvalBenchmark([{ ...first, answer_session_ids: ['ans_1', 'gone'] }]).dataset.unresolvedIds).toEqual([{ question: 'ku-1#0', id: 'session gone' }]);
  });

  it('samples N questions per type with a fixed seed, a larger N keeping the smaller draw', () => {
    const many = ['single-session-user', 'multi-session'].flatMap((type) =>
      Array.from({ length: 12 }, (_, i) => ({ ...RECORDS[2]!, question_id: `${type}-${i}`, question_type: type })),
    );
    const benchmark = longMemEvalBenchmark(many);
    const ids = (n: number) => sampleByType(benchmark, n).samples.map((s) => s.conversation.id);
    const three = ids(3);
    expect(three.filter((id) => id.startsWith('multi-session'))).toHaveLength(3);
    expect(three.filter((id) => id.startsWith('single-session-user'))).toHaveLength(3);
    expect(ids(3)).toEqual(three);
    expect(ids(7).filter((id) => three.includes(id))).toEqual(three);
    // File order is kept, and a draw of all takes all.
    const order = benchmark.samples.map((s) => s.conversation.id);
    expect([...three].sort((a, b) => order.indexOf(a) - order.indexOf(b))).toEqual(three);
    expect(ids(50)).toEqual(order);
    expect(sampleByType(benchmark, 3).dataset.conversations).toBe(6);
    expect(() => sampleByType(benchmark, 0)).toThrow(/--sample/);
  });
});

describe('session ranking metrics', () => {
  const sessionOf = new Map([
    ['D1:1', 'noise_1'],
    ['D2:1', 'ans_1'],
    ['D3:1', 'ans_2'],
    ['D4:1', 'noise_1'],
  ]);

  it('ranks a session where its best-ranked unit is', () => {
    const ranking = sessionRanking([{ dialogIds: ['D3:1'] }, { dialogIds: ['D4:1'] }, { dialogIds: ['D1:1', 'D2:1'] }, { dialogIds: ['D9:9'] }], sessionOf);
    expect(ranking).toEqual(['ans_2', 'noise_1', 'ans_1']);
  });

  it('computes recall_any@K and NDCG@K on known rankings', () => {
    const ranking = ['ans_2', 'noise_1', 'ans_1'];
    expect(recallAny(['ans_1'], ranking, 2)).toBe(0);
    expect(recallAny(['ans_1'], ranking, 3)).toBe(1);
    expect(recallAny(['ans_1', 'ans_2'], ranking, 1)).toBe(1);
    // DCG 1/log2(2) + 1/log2(4) = 1.5 over the ideal 1 + 1/log2(3).
    expect(ndcgAtK(['ans_1', 'ans_2'], ranking, 10)).toBeCloseTo(1.5 / (1 + 1 / Math.log2(3)), 12);
    expect(ndcgAtK(['ans_1', 'ans_2'], ranking, 1)).toBe(1);
    expect(ndcgAtK(['ans_1'], ranking, 2)).toBe(0);
    expect(ndcgAtK(['ans_1'], ['ans_1'], 10)).toBe(1);
  });
});

/** A system whose ranking per memory is fixed in advance (dialog ids, best first), one unit per turn. */
function fixedRanking(name: string, order: Record<string, string[]>, asked: Array<string | null> = []): EvalSystem {
  let sample: EvalSample | null = null;
  return {
    name,
    baseline: true,
    fingerprint: name,
    async prepare(s) {
      sample = s;
    },
    async retrieve(_question, options: RetrieveOptions) {
      asked.push(options.askedAt);
      const turns = new Map(sample!.conversation.sessions.flatMap((session) => session.turns.map((turn) => [turn.dialogId, { turn, session }] as const)));
      const ids = order[sample!.conversation.id] ?? [];
      const units: ContextUnit[] = ids.map((id, rank) => {
        const { turn, session } = turns.get(id)!;
        return { id, header: `[${session.id}]`, text: `(${id}) ${turn.speaker}: ${turn.text}`, dialogIds: [id], score: ids.length - rank, time: session.time };
      });
      return { units, llmCalls: 0 };
    },
  };
}

describe('LongMemEval in the runner', () => {
  const benchmark = longMemEvalBenchmark(RECORDS);
  const budgets = [40, 4096];

  it('scores turn evidence, the session ranking, the latest value and abstention on known rankings', async () => {
    const asked: Array<string | null> = [];
    const good = fixedRanking('good', { 'ku-1': ['D3:1', 'D2:1', 'D1:1'], 'ssa-1': ['D1:2', 'D2:1'], 'ssu-1_abs': [] }, asked);
    const poor = fixedRanking('poor', { 'ku-1': ['D1:1', 'D4:1', 'D1:2', 'D4:2', 'D2:1'], 'ssa-1': ['D2:1', 'D2:2', 'D1:1'], 'ssu-1_abs': ['D1:1'] });
    const results: EvalResults = await runEval({ benchmark, systems: [{ ...good, baseline: false }, poor], budgets, compareByCategory: ['good'], bootstrap: { resamples: 200 } });
    // Each question is asked at its question_date.
    expect(asked).toEqual(['2023-06-01T10:00:00', '2023-04-02T18:00:00', '2023-05-02T08:00:00']);
    expect(results.benchmark).toBe('longmemeval');
    expect(results.questions).toBe(3);
    const [ku, ssa, abs] = results.outcomes['good']!;
    expect(ku).toMatchObject({ category: 'knowledge-update', abstention: false, sessions: { recallAny: { '5': 1, '10': 1 }, ndcg: 1 }, topScore: 3 });
    expect(ku!.recall!.atBudget['4096']).toBe(1);
    // 40 tokens hold the header and the first turn only: the latest value, half the gold.
    expect(ku!.recall!.atBudget['40']).toBe(0.5);
    expect(ku!.latest).toEqual({ '40': 1, '4096': 1 });
    expect(ssa).toMatchObject({ recall: { atBudget: { '4096': 1 } }, sessions: { recallAny: { '5': 1 }, ndcg: 1 }, latest: null });
    expect(abs).toMatchObject({ abstention: true, recall: null, sessions: null, topScore: null, contextTokens: { '40': 0, '4096': 0 } });

    const [pku, pssa] = results.outcomes['poor']!;
    // Both copies of noise_1 are one label, ranked first; ans_1 second, ans_2 never.
    expect(pku!.sessions).toEqual({ recallAny: { '5': 1, '10': 1 }, ndcg: (1 / Math.log2(3)) / (1 + 1 / Math.log2(3)) });
    expect(pku!.latest).toEqual({ '40': 0, '4096': 0 });
    expect(pssa!.sessions).toEqual({ recallAny: { '5': 1, '10': 1 }, ndcg: 1 / Math.log2(3) });

    const good_ = results.systems['good']!;
    expect(good_.sessions).toMatchObject({ n: 2, recallAny: { '5': 1, '10': 1 }, ndcg: 1 });
    expect(good_.perCategory['knowledge-update']!.latest).toEqual({ atBudget: { '40': 1, '4096': 1 }, n: 1 });
    expect(good_.perCategory['single-session-user']).toMatchObject({ n: 0, questions: 1 });
    expect(good_.abstention).toMatchObject({ n: 1, emptyAtBudget: { '40': 1, '4096': 1 }, lowScoring: 1, auroc: 1 });
    expect(results.systems['poor']!.abstention).toMatchObject({ n: 1, emptyAtBudget: { '40': 0, '4096': 0 } });
    // good − poor per category and overall, on ER at each budget and the session ranking.
    const overall = results.breakdown.filter((c) => c.category === null).map((c) => c.metric);
    expect(overall).toEqual(['ER@40', 'ER@4096', 'R@5', 'R@10', 'NDCG@10']);
    const ndcg = results.breakdown.find((c) => c.category === null && c.metric === 'NDCG@10')!;
    expect(ndcg).toMatchObject({ system: 'good', reference: 'poor', n: 2 });
    expect(ndcg.diff).toBeCloseTo(1 - (pku!.sessions!.ndcg + pssa!.sessions!.ndcg) / 2, 12);
    expect(results.breakdown.some((c) => c.category === 'single-session-user')).toBe(false);

    const report = renderReport(results);
    expect(report).toContain('# LongMemEval evaluation');
    expect(report).toContain('## Session ranking by category');
    expect(report).toContain('## Latest value in the context (n=1)');
    expect(report).toContain('## Abstention questions (n=1)');
    expect(report).toContain('## Paired comparison with every baseline, by category');
    expect(report).toMatch(/\| good \| poor \| knowledge-update \| /);
  });

  it('searches user turns only in the user-turn baseline', async () => {
    const { embedder } = await testRuntime();
    const [userTurns, allTurns] = createBaselines({ embedder }, ['dense-user-turns', 'dense-turns']);
    const results = await runEval({ benchmark, systems: [userTurns!, allTurns!], budgets: [4096] });
    // The assistant's recommendation cannot be found among the user's turns.
    expect(results.outcomes['dense-user-turns']![1]!.recall!.atBudget['4096']).toBe(0);
    expect(results.outcomes['dense-turns']![1]!.recall!.atBudget['4096']).toBe(1);
    expect(results.outcomes['dense-user-turns']![0]!.recall!.atBudget['4096']).toBe(1);
  });
});

describe('prism eval longmemeval', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it('reads a gzipped official file and writes the report', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prism-lme-'));
    dirs.push(dir);
    const data = join(dir, 'longmemeval-tiny.json.gz');
    await writeFile(data, gzipSync(JSON.stringify(RECORDS)));
    const out = join(dir, 'out');
    expect(await evalCommand(['longmemeval'], { data, out, systems: 'bm25-turns,dense-user-turns', budgets: '64,4096', sample: '1' })).toBe(0);
    const results = JSON.parse(await readFile(join(out, 'results.json'), 'utf8')) as EvalResults;
    expect(results).toMatchObject({ benchmark: 'longmemeval', questions: 3, budgets: [64, 4096] });
    expect(Object.keys(results.systems)).toEqual(['bm25-turns', 'dense-user-turns']);
    expect(await readFile(join(out, 'report.md'), 'utf8')).toContain('## Session ranking by category');
    await expect(evalCommand(['longmemeval'], { data, out, pooled: true })).rejects.toThrow(/--pooled apply to LoCoMo only/);
    expect(await evalCommand(['longmemeval'], { out })).toBe(2);
  });

  it('ingests each question into its own PRISM memory, asks at question_date and chooses the LongMemEval weights leave-one-question-out', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prism-lme-'));
    dirs.push(dir);
    const data = join(dir, 'longmemeval-tiny.json');
    await writeFile(data, JSON.stringify(RECORDS));
    const out = join(dir, 'out');
    expect(await evalCommand(['longmemeval'], { data, out, systems: 'prism,dense-turns', budgets: '64,4096', loco: true })).toBe(0);
    const results = JSON.parse(await readFile(join(out, 'results.json'), 'utf8')) as EvalResults;
    const prism = results.systems['prism']!;
    expect(prism).toMatchObject({ n: 2, sessions: { n: 2 }, abstention: { n: 1 } });
    // Every candidate of the choice ran on the same questions.
    expect(Object.keys(results.systems).filter((name) => name.startsWith('loco:'))).toEqual(LONGMEMEVAL_CANDIDATES.map((c) => c.name));
    // PRISM against each baseline, per type, in the same report as the choice.
    expect(results.breakdown.every((c) => c.system === 'prism' && c.reference === 'dense-turns')).toBe(true);
    const report = await readFile(join(out, 'report.md'), 'utf8');
    expect(report).toContain('## Leave-one-conversation-out choice of weights');
    expect(report).toMatch(/\| ku-1 \| loco:recency/);
    // One memory per question.
    expect(results.timings.systems['prism']!.prepareMsByMemory).toHaveLength(3);
  });
});
