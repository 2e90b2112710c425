import { chunkText, turnLine } from '../graph/chunk-text.ts';
import type { ChunkTurn } from '../graph/types.ts';
import { countTokens } from '../util/tokens.ts';
import type { Conversation, ConversationSession } from './conversation.ts';

/** How a conversation is cut into Episodes (design §2.1). */
export type ChunkingOptions =
  | { by: 'session' }
  /** Windows of `size` consecutive turns, never crossing a session boundary. */
  | { by: 'turns'; size: number }
  /** Windows of at most `maxTokens` o200k tokens of turn lines (a longer single turn is its own window). */
  | { by: 'tokens'; maxTokens: number };

/** A chunk before hashing: what the ingest pipeline turns into an Episode. */
export interface ChunkDraft {
  sessionId: string;
  header: string;
  time: string | null;
  turns: ChunkTurn[];
  /** Canonical text (header + one line per turn); its SHA-256 names the chunk (`chunkIdOf`) unless `dedupKey` is set. */
  text: string;
  /** Hashed instead of `text` when the caller names the batch (`batchId`): re-sending it is a no-op. */
  dedupKey?: string;
}

/**
 * Hex digits of a chunk's SHA-256 kept as its id: 64 bits, as a message's content id, so chunks
 * of a scope do not collide in practice (a million chunks: odds of about 1 in 30 million). Every
 * node and edge record names its chunk, and an Entity names each chunk it appears in: on
 * LongMemEval chat the 64 digits ids had before were ~0.6 KB of each message's store bytes (10K messages).
 */
const CHUNK_ID_HEX = 16;

/**
 * The id of a chunk whose text (or `dedupKey`) has SHA-256 `digest` (hex). Memories written before
 * ids were cut hold chunk ids of all 64 digits: those stay as they are, and `isIngested` finds
 * their text under either form.
 */
export function chunkIdOf(digest: string): string {
  return digest.slice(0, CHUNK_ID_HEX);
}

/** Whether a chunk whose SHA-256 is `digest` is among the ingested `chunkIds`, under its id or the full digest older memories used. */
export function isIngested(chunkIds: ReadonlySet<string>, digest: string): boolean {
  return chunkIds.has(chunkIdOf(digest)) || chunkIds.has(digest);
}

export function chunkConversation(conversation: Conversation, options: ChunkingOptions): ChunkDraft[] {
  const drafts: ChunkDraft[] = [];
  for (const session of conversation.sessions) {
    for (const turns of splitSession(session, options)) {
      if (turns.length === 0) continue;
      drafts.push(makeDraft(conversation.id, session, turns));
    }
  }
  return drafts;
}

function splitSession(session: ConversationSession, options: ChunkingOptions): ChunkTurn[][] {
  const turns = session.turns.filter((t) => t.text.trim().length > 0);
  switch (options.by) {
    case 'session':
      return [turns];
    case 'turns': {
      const size = Math.max(1, Math.floor(options.size));
      const out: ChunkTurn[][] = [];
      for (let i = 0; i < turns.length; i += size) out.push(turns.slice(i, i + size));
      return out;
    }
    case 'tokens': {
      const out: ChunkTurn[][] = [];
      let current: ChunkTurn[] = [];
      let length = 0;
      for (const turn of turns) {
        const tokens = countTokens(turnLine(turn)) + 1;
        if (current.length > 0 && length + tokens > options.maxTokens) {
          out.push(current);
          current = [];
          length = 0;
        }
        current.push(turn);
        length += tokens;
      }
      out.push(current);
      return out;
    }
  }
}

/**
 * `[conv-26 session_3 · 1:56 pm on 8 May, 2023]` — the date header every context unit carries.
 * Messages added without a conversation (`conversationId` '') name the session alone.
 */
export function sessionHeader(conversationId: string, session: Pick<ConversationSession, 'id' | 'dateText'>): string {
  const name = conversationId === '' ? session.id : `${conversationId} ${session.id}`;
  return `[${name}${session.dateText ? ` · ${session.dateText}` : ''}]`;
}

/** The session id chunks carry (what `delete({ sessionId })` takes): `<conversation>/<session>`, or the session alone. */
export function sessionKey(conversationId: string, sessionId: string): string {
  return conversationId === '' ? sessionId : `${conversationId}/${sessionId}`;
}

function makeDraft(conversationId: string, session: ConversationSession, turns: ChunkTurn[]): ChunkDraft {
  const header = sessionHeader(conversationId, session);
  return {
    sessionId: sessionKey(conversationId, session.id),
    header,
    time: session.time,
    turns,
    text: chunkText(header, turns),
  };
}
