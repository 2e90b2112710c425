/**
 * The `prism` commands. Each parses its own flags (the global ones included) and works on the
 * store in `--dir`; only `add` and `import` write, and `search` never ingests anything.
 */
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { buffer as readBytes, text as readText } from 'node:stream/consumers';
import type { DownloadProgress } from '../embed/model-source.ts';
import { PrismError } from '../errors.ts';
import type { IngestReport } from '../ingest/pipeline.ts';
import type { Memory, MemoryStats } from '../memory.ts';
import type { Scope } from '../scope.ts';
import { choiceFlag, formatFlags, integerFlag, parseArgv, UsageError, type FlagSpecs, type FlagValues } from './args.ts';
import { parseChatInput, type ChatInput } from './chat-input.ts';
import { packageVersion } from '../util/package-root.node.ts';
import { ProgressLine } from '../util/progress-line.node.ts';
import { formatIngestReport, formatRecord, formatSearch, formatSessions, formatStats, scopeLabel } from './format.ts';

export const GLOBAL_FLAGS = {
  dir: { type: 'string', value: '<path>', description: 'store directory (default .prism/default, as openNodeMemory)' },
  user: { type: 'string', value: '<id>', description: 'whose memory (default "default")' },
  agent: { type: 'string', value: '<id>', description: 'agent id within the user (optional)' },
  run: { type: 'string', value: '<id>', description: 'run or thread id (optional)' },
  json: { type: 'boolean', description: 'print JSON for scripts instead of text' },
  help: { type: 'boolean', short: 'h', description: 'show this help' },
} as const satisfies FlagSpecs;

const MODE_FLAG = {
  mode: {
    type: 'string',
    value: 'zero-llm|llm',
    description: 'llm: use the endpoint in PRISM_LLM_BASE_URL / PRISM_LLM_MODEL / PRISM_LLM_API_KEY (default zero-llm)',
  },
} as const satisfies FlagSpecs;

export interface Command {
  name: string;
  summary: string;
  usage: string;
  example: string;
  flags: FlagSpecs;
  /** Runs with the command's arguments (after the command name); resolves to the exit status. */
  run(argv: readonly string[]): Promise<number>;
}

type Globals = FlagValues<typeof GLOBAL_FLAGS> & FlagValues<typeof MODE_FLAG>;

function scopeOf(flags: Globals): Scope {
  return {
    ...(flags.user === undefined ? {} : { userId: flags.user }),
    ...(flags.agent === undefined ? {} : { agentId: flags.agent }),
    ...(flags.run === undefined ? {} : { runId: flags.run }),
  };
}

/**
 * Opens the store in `--dir`, runs `fn`, and always closes the store. The model is read only by
 * commands that embed (`add`, `search`, `mcp` tools), on first use; its one-time download into
 * the per-user cache shows progress on stderr.
 */
async function withMemory<T>(flags: Globals, fn: (memory: Memory) => Promise<T>): Promise<T> {
  const mode = choiceFlag('mode', flags.mode, ['zero-llm', 'llm'] as const);
  // Loaded on use, so `--help` and argument errors answer at once.
  const { openNodeMemory } = await import('../node.ts');
  const memory = await openNodeMemory({
    ...(flags.dir === undefined ? {} : { dir: flags.dir }),
    ...(mode ? { mode } : {}),
    model: { onProgress: downloadProgress(new ProgressLine()) },
  });
  try {
    return await fn(memory);
  } finally {
    await memory.close();
  }
}

/** Shows a model download on the progress line, and says when another process's download is awaited. */
function downloadProgress(line: ProgressLine): (progress: DownloadProgress) => void {
  const megabytes = (bytes: number) => (bytes / 1e6).toFixed(1);
  return (progress) => {
    if (progress.status === 'waiting') console.error(`waiting for another process to download ${progress.file}`);
    if (progress.status !== 'progress') return;
    const name = basename(progress.file);
    // Without a length from the server the bar stays at 0 until the file is there.
    const total = progress.total ?? Number.POSITIVE_INFINITY;
    line.update(`downloading ${name}: ${megabytes(progress.loaded)}${progress.total === null ? '' : ` of ${megabytes(progress.total)}`} MB`, progress.loaded, total);
    if (progress.loaded === total) line.finish();
  };
}

