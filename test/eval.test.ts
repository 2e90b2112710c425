import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../src/config.ts';
import { createDirectoryCache } from '../src/eval/cache.node.ts';
import { evalSystemNames, parseComparePairs, splitDataPaths } from '../src/eval/cli.node.ts';
import { createEvidenceResolver, normaliseEvidence } from '../src/eval/evidence.ts';
import { evidenceRecall, percentile, recallAtK, summariseOutcomes, type QuestionOutcome } from '../src/eval/metrics.ts';
import { memoryBuildKey, prismSystem, type MemoryBuild, type MemorySource, type PrismSystemOptions } from '../src/eval/prism-system.ts';
import { renderFrontier, renderReport } from '../src/eval/report.ts';
import { isLexicalGap } from '../src/eval/slices.ts';
import { IMPLICIT_RECALL_CASES, implicitRecallSamples } from '../src/eval/implicit-recall.ts';
import { comparePooled, pooledSample } from '../src/eval/pooled.ts';
import { derivedFrom, leaveOneConversationOut, renderLoco } from '../src/eval/loco.ts';
import { defaultLocomoPath } from '../src/node.ts';
import { runEval, type EvalOptions, type EvalResults } from '../src/eval/runner.ts';
import { LOCOMO_CATEGORIES, locomoBenchmark } from '../src/eval/locomo-benchmark.ts';
import { bootstrapMeanCI, mcNemarMidP, mcNemarMidPFromCounts, pairedBootstrapCI } from '../src/eval/stats.ts';
import { BASELINE_NAMES, bm25TurnsSystem, fullContextSystem, type EvalSystem } from '../src/eval/systems.ts';
import { turnLine } from '../src/graph/chunk-text.ts';
import { sessionHeader } from '../src/ingest/chunking.ts';
import { parseLocomo, type LocomoSample } from '../src/ingest/locomo.ts';
import { createLlmClient } from '../src/llm/client.ts';
import { Memory } from '../src/memory.ts';
import { countTokens } from '../src/retrieve/pack.ts';
import { MemoryStore } from '../src/store/memory.ts';
import { reply, startOpenAiServer, type RecordedRequest } from './helpers/openai-server.ts';
import { testRuntime } from './helpers/runtime.ts';

/** A two-session conversation in raw LoCoMo format, with malformed evidence on purpose. */
const RAW_SAMPLE = {
  sample_id: 'conv-t',
  conversation: {
    speaker_a: 'Alice',
    speaker_b: 'Bob',
    session_1_date_time: '1:56 pm on 8 May, 2023',
    session_1: [
      { speaker: 'Alice', dia_id: 'D1:1', text: 'I adopted a golden retriever puppy named Biscuit.' },
      { speaker: 'Bob', dia_id: 'D1:2', text: 'That is wonderful news, congratulations!' },
      { speaker: 'Alice', dia_id: 'D1:3', text: 'We are moving to Lisbon in the autumn.' },
    ],
    session_2_date_time: '10:00 am on 20 May, 2023',
    session_2: [
      { speaker: 'Bob', dia_id: 'D2:1', text: 'My sister started a pottery class.' },
      { speaker: 'Alice', dia_id: 'D2:2', text: 'Biscuit chewed my favourite sneakers yesterday.' },
      { speaker: 'Bob', dia_id: 'D2:3', text: 'Did you finish the marathon training?' },
    ],
  },
  qa: [
    { question: 'What breed of puppy does Alice have?', answer: 'golden retriever', evidence: ['D1:1'], category: 4 },
    { question: 'Where is Alice moving and what got chewed?', answer: 'Lisbon; sneakers', evidence: ['D1:3; D2:2'], category: 1 },
    { question: 'When were the sneakers chewed?', answer: '19 May 2023', evidence: ['D:2:2'], category: 2 },
    { question: "What class did Bob's sister start?", answer: 'pottery', evidence: ['D2:01'], category: 3 },
    { question: 'What did Bob adopt?', adversarial_answer: 'a puppy', evidence: ['D1:1'], category: 5 },
    { question: 'What is Bob training for?', answer: 'a marathon', evidence: ['D'], category: 4 },
    { question: 'Which puppy was adopted?', answer: 'Biscuit', evidence: ['D1:1', 'D9:9'], category: 1 },
  ],
};

const samples = parseLocomo([RAW_SAMPLE]);
const sample = samples[0]!;

describe('evidence ids', () => {
  it('normalises the malformed forms found in LoCoMo', () => {
    expect(normaliseEvidence('D:11:26')).toEqual(['D11:26']);
    expect(normaliseEvidence('D30:05')).toEqual(['D30:5']);
    expect(normaliseEvidence('D8:6; D9:17')).toEqual(['D8:6', 'D9:17']);
    expect(normaliseEvidence('D8:6 D9:17')).toEqual(['D8:6', 'D9:17']);
    expect(normaliseEvidence(' D3:12 ')).toEqual(['D3:12']);
    expect(normaliseEvidence('D')).toEqual(['D']);
  });

  it('resolves against the dialog ids and reports what does not resolve', () => {
    const resolver = createEvidenceResolver(sample.conversation);
    expect(resolver.resolve(['D1:3; D2:2'])).toEqual({ turns: ['D1:3', 'D2:2'], unresolved: [] });
    expect(resolver.resolve(['D:2:2', 'D2:02'])).toEqual({ turns: ['D2:2'], unresolved: [] });
    expect(resolver.resolve(['D', 'D1:1', 'D9:9'])).toEqual({ turns: ['D1:1'], unresolved: ['D', 'D9:9'] });
  });
});

