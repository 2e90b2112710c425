import { PrismError } from './errors.ts';

/**
 * Who a memory belongs to, as mem0 names it. A scope is exact: memories added under
 * `{ userId: 'u', agentId: 'a' }` are searched, listed, deleted and exported under that same
 * scope, never under `{ userId: 'u' }`. Omitted fields are unset; `{}` is the default scope
 * (user `default`), so a single-user app never names one.
 */
export interface Scope {
  /** Whose memory this is. Default `default`. */
  userId?: string;
  /** The agent that holds it, when one user has several agents with separate memories. */
  agentId?: string;
  /** One run or conversation thread, when it should stay apart from the user's other runs. */
  runId?: string;
}

/** A scope with every field resolved: what records and results carry. */
export interface ResolvedScope {
  userId: string;
  agentId: string | null;
  runId: string | null;
}

export const DEFAULT_USER_ID = 'default';

/** The store partition of the default scope. */
export const DEFAULT_PARTITION = DEFAULT_USER_ID;

/**
 * Longest user, agent or run id, in UTF-16 units: a scope's ids name its partition in every
 * stored record and lock, so they are bounded like the other ids (`limits.labelChars`).
 */
export const SCOPE_ID_CHARS = 200;

/** Separates the fields of a partition name; a control character no id may contain. */
const SEPARATOR = '\u001f';

/** Checks a caller's scope and fills in the defaults; a wrong type is an `INVALID_INPUT`. */
export function resolveScope(scope: Scope | ResolvedScope | undefined): ResolvedScope {
  if (scope !== undefined && (typeof scope !== 'object' || scope === null)) {
    throw new PrismError('INVALID_INPUT', 'scope: expected an object with userId / agentId / runId');
  }
  const field = (name: keyof Scope): string | null => {
    // A resolved scope's null means unset, as an omitted field does.
    const value = scope?.[name];
    if (value === undefined || value === null) return null;
    if (typeof value !== 'string' || value.trim() === '' || value.includes(SEPARATOR)) {
      throw new PrismError('INVALID_INPUT', `scope.${name}: expected a non-empty string, got ${JSON.stringify(value)?.slice(0, 80)}`);
    }
    if (value.length > SCOPE_ID_CHARS) {
      throw new PrismError('INPUT_TOO_LARGE', `scope.${name}: ${value.length} characters; the limit is ${SCOPE_ID_CHARS}`);
    }
    return value;
  };
  return { userId: field('userId') ?? DEFAULT_USER_ID, agentId: field('agentId'), runId: field('runId') };
}

/** The store partition holding a scope's memory: the user id alone when agent and run are unset. */
export function partitionOf(scope: ResolvedScope): string {
  if (scope.agentId === null && scope.runId === null) return scope.userId;
  return [scope.userId, scope.agentId ?? '', scope.runId ?? ''].join(SEPARATOR);
}

/** Inverse of `partitionOf`. */
export function scopeOfPartition(partition: string): ResolvedScope {
  const [userId = DEFAULT_USER_ID, agentId = '', runId = ''] = partition.split(SEPARATOR);
  return { userId, agentId: agentId === '' ? null : agentId, runId: runId === '' ? null : runId };
}
