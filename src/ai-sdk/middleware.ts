/**
 * PRISM for the Vercel AI SDK (v6): a language model middleware for `wrapLanguageModel`.
 * Before each call it searches the memory for the latest user message and puts the packed
 * context into the prompt as a system message; after the model answers (generate or stream)
 * it stores the user message and the answer as one more exchange of the session.
 */
import type {
  LanguageModelV3Message,
  LanguageModelV3Middleware,
  LanguageModelV3Prompt,
  LanguageModelV3StreamPart,
} from '@ai-sdk/provider';
import { sessionDay, withContentIds } from '../ingest/content-ids.ts';
import type { Memory } from '../memory.ts';
import type { Scope } from '../scope.ts';

export interface PrismMiddlewareOptions extends Scope {
  /** The memory to read and write (any store, any runtime). */
  memory: Pick<Memory, 'search' | 'add'>;
  /** Most context tokens put into the prompt (default 1024). */
  budget?: number;
  /** Session the exchanges are stored under (default: the UTC day of the exchange). */
  sessionId?: string;
  /** Whether to store each exchange after the answer (default true); false only reads. */
  store?: boolean;
  /** Wraps the packed context into the system message (default: a short preface, then the context). */
  formatContext?: (context: string) => string;
  /** When each question is asked: relative time in it ("two weeks ago") is read against this (default: the clock at the call). */
  now?: () => Date | string;
}

/** The middleware's context budget: room for a handful of turns without crowding the prompt. */
const DEFAULT_MIDDLEWARE_BUDGET = 1024;

function defaultFormat(context: string): string {
  return `Memories from earlier conversations with this user (dated; newer statements win):\n${context}`;
}

/** The text of the prompt's last message when it is the user's (the question being asked now). */
function latestUserText(prompt: LanguageModelV3Prompt): string | null {
  const last = prompt.at(-1);
  if (last?.role !== 'user') return null;
  const text = last.content
    .flatMap((part) => (part.type === 'text' ? [part.text] : []))
    .join('\n')
    .trim();
  return text === '' ? null : text;
}

/** Leading system messages stay first (providers treat them as the instructions); the memory goes right after them. */
function withMemoryMessage(prompt: LanguageModelV3Prompt, content: string): LanguageModelV3Prompt {
  const firstOther = prompt.findIndex((message) => message.role !== 'system');
  const at = firstOther === -1 ? prompt.length : firstOther;
  const memoryMessage: LanguageModelV3Message = { role: 'system', content };
  return [...prompt.slice(0, at), memoryMessage, ...prompt.slice(at)];
}

/**
 * ```ts
 * const model = wrapLanguageModel({ model: openai('gpt-4o-mini'), middleware: prismMemoryMiddleware({ memory, userId: 'alice' }) });
 * ```
 * An answer without text (a tool-call step) is not stored. An exchange already stored is not
 * stored again: the same question with the same answer in the same session (a retried call, a
 * re-sent turn) adds nothing, while the same question with another answer is stored as a new
 * exchange (both messages get ids from the pair's content, see `withContentIds`). Errors of the
 * memory propagate to the `generateText` / `streamText` call.
 */
export function prismMemoryMiddleware(options: PrismMiddlewareOptions): LanguageModelV3Middleware {
  const { memory, budget = DEFAULT_MIDDLEWARE_BUDGET, sessionId, store = true, formatContext = defaultFormat, now, ...scopeFields } = options;
  const scope: Scope = scopeFields;

  async function remember(question: string, answer: string): Promise<void> {
    if (!store || answer.trim() === '') return;
    const session = sessionId ?? sessionDay(undefined);
    const exchange = await withContentIds(
      [
        { role: 'user', content: question },
        { role: 'assistant', content: answer },
      ],
      { sessionId: session, together: true },
    );
    await memory.add(exchange, { ...scope, sessionId: session });
  }

  return {
    specificationVersion: 'v3',
    transformParams: async ({ params }) => {
      const question = latestUserText(params.prompt);
      if (question === null) return params;
      const { context } = await memory.search(question, { ...scope, budget, ...(now ? { now: now() } : {}), ...(params.abortSignal ? { signal: params.abortSignal } : {}) });
      return context === '' ? params : { ...params, prompt: withMemoryMessage(params.prompt, formatContext(context)) };
    },
    wrapGenerate: async ({ doGenerate, params }) => {
      const result = await doGenerate();
      const question = latestUserText(params.prompt);
      if (question !== null) {
        await remember(question, result.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join(''));
      }
      return result;
    },
    wrapStream: async ({ doStream, params }) => {
      const { stream, ...rest } = await doStream();
      const question = latestUserText(params.prompt);
      if (question === null) return { stream, ...rest };
      let answer = '';
      const recording = new TransformStream<LanguageModelV3StreamPart, LanguageModelV3StreamPart>({
        transform(part, controller) {
          if (part.type === 'text-delta') answer += part.delta;
          controller.enqueue(part);
        },
        // The stream ends only once the exchange is stored, so a caller that awaits the text sees it in memory.
        flush: () => remember(question, answer),
      });
      return { stream: stream.pipeThrough(recording), ...rest };
    },
  };
}
