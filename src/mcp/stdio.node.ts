/** Serves a memory's MCP tools over this process's stdin/stdout until the client goes away. */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Memory } from '../memory.ts';
import { createPrismMcpServer, type PrismMcpOptions } from './server.ts';

/**
 * Resolves when stdin ends (the client closed the pipe or exited) or on SIGINT/SIGTERM; the
 * SDK's transport does not watch for either itself. The caller closes the memory afterwards.
 */
export async function serveMcpOverStdio(memory: Memory, options: PrismMcpOptions = {}): Promise<void> {
  const server = createPrismMcpServer(memory, options);
  const stopped = new Promise<void>((resolve) => {
    process.stdin.once('end', resolve);
    process.stdin.once('close', resolve);
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await server.connect(new StdioServerTransport());
  await stopped;
  await server.close();
}