function printJson(value: unknown): void {
  console.log(JSON.stringify(value, null, 2));
}

/** Defines a command whose `run` gets its parsed flags (the command's own plus the global ones). */
function command<S extends FlagSpecs>(
  spec: { name: string; summary: string; usage: string; example: string; flags: S },
  run: (flags: FlagValues<S> & Globals, positionals: string[]) => Promise<number>,
): Command {
  const flags = { ...spec.flags, ...GLOBAL_FLAGS };
  return {
    ...spec,
    flags,
    run: async (argv) => {
      const parsed = parseArgv(argv, flags, `prism ${spec.name}`);
      if (parsed.flags.help) return printHelp(spec.name);
      return run(parsed.flags as FlagValues<S> & Globals, parsed.positionals);
    },
  };
}

/** `prism <command> --help`: usage, flags and an example, on stdout (exit status 0). */
export function commandHelp(cmd: Command): string {
  return `${cmd.summary}\n\nusage: ${cmd.usage}\n\noptions:\n${formatFlags(cmd.flags)}\n\nexample:\n  ${cmd.example}`;
}

function printHelp(name: string): number {
  const cmd = COMMANDS.find((c) => c.name === name);
  if (cmd) console.log(commandHelp(cmd));
  return 0;
}

/** A file's bytes; a missing or unreadable file is an `INVALID_INPUT` naming it. */
async function readPath(path: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (cause) {
    throw new PrismError('INVALID_INPUT', `cannot read ${path}: ${(cause as NodeJS.ErrnoException).code ?? String(cause)}`, { cause });
  }
}

async function readInput(path: string | undefined): Promise<{ text: string; source: string }> {
  if (path === undefined || path === '-') {
    if (process.stdin.isTTY) throw new UsageError('prism add: give a file, or pipe the conversation into stdin');
    return { text: await readText(process.stdin), source: 'stdin' };
  }
  return { text: (await readPath(path)).toString('utf8'), source: path };
}

const add = command(
  {
    name: 'add',
    summary: 'add a conversation (JSON messages, OpenAI messages, a "Speaker: text" log, or stdin)',
    usage: 'prism add [<file>|-] [--session <id>] [--date <date>] [--format json|text] [--user <id>] [--dir <path>]',
    example: 'prism add examples/chat.txt --date 2025-03-14',
    flags: {
      session: { type: 'string', value: '<id>', description: 'session id (default: the UTC day of --date, or today)' },
      date: { type: 'string', value: '<date>', description: 'when the conversation happened, e.g. 2025-03-14 or "8 May, 2023"' },
      format: { type: 'string', value: 'json|text', description: 'input format (default: guessed from the first character)' },
      conversation: { type: 'string', value: '<id>', description: 'LoCoMo files: add only this conversation (default: all)' },
      ...MODE_FLAG,
    },
  },
  async (flags, positionals) => {
    if (positionals.length > 1) throw new UsageError(`prism add: one input at a time, got ${positionals.length}`);
    const format = choiceFlag('format', flags.format, ['json', 'text'] as const);
    const { text, source } = await readInput(positionals[0]);
    const input = pickConversation(parseChatInput(text, source, format), flags.conversation);
    // The same input into the same session is one batch: adding a file twice stores it once.
    const batchId = createHash('sha256').update(JSON.stringify([text, flags.session ?? null, flags.date ?? null])).digest('hex');
    const scope = scopeOf(flags);
    const progress = new ProgressLine(!flags.json);
    const controller = new AbortController();
    const onInterrupt = () => controller.abort();
    process.once('SIGINT', onInterrupt);
    try {
      const started = performance.now();
      const reports = await addInput(input, scope, { ...flags, batchId }, controller.signal, progress);
      progress.finish();
      const seconds = (performance.now() - started) / 1000;
      if (flags.json) printJson(reports.length === 1 ? reports[0]?.report : reports);
      else for (const { label, report, stats } of reports) console.log(`${label}: ${formatIngestReport(report, stats, seconds)}`);
      return 0;
    } finally {
      progress.finish();
      process.off('SIGINT', onInterrupt);
    }
  },
);

