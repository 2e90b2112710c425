import { readFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { resolveConfig } from '../config.ts';
import { PrismError } from '../errors.ts';
import type { ChunkingOptions } from '../ingest/chunking.ts';
import { parseLocomo, type LocomoSample } from '../ingest/locomo.ts';
import { createLlmClient, type LlmConfig } from '../llm/client.ts';
import { llmConfigFromEnv } from '../llm/env.ts';
import type { LlmRole } from '../llm/types.ts';
import type { Memory } from '../memory.ts';
import { defaultLocomoPath, nodeEmbedder, openNodeMemory } from '../node.ts';
import type { RetrievalMode } from '../retrieve/types.ts';
import { packageVersion } from '../util/package-root.node.ts';
import { ProgressLine } from '../util/progress-line.node.ts';
import type { Benchmark, BenchmarkName, EvalSample } from './benchmark.ts';
import { createDirectoryCache } from './cache.node.ts';
import { locomoBenchmark } from './locomo-benchmark.ts';
import { longMemEvalBenchmark, sampleByType } from './longmemeval.ts';
import { writeEvalOutputs } from './output.node.ts';
import { loadVega } from './report.ts';
import { memoryBuildKey, PRISM_VARIANT_NAMES, PRISM_VARIANTS, prismSystem, type MemorySource, type PrismVariant } from './prism-system.ts';
import { IMPLICIT_RECALL_CASES, implicitRecallSamples } from './implicit-recall.ts';
import { LOCO_CANDIDATES, LONGMEMEVAL_CANDIDATES, derivedFrom, leaveOneConversationOut, renderLoco, type LocoCandidate, type LocoScore } from './loco.ts';
import { comparePooled, pooledSample, renderPooled } from './pooled.ts';
import { DEFAULT_BUDGETS, runEval, type EvalProgress, type EvalResults, type SystemPair } from './runner.ts';
import { BASELINE_NAMES, createBaselines, type BaselineName, type EvalSystem, type PrepareOptions } from './systems.ts';

/** The flags `prism eval` reads (a subset of the CLI's). */
export interface EvalFlags {
  data?: string | undefined;
  out?: string | undefined;
  mode?: string | undefined;
  budgets?: string | undefined;
  systems?: string | undefined;
  conversations?: string | undefined;
  precision?: string | undefined;
  chunking?: string | undefined;
  compare?: string | undefined;
  /**
   * Also every selected conversation in one memory, every question against it (see
   * `pooledSample`), for the PRISM systems; the pooled block joins the same report.
   */
  pooled?: boolean | undefined;
  /** Also the weight candidates (LoCoMo: `LOCO_CANDIDATES`; LongMemEval: `LONGMEMEVAL_CANDIDATES`), chosen leave-one-conversation-out in the report. */
  loco?: boolean | undefined;
  /** LongMemEval: this many questions of each type (a seeded draw, see `sampleByType`). */
  sample?: string | undefined;
}

const BENCHMARKS: readonly BenchmarkName[] = ['locomo', 'longmemeval'];

const USAGE = [
  'usage: prism eval locomo --out <dir> [--data <file.json>] [--mode zero-llm|llm] [--budgets ...] [--systems ...] [--conversations ...] [--compare a:b,...] [--pooled] [--loco]',
  '       prism eval longmemeval --data <file.json|file.json.gz> --out <dir> [--sample N] [--budgets ...] [--systems ...] [--compare a:b,...] [--loco]',
].join('\n');

/** The systems a LongMemEval run has by default: PRISM, and the baselines its anchors are reported against. */
const LONGMEMEVAL_SYSTEMS: readonly string[] = ['prism', 'dense-turns', 'bm25-turns', 'dense-user-turns'];

const KNOWN_SYSTEMS: readonly string[] = [...BASELINE_NAMES, ...PRISM_VARIANT_NAMES];

/** LLM roles a memory calls while ingesting: what an LLM-extracted graph depends on. */
const INGEST_ROLES: readonly LlmRole[] = ['extract', 'consolidate'];

function isPrismVariant(name: string): name is PrismVariant {
  return (PRISM_VARIANT_NAMES as readonly string[]).includes(name);
}

function splitList(text: string): string[] {
  return text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
}

/**
 * The systems of a run: `--systems` as given, else, for LoCoMo, the baselines of issue 5 and
 * every zero-LLM PRISM variant (so a default run has the ablations and the N4 routing table),
 * plus `prism-llm` in LLM mode, so one report compares the two modes; for LongMemEval, PRISM
 * and the baselines of its anchors (`LONGMEMEVAL_SYSTEMS`). LLM-mode variants need `--mode llm`.
 */
export function evalSystemNames(list: string | undefined, mode: RetrievalMode, benchmark: BenchmarkName = 'locomo'): string[] {
  const byDefault =
    benchmark === 'longmemeval'
      ? [...LONGMEMEVAL_SYSTEMS]
      : [...BASELINE_NAMES.filter((name) => name !== 'dense-user-turns'), ...PRISM_VARIANT_NAMES.filter((name) => mode === 'llm' || PRISM_VARIANTS[name].mode === 'zero-llm')];
  const names = list ? splitList(list) : byDefault;
  const unknown = names.filter((name) => !KNOWN_SYSTEMS.includes(name));
  if (unknown.length > 0) {
    throw new PrismError('INVALID_INPUT', `unknown systems: ${unknown.join(', ')} (known: ${KNOWN_SYSTEMS.join(', ')})`);
  }
  const needLlm = names.filter((name) => isPrismVariant(name) && PRISM_VARIANTS[name].mode === 'llm');
  if (mode === 'zero-llm' && needLlm.length > 0) {
    throw new PrismError('INVALID_INPUT', `${needLlm.join(', ')} run only with --mode llm (and an endpoint)`);
  }
  return names;
}

/** A data file's JSON, gunzipped first when it starts with gzip's magic bytes (`.json.gz`). */
async function readJsonFile(path: string): Promise<unknown> {
  const bytes = await readFile(path);
  const text = bytes[0] === 0x1f && bytes[1] === 0x8b ? (await promisify(gunzip)(bytes)).toString('utf8') : bytes.toString('utf8');
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new PrismError('INVALID_INPUT', `${path} is not JSON: ${(cause as Error).message}`, { cause });
  }
}

