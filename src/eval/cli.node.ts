import { resolve } from 'node:path';
import { loadSamples, parseChunking } from '../cli.ts';
import { PrismError } from '../errors.ts';
import type { LocomoSample } from '../ingest/locomo.ts';
import { createLlmClient } from '../llm/client.ts';
import { llmConfigFromEnv } from '../llm/env.ts';
import type { Memory } from '../memory.ts';
import { defaultLocomoPath, nodeEmbedder, openNodeMemory } from '../node.ts';
import { createDirectoryCache } from './cache.node.ts';
import { writeEvalOutputs } from './output.node.ts';
import { PRISM_VARIANT_NAMES, prismSystem, type PrismVariant } from './prism-system.ts';
import { DEFAULT_BUDGETS, runLocomoEval, type EvalProgress } from './runner.ts';
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
}

const DEFAULT_SYSTEMS = [...BASELINE_NAMES, 'prism'];
const KNOWN_SYSTEMS: readonly string[] = [...BASELINE_NAMES, ...PRISM_VARIANT_NAMES];

/**
 * `prism eval locomo --data <file> --out <dir> [...]`: runs every system over the data, writes
 * results.json, report.md and frontier.svg into `--out`. Finished (system, conversation) work is
 * kept under `<out>/cache` and PRISM's ingested memories under `<out>/memories`, so Ctrl-C and a
 * re-run resume; delete `<out>/cache` after changing retrieval code to recompute.
 */
export async function evalCommand(positionals: readonly string[], flags: EvalFlags): Promise<number> {
  if (positionals[0] !== 'locomo') {
    console.error('usage: prism eval locomo --data <file.json> --out <dir> [--mode zero-llm|llm] [--budgets ...] [--systems ...] [--conversations ...]');
    return 2;
  }
  if (!flags.out) {
    console.error('prism eval locomo: --out <dir> is required');
    return 2;
  }
  const out = resolve(flags.out);
  const dataPath = resolve(flags.data ?? defaultLocomoPath());
  const mode = flags.mode === 'llm' ? 'llm' : 'zero-llm';
  const precision = flags.precision === 'fp32' ? 'fp32' : 'int8';
  const chunking = parseChunking(flags.chunking);
  const budgets = flags.budgets ? flags.budgets.split(',').map((b) => Number(b.trim())) : [...DEFAULT_BUDGETS];
  const names = flags.systems ? flags.systems.split(',').map((s) => s.trim()) : DEFAULT_SYSTEMS;
  const unknown = names.filter((n) => !KNOWN_SYSTEMS.includes(n));
  if (unknown.length > 0) {
    console.error(`unknown systems: ${unknown.join(', ')} (known: ${KNOWN_SYSTEMS.join(', ')})`);
    return 2;
  }

  const llmConfig = mode === 'llm' ? llmConfigFromEnv(process.env) : null;
  if (mode === 'llm' && !llmConfig) {
    throw new PrismError('LLM_NOT_CONFIGURED', 'LLM mode needs PRISM_LLM_BASE_URL and PRISM_LLM_MODEL in the environment');
  }
  const samples = await loadSamples(dataPath);
  const embedder = await nodeEmbedder(precision);
  const memories = new MemoryShelf(resolve(out, 'memories', `${precision}-${mode}-${flags.chunking ?? 'session'}`), (sample, dir, prepare) =>
    openNodeMemory({ dir, name: sample.conversation.id, precision, mode, ...(chunking ? { chunking } : {}) }).then(async (memory) => {
      await memory.add(sample.conversation, {
        ...(prepare.signal ? { signal: prepare.signal } : {}),
        onProgress: (p) => prepare.onProgress?.(p.chunksDone + p.chunksSkipped, p.chunksTotal),
      });
      return memory;
    }),
  );
  const baselineNames = names.filter((n): n is BaselineName => (BASELINE_NAMES as readonly string[]).includes(n));
  const baselines = createBaselines({ embedder }, baselineNames);
  const systems: EvalSystem[] = names.map((name) => {
    const baseline = baselines.find((b) => b.name === name);
    if (baseline) return baseline;
    return prismSystem({
      variant: name as PrismVariant,
      mode,
      memoryFor: (sample, prepare) => memories.open(sample, prepare),
      memoryFingerprint: `${embedder.id}/${mode}/${flags.chunking ?? 'session'}`,
    });
  });

  const controller = new AbortController();
  const onInterrupt = () => controller.abort();
  process.once('SIGINT', onInterrupt);
  const progress = new ProgressLine();
  try {
    const results = await runLocomoEval({
      samples,
      systems,
      dataPath,
      budgets,
      ...(flags.conversations ? { conversations: flags.conversations.split(',').map((c) => c.trim()) } : {}),
      ...(llmConfig
        ? {
            judge: {
              client: createLlmClient(llmConfig),
              models: { answer: llmConfig.models.answer ?? llmConfig.models.default, judge: llmConfig.models.judge ?? llmConfig.models.default },
            },
          }
        : {}),
      cache: createDirectoryCache(resolve(out, 'cache')),
      onProgress: (event) => progress.update(event),
      signal: controller.signal,
      runConfig: { embedder: embedder.id, precision, chunking: flags.chunking ?? 'session', denseSearch: 'exact (brute force)', mode },
    });
    progress.finish();
    const paths = await writeEvalOutputs(out, results);
    for (const [name, system] of Object.entries(results.systems)) {
      const ers = results.budgets.map((b) => `${b}:${system.erAtBudget[String(b)]?.toFixed(3) ?? '–'}`).join(' ');
      console.log(`${name.padEnd(22)} ER ${ers}`);
    }
    console.log(`\n${results.questions} questions, ${(results.timings.wallMs / 1000).toFixed(1)} s → ${paths.results}, ${paths.report}, ${paths.frontier}`);
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
    await memories.close();
  }
}

/**
 * Holds the PRISM memory of the conversation being evaluated. The runner goes conversation by
 * conversation, so the memory is shared by every PRISM variant and closed when the next opens.
 */
class MemoryShelf {
  private current: { conversationId: string; memory: Promise<Memory> } | null = null;
  constructor(
    private readonly root: string,
    private readonly openMemory: (sample: LocomoSample, dir: string, prepare: PrepareOptions) => Promise<Memory>,
  ) {}

  async open(sample: LocomoSample, prepare: PrepareOptions): Promise<Memory> {
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

/** One self-rewriting progress line on stderr (plain lines when stderr is not a terminal). */
class ProgressLine {
  private lastWrite = 0;
  private written = false;

  update(event: EvalProgress): void {
    const now = performance.now();
    const final = event.done === event.total;
    if (!final && now - this.lastWrite < (process.stderr.isTTY ? 100 : 10_000)) return;
    this.lastWrite = now;
    const share = event.total > 0 ? event.done / event.total : 0;
    const width = 30;
    const bar = '#'.repeat(Math.round(share * width)).padEnd(width, '.');
    const what =
      event.phase === 'prepare'
        ? `ingest ${event.conversationId} (${event.system}) ${event.done}/${event.total} chunks`
        : `questions ${event.done}/${event.total} · ${event.system} ${event.conversationId}${event.cached ? ' (cached)' : ''}`;
    const line = `[${bar}] ${(share * 100).toFixed(0).padStart(3)}% ${what}`;
    if (process.stderr.isTTY) process.stderr.write(`\r${line.padEnd(process.stderr.columns ? process.stderr.columns - 1 : 100)}`);
    else process.stderr.write(`${line}\n`);
    this.written = true;
  }

  finish(): void {
    if (this.written && process.stderr.isTTY) process.stderr.write('\n');
    this.written = false;
  }
}