function pickConversation(input: ChatInput, id: string | undefined): ChatInput {
  if (id === undefined) return input;
  if (input.kind !== 'conversations') throw new UsageError('prism add: --conversation picks a conversation of a LoCoMo file');
  const chosen = input.conversations.filter((c) => c.id === id);
  if (chosen.length === 0) {
    throw new UsageError(`prism add: no conversation "${id}" in the file (have: ${input.conversations.map((c) => c.id).join(', ')})`);
  }
  return { kind: 'conversations', conversations: chosen };
}

type Added = { label: string; report: IngestReport; stats: MemoryStats };

/** Messages go into the scope given; each LoCoMo conversation into its own user (its id) unless `--user` names one. */
function addInput(
  input: ChatInput,
  scope: Scope,
  flags: { session?: string | undefined; date?: string | undefined; batchId: string } & Globals,
  signal: AbortSignal,
  progress: ProgressLine,
): Promise<Added[]> {
  return withMemory(flags, async (memory) => {
    if (input.kind === 'messages') {
      const sessionId = flags.session ?? input.sessionId;
      const date = flags.date ?? input.date;
      const report = await memory.add(input.messages, {
        ...scope,
        ...(sessionId === undefined ? {} : { sessionId }),
        ...(date === undefined ? {} : { date }),
        batchId: flags.batchId,
        signal,
        onProgress: (p) => progress.update(`${p.stage} ${p.chunksDone}/${p.chunksTotal} chunks`, p.chunksDone, p.chunksTotal),
      });
      return [{ label: scopeLabel(scope), report, stats: await memory.stats(scope) }];
    }
    const reports: Added[] = [];
    for (const conversation of input.conversations) {
      const target = flags.user === undefined ? { ...scope, userId: conversation.id } : scope;
      const report = await memory.addConversation(conversation, {
        ...target,
        signal,
        onProgress: (p) => progress.update(`${conversation.id}: ${p.stage} ${p.chunksDone}/${p.chunksTotal} chunks`, p.chunksDone, p.chunksTotal),
      });
      reports.push({ label: `${conversation.id} → ${scopeLabel(target)}`, report, stats: await memory.stats(target) });
    }
    return reports;
  });
}

const search = command(
  {
    name: 'search',
    summary: 'search a memory (never adds anything)',
    usage: 'prism search "<question>" [--budget <tokens>] [--route] [--trace] [--user <id>] [--dir <path>]',
    example: 'prism search "What is the name of Sam\'s dog?"',
    flags: {
      budget: { type: 'string', value: '<tokens>', description: 'context budget in o200k tokens (default 1024)' },
      route: { type: 'boolean', description: 'turn on N4 intent routing (off by default, as in the paper)' },
      trace: { type: 'boolean', description: 'print each unit\'s retrieval path' },
      ...MODE_FLAG,
    },
  },
  async (flags, positionals) => {
    const query = positionals.join(' ').trim();
    if (query === '') throw new UsageError('prism search: give a question, e.g. prism search "When did Sam adopt Biscuit?"');
    const budget = integerFlag('budget', flags.budget) ?? DEFAULT_SEARCH_BUDGET;
    const routing = flags.route === true;
    return withMemory(flags, async (memory) => {
      const result = await memory.search(query, {
        ...scopeOf(flags),
        budget,
        ...(routing ? { config: { flags: { intentRouting: true } } } : {}),
      });
      if (flags.json) printJson(result);
      else console.log(formatSearch(result, { routing, traces: flags.trace === true }));
      return 0;
    });
  },
);

/** The CLI's context budget: room for a handful of turns from several sessions. */
const DEFAULT_SEARCH_BUDGET = 1024;

const list = command(
  {
    name: 'list',
    summary: 'list the sessions of a memory, or one session\'s messages and facts',
    usage: 'prism list [--session <id>] [--user <id>] [--dir <path>]',
    example: 'prism list --user alice',
    flags: { session: { type: 'string', value: '<id>', description: 'show this session\'s messages and facts' } },
  },
  async (flags) => {
    const scope = scopeOf(flags);
    return withMemory(flags, async (memory) => {
      if (flags.session !== undefined) return printRecord(await memory.get(flags.session, scope), flags.session, flags.json === true);
      const sessions = await memory.list(scope);
      if (flags.json) printJson(sessions);
      else console.log(formatSessions(sessions, scope));
      return 0;
    });
  },
);