/** `--chunking session|turns:N|tokens:N`. */
function parseChunking(text: string | undefined): ChunkingOptions | undefined {
  if (!text) return undefined;
  if (text === 'session') return { by: 'session' };
  const turns = /^turns:(\d+)$/.exec(text);
  if (turns) return { by: 'turns', size: Number(turns[1]) };
  const tokens = /^tokens:(\d+)$/.exec(text);
  if (tokens) return { by: 'tokens', maxTokens: Number(tokens[1]) };
  throw new PrismError('INVALID_INPUT', `--chunking must be "session", "turns:N" or "tokens:N", got "${text}"`);
}

/** `--budgets 256,512`: whole token counts ≥ 1. */
function parseBudgets(text: string): number[] {
  return splitList(text).map((item) => {
    const budget = Number(item);
    if (!/^\d+$/.test(item) || budget < 1) throw new PrismError('INVALID_INPUT', `--budgets: expected whole numbers ≥ 1 separated by commas, got "${item}"`);
    return budget;
  });
}

/** `--compare a:b,c:d`: each pair is reported as the paired difference a − b. */
export function parseComparePairs(text: string | undefined): SystemPair[] {
  return splitList(text ?? '').map((item) => {
    const [system, reference, ...rest] = item.split(':').map((name) => name.trim());
    if (!system || !reference || rest.length > 0) {
      throw new PrismError('INVALID_INPUT', `--compare takes system:reference pairs separated by commas, got "${item}"`);
    }
    return { system, reference };
  });
}

/** The model each role calls: its own, else the default. */
function roleModels(config: LlmConfig, roles: readonly LlmRole[]): Partial<Record<LlmRole, string>> {
  return Object.fromEntries(roles.map((role) => [role, config.models[role] ?? config.models.default]));
}

/** `--sample N` (LongMemEval only): questions per type. */
function parseSample(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const perType = Number(text);
  if (!/^\d+$/.test(text) || perType < 1) throw new PrismError('INVALID_INPUT', `--sample: expected a whole number ≥ 1 of questions per type, got "${text}"`);
  return perType;
}

/**
 * The benchmark named on the command line, read from its data file and narrowed as the flags
 * say; for LoCoMo also its samples, which the pooled memory and the implicit-recall cases are
 * made from (none for LongMemEval).
 */