describe('metrics', () => {
  it('computes evidence recall and ER@K', () => {
    expect(evidenceRecall(['D1:1', 'D1:2'], ['D1:2', 'D5:5'])).toBe(0.5);
    expect(evidenceRecall([], ['D1:1'])).toBeNull();
    const ranked = [{ dialogIds: ['D1:1'] }, { dialogIds: ['D1:2', 'D1:3'] }, { dialogIds: ['D2:1'] }];
    expect(recallAtK(['D1:3', 'D2:1'], ranked, 1)).toBe(0);
    expect(recallAtK(['D1:3', 'D2:1'], ranked, 2)).toBe(0.5);
    expect(recallAtK(['D1:3', 'D2:1'], ranked, 10)).toBe(1);
  });

  it('interpolates percentiles', () => {
    expect(percentile([4, 1, 3, 2], 50)).toBe(2.5);
    expect(percentile([10, 20, 30, 40, 50], 95)).toBeCloseTo(48);
    expect(percentile([], 50)).toBeNull();
  });

  it('averages ER over questions with evidence only, per category', () => {
    const outcome = (key: string, category: 1 | 2 | 3 | 4, er: number | null, tokens: number): QuestionOutcome => ({
      key,
      conversationId: 'c',
      category: LOCOMO_CATEGORIES[category - 1]!,
      abstention: false,
      lexicalGap: category === 3,
      recall: er === null ? null : { atBudget: { '100': er }, atK: { '1': er, '5': er, '10': er } },
      sessions: null,
      latest: null,
      topScore: null,
      contextTokens: { '100': tokens },
      latencyMs: tokens,
      llmCalls: 1,
      llmTokens: 0,
      intent: null,
      judge: null,
    });
    const summary = summariseOutcomes(
      [outcome('a', 1, 1, 10), outcome('b', 1, 0.5, 20), outcome('c', 2, 0, 30), outcome('d', 4, null, 40)],
      [100],
      LOCOMO_CATEGORIES,
    );
    expect(summary.erAtBudget['100']).toBe(0.5);
    expect(summary.n).toBe(3);
    expect(summary.perCategory['multi-hop']).toMatchObject({ n: 2, questions: 2, erAtBudget: { '100': 0.75 } });
    // ER is never null: over no scored question it is 0, and n = 0 says so.
    expect(summary.perCategory['single-hop']).toMatchObject({ n: 0, questions: 1, erAtBudget: { '100': 0 }, erAtK: { '1': 0 } });
    expect(summariseOutcomes([], [100], LOCOMO_CATEGORIES)).toMatchObject({ n: 0, erAtBudget: { '100': 0 } });
    expect(summary.questionsWithoutEvidence).toBe(1);
    // Context tokens and latency are over every question, scored or not.
    expect(summary.meanContextTokens).toBe(25);
    expect(summary.latencyMs.p50).toBe(25);
    expect(summary.judge).toBeNull();
    // Only the open-domain outcome is in the lexical-gap slice here, and it has no evidence.
    expect(summary.lexicalGap).toMatchObject({ n: 0 });
    expect(summariseOutcomes([outcome('e', 3, 0.25, 5), outcome('f', 1, 1, 5)], [100], LOCOMO_CATEGORIES).lexicalGap).toMatchObject({ n: 1, erAtBudget: { '100': 0.25 } });
  });

  it('puts a question in the lexical-gap slice only when no gold turn shares a content word with it', () => {
    // "volunteering" and "volunteered" meet at one stem, so they share a word.
    expect(isLexicalGap('Why did she start volunteering?', ['I volunteered at the shelter last week.'])).toBe(false);
    expect(isLexicalGap('What calms her down after work?', ['Painting by the lake is my therapy.'])).toBe(true);
    // Every gold turn must miss: one matching turn is enough for keyword search to start.
    expect(isLexicalGap('What calms her down?', ['Painting is my therapy.', 'It calms me.'])).toBe(false);
    // Function words do not count as shared.
    expect(isLexicalGap('What is it that they do?', ['We do yoga.'])).toBe(true);
    expect(isLexicalGap('Anything?', [])).toBe(false);
  });
});

describe('statistics', () => {
  const values = [1, 0, 1, 1, 0, 1, 1, 1, 0, 1, 0, 1, 1, 1, 1, 0, 1, 1, 0, 1];

  it('bootstrap CI is deterministic for a seed and brackets the mean', () => {
    const first = bootstrapMeanCI(values, { seed: 42 });
    const second = bootstrapMeanCI(values, { seed: 42 });
    expect(second).toEqual(first);
    expect(first.estimate).toBe(0.7);
    expect(first.low).toBeLessThan(0.7);
    expect(first.high).toBeGreaterThan(0.7);
    expect(first.low).toBeGreaterThanOrEqual(0);
    expect(first.high).toBeLessThanOrEqual(1);
    // Binary values quantise the percentiles; continuous ones show the seed matters.
    const continuous = values.map((v, i) => v + i / 100);
    expect(bootstrapMeanCI(continuous, { seed: 7 })).not.toEqual(bootstrapMeanCI(continuous, { seed: 42 }));
  });

  it('paired bootstrap is zero-width for identical systems and signed by a − b', () => {
    expect(pairedBootstrapCI(values, values)).toMatchObject({ estimate: 0, low: 0, high: 0 });
    const better = values.map(() => 1);
    const ci = pairedBootstrapCI(better, values);
    expect(ci.estimate).toBeCloseTo(0.3);
    expect(ci.low).toBeGreaterThan(0);
    expect(ci.high).toBeLessThanOrEqual(0.6);
  });

  it('McNemar mid-p matches the binomial by hand', () => {
    // n = 12 discordant, m = 2: P(X ≤ 2) = (1 + 12 + 66) / 4096, P(X = 2) = 66 / 4096,
    // mid-p = 2 · 79/4096 − 66/4096 = 92/4096.
    expect(mcNemarMidPFromCounts(10, 2)).toBeCloseTo(92 / 4096, 12);
    expect(mcNemarMidPFromCounts(2, 10)).toBeCloseTo(92 / 4096, 12);
    // Balanced discordance: 2 · P(X ≤ 5) − P(X = 5) = (2 · 638 − 252) / 1024 = 1.
    expect(mcNemarMidPFromCounts(5, 5)).toBeCloseTo(1, 12);
    expect(mcNemarMidPFromCounts(0, 0)).toBe(1);
    // n = 1500 would underflow 2^-n in linear space.
    const large = mcNemarMidPFromCounts(800, 700);
    expect(large).toBeGreaterThan(0.005);
    expect(large).toBeLessThan(0.02);
  });

  it('McNemar counts discordant pairs from labels', () => {
    const a = [true, true, true, false, false, true];
    const b = [true, false, false, true, false, false];
    expect(mcNemarMidP(a, b)).toMatchObject({ aOnly: 3, bOnly: 1 });
  });
});

