import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * `prism mcp` end to end: the SDK's own client spawns the command over stdio, as Claude Desktop
 * or any MCP client would, and calls the tools on a store in a temporary directory.
 */

let dir: string;
let client: Client;
let transport: StdioClientTransport;
const stderr: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'prism-mcp-'));
  transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', resolve('test/helpers/prism-cli.ts'), 'mcp', '--dir', dir],
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  client = new Client({ name: 'prism-test', version: '1.0.0' });
  await client.connect(transport);
}, 120_000);

afterAll(async () => {
  await client?.close();
  await rm(dir, { recursive: true, force: true });
});

async function call(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

function structured<T>(result: CallToolResult): T {
  expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false);
  return result.structuredContent as T;
}

interface SearchOutput {
  context: string;
  units: Array<{ score: number; turns: Array<{ speaker: string; text: string; userId: string; sessionId: string }> }>;
}

describe('prism mcp', () => {
  it('lists the four tools with their inputs', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['add_memory', 'delete_memory', 'list_memories', 'search_memory']);
    const search = tools.find((t) => t.name === 'search_memory');
    expect(search?.inputSchema.required).toEqual(['query']);
    expect(Object.keys(search?.inputSchema.properties ?? {}).sort()).toEqual(['budget', 'query', 'userId']);
  });

  it('keeps two users apart that share names and words', async () => {
    structured(
      await call('add_memory', {
        userId: 'alice',
        sessionId: 'pets',
        messages: [
          { speaker: 'Alice', text: 'My cat is called Pixel and she sleeps on the balcony.' },
          { role: 'assistant', content: 'Pixel sounds like a sun lover.' },
        ],
      }),
    );
    structured(await call('add_memory', { userId: 'bob', sessionId: 'pets', text: 'My cat is called Mochi and she sleeps in the laundry basket.' }));

    const alice = structured<SearchOutput>(await call('search_memory', { userId: 'alice', query: 'What is the name of my cat?' }));
    expect(alice.context).toContain('Pixel');
    expect(alice.context).not.toContain('Mochi');
    expect(alice.units.length).toBeGreaterThan(0);
    expect(alice.units.flatMap((u) => u.turns).every((t) => t.userId === 'alice' && t.sessionId === 'pets')).toBe(true);
    expect(alice.units.flatMap((u) => u.turns).map((t) => t.speaker)).toContain('Alice');

    const bob = structured<SearchOutput>(await call('search_memory', { userId: 'bob', query: 'Where does Pixel sleep?', budget: 256 }));
    expect(bob.context).toContain('Mochi');
    expect(bob.context).not.toContain('Pixel');

    const lists = structured<{ sessions: Array<{ sessionId: string; userId: string; messages: number }> }>(await call('list_memories', { userId: 'alice' }));
    expect(lists.sessions).toEqual([expect.objectContaining({ sessionId: 'pets', userId: 'alice', messages: 2 })]);
    const nobody = structured<{ sessions: unknown[] }>(await call('list_memories', {}));
    expect(nobody.sessions).toEqual([]);
  }, 120_000);

  it('reports bad calls as tool errors, and the server keeps serving', async () => {
    const both = await call('add_memory', { text: 'x', messages: [{ speaker: 'A', text: 'y' }] });
    expect(both.isError).toBe(true);
    const neither = await call('delete_memory', {});
    expect(neither.isError).toBe(true);
    const unknown = await call('delete_memory', { userId: 'alice', sessionId: 'no-such-session' });
    expect(unknown.isError).toBe(true);
    expect(JSON.stringify(unknown.content)).toContain('no-such-session');
    const invalid = await call('search_memory', { query: '' });
    expect(invalid.isError).toBe(true);
  }, 60_000);

  it('deletes one user\'s session without touching the other user', async () => {
    expect(structured<{ chunksDeleted: number }>(await call('delete_memory', { userId: 'alice', sessionId: 'pets' })).chunksDeleted).toBe(1);
    const alice = structured<SearchOutput>(await call('search_memory', { userId: 'alice', query: 'What is the name of my cat?' }));
    expect(alice.context).not.toContain('Pixel');
    const bob = structured<SearchOutput>(await call('search_memory', { userId: 'bob', query: 'What is the name of my cat?' }));
    expect(bob.context).toContain('Mochi');
    expect(structured<{ chunksDeleted: number }>(await call('delete_memory', { userId: 'bob' })).chunksDeleted).toBe(1);
    expect(structured<{ sessions: unknown[] }>(await call('list_memories', { userId: 'bob' })).sessions).toEqual([]);
  }, 60_000);
});