function printRecord(record: Awaited<ReturnType<Memory['get']>>, id: string, json: boolean): number {
  if (record === null) throw new PrismError('NOT_FOUND', `no session, message or fact "${id}" in this scope`);
  if (json) printJson(record);
  else console.log(formatRecord(record));
  return 0;
}

const get = command(
  {
    name: 'get',
    summary: 'show one session, message (dialog id) or fact by id',
    usage: 'prism get <id> [--user <id>] [--dir <path>]',
    example: 'prism get 2025-03-14:2',
    flags: {},
  },
  async (flags, positionals) => {
    const [id, ...extra] = positionals;
    if (id === undefined || extra.length > 0) throw new UsageError('prism get: give exactly one id');
    return withMemory(flags, async (memory) => printRecord(await memory.get(id, scopeOf(flags)), id, flags.json === true));
  },
);

const remove = command(
  {
    name: 'delete',
    summary: 'forget one session, or a whole scope\'s memory',
    usage: 'prism delete (--session <id> | --all) [--user <id>] [--dir <path>]',
    example: 'prism delete --session 2025-03-14',
    flags: {
      session: { type: 'string', value: '<id>', description: 'the session to forget' },
      all: { type: 'boolean', description: 'forget everything of the scope (--user / --agent / --run)' },
    },
  },
  async (flags) => {
    if ((flags.session === undefined) === (flags.all !== true)) throw new UsageError('prism delete: give either --session <id> or --all');
    const scope = scopeOf(flags);
    return withMemory(flags, async (memory) => {
      const result = await memory.delete(flags.session === undefined ? scope : { ...scope, sessionId: flags.session });
      if (flags.json) printJson(result);
      else console.log(`deleted ${result.chunksDeleted} chunk${result.chunksDeleted === 1 ? '' : 's'} from ${scopeLabel(scope)}`);
      return 0;
    });
  },
);

const exportCommand = command(
  {
    name: 'export',
    summary: 'write a scope\'s memory as one portable checkpoint',
    usage: 'prism export <file>|- [--user <id>] [--dir <path>]',
    example: 'prism export alice.prism --user alice',
    flags: {},
  },
  async (flags, positionals) => {
    const [path, ...extra] = positionals;
    if (path === undefined || extra.length > 0) throw new UsageError('prism export: give one output file (or - for stdout)');
    if (path === '-' && process.stdout.isTTY) throw new UsageError('prism export: the checkpoint is binary; give a file or redirect stdout');
    const scope = scopeOf(flags);
    return withMemory(flags, async (memory) => {
      const bytes = await memory.export(scope);
      if (path === '-') process.stdout.write(bytes);
      else {
        await writeFile(path, bytes);
        if (flags.json) printJson({ path, bytes: bytes.byteLength });
        else console.log(`wrote ${scopeLabel(scope)} to ${path} (${bytes.byteLength} bytes)`);
      }
      return 0;
    });
  },
);

const importCommand = command(
  {
    name: 'import',
    summary: 'replace a scope\'s memory with a checkpoint from export',
    usage: 'prism import <file>|- [--user <id>] [--dir <path>]',
    example: 'prism import alice.prism --user alice',
    flags: {},
  },
  async (flags, positionals) => {
    const [path, ...extra] = positionals;
    if (path === undefined || extra.length > 0) throw new UsageError('prism import: give one checkpoint file (or - for stdin)');
    const bytes = path === '-' ? await readBytes(process.stdin) : await readPath(path);
    const scope = scopeOf(flags);
    return withMemory(flags, async (memory) => {
      await memory.import(bytes, scope);
      const stats = await memory.stats(scope);
      if (flags.json) printJson(stats);
      else console.log(`imported ${path} into ${scopeLabel(scope)}: ${stats.chunks} chunks`);
      return 0;
    });
  },
);

const stats = command(
  {
    name: 'stats',
    summary: 'count a scope\'s chunks, nodes and edges, and list the store\'s scopes',
    usage: 'prism stats [--user <id>] [--dir <path>]',
    example: 'prism stats',
    flags: {},
  },
  async (flags) => {
    const scope = scopeOf(flags);
    return withMemory(flags, async (memory) => {
      const [counts, scopes] = await Promise.all([memory.stats(scope), memory.scopes()]);
      if (flags.json) printJson({ ...counts, scopes });
      else console.log(formatStats(counts, scope, scopes));
      return 0;
    });
  },
);

