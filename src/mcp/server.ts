/**
 * PRISM as a Model Context Protocol server: four tools over one memory. Universal code (any
 * transport); `prism mcp` serves it over stdio (`stdio.node.ts`).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import type { InputMessage } from '../ingest/input.ts';
import type { Memory, SearchUnit } from '../memory.ts';
import type { Scope } from '../scope.ts';

export interface PrismMcpOptions {
  /** Scope of calls that name no `userId` (default: the memory's default scope). */
  scope?: Scope;
  /** Context budget of `search_memory` when the call gives none (default 1024 tokens). */
  defaultBudget?: number;
  /** Reported to clients in `initialize` (default the package's name and `0.0.0`). */
  version?: string;
}

/** The MCP server's context budget: room for a handful of turns from several sessions. */
const DEFAULT_MCP_BUDGET = 1024;

const userId = z.string().min(1).optional().describe('Whose memory; omit for the server\'s default user. Users never see each other\'s memories.');

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

/** Creates the server; connect it to a transport with `server.connect(transport)`. */
export function createPrismMcpServer(memory: Memory, options: PrismMcpOptions = {}): McpServer {
  const server = new McpServer({ name: 'prism-memory', version: options.version ?? '0.0.0' });
  const scopeFor = (user: string | undefined): Scope => (user === undefined ? (options.scope ?? {}) : { ...options.scope, userId: user });

  server.registerTool(
    'add_memory',
    {
      description:
        'Remember a conversation or a note. Give `messages` ({ speaker, text } or chat { role, content }) or `text` (stored as one user message). ' +
        'Messages of one session (default: today\'s date) are stored together; re-sending the same messages stores nothing new.',
      inputSchema: {
        text: z.string().min(1).optional().describe('A note or a single user message to remember.'),
        messages: z.array(message).min(1).optional().describe('Conversation turns, oldest first.'),
        userId,
        sessionId: z.string().min(1).optional().describe('Session the messages belong to (default: the UTC day, YYYY-MM-DD).'),
        date: z.string().optional().describe('When it was said, e.g. 2025-03-14 (default: now).'),
      },
    },
    async (args) => {
      if ((args.text === undefined) === (args.messages === undefined)) {
        return { isError: true, content: [{ type: 'text', text: 'add_memory: give either `text` or `messages`' }] };
      }
      const messages: InputMessage[] = args.messages ?? [{ role: 'user', content: args.text ?? '' }];
      const report = await memory.add(messages, {
        ...scopeFor(args.userId),
        ...(args.sessionId === undefined ? {} : { sessionId: args.sessionId }),
        ...(args.date === undefined ? {} : { date: args.date }),
      });
      return json({ chunksAdded: report.chunksAdded, chunksSkipped: report.chunksSkipped, factsAdded: report.nodesAdded, warnings: report.warnings });
    },
  );

  server.registerTool(
    'search_memory',
    {
      description:
        'Find what the memory holds about a question. Returns `context` (dated conversation lines, ready for a prompt) and the ranked `units` with their turns.',
      inputSchema: {
        query: z
          .string()
          .min(1)
          .describe('The question or topic, e.g. "When did Sam adopt the dog?". Name people and dates as written ("What did Sam say on 3 May, 2023?"): named speakers and dates focus the search.'),
        userId,
        budget: z.number().int().min(32).max(32768).optional().describe(`Most context tokens (default ${options.defaultBudget ?? DEFAULT_MCP_BUDGET}).`),
      },
      annotations: { readOnlyHint: true },
    },
    async (args) => {
      const result = await memory.search(args.query, { ...scopeFor(args.userId), budget: args.budget ?? options.defaultBudget ?? DEFAULT_MCP_BUDGET });
      return {
        content: [{ type: 'text', text: result.context === '' ? 'nothing in memory matches' : result.context }],
        structuredContent: { context: result.context, tokens: result.tokens, intent: result.intent, units: result.units.map(unitView) },
      };
    },
  );

  server.registerTool(
    'list_memories',
    {
      description: 'List the stored sessions of a user with their dates and message and fact counts.',
      inputSchema: { userId },
      annotations: { readOnlyHint: true },
    },
    async (args) => json({ sessions: await memory.list(scopeFor(args.userId)) }),
  );

  server.registerTool(
    'delete_memory',
    {
      description: 'Forget one session (`sessionId`), or, with only `userId`, everything that user\'s memory holds.',
      inputSchema: { sessionId: z.string().min(1).optional().describe('The session to forget.'), userId },
      annotations: { destructiveHint: true },
    },
    async (args) => {
      if (args.sessionId === undefined && args.userId === undefined) {
        return { isError: true, content: [{ type: 'text', text: 'delete_memory: give `sessionId`, or `userId` to forget that user\'s whole memory' }] };
      }
      const scope = scopeFor(args.userId);
      return json(await memory.delete(args.sessionId === undefined ? scope : { ...scope, sessionId: args.sessionId }));
    },
  );

  return server;
}