describe('runLocomoEval', () => {
  const tempDirs: string[] = [];
  afterEach(async () => {
    await Promise.all(tempDirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  });

  // The budget the packer needs for session 2's header plus its last two turns (it charges each
  // header and unit its tokens + 1 for the line break), with 2 tokens to spare: too few for D2:1.
  const session2 = sample.conversation.sessions[1]!;
  const lastTwoTurns = session2.turns.slice(1);
  const smallBudget =
    countTokens(sessionHeader('conv-t', session2)) + 1 + lastTwoTurns.reduce((n, t) => n + countTokens(turnLine(t)) + 1, 0) + 2;
  const largeBudget = 100_000;

  async function run(systems: EvalSystem[], cacheDir?: string, judge?: EvalOptions['judge']): Promise<EvalResults> {
    return runEval({
      benchmark: locomoBenchmark(samples),
      systems,
      budgets: [largeBudget, smallBudget],
      dataPath: 'hand-made',
      cache: cacheDir ? createDirectoryCache(cacheDir) : undefined,
      judge,
    });
  }

  it('scores BM25 and full context with the expected evidence recall', async () => {
    const results = await run([bm25TurnsSystem(), fullContextSystem()]);
    expect(results.questions).toBe(6);
    expect(results.mode).toBe('zero-llm');
    expect(results.budgets).toEqual([smallBudget, largeBudget]);
    expect(results.dataset.skipped).toEqual({ count: 1, reason: 'adversarial (category 5)' });
    expect(results.dataset.unresolvedIds).toEqual([
      { question: 'conv-t#5', id: 'D' },
      { question: 'conv-t#6', id: 'D9:9' },
    ]);
    expect(results.dataset.questionsWithoutEvidence).toEqual(['conv-t#5']);
    expect(results.dataset.questionsPerCategory).toEqual({ 'multi-hop': 2, temporal: 1, 'open-domain': 1, 'single-hop': 2 });

    const full = results.systems['full-context']!;
    // Newest-first truncation keeps D2:2 and D2:3: q1 half covered, q2 covered, q0 q3 q6 not → 1.5 / 5.
    expect(full.erAtBudget[String(smallBudget)]).toBeCloseTo(0.3, 12);
    expect(full.erAtBudget[String(largeBudget)]).toBe(1);
    // Top 5 of newest-first is everything but D1:1, which q0 and q6 need.
    expect(full.erAtK).toEqual({ '1': 0, '5': 0.6, '10': 1 });
    expect(full.perCategory['multi-hop']).toMatchObject({ n: 2, erAtBudget: { [String(smallBudget)]: 0.25 } });
    expect(full.perCategory['single-hop']).toMatchObject({ n: 1, erAtBudget: { [String(smallBudget)]: 0 } });
    expect(full.meanContextTokens).toBeGreaterThan(full.meanContextTokensAtBudget[String(smallBudget)]!);
    expect(full.meanContextTokensAtBudget[String(smallBudget)]).toBeLessThanOrEqual(smallBudget);
    expect(full.llmCallsPerQuery).toBe(0);
    expect(full.judge).toBeNull();

    const bm25 = results.systems['bm25-turns']!;
    // Every question shares a rare word with each gold turn; only q1 has two gold turns to split
    // between rank 1 and rank 2.
    expect(bm25.erAtK).toEqual({ '1': 0.9, '5': 1, '10': 1 });
    expect(bm25.erAtBudget[String(largeBudget)]).toBe(1);

    // The paired table compares full context with BM25, the best baseline at both budgets.
    const atSmall = results.comparisons.find((c) => c.budget === smallBudget)!;
    expect(atSmall.system).toBe('full-context');
    expect(atSmall.reference).toBe('bm25-turns');
    expect(atSmall.diff).toBeCloseTo(0.3 - bm25.erAtBudget[String(smallBudget)]!, 12);
    expect(atSmall.low).toBeLessThanOrEqual(atSmall.diff);
    expect(atSmall.high).toBeGreaterThanOrEqual(atSmall.diff);
    expect(results.routing).toEqual({});
  });

  it('resumes from the cache without preparing finished conversations again', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prism-eval-'));
    tempDirs.push(dir);
    let prepares = 0;
    const counted = (): EvalSystem => {
      const inner = fullContextSystem();
      return { ...inner, prepare: (s, o) => (prepares++, inner.prepare(s, o)) };
    };
    const first = await run([counted()], dir);
    const second = await run([counted()], dir);
    expect(prepares).toBe(1);
    expect(second.systems['full-context']).toEqual(first.systems['full-context']);
    expect(second.timings.systems['full-context']!.cachedConversations).toBe(1);
  });

  it('recomputes when the package version or a system fingerprint changes', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prism-eval-'));
    tempDirs.push(dir);
    let prepares = 0;
    const counted = (fingerprint: string): EvalSystem => {
      const inner = fullContextSystem();
      return { ...inner, fingerprint, prepare: (s, o) => (prepares++, inner.prepare(s, o)) };
    };
    const runWith = (fingerprint: string, version: string) =>
      runEval({ benchmark: locomoBenchmark(samples), systems: [counted(fingerprint)], budgets: [largeBudget], cache: createDirectoryCache(dir), version });
    const first = await runWith('config-a', '1.0.0');
    expect(first.config.version).toBe('1.0.0');
    await runWith('config-a', '1.0.0');
    expect(prepares).toBe(1);
    await runWith('config-a', '1.0.1');
    expect(prepares).toBe(2);
    await runWith('config-b', '1.0.1');
    expect(prepares).toBe(3);
  });

  it('disposes every system once the run is over, also when it fails', async () => {
    const disposed: string[] = [];
    const tracked = (inner: EvalSystem, retrieve = inner.retrieve): EvalSystem => ({
      ...inner,
      retrieve,
      dispose: async () => void disposed.push(inner.name),
    });
    await run([tracked(bm25TurnsSystem()), tracked(fullContextSystem())]);
    expect(disposed).toEqual(['bm25-turns', 'full-context']);
    disposed.length = 0;
    const failing = tracked(fullContextSystem(), () => Promise.reject(new Error('retrieval failed')));
    await expect(run([tracked(bm25TurnsSystem()), failing])).rejects.toThrow('retrieval failed');
    expect(disposed).toEqual(['bm25-turns', 'full-context']);
  });

  it('compares requested pairs and rejects pairs outside the run', async () => {
    const results = await runEval({
      benchmark: locomoBenchmark(samples),
      systems: [bm25TurnsSystem(), fullContextSystem()],
      budgets: [smallBudget],
      compare: [{ system: 'bm25-turns', reference: 'full-context' }],
    });
    expect(results.paired).toHaveLength(1);
    const [pair] = results.paired;
    expect(pair).toMatchObject({ system: 'bm25-turns', reference: 'full-context', kind: 'requested', budget: smallBudget, n: 5 });
    const er = (name: string) => results.systems[name]!.erAtBudget[String(smallBudget)]!;
    expect(pair!.diff).toBeCloseTo(er('bm25-turns') - er('full-context'), 12);
    expect(results.comparisons.every((c) => c.kind === 'best-baseline')).toBe(true);
    await expect(runEval({ benchmark: locomoBenchmark(samples), systems: [bm25TurnsSystem()], compare: [{ system: 'bm25-turns', reference: 'prism' }] })).rejects.toThrow(
      /not in the run: prism/,
    );
    await expect(runEval({ benchmark: locomoBenchmark(samples), systems: [bm25TurnsSystem()], compare: [{ system: 'bm25-turns', reference: 'bm25-turns' }] })).rejects.toThrow(
      /with itself/,
    );
  });

  it('renders the report and one frontier line per system', async () => {
    const results = await run([bm25TurnsSystem(), fullContextSystem()]);
    const report = renderReport(results);
    expect(report).toContain(`## ER at ${smallBudget} tokens, by category`);
    expect(report).toContain(`## ER at ${largeBudget} tokens, by category`);
    expect(report).toContain('| full-context (baseline) | 0.250 | 1.000 | 0.000 | 0.000 | 0.300 |');
    expect(report).toContain('`D9:9` in conv-t#6');
    expect(report).toContain('count a turn as covered when its Episode is included');
    const svg = await renderFrontier(results);
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.match(/aria-roledescription="line mark"/g)).toHaveLength(2);
  });

  it('answers and judges through an OpenAI-compatible endpoint in LLM mode', async () => {
    // The stand-in answer model knows each gold answer but gives it only when the fact it rests
    // on is in the context it was sent; the judge marks an exact match CORRECT.
    const facts: Record<string, { needle: string; answer: string }> = {
      'What breed of puppy does Alice have?': { needle: 'golden retriever', answer: 'golden retriever' },
      'Where is Alice moving and what got chewed?': { needle: 'Lisbon', answer: 'Lisbon; sneakers' },
      'When were the sneakers chewed?': { needle: 'sneakers', answer: '19 May 2023' },
      "What class did Bob's sister start?": { needle: 'pottery', answer: 'pottery' },
      'What is Bob training for?': { needle: 'marathon', answer: 'a marathon' },
      'Which puppy was adopted?': { needle: 'named Biscuit', answer: 'Biscuit' },
    };
    const userText = (request: RecordedRequest) => request.body?.messages.find((m) => m.role === 'user')?.content ?? '';
    const server = await startOpenAiServer({
      handler: (request) => {
        const text = userText(request);
        if (request.body?.model === 'judge-model') {
          const gold = /Gold answer: (.*)/.exec(text)?.[1];
          const generated = /Generated answer: (.*)/.exec(text)?.[1];
          return reply.json({ reasoning: 'compared', label: gold === generated ? 'CORRECT' : 'WRONG' });
        }
        const fact = facts[/Question: (.*)/.exec(text)?.[1] ?? ''];
        return reply.content(fact && text.includes(fact.needle) ? fact.answer : 'cannot answer');
      },
    });
    try {
      const client = createLlmClient({ baseURL: server.baseURL, models: { default: 'unused', answer: 'answer-model', judge: 'judge-model' } });
      const results = await run([bm25TurnsSystem(), fullContextSystem()], undefined, {
        client,
        budget: smallBudget,
        models: { answer: 'answer-model', judge: 'judge-model' },
      });
      expect(results.mode).toBe('llm');
      expect(results.config.judgeBudget).toBe(smallBudget);
      // Six questions × two systems × (answer + judge).
      expect(server.requests).toHaveLength(24);
      const full = results.systems['full-context']!;
      // Its small context holds D2:2 (sneakers) and D2:3 (marathon): q2 and q5 right, 2 of 6.
      expect(full.judge).toBeCloseTo(2 / 6, 12);
      expect(full.perCategory['temporal']!.judge).toBe(1);
      expect(full.perCategory['single-hop']!.judge).toBe(0.5);
      expect(full.perCategory['multi-hop']!.judge).toBe(0);
      expect(full.answerLlm?.callsPerQuery).toBe(2);
      expect(full.judgePer1k).toBeCloseTo(full.judge! / (full.meanContextTokensAtBudget[String(smallBudget)]! / 1000), 12);
      const [comparison] = results.judgeComparisons;
      expect(results.judgeComparisons).toHaveLength(1);
      expect(comparison!.n).toBe(6);
      expect(comparison!.diff).toBeCloseTo((comparison!.systemOnly - comparison!.referenceOnly) / 6, 12);
      expect(renderReport(results)).toContain('## Judge score by category');
    } finally {
      await server.close();
    }
  });
});

