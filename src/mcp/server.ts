/**
 * PRISM as a Model Context Protocol server: four tools over one memory. Universal code (any
 * transport); `prism mcp` serves it over stdio (`stdio.node.ts`).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import { sessionDay, withContentIds } from '../ingest/content-ids.ts';
import type { InputMessage } from '../ingest/input.ts';
import type { Memory, SearchUnit } from '../memory.ts';
import { resolveScope, type Scope } from '../scope.ts';

export interface PrismMcpOptions {
  /**
   * Locks the server to this scope: every call reads and writes only its memory, the tools'
   * schemas have no scope fields, and a call that names a scope (`userId`, `agentId`, `runId`) is
   * a tool error. Serve a locked server to an LLM: nothing in a prompt can make it reach another
   * user's memory. Without it, each call names its scope (default: the default user), so
   * whoever writes the calls chooses whose memory is read, changed or deleted.
   */
  lockedScope?: Scope;
  /** Context budget of `search_memory` when the call gives none (default 1024 tokens). */
  defaultBudget?: number;
  /** Reported to clients in `initialize` (default the package's name and `0.0.0`). */
  version?: string;
}

/** The MCP server's context budget: room for a handful of turns from several sessions. */
const DEFAULT_MCP_BUDGET = 1024;

const SCOPE_FIELDS = ['userId', 'agentId', 'runId'] as const;

/** The scope fields of an unlocked server's tools: the caller picks the memory. */
const callerScope = {
  userId: z.string().min(1).optional().describe('Whose memory (default: the default user). The caller chooses: any user\'s memory can be named.'),
  agentId: z.string().min(1).optional().describe('The agent within the user, when one user has several agents with separate memories.'),
  runId: z.string().min(1).optional().describe('One run or thread, kept apart from the user\'s other runs.'),
};

const message = z.union([
  z.object({ speaker: z.string().min(1), text: z.string(), date: z.string().optional() }),
  z.object({ role: z.enum(['user', 'assistant', 'system', 'developer', 'tool']), content: z.string(), name: z.string().optional() }),
]);

/** What a unit of a search result looks like to a client: its score, text and turns (not the retrieval internals). */
function unitView(unit: SearchUnit): Pick<SearchUnit, 'id' | 'score' | 'text' | 'turns'> {
  return { id: unit.id, score: unit.score, text: unit.text, turns: unit.turns };
}

function json(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], structuredContent: value };
}

function isScopeField(key: string): key is (typeof SCOPE_FIELDS)[number] {
  return (SCOPE_FIELDS as readonly string[]).includes(key);
}

function toolError(text: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text }] };
}

