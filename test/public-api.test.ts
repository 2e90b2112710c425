import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { openNodeMemory } from '../src/node.ts';
import { llmConfigFromSettings } from '../src/open-options.ts';

/**
 * The front door, pinned: the names `prism-memory` exports (values and types), read with the
 * TypeScript compiler as a user's editor sees them. A change here is a change of the public API
 * and belongs in the changelog. Every name carries a doc comment, and so does every optional
 * field of an options type, since that is where its default is stated.
 */

const PUBLIC_NAMES = [
  'AddOptions',
  'AnswerResult',
  'BrowserMemoryOptions',
  'BrowserRuntime',
  'BrowserRuntimeOptions',
  'ChunkingOptions',
  'ContentPart',
  'Conversation',
  'ConversationSession',
  'ConversationTurn',
  'DeepPartial',
  'DeleteTarget',
  'DownloadProgress',
  'FactInfo',
  'IngestOptions',
  'IngestProgress',
  'IngestReport',
  'InputMessage',
  'Intent',
  'IntentTier',
  'JsonValue',
  'LlmSettings',
  'Memory',
  'MemoryOptions',
  'MemoryRecord',
  'MemorySettings',
  'MemoryStats',
  'MemoryTurn',
  'Message',
  'MessagesInput',
  'PrismConfig',
  'PrismError',
  'PrismErrorCode',
  'ResolvedScope',
  'RetrievalMode',
  'RoleMessage',
  'Scope',
  'SearchOptions',
  'SearchResult',
  'SearchUnit',
  'SessionInfo',
  'SpeakerMessage',
  'TokenCounter',
  'loadBrowserRuntime',
  'openBrowserMemory',
];

/** Runtime values of the entry (the rest are types). */
const PUBLIC_VALUES = ['Memory', 'PrismError', 'loadBrowserRuntime', 'openBrowserMemory'];

const ENTRIES = {
  index: resolve('src/index.ts'),
  advanced: resolve('src/advanced.ts'),
  node: resolve('src/node.ts'),
  aiSdk: resolve('src/ai-sdk/middleware.ts'),
  mcp: resolve('src/mcp/server.ts'),
};

const program = ts.createProgram(Object.values(ENTRIES), {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  allowImportingTsExtensions: true,
  noEmit: true,
  strict: true,
  skipLibCheck: true,
  types: ['node'],
});
const checker = program.getTypeChecker();

function exportsOf(file: string): ts.Symbol[] {
  const source = program.getSourceFile(file);
  const symbol = source && checker.getSymbolAtLocation(source);
  if (!symbol) throw new Error(`cannot read the exports of ${file}`);
  return checker.getExportsOfModule(symbol).map((s) => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s));
}

function names(file: string): string[] {
  const source = program.getSourceFile(file);
  const symbol = source && checker.getSymbolAtLocation(source);
  return symbol ? checker.getExportsOfModule(symbol).map((s) => s.getName()).sort() : [];
}

function documented(symbol: ts.Symbol): boolean {
  return ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim() !== '';
}

describe('public API', () => {
  it('the main entry exports exactly the pinned names', async () => {
    expect(names(ENTRIES.index)).toEqual([...PUBLIC_NAMES].sort());
    const runtime = Object.keys(await import('../src/index.ts')).sort();
    expect(runtime).toEqual([...PUBLIC_VALUES].sort());
  });

  it('every public name has a doc comment', () => {
    const missing = exportsOf(ENTRIES.index)
      .filter((symbol) => !documented(symbol))
      .map((s) => s.getName());
    expect(missing).toEqual([]);
  });

  it('every optional field of a public options type says what it does (and its default)', () => {
    const missing = exportsOf(ENTRIES.index)
      .filter((symbol) => /Options$|Settings$|^Scope$/.test(symbol.getName()))
      .flatMap((symbol) => {
        const type = checker.getDeclaredTypeOfSymbol(symbol);
        return checker
          .getPropertiesOfType(type)
          .filter((property) => property.flags & ts.SymbolFlags.Optional && !documented(property))
          .map((property) => `${symbol.getName()}.${property.getName()}`);
      });
    expect(missing).toEqual([]);
  });

  it('the subpaths do not repeat the main entry, and every Node name beyond it is Node-only', () => {
    const main = new Set(PUBLIC_NAMES);
    expect(names(ENTRIES.advanced).filter((name) => main.has(name))).toEqual([]);
    expect(names(ENTRIES.aiSdk)).toEqual(['PrismMiddlewareOptions', 'prismMemoryMiddleware']);
    expect(names(ENTRIES.mcp)).toEqual(['PrismMcpOptions', 'createPrismMcpServer']);
    expect(names(ENTRIES.node)).toEqual(expect.arrayContaining([...PUBLIC_NAMES, 'openNodeMemory', 'NodeMemoryOptions']));
  });
});

describe('one options contract', () => {
  it('LLM settings become the adapter config the same way for every open function', () => {
    expect(llmConfigFromSettings({ baseURL: ' https://llm.example/v1/ ', model: ' m ', models: { answer: 'big' }, apiKey: ' k ', timeoutMs: 5 })).toEqual({
      baseURL: 'https://llm.example/v1',
      models: { answer: 'big', default: 'm' },
      apiKey: 'k',
      timeoutMs: 5,
    });
    expect(llmConfigFromSettings({ baseURL: '/llm/v1', model: 'm' }, (url) => new URL(url, 'https://app.example/page')).baseURL).toBe('https://app.example/llm/v1');
    expect(() => llmConfigFromSettings({ baseURL: '/llm/v1', model: 'm' })).toThrow('not an absolute URL: /llm/v1');
    expect(() => llmConfigFromSettings({ baseURL: 'https://x/v1', model: ' ' })).toThrow(expect.objectContaining({ code: 'LLM_NOT_CONFIGURED' }));
  });

  it('openNodeMemory takes the LLM as settings, as openBrowserMemory does', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prism-options-'));
    const withLlm = await openNodeMemory({ dir, llm: { baseURL: 'http://127.0.0.1:9/v1', model: 'scripted' }, extraction: 'local' });
    const without = await openNodeMemory({ dir: join(dir, 'b') });
    try {
      expect(withLlm.llm).not.toBeNull();
      expect(without.llm).toBeNull();
    } finally {
      await withLlm.close();
      await without.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