describe('eval command settings', () => {
  const zeroLlmVariants = ['prism', 'prism+n1', 'prism+n1+n2+n4', 'prism-no-n3', 'prism+n4', 'prism-no-hybrid', 'prism-whole-episodes', 'prism-no-speaker', 'prism-no-neighbours', 'prism-no-question-prior', 'prism-no-exchange', 'prism-no-name-masking', 'prism-no-speaker-scope', 'prism-no-unit-budgets', 'prism-no-date-focus', 'prism-no-relative-dates', 'prism-no-pronoun-speakers', 'prism-any-second-person', 'prism-no-user-by-default', 'prism-no-fit-remainder', 'prism-bundle-turns', 'prism-no-turn-anchors', 'prism-no-adaptive-fusion', 'prism-v0.3-scoring', 'prism-no-meaning-route', 'prism-meaning-no-reply', 'prism-meaning-facet-cosine', 'prism-meaning-lexical-anchors', 'prism-no-name-typos'];

  it('runs the baselines, PRISM and every ablation by default, and adds prism-llm in LLM mode', () => {
    const locomoBaselines = ['bm25-turns', 'dense-turns', 'dense-sessions', 'full-context'];
    expect(evalSystemNames(undefined, 'zero-llm')).toEqual([...locomoBaselines, ...zeroLlmVariants]);
    expect(evalSystemNames(undefined, 'llm')).toEqual([...locomoBaselines, ...zeroLlmVariants, 'prism-llm']);
    // LongMemEval: PRISM and the baselines of its anchors, the flat search over user turns among them.
    expect(evalSystemNames(undefined, 'zero-llm', 'longmemeval')).toEqual(['prism', 'dense-turns', 'bm25-turns', 'dense-user-turns']);
    expect(BASELINE_NAMES).toContain('dense-user-turns');
    expect(evalSystemNames(' prism , bm25-turns', 'llm')).toEqual(['prism', 'bm25-turns']);
    expect(() => evalSystemNames('prism-llm', 'zero-llm')).toThrow(/--mode llm/);
    expect(() => evalSystemNames('prism,prism-no-n9', 'zero-llm')).toThrow(/unknown systems: prism-no-n9/);
  });

  it('parses --compare pairs', () => {
    expect(parseComparePairs(undefined)).toEqual([]);
    expect(parseComparePairs('prism:prism-no-n3, prism-llm:prism+n4')).toEqual([
      { system: 'prism', reference: 'prism-no-n3' },
      { system: 'prism-llm', reference: 'prism+n4' },
    ]);
    expect(() => parseComparePairs('prism')).toThrow(/system:reference/);
    expect(() => parseComparePairs('a:b:c')).toThrow(/system:reference/);
  });

  it('keys PRISM fingerprints by the resolved config, mode, version and memory build', async () => {
    const memories: MemorySource = { key: 'local-000000000000', open: () => Promise.reject(new Error('not used')) };
    const base: PrismSystemOptions = { variant: 'prism', memories, baseConfig: resolveConfig(), version: '1.0.0', llmModels: null };
    const fingerprint = async (changes: Partial<PrismSystemOptions>) => (await prismSystem({ ...base, ...changes })).fingerprint;
    const reference = await fingerprint({});
    expect(reference).toMatch(/^prism\/zero-llm\/v1\.0\.0\/config-[0-9a-f]{12}\/memory-local-000000000000$/);
    // A constant tuned in config.ts changes the resolved config, hence the fingerprint and the cache key.
    expect(await fingerprint({ baseConfig: resolveConfig({ retrieval: { hopCost: 0.06 } }) })).not.toBe(reference);
    expect(await fingerprint({ baseConfig: resolveConfig({ retrieval: { turnScore: { lexical: 0.4 } } }) })).not.toBe(reference);
    expect(await fingerprint({ version: '1.0.1' })).not.toBe(reference);
    expect(await fingerprint({ memories: { ...memories, key: 'local-111111111111' } })).not.toBe(reference);
    expect(await fingerprint({ variant: 'prism+n1' })).not.toBe(reference);
    // Endpoint models matter to the LLM-mode variant only.
    expect(await fingerprint({ llmModels: { default: 'model-a' } })).toBe(reference);
    const llm = await fingerprint({ variant: 'prism-llm', llmModels: { default: 'model-a' } });
    expect(llm).toMatch(/^prism-llm\/llm\//);
    expect(await fingerprint({ variant: 'prism-llm', llmModels: { default: 'model-b' } })).not.toBe(llm);
    const variant = await prismSystem({ ...base, variant: 'prism-no-n3' });
    expect(variant.variantOf).toBe('prism');
    expect((await prismSystem(base)).variantOf).toBeUndefined();
  });

  it('keys memory directories by everything an ingested graph depends on', async () => {
    const build: MemoryBuild = {
      version: '1.0.0',
      ingest: resolveConfig().ingest,
      extraction: 'local',
      llmModels: null,
      embedder: 'minilm-int8',
      chunking: 'session',
    };
    const reference = await memoryBuildKey(build);
    expect(reference).toMatch(/^local-[0-9a-f]{12}$/);
    expect(await memoryBuildKey({ ...build })).toBe(reference);
    const changed = await Promise.all([
      memoryBuildKey({ ...build, version: '1.0.1' }),
      memoryBuildKey({ ...build, ingest: { ...build.ingest, facetMergeThreshold: 0.8 } }),
      memoryBuildKey({ ...build, extraction: 'llm', llmModels: { extract: 'm', consolidate: 'm' } }),
      memoryBuildKey({ ...build, embedder: 'minilm-fp32' }),
      memoryBuildKey({ ...build, chunking: 'turns:4' }),
    ]);
    expect(new Set([reference, ...changed]).size).toBe(6);
    expect(changed[2]).toMatch(/^llm-/);
  });
});

/** PRISM variants on a real memory (MiniLM, usearch) of the hand-made conversation. */
describe('PRISM systems in the harness', () => {
  const budgets = [256, 100_000];
  let zeroLlm: { memory: Memory; source: MemorySource };
  beforeAll(async () => {
    const runtime = await testRuntime();
    const memory = await Memory.open({ store: new MemoryStore(), embedder: runtime.embedder, createIndex: runtime.createIndex, llm: null });
    await memory.add(sample.conversation);
    zeroLlm = { memory, source: { key: 'local-test', open: async () => memory } };
  });

  const variants = (source: MemorySource, names: PrismSystemOptions['variant'][], options: Partial<PrismSystemOptions> = {}) =>
    Promise.all(names.map((variant) => prismSystem({ variant, memories: source, baseConfig: resolveConfig(), version: 'test', llmModels: null, ...options })));

  it('compares prism with each of its ablations, paired by question', async () => {
    const systems = [bm25TurnsSystem(), ...(await variants(zeroLlm.source, ['prism', 'prism-no-n3', 'prism-whole-episodes', 'prism+n4']))];
    const results = await runEval({ benchmark: locomoBenchmark(samples), systems, budgets });
    const variantPairs = results.paired.filter((c) => c.kind === 'variant');
    expect(variantPairs.map((c) => `${c.system}:${c.reference}@${c.budget}`)).toEqual([
      'prism:prism-no-n3@256',
      'prism:prism-no-n3@100000',
      'prism:prism-whole-episodes@256',
      'prism:prism-whole-episodes@100000',
      'prism:prism+n4@256',
      'prism:prism+n4@100000',
    ]);
    for (const c of variantPairs) {
      const er = (name: string) => results.systems[name]!.erAtBudget[String(c.budget)]!;
      expect(c.n).toBe(5);
      expect(c.diff).toBeCloseTo(er('prism') - er(c.reference), 12);
      expect(c.low).toBeLessThanOrEqual(c.diff);
      expect(c.high).toBeGreaterThanOrEqual(c.diff);
    }
    // The best-baseline table is still there, and +N4 brings its routing table.
    expect(results.comparisons.filter((c) => c.reference === 'bm25-turns')).toHaveLength(2 * 4);
    expect(Object.keys(results.routing)).toEqual(['prism+n4']);
    for (const system of Object.values(results.systems)) expect(Object.values(system.erAtBudget).every((er) => er >= 0 && er <= 1)).toBe(true);
    const report = renderReport(results);
    expect(report).toContain('## Paired comparisons: PRISM against its variants, and requested pairs (ER at budget)');
    expect(report).toMatch(/\| 256 \| prism \| prism-no-n3 \| variant \| [+−]\d\.\d{3} \|/);
  });

  it('runs prism-llm with the LLM beside zero-LLM prism in one LLM-mode report', async () => {
    const server = await startOpenAiServer({
      handler: (request) => {
        const system = request.body?.messages[0]?.content ?? '';
        const user = request.body?.messages.at(-1)?.content ?? '';
        if (system.includes('You label questions')) return reply.json({ temporal: 0.1, causal: 0.1, multi_hop: 0.1, entity_centric: 0.9 });
        if (system.includes('which passages')) {
          const indices = [...user.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1]));
          return reply.json({ scores: indices.map((index) => ({ index, score: 10 - index })) });
        }
        if (request.body?.model === 'judge-model') return reply.json({ reasoning: 'checked', label: 'CORRECT' });
        return reply.content('an answer');
      },
    });
    try {
      const client = createLlmClient({ baseURL: server.baseURL, models: { default: 'memory-model', answer: 'answer-model', judge: 'judge-model' } });
      // M = 1 below the conversation's two Episodes, so N3 reranks with the LLM rather than being skipped.
      const baseConfig = resolveConfig({ retrieval: { keep: 1 } });
      const runtime = await testRuntime();
      // One memory with an LLM for both variants: prism must still make no call. Local extraction
      // keeps the stand-in server to the query-time roles.
      const memory = await Memory.open({ store: new MemoryStore(), embedder: runtime.embedder, createIndex: runtime.createIndex, llm: client, extraction: 'local', config: baseConfig });
      await memory.add(sample.conversation);
      const source: MemorySource = { key: 'test', open: async () => memory };
      const systems = await variants(source, ['prism', 'prism-llm'], { baseConfig, llmModels: { default: 'memory-model' } });
      const results = await runEval({ benchmark: locomoBenchmark(samples), systems, budgets, judge: { client, budget: 256, models: { answer: 'answer-model', judge: 'judge-model' } } });
      expect(results.mode).toBe('llm');
      const prism = results.systems['prism']!;
      const prismLlm = results.systems['prism-llm']!;
      expect(prism.llmCallsPerQuery).toBe(0);
      // Per question (calls are counted at the largest budget): one N3 rerank, plus N4's LLM tier
      // when neither the keyword nor the prototype tier decides.
      const llmTier = results.routing['prism-llm']?.['llm'];
      expect(llmTier?.total).toBeGreaterThan(0);
      expect(prismLlm.llmCallsPerQuery).toBeCloseTo(1 + llmTier!.share, 12);
      expect(results.routing['prism']).toBeUndefined();
      // Both modes are judged, and compared with each other.
      expect(prism.judge).toBe(1);
      expect(prismLlm.judge).toBe(1);
      expect(results.paired.map((c) => `${c.system}:${c.reference}:${c.kind}`)).toEqual(['prism:prism-llm:variant', 'prism:prism-llm:variant']);
      expect(results.pairedJudge).toMatchObject([{ system: 'prism', reference: 'prism-llm', kind: 'variant', n: 6, systemOnly: 0, referenceOnly: 0, midP: 1 }]);
      await memory.close();
    } finally {
      await server.close();
    }
  });
});