async function loadBenchmark(name: BenchmarkName, dataPath: string, flags: EvalFlags): Promise<{ benchmark: Benchmark; locomo: LocomoSample[] }> {
  if (name === 'longmemeval') {
    const perType = parseSample(flags.sample);
    const benchmark = longMemEvalBenchmark(await readJsonFile(dataPath));
    return { benchmark: perType === undefined ? benchmark : sampleByType(benchmark, perType), locomo: [] };
  }
  const loaded = parseLocomo(await readJsonFile(dataPath));
  const selected = flags.conversations ? splitList(flags.conversations) : null;
  const chosen = selected === null ? loaded : loaded.filter((s) => selected.includes(s.conversation.id));
  if (selected !== null && chosen.length !== selected.length) {
    const known = loaded.map((s) => s.conversation.id);
    throw new PrismError('INVALID_INPUT', `unknown conversations: ${selected.filter((id) => !known.includes(id)).join(', ')} (known: ${known.join(', ')})`);
  }
  return { benchmark: locomoBenchmark(chosen), locomo: chosen };
}

/** A further LoCoMo-format data file of `--data main,slice,...`: run beside the main one, reported on its own. */
interface DataSlice {
  /** The file's name without its extensions: the report's subdirectory and heading. */
  name: string;
  path: string;
  benchmark: Benchmark;
}

/** `--data a.json,b.json`: the main data file, then the slices (LoCoMo only). */
export function splitDataPaths(text: string | undefined, fallback: string): { main: string; slices: string[] } {
  const [main = fallback, ...slices] = text ? splitList(text) : [fallback];
  return { main, slices };
}

/** A slice's data; under `--conversations`, the conversations named and those derived from them (see `derivedFrom`). */
async function loadSlice(path: string, flags: EvalFlags): Promise<DataSlice> {
  const loaded = parseLocomo(await readJsonFile(path));
  const selected = flags.conversations ? splitList(flags.conversations) : null;
  const chosen = selected === null ? loaded : loaded.filter((s) => selected.some((id) => derivedFrom(s.conversation.id, id)));
  return { name: basename(path).replace(/\.json(\.gz)?$/, ''), path, benchmark: locomoBenchmark(chosen) };
}

/**
 * How a memory takes in its sample. LoCoMo: the whole conversation in one add (progress in
 * chunks). LongMemEval: one add per haystack session, in order, as an assistant remembers each
 * chat when it ends (progress in sessions); sessions already in the memory are skipped by their
 * chunk hash, so an interrupted ingest resumes.
 */
function ingestSample(benchmark: BenchmarkName): (memory: Memory, sample: EvalSample, prepare: PrepareOptions) => Promise<void> {
  if (benchmark === 'locomo') {
    return async (memory, sample, prepare) => {
      await memory.addConversation(sample.conversation, {
        ...(prepare.signal ? { signal: prepare.signal } : {}),
        // chunksDone already counts the chunks skipped as ingested before.
        onProgress: (p) => prepare.onProgress?.(p.chunksDone, p.chunksTotal),
      });
    };
  }
  return async (memory, sample, prepare) => {
    const { id, sessions } = sample.conversation;
    // A session of empty messages only has nothing to remember (and add refuses it).
    const withText = sessions.filter((session) => session.turns.some((turn) => turn.text.trim() !== ''));
    for (const [i, session] of withText.entries()) {
      await memory.addConversation({ id, sessions: [session] }, prepare.signal ? { signal: prepare.signal } : {});
      prepare.onProgress?.(i + 1, withText.length);
    }
  };
}

/**
 * `prism eval locomo|longmemeval --data <file> --out <dir> [...]`: runs every system over the
 * benchmark, writes results.json, report.md and frontier.svg into `--out`. Finished (system,
 * memory) work is kept under `<out>/cache` and PRISM's ingested memories under
 * `<out>/memories/<build>`, both keyed by the package version and the resolved config, so Ctrl-C
 * and a re-run resume while a changed config recomputes. Code edited without a version bump
 * still needs `<out>/cache` cleared.
 */