const mcp = command(
  {
    name: 'mcp',
    summary: 'serve the memory to an MCP client over stdio',
    usage:
      'prism mcp --user <id> [--agent <id>] [--run <id>] [--dir <path>]   (locked: every call reads and writes only this scope)\n' +
      '       prism mcp [--dir <path>]   (unlocked: each call names its scope; only for a client you trust with every user\'s memory)',
    example: 'prism mcp --user alice --dir ~/.prism/assistant',
    flags: { ...MODE_FLAG },
  },
  async (flags) => {
    const { serveMcpOverStdio } = await import('../mcp/stdio.node.ts');
    // stdout carries the protocol: the memory opens quietly and stays open until the client leaves.
    const version = await packageVersion();
    const scope = scopeOf(flags);
    const locked = Object.keys(scope).length > 0;
    return withMemory(flags, async (memory) => {
      await serveMcpOverStdio(memory, { ...(locked ? { lockedScope: scope } : {}), version });
      return 0;
    });
  },
);

const EVAL_FLAGS = {
  data: { type: 'string', value: '<file>', description: 'LoCoMo data (default $PRISM_LOCOMO or ../shared/data/locomo/locomo10-dev.json), or LongMemEval in the official format (.json or .json.gz; required)' },
  out: { type: 'string', value: '<dir>', description: 'output directory (results.json, report.md, frontier.svg, caches)' },
  mode: { type: 'string', value: 'zero-llm|llm', description: 'retrieval mode (llm needs PRISM_LLM_* in the environment)' },
  budgets: { type: 'string', value: '<n,n,...>', description: 'token budgets (default 256,512,1024,2048,4096)' },
  systems: { type: 'string', value: '<a,b,...>', description: 'systems to run (default: every baseline and PRISM variant)' },
  conversations: { type: 'string', value: '<a,b,...>', description: 'conversation ids (default all)' },
  precision: { type: 'string', value: 'int8|fp32', description: 'MiniLM precision (default int8)' },
  chunking: { type: 'string', value: 'session|turns:N|tokens:N', description: 'chunking (default session)' },
  compare: { type: 'string', value: '<a:b,...>', description: 'paired differences to report' },
  pooled: { type: 'boolean', description: 'also ask every question against one memory holding all selected conversations (pooled block in the same report)' },
  loco: { type: 'boolean', description: 'also run the weight candidates and report their leave-one-conversation-out choice (LongMemEval: one question per conversation)' },
  sample: { type: 'string', value: '<n>', description: 'LongMemEval: n questions of each type (a fixed-seed draw; a larger n keeps the smaller draw)' },
  help: GLOBAL_FLAGS.help,
} as const satisfies FlagSpecs;

/** `prism eval` belongs to the evaluation harness; its flags are its own (no store, no scope). */
const evalCommand: Command = {
  name: 'eval',
  summary: 'run the evaluation harness (LoCoMo, LongMemEval)',
  usage:
    'prism eval locomo --out <dir> [--data <file>] [--mode zero-llm|llm] [--budgets ...] [--systems ...] [--conversations ...] [--compare a:b,...] [--pooled] [--loco]\n' +
    '       prism eval longmemeval --data <file.json[.gz]> --out <dir> [--sample <n>] [--budgets ...] [--systems ...] [--compare a:b,...] [--loco]',
  example: 'prism eval locomo --out eval-out --conversations conv-26 --systems bm25-turns,prism',
  flags: EVAL_FLAGS,
  run: async (argv) => {
    const { flags, positionals } = parseArgv(argv, EVAL_FLAGS, 'prism eval');
    if (flags.help) return printHelp('eval');
    return (await loadEvalHarness()).evalCommand(positionals, flags);
  },
};

/** The evaluation harness ships with the source checkout only (`npm run build` there), not with the package. */
async function loadEvalHarness(): Promise<typeof import('../eval/cli.node.ts')> {
  try {
    return await import('../eval/cli.node.ts');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw cause;
    throw new PrismError('INVALID_INPUT', 'prism eval runs from a source checkout of prism-memory (the evaluation harness is not part of the installed package)', { cause });
  }
}

export const COMMANDS: readonly Command[] = [add, search, list, get, remove, exportCommand, importCommand, stats, mcp, evalCommand];
