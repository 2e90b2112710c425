import type { Conversation } from '../ingest/conversation.ts';

/**
 * LoCoMo's `evidence` field is hand-typed and a few entries are malformed: `D:11:26`, zero-padded
 * `D30:05`, or several ids in one string (`D8:6; D9:17`). This splits an entry into single ids and
 * writes each canonically as `D<session>:<turn>`; a token that is not an id at all (a bare `D`)
 * is returned trimmed but otherwise untouched, so it fails to resolve and gets counted.
 */
export function normaliseEvidence(raw: string): string[] {
  return raw
    .split(/[\s;,]+/)
    .filter((token) => token.length > 0)
    .map(canonicalDialogId);
}

function canonicalDialogId(token: string): string {
  const match = /^D:?(\d+):(\d+)$/i.exec(token);
  if (!match) return token;
  return `D${Number(match[1])}:${Number(match[2])}`;
}

export interface ResolvedEvidence {
  /** Gold turns as the conversation spells their dialog ids (deduplicated, in evidence order). */
  turns: string[];
  /** Normalised tokens that name no turn of the conversation. */
  unresolved: string[];
}

/** Resolves gold evidence against one conversation's dialog ids. */
export interface EvidenceResolver {
  resolve(evidence: readonly string[]): ResolvedEvidence;
}

export function createEvidenceResolver(conversation: Conversation): EvidenceResolver {
  // Keyed by canonical form on both sides, so `D30:05` in the evidence finds a turn whose own
  // dia_id might be written either way.
  const byCanonical = new Map<string, string>();
  for (const session of conversation.sessions) {
    for (const turn of session.turns) byCanonical.set(canonicalDialogId(turn.dialogId), turn.dialogId);
  }
  return {
    resolve(evidence) {
      const turns = new Set<string>();
      const unresolved: string[] = [];
      for (const id of evidence.flatMap(normaliseEvidence)) {
        const dialogId = byCanonical.get(id);
        if (dialogId === undefined) unresolved.push(id);
        else turns.add(dialogId);
      }
      return { turns: [...turns], unresolved };
    },
  };
}