export async function evalCommand(positionals: readonly string[], flags: EvalFlags): Promise<number> {
  const benchmarkName = BENCHMARKS.find((name) => name === positionals[0]);
  if (benchmarkName === undefined) {
    console.error(USAGE);
    return 2;
  }
  if (!flags.out) {
    console.error(`prism eval ${benchmarkName}: --out <dir> is required`);
    return 2;
  }
  if (benchmarkName === 'longmemeval') {
    if (!flags.data) {
      console.error('prism eval longmemeval: --data <file> is required (the official format, .json or .json.gz)');
      return 2;
    }
    const locomoOnly = (['pooled', 'conversations'] as const).filter((flag) => flags[flag] !== undefined);
    if (locomoOnly.length > 0) throw new PrismError('INVALID_INPUT', `prism eval longmemeval: ${locomoOnly.map((f) => `--${f}`).join(', ')} apply to LoCoMo only`);
  } else if (flags.sample !== undefined) {
    throw new PrismError('INVALID_INPUT', 'prism eval locomo: --sample applies to LongMemEval only (LoCoMo selects with --conversations)');
  }
  const out = resolve(flags.out);
  const data = splitDataPaths(flags.data, defaultLocomoPath());
  if (benchmarkName === 'longmemeval' && data.slices.length > 0) throw new PrismError('INVALID_INPUT', 'prism eval longmemeval: --data takes one file (slices apply to LoCoMo only)');
  const dataPath = resolve(data.main);
  const mode: RetrievalMode = flags.mode === 'llm' ? 'llm' : 'zero-llm';
  const precision = flags.precision === 'fp32' ? 'fp32' : 'int8';
  const chunking = parseChunking(flags.chunking);
  const chunkingLabel = flags.chunking ?? 'session';
  const budgets = flags.budgets ? parseBudgets(flags.budgets) : [...DEFAULT_BUDGETS];
  const names = evalSystemNames(flags.systems, mode, benchmarkName);
  const compare = parseComparePairs(flags.compare);
  await loadVega();

  const llmConfig = mode === 'llm' ? llmConfigFromEnv(process.env) : null;
  if (mode === 'llm' && !llmConfig) {
    throw new PrismError('LLM_NOT_CONFIGURED', 'LLM mode needs PRISM_LLM_BASE_URL and PRISM_LLM_MODEL in the environment');
  }
  const version = await packageVersion();
  // The memories are opened with this config and every PRISM fingerprint hashes it (with its overlay).
  const baseConfig = resolveConfig();
  const { benchmark, locomo: locomoSamples } = await loadBenchmark(benchmarkName, dataPath, flags);
  const slices = await Promise.all(data.slices.map((path) => loadSlice(resolve(path), flags)));
  const embedder = await nodeEmbedder(precision);

  // One shelf of memories per retrieval mode in use: zero-LLM variants read locally extracted
  // graphs, LLM-mode ones LLM-extracted graphs (openNodeMemory extracts with the LLM it is given).
  const prismNames = names.filter(isPrismVariant);
  if (flags.loco && !prismNames.includes('prism')) prismNames.push('prism');
  const ingest = ingestSample(benchmarkName);
  const shelves = new Map<RetrievalMode, MemoryShelf>();
  for (const shelfMode of new Set(prismNames.map((name) => PRISM_VARIANTS[name].mode))) {
    const extraction = shelfMode === 'llm' ? 'llm' : 'local';
    const key = await memoryBuildKey({
      version,
      ingest: baseConfig.ingest,
      extraction,
      llmModels: extraction === 'llm' && llmConfig ? roleModels(llmConfig, INGEST_ROLES) : null,
      embedder: embedder.id,
      chunking: chunkingLabel,
    });
    const shelf = new MemoryShelf(key, resolve(out, 'memories', key), (sample, dir, prepare) =>
      openNodeMemory({ dir, name: sample.conversation.id, precision, mode: shelfMode, config: baseConfig, ...(chunking ? { chunking } : {}) }).then(
        async (memory) => {
          await ingest(memory, sample, prepare);
          return memory;
        },
      ),
    );
    shelves.set(shelfMode, shelf);
  }
  const baselineNames = names.filter((n): n is BaselineName => (BASELINE_NAMES as readonly string[]).includes(n));
  const baselines = createBaselines({ embedder }, baselineNames);
  const prism = (variant: PrismVariant, candidate?: LocoCandidate) =>
    prismSystem({
      variant,
      memories: shelves.get(PRISM_VARIANTS[variant].mode) as MemoryShelf,
      baseConfig,
      version,
      llmModels: llmConfig?.models ?? null,
      ...(candidate ? { candidate } : {}),
    });
  const systems: EvalSystem[] = await Promise.all(
    names.map(async (name) => baselines.find((b) => b.name === name) ?? prism(name as PrismVariant)),
  );
  const candidateSettings = benchmarkName === 'longmemeval' ? LONGMEMEVAL_CANDIDATES : LOCO_CANDIDATES;
  const candidates = flags.loco ? await Promise.all(candidateSettings.map((candidate) => prism('prism', candidate))) : [];

  const controller = new AbortController();
  const onInterrupt = () => controller.abort();
  process.once('SIGINT', onInterrupt);
  const progress = new ProgressLine();
  const runOn = (evalBenchmark: Benchmark, evalSystems: readonly EvalSystem[], pooled = false, evalData = dataPath) =>
    runEval({
      benchmark: evalBenchmark,
      systems: evalSystems,
      dataPath: evalData,
      budgets,
      ...(llmConfig
        ? {
            judge: {
              client: createLlmClient(llmConfig),
              models: { answer: llmConfig.models.answer ?? llmConfig.models.default, judge: llmConfig.models.judge ?? llmConfig.models.default },
            },
          }
        : {}),
      cache: createDirectoryCache(resolve(out, 'cache')),
      onProgress: (event) => progress.update(progressText(event), event.done, event.total),
      signal: controller.signal,
      version,
      // The pooled run holds the PRISM systems only.
      compare: compare.filter((pair) => [pair.system, pair.reference].every((name) => evalSystems.some((s) => s.name === name))),
      // PRISM as shipped (not its ablations) against every baseline, per category.
      compareByCategory: evalSystems.filter((s) => !s.baseline && s.variantOf === undefined && names.includes(s.name)).map((s) => s.name),
      runConfig: {
        embedder: embedder.id,
        precision,
        chunking: chunkingLabel,
        denseSearch: 'exact (brute force)',
        mode,
        pooled,
        memories: [...shelves.values()].map((shelf) => shelf.key).join(', ') || null,
      },
    });
  try {
    const results = await runOn(benchmark, [...systems, ...candidates]);
    progress.finish();
    const sections: string[] = [];
    if (flags.pooled) {
      // PRISM only: the pooled memory is PRISM's question (the baselines have no memory to pool).
      const pooled = await runOn(locomoBenchmark([pooledSample(locomoSamples)]), systems.filter((s) => !s.baseline), true);
      progress.finish();
      await writeEvalOutputs(join(out, 'pooled'), pooled);
      sections.push(renderPooled(comparePooled(results, pooled), pooled));
      console.log('\npooled (one memory, all conversations):');
      printSummary(pooled);
    }
    // The system check on hand-written implicit-recall cases, over the same systems and memories.
    const cases = IMPLICIT_RECALL_CASES.filter((c) => locomoSamples.some((s) => s.conversation.id === c.conversation));
    const implicit = cases.length > 0 ? await runOn(locomoBenchmark(implicitRecallSamples(locomoSamples, cases)), [...systems, ...candidates]) : null;
    progress.finish();
    // Each further data file, over the same systems (and candidates), in its own report.
    const sliceRuns: Array<{ slice: DataSlice; run: EvalResults }> = [];
    for (const slice of slices) {
      sliceRuns.push({ slice, run: await runOn(slice.benchmark, [...systems, ...candidates], false, slice.path) });
      progress.finish();
    }
    if (flags.loco) {
      const slice = (name: string, run: EvalResults) => ({ name, outcomes: Object.fromEntries(candidates.map((c) => [c.name, run.outcomes[c.name] ?? []])) });
      // The implicit-recall cases guard the choice: the chosen weights must not recall less there than the strongest baseline.
      const reference = implicit ? strongestBaseline(implicit, systems) : undefined;
      const guard = implicit && reference ? [{ ...slice('implicit recall', implicit), floor: { name: reference, outcomes: implicit.outcomes[reference] ?? [] } }] : [];
      // Each data slice is in the objective, and guards the choice against its strongest baseline.
      const sliceGuards = sliceRuns.flatMap(({ slice: data, run }) => {
        const strongest = strongestBaseline(run, systems);
        const objective = slice(data.name, run);
        return strongest ? [objective, { ...objective, name: `${data.name} (guard)`, floor: { name: strongest, outcomes: run.outcomes[strongest] ?? [] } }] : [objective];
      });
      const loco = leaveOneConversationOut([slice(benchmark.title, results), ...sliceGuards, ...guard], budgets);
      sections.push(renderLoco(loco));
      const ers = (score: LocoScore | undefined) => budgets.map((b) => `${b}:${score?.er[String(b)]?.toFixed(3)}`).join(' ');
      console.log(`\nleave-one-conversation-out: ${ers(loco.loco[benchmark.title])} (in-sample ${loco.inSample.chosen}: ${ers(loco.inSample.scores[benchmark.title])})`);
    }
    const paths = await writeEvalOutputs(out, results, sections);
    printSummary(results);
    console.log(`\n${results.questions} questions, ${(results.timings.wallMs / 1000).toFixed(1)} s → ${paths.results}, ${paths.report}, ${paths.frontier}`);
    for (const { slice, run } of sliceRuns) {
      const slicePaths = await writeEvalOutputs(join(out, slice.name), run);
      console.log(`\n${slice.name}:`);
      printSummary(run);
      console.log(`${run.questions} questions → ${slicePaths.report}`);
    }
    if (implicit) {
      const implicitPaths = await writeEvalOutputs(join(out, 'implicit-recall'), implicit);
      console.log('\nimplicit recall (remark → earlier statement, no shared word):');
      printSummary(implicit);
      console.log(`${implicit.questions} cases → ${implicitPaths.report}`);
    }
    return 0;
  } catch (error) {
    progress.finish();
    if (error instanceof PrismError && error.code === 'ABORTED') {
      console.error('interrupted: finished work is kept; run the same command again to resume');
      return 130;
    }
    throw error;
  } finally {
    process.off('SIGINT', onInterrupt);
    for (const shelf of shelves.values()) await shelf.close();
  }
}