describe('pooled mode and implicit-recall cases', () => {
  const sample = (id: string, dialogIds: string[][], evidence: string[]): LocomoSample => ({
    conversation: {
      id,
      sessions: dialogIds.map((ids, s) => ({
        id: `session_${s + 1}`,
        dateText: null,
        time: null,
        turns: ids.map((dialogId) => ({ dialogId, speaker: `${id}-speaker`, text: `${id} ${dialogId}` })),
      })),
    },
    questions: [{ question: `about ${id}`, answer: 'a', evidence, category: 1 }],
  });

  it('pools conversations into one with unique dialog ids and renamed evidence', () => {
    const pooled = pooledSample([sample('a', [['D1:1', 'D1:2'], ['D2:1']], ['D2:1', 'D:1:2']), sample('b', [['D1:1']], ['D1:1', 'D9:9'])]);
    const turns = pooled.conversation.sessions.flatMap((s) => s.turns);
    expect(pooled.conversation.sessions.map((s) => s.id)).toEqual(['session_1', 'session_2', 'session_3']);
    expect(new Set(turns.map((t) => t.dialogId)).size).toBe(turns.length);
    // Text and speakers are kept; b's first turn is now in session 3.
    expect(turns.find((t) => t.text === 'b D1:1')).toMatchObject({ dialogId: 'D3:1', speaker: 'b-speaker' });
    // Malformed ids are normalised before renaming; an id naming no turn stays unresolvable.
    expect(pooled.questions.map((q) => q.evidence)).toEqual([['D2:1', 'D1:2'], ['D3:1', 'b/D9:9']]);
    const resolved = createEvidenceResolver(pooled.conversation).resolve(pooled.questions[1]?.evidence ?? []);
    expect(resolved).toEqual({ turns: ['D3:1'], unresolved: ['b/D9:9'] });
  });

  it('turns implicit-recall cases into questions over the same conversation objects', () => {
    const a = sample('a', [['D1:1', 'D1:2']], []);
    const cases = [{ conversation: 'a', remark: 'Something I said before.', relatesTo: ['D1:2'] }];
    const [only, ...rest] = implicitRecallSamples([a, sample('b', [['D1:1']], [])], cases);
    expect(rest).toEqual([]);
    expect(only?.conversation).toBe(a.conversation);
    expect(only?.questions).toEqual([{ question: 'Something I said before.', answer: '', evidence: ['D1:2'], category: 4 }]);
    expect(() => implicitRecallSamples([a], [{ ...cases[0]!, conversation: 'zzz' }])).toThrow(/unknown conversations: zzz/);
  });

  it('keeps every shipped case a lexical gap that resolves in the dev data', async () => {
    const samples = parseLocomo(JSON.parse(await readFile(defaultLocomoPath(), 'utf8')));
    expect(IMPLICIT_RECALL_CASES.length).toBeGreaterThanOrEqual(30);
    for (const question of implicitRecallSamples(samples).flatMap((s) => s.questions.map((q) => ({ q, s })))) {
      const turns = new Map(question.s.conversation.sessions.flatMap((session) => session.turns.map((t) => [t.dialogId, t.text] as const)));
      const { turns: gold, unresolved } = createEvidenceResolver(question.s.conversation).resolve(question.q.evidence);
      expect(unresolved).toEqual([]);
      expect(isLexicalGap(question.q.question, gold.map((id) => turns.get(id) ?? ''))).toBe(true);
    }
  });
});