/** Creates the server; connect it to a transport with `server.connect(transport)`. */
export function createPrismMcpServer(memory: Memory, options: PrismMcpOptions = {}): McpServer {
  const server = new McpServer({ name: 'prism-memory', version: options.version ?? '0.0.0' });
  const locked = options.lockedScope === undefined ? null : resolveScope(options.lockedScope);
  const lockLabel = locked === null ? '' : [`user ${locked.userId}`, locked.agentId && `agent ${locked.agentId}`, locked.runId && `run ${locked.runId}`].filter(Boolean).join(', ');
  /**
   * A tool's input: a locked server's has no scope fields and refuses any key it does not list
   * (a scope named anyway is a tool error); an unlocked server's adds the caller's scope fields.
   */
  const input = <Shape extends z.ZodRawShape>(shape: Shape) =>
    locked === null
      ? z.object({ ...shape, ...callerScope })
      : z.strictObject(shape, {
          error: (issue) =>
            issue.code === 'unrecognized_keys' && issue.keys.some(isScopeField)
              ? `this server is locked to ${lockLabel}: calls cannot name userId, agentId or runId`
              : undefined,
        });
  /** The scope a call works on: the locked one, or the fields the call names. */
  const scopeOf = (args: object): Scope => {
    if (options.lockedScope !== undefined) return options.lockedScope;
    const named: Scope = {};
    for (const [key, value] of Object.entries(args)) if (isScopeField(key) && typeof value === 'string') named[key] = value;
    return named;
  };
  const whose = locked === null ? 'of the scope the call names (userId, agentId, runId; the caller chooses)' : `of this server's scope (${lockLabel})`;

  server.registerTool(
    'add_memory',
    {
      description:
        `Remember a conversation or a note in the memory ${whose}. Give \`messages\` ({ speaker, text, date? } or chat { role, content, name? }) or \`text\` (stored as one user message). ` +
        'Sending the same messages again stores nothing new: a message is skipped when one of the same session, call `date`, speaker (or role and name), text and message `date` was already ' +
        'stored, counting repeats within one call (a call that says "ok" twice stores both; sending that call again stores neither). A different session, date or wording is stored anew.',
      inputSchema: input({
        text: z.string().min(1).optional().describe('A note or a single user message to remember.'),
        messages: z.array(message).min(1).optional().describe('Conversation turns, oldest first.'),
        sessionId: z.string().min(1).optional().describe('Session the messages belong to (default: the UTC day of `date`, else today, YYYY-MM-DD).'),
        date: z.string().optional().describe('When it was said, e.g. 2025-03-14 (default: now).'),
      }),
    },
    async (args) => {
      if ((args.text === undefined) === (args.messages === undefined)) return toolError('add_memory: give either `text` or `messages`');
      const sessionId = args.sessionId ?? sessionDay(args.date);
      const given: InputMessage[] = args.messages ?? [{ role: 'user', content: args.text ?? '' }];
      const messages = await withContentIds(given, { sessionId, date: args.date });
      const report = await memory.add(messages, { ...scopeOf(args), sessionId, ...(args.date === undefined ? {} : { date: args.date }) });
      return json({
        sessionId,
        chunksAdded: report.chunksAdded,
        messagesSkipped: report.skipped.length,
        factsAdded: report.nodesAdded,
        warnings: report.warnings,
      });
    },
  );

  server.registerTool(
    'search_memory',
    {
      description:
        `Find what the memory ${whose} holds about a question. Returns \`context\` (dated conversation lines, ready for a prompt) and the ranked \`units\` with their turns.`,
      inputSchema: input({
        query: z
          .string()
          .min(1)
          .describe('The question or topic, e.g. "When did Sam adopt the dog?". Name people and dates as written ("What did Sam say on 3 May, 2023?"): named speakers and dates focus the search.'),
        budget: z.number().int().min(32).max(32768).optional().describe(`Most context tokens (default ${options.defaultBudget ?? DEFAULT_MCP_BUDGET}).`),
        now: z
          .string()
          .min(1)
          .optional()
          .describe('When the question is asked, e.g. "2023-05-30T23:40:00": relative time in the query ("two weeks ago", "last Saturday") is read against it. Default: the server\'s clock.'),
      }),
      annotations: { readOnlyHint: true },
    },
    async (args) => {
      const result = await memory.search(args.query, {
        ...scopeOf(args),
        budget: args.budget ?? options.defaultBudget ?? DEFAULT_MCP_BUDGET,
        ...(args.now === undefined ? {} : { now: args.now }),
      });
      return {
        content: [{ type: 'text', text: result.context === '' ? 'nothing in memory matches' : result.context }],
        structuredContent: { context: result.context, tokens: result.tokens, intent: result.intent, units: result.units.map(unitView) },
      };
    },
  );

  server.registerTool(
    'list_memories',
    {
      description: `List the stored sessions ${whose}, with their dates and message and fact counts.`,
      inputSchema: input({}),
      annotations: { readOnlyHint: true },
    },
    async (args) => json({ sessions: await memory.list(scopeOf(args)) }),
  );

  server.registerTool(
    'delete_memory',
    {
      description:
        locked === null
          ? 'Forget one session (`sessionId`) of the scope the call names, or, with a scope and no `sessionId`, everything that scope\'s memory holds. The caller chooses the scope.'
          : `Forget one session (\`sessionId\`) of this server's scope (${lockLabel}), or, with \`all: true\`, everything its memory holds.`,
      inputSchema: input({
        sessionId: z.string().min(1).optional().describe('The session to forget.'),
        ...(locked === null ? {} : { all: z.literal(true).optional().describe('Forget the whole memory of this server\'s scope.') }),
      }),
      annotations: { destructiveHint: true },
    },
    async (args) => {
      const scope = scopeOf(args);
      if (args.sessionId !== undefined && !('all' in args && args.all === true)) return json(await memory.delete({ ...scope, sessionId: args.sessionId }));
      // The whole scope: a locked server's only with `all: true`, an unlocked one's only when the call names the scope.
      const whole = locked === null ? Object.keys(scope).length > 0 : args.sessionId === undefined && 'all' in args && args.all === true;
      if (!whole) {
        return toolError(
          locked === null
            ? 'delete_memory: give `sessionId`, or a scope (`userId`, `agentId`, `runId`) without `sessionId` to forget that scope\'s whole memory'
            : 'delete_memory: give either `sessionId` or `all: true`',
        );
      }
      return json(await memory.delete(scope));
    },
  );

  return server;
}
