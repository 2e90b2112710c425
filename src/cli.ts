/**
 * `prism` command line (Node only). Commands:
 *   prism ingest [--data file] [--conversation id] [--mode zero-llm|llm] [--precision int8|fp32] [--chunking session|turns:N|tokens:N]
 *   prism search "<question>" [--conversation id] [--budget tokens] [...ingest flags]
 *   prism eval locomo --data file --out dir [--mode ...] [--budgets ...] [--systems ...] [--conversations ...] [--compare a:b,...] [--pooled]
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { ChunkingOptions } from './ingest/chunking.ts';
import { parseLocomo, type LocomoSample } from './ingest/locomo.ts';
import { formatTrace } from './retrieve/bundle-search.ts';
import { defaultLocomoPath, openNodeMemory, type NodeMemoryOptions } from './node.ts';

const USAGE = `usage:
  prism ingest [--data <locomo.json>] [--conversation <id>|all] [--mode zero-llm|llm] [--precision int8|fp32] [--chunking session|turns:N|tokens:N] [--dir <store dir>]
  prism search "<question>" [--conversation <id>] [--budget <tokens>] [same flags as ingest]
  prism eval locomo --data <file.json> --out <dir> [--mode zero-llm|llm] [--budgets 256,512,...] [--systems a,b] [--conversations a,b] [--compare a:b,c:d] [--pooled]`;

const FLAGS = {
  data: { type: 'string' },
  conversation: { type: 'string' },
  conversations: { type: 'string' },
  mode: { type: 'string' },
  precision: { type: 'string' },
  chunking: { type: 'string' },
  dir: { type: 'string' },
  budget: { type: 'string' },
  budgets: { type: 'string' },
  systems: { type: 'string' },
  compare: { type: 'string' },
  out: { type: 'string' },
  pooled: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: FLAGS, allowPositionals: true });
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    console.log(USAGE);
    return command ? 0 : 2;
  }
  switch (command) {
    case 'ingest':
      return ingestCommand(values);
    case 'search':
      return searchCommand(rest.join(' '), values);
    case 'eval': {
      const { evalCommand } = await import('./eval/cli.node.ts');
      return evalCommand(rest, values);
    }
    default:
      console.error(`unknown command "${command}"\n${USAGE}`);
      return 2;
  }
}

type Flags = ReturnType<typeof parseArgs<{ options: typeof FLAGS; allowPositionals: true }>>['values'];

export async function loadSamples(path: string | undefined): Promise<LocomoSample[]> {
  return parseLocomo(JSON.parse(await readFile(path ?? defaultLocomoPath(), 'utf8')));
}

export function parseChunking(text: string | undefined): ChunkingOptions | undefined {
  if (!text) return undefined;
  if (text === 'session') return { by: 'session' };
  const turns = /^turns:(\d+)$/.exec(text);
  if (turns) return { by: 'turns', size: Number(turns[1]) };
  const tokens = /^tokens:(\d+)$/.exec(text);
  if (tokens) return { by: 'tokens', maxTokens: Number(tokens[1]) };
  throw new Error(`--chunking must be "session", "turns:N" or "tokens:N", got "${text}"`);
}

function memoryOptions(values: Flags, conversationId: string): NodeMemoryOptions {
  const chunking = parseChunking(values.chunking);
  return {
    dir: values.dir ? `${values.dir}/${conversationId}` : undefined,
    name: conversationId,
    precision: values.precision === 'fp32' ? 'fp32' : 'int8',
    mode: values.mode === 'llm' ? 'llm' : 'zero-llm',
    ...(chunking ? { chunking } : {}),
  };
}

async function ingestCommand(values: Flags): Promise<number> {
  const samples = await loadSamples(values.data);
  const wanted = values.conversation ?? samples[0]?.conversation.id;
  const chosen = wanted === 'all' ? samples : samples.filter((s) => s.conversation.id === wanted);
  if (chosen.length === 0) {
    console.error(`no conversation "${wanted}" in the data (have: ${samples.map((s) => s.conversation.id).join(', ')})`);
    return 2;
  }
  for (const sample of chosen) {
    const memory = await openNodeMemory(memoryOptions(values, sample.conversation.id));
    const turns = sample.conversation.sessions.reduce((n, s) => n + s.turns.length, 0);
    const started = performance.now();
    const report = await memory.add(sample.conversation, {
      onProgress: (p) => process.stderr.write(`\r${sample.conversation.id}: ${p.stage.padEnd(11)} ${p.chunksDone}/${p.chunksTotal} chunks`),
    });
    const seconds = (performance.now() - started) / 1000;
    process.stderr.write('\n');
    const stats = memory.stats();
    console.log(`\n${sample.conversation.id}: ${sample.conversation.sessions.length} sessions, ${turns} turns → ${report.chunksAdded} chunks added, ${report.chunksSkipped} already ingested, ${seconds.toFixed(1)} s`);
    console.log(`  nodes: ${Object.entries(stats.nodes).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    console.log(`  edges: ${Object.entries(stats.edges).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    if (report.warnings.length > 0) console.log(`  warnings: ${report.warnings.length} (first: ${report.warnings[0]})`);
    await memory.close();
  }
  return 0;
}

async function searchCommand(question: string, values: Flags): Promise<number> {
  if (!question) {
    console.error(USAGE);
    return 2;
  }
  const samples = await loadSamples(values.data);
  const sample = samples.find((s) => s.conversation.id === (values.conversation ?? samples[0]?.conversation.id));
  if (!sample) {
    console.error('conversation not found');
    return 2;
  }
  const memory = await openNodeMemory(memoryOptions(values, sample.conversation.id));
  await memory.add(sample.conversation);
  const result = await memory.search(question, { budget: values.budget ? Number(values.budget) : 1024 });
  console.log(`intent ${result.intent} (decided by ${result.tier}); ${result.tokens} tokens; ${result.units.length} units\n`);
  for (const unit of result.units) {
    console.log(`- ${unit.id} score ${unit.score.toFixed(3)} [${unit.dialogIds.join(', ')}]`);
    console.log(`    path: ${formatTrace(unit.trace)}`);
  }
  console.log(`\n${result.context}`);
  await memory.close();
  return 0;
}