/** The baseline with the highest mean ER over the run's budgets, if the run has one. */
function strongestBaseline(results: EvalResults, systems: readonly EvalSystem[]): string | undefined {
  const meanEr = (name: string) => results.budgets.reduce((sum, b) => sum + (results.systems[name]?.erAtBudget[String(b)] ?? 0), 0);
  return systems
    .filter((system) => system.baseline)
    .map((system) => system.name)
    .reduce<string | undefined>((best, name) => (best === undefined || meanEr(name) > meanEr(best) ? name : best), undefined);
}

function printSummary(results: EvalResults): void {
  for (const [name, system] of Object.entries(results.systems)) {
    const ers = results.budgets.map((b) => `${b}:${system.erAtBudget[String(b)]?.toFixed(3) ?? '–'}`).join(' ');
    const sessions = system.sessions.n > 0 ? ` · sessions R@5 ${system.sessions.recallAny['5']?.toFixed(3)} R@10 ${system.sessions.recallAny['10']?.toFixed(3)}` : '';
    console.log(`${name.padEnd(22)} ER ${ers}${sessions}`);
  }
}

/**
 * Holds the PRISM memory of one build for the sample being evaluated. The runner goes sample by
 * sample, so the memory is shared by every PRISM variant of that build and closed when the next
 * sample's opens.
 */
class MemoryShelf implements MemorySource {
  private current: { conversationId: string; memory: Promise<Memory> } | null = null;
  constructor(
    readonly key: string,
    private readonly root: string,
    private readonly openMemory: (sample: EvalSample, dir: string, prepare: PrepareOptions) => Promise<Memory>,
  ) {}

  async open(sample: EvalSample, prepare: PrepareOptions): Promise<Memory> {
    const conversationId = sample.conversation.id;
    if (this.current?.conversationId !== conversationId) {
      await this.close();
      this.current = { conversationId, memory: this.openMemory(sample, resolve(this.root, conversationId), prepare) };
    }
    return this.current.memory;
  }

  async close(): Promise<void> {
    const open = this.current;
    this.current = null;
    if (open) await open.memory.then((m) => m.close(), () => undefined);
  }
}

/** The harness's progress event as one line: which phase, memory and system. */
function progressText(event: EvalProgress): string {
  return event.phase === 'prepare'
    ? `ingest ${event.conversationId} (${event.system}) ${event.done}/${event.total}`
    : `questions ${event.done}/${event.total} · ${event.system} ${event.conversationId}${event.cached ? ' (cached)' : ''}`;
}