describe('pooled pairing and leave-one-conversation-out choice', () => {
  const outcome = (conversationId: string, index: number, er512: number | null, er2048: number | null = er512): QuestionOutcome => ({
    key: `${conversationId}#${index}`,
    conversationId,
    category: 'single-hop',
    abstention: false,
    lexicalGap: false,
    recall: er512 === null || er2048 === null ? null : { atBudget: { '512': er512, '2048': er2048 }, atK: {} },
    sessions: null,
    latest: null,
    topScore: null,
    contextTokens: {},
    latencyMs: 1,
    llmCalls: 0,
    llmTokens: 0,
    intent: null,
    judge: null,
  });

  it('pairs the pooled run with the per-conversation run by question order', () => {
    const own = [outcome('a', 0, 1), outcome('a', 1, 1), outcome('b', 0, 0), outcome('b', 1, null)];
    const pooled = [outcome('pooled', 0, 0), outcome('pooled', 1, 1), outcome('pooled', 2, 0), outcome('pooled', 3, 1)];
    const [at512, at2048, ...rest] = comparePooled(
      { budgets: [512, 2048], outcomes: { prism: own, 'only-here': own } },
      { budgets: [512, 2048], outcomes: { prism: pooled } },
      { resamples: 200 },
    );
    expect(rest).toEqual([]);
    // The question without evidence in the per-conversation run is left out: 3 pairs.
    expect(at512).toMatchObject({ system: 'prism', budget: 512, n: 3, perConversation: 2 / 3, pooled: 1 / 3 });
    expect(at512?.diff).toBeCloseTo(-1 / 3);
    expect(at2048?.budget).toBe(2048);
  });

  it('chooses on the other conversations and scores on the held-out one', () => {
    // `steady` is a little better on a and b; `spiky` is much better on c alone.
    const steady = [outcome('a', 0, 1), outcome('a', 1, 1), outcome('b', 0, 1), outcome('b', 1, 0.5), outcome('c', 0, 0), outcome('c', 1, 0)];
    const spiky = [outcome('a', 0, 1), outcome('a', 1, 0.5), outcome('b', 0, 1), outcome('b', 1, 0.5), outcome('c', 0, 1), outcome('c', 1, 1)];
    const report = leaveOneConversationOut([{ name: 'main', outcomes: { steady, spiky } }], [512, 2048]);
    expect(report.folds.map((f) => [f.conversationId, f.chosen])).toEqual([
      ['a', 'spiky'],
      ['b', 'spiky'],
      ['c', 'steady'],
    ]);
    // Held out: a by spiky 0.75, b by spiky 0.75, c by steady 0.
    expect(report.loco['main']?.er['512']).toBeCloseTo((0.75 + 0.75 + 0) / 3);
    expect(report.inSample).toEqual({ chosen: 'spiky', scores: { main: { er: { '512': 5 / 6, '2048': 5 / 6 }, n: 6 } } });
    expect(report.candidates['steady']?.['main']?.er['512']).toBeCloseTo(3.5 / 6);
    expect(renderLoco(report)).toContain('| **LOCO** |  | 6 | 0.500 | 0.500 |');
  });

  it('holds a slice\'s conversations out with the ones they are derived from', () => {
    expect(derivedFrom('conv-26-cog', 'conv-26')).toBe(true);
    expect(derivedFrom('conv-26', 'conv-26')).toBe(true);
    expect(derivedFrom('conv-260', 'conv-26')).toBe(false);
    expect(derivedFrom('conv-2', 'conv-26')).toBe(false);
    // `good` wins on the slice's a-cog only; held out with a, it is not chosen in a's fold.
    // Ties go to the earlier candidate, `plain`.
    const main = { plain: ['a', 'b'].map((c) => outcome(c, 0, 1)), good: ['a', 'b'].map((c) => outcome(c, 0, 1)) };
    const slice = { plain: [outcome('a-cog', 0, 0), outcome('b-cog', 0, 0)], good: [outcome('a-cog', 0, 1), outcome('b-cog', 0, 0)] };
    const report = leaveOneConversationOut([{ name: 'main', outcomes: main }, { name: 'slice', outcomes: slice }], [512]);
    expect(report.folds.map((f) => [f.conversationId, f.chosen])).toEqual([
      ['a', 'plain'],
      ['b', 'good'],
    ]);
    expect(report.folds[0]?.heldOut['slice']).toEqual({ er: { '512': 0 }, n: 1 });
  });

  it('reads --data as the main file, then slices', () => {
    expect(splitDataPaths(undefined, 'dev.json')).toEqual({ main: 'dev.json', slices: [] });
    expect(splitDataPaths('a.json', 'dev.json')).toEqual({ main: 'a.json', slices: [] });
    expect(splitDataPaths('a.json, b.json,c.json.gz', 'dev.json')).toEqual({ main: 'a.json', slices: ['b.json', 'c.json.gz'] });
  });

  it('chooses the best objective among the candidates that reach a guard slice\'s floor', () => {
    // On the main slice `steady` wins every fold; on the guard's cases only `spiky` reaches the
    // reference, so it is chosen wherever the training conversations hold a guard case.
    const main = {
      steady: ['a', 'b', 'c'].flatMap((c) => [outcome(c, 0, 1), outcome(c, 1, 1), outcome(c, 2, 1), outcome(c, 3, 1)]),
      spiky: ['a', 'b', 'c'].flatMap((c) => [outcome(c, 0, 1), outcome(c, 1, 1), outcome(c, 2, 1), outcome(c, 3, 0.5)]),
    };
    const cases = { steady: ['a', 'b'].map((c) => outcome(c, 0, 0)), spiky: ['a', 'b'].map((c) => outcome(c, 0, 1)) };
    const guard = (reference: number) => ({ name: 'guard', outcomes: cases, floor: { name: 'baseline', outcomes: ['a', 'b'].map((c) => outcome(c, 0, reference)) } });
    expect(leaveOneConversationOut([{ name: 'main', outcomes: main }], [512]).folds.map((f) => f.chosen)).toEqual(['steady', 'steady', 'steady']);
    const report = leaveOneConversationOut([{ name: 'main', outcomes: main }, guard(1)], [512]);
    expect(report.folds.map((f) => f.chosen)).toEqual(['spiky', 'spiky', 'spiky']);
    // A floor both candidates reach leaves the choice to the objective.
    expect(leaveOneConversationOut([{ name: 'main', outcomes: main }, guard(0)], [512]).folds.map((f) => f.chosen)).toEqual(['steady', 'steady', 'steady']);
    // c has no guard case: its fold is scored on main alone, and the guard's LOCO counts a and b.
    expect(report.folds[2]?.heldOut['guard']).toEqual({ er: { '512': 0 }, n: 0 });
    expect(report.loco['guard']).toEqual({ er: { '512': 1 }, n: 2 });
    expect(renderLoco(report)).toContain('among the candidates whose mean there on guard is at least that of baseline');
    expect(renderLoco(report)).toContain('| **LOCO, guard** |  | 2 | 1.000 |');
  });
});
