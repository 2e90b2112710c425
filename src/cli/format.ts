/** Human-readable output of the `prism` commands (the `--json` output is the API's own objects). */
import type { IngestReport } from '../ingest/pipeline.ts';
import type { MemoryStats, SearchResult } from '../memory.ts';
import type { MemoryRecord, MemoryTurn, SessionInfo } from '../memory/records.ts';
import { formatTrace } from '../retrieve/bundle-search.ts';
import type { ResolvedScope, Scope } from '../scope.ts';

/** `user alice`, `user alice · agent support`: how a scope reads in messages. */
export function scopeLabel(scope: Scope | ResolvedScope): string {
  return [
    `user ${scope.userId ?? 'default'}`,
    ...(scope.agentId ? [`agent ${scope.agentId}`] : []),
    ...(scope.runId ? [`run ${scope.runId}`] : []),
  ].join(' · ');
}

/** What an add did, and the scope's memory after it (`stats`: counted as `prism stats` counts). */
export function formatIngestReport(report: IngestReport, stats: MemoryStats, seconds: number): string {
  const total = (record: Record<string, number>) => Object.values(record).reduce((a, b) => a + b, 0);
  const lines = [
    `${report.chunksAdded} chunk${report.chunksAdded === 1 ? '' : 's'} added` +
      `${report.chunksSkipped > 0 ? `, ${report.chunksSkipped} already in memory` : ''} in ${seconds.toFixed(1)} s; ` +
      `the memory now holds ${plural(stats.chunks, 'chunk')}, ${plural(total(stats.nodes), 'node')} (${plural(stats.nodes.facetPoint, 'fact')}), ${plural(total(stats.edges), 'edge')}`,
  ];
  if (report.warnings.length > 0) lines.push(`warnings: ${report.warnings.length} (first: ${report.warnings[0]})`);
  return lines.join('\n');
}

/** An ISO time as stored, without a midnight time part (a date given without a time). */
function shortTime(time: string): string {
  return time.replace(/T00:00(?::00)?$/, '');
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function turnLine(turn: MemoryTurn): string {
  return `${turn.speaker}: ${turn.text}  [${turn.id}${turn.date ? ` · ${shortTime(turn.date)}` : ''}]`;
}

/**
 * The search result: intent (and why it is GENERAL when routing is off), then the units with
 * their turns, optionally their retrieval paths, then the packed context a prompt would get.
 */
export function formatSearch(result: SearchResult, options: { routing: boolean; traces: boolean }): string {
  const routing = options.routing ? `decided by ${result.tier}` : 'intent routing is off by default; --route turns it on';
  const lines = [`intent ${result.intent} (${routing}) · ${result.tokens} tokens · ${result.units.length} unit${result.units.length === 1 ? '' : 's'}`];
  if (result.units.length === 0) return [...lines, 'nothing found in this memory'].join('\n');
  result.units.forEach((unit, rank) => {
    lines.push('', `${rank + 1}. score ${unit.score.toFixed(3)} · session ${unit.turns[0]?.sessionId ?? '?'}`);
    for (const turn of unit.turns) lines.push(`   ${turnLine(turn)}`);
    if (options.traces) lines.push(`   path: ${formatTrace(unit.trace)}`);
  });
  lines.push('', '--- context ---', result.context);
  return lines.join('\n');
}

export function formatSessions(sessions: readonly SessionInfo[], scope: Scope): string {
  if (sessions.length === 0) return `no memories for ${scopeLabel(scope)}`;
  const rows = sessions.map((s) => [s.sessionId, s.date ? shortTime(s.date) : '-', String(s.messages), String(s.facts)]);
  const header = ['session', 'date', 'messages', 'facts'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] as number)).join('  ').trimEnd();
  return [`${sessions.length} session${sessions.length === 1 ? '' : 's'} for ${scopeLabel(scope)}`, line(header), ...rows.map(line)].join('\n');
}

export function formatRecord(record: MemoryRecord): string {
  switch (record.kind) {
    case 'session': {
      const { session } = record;
      return [
        `session ${session.sessionId}${session.date ? ` (${session.date})` : ''} · ${scopeLabel(session)}`,
        `messages (${record.messages.length}):`,
        ...record.messages.map((m) => `  ${turnLine(m)}`),
        `facts (${record.facts.length}):`,
        ...record.facts.map((f) => `  ${f.text}  [${f.id}${f.time ? ` · ${f.time}` : ''}]`),
      ].join('\n');
    }
    case 'message':
      return `message in session ${record.message.sessionId}: ${turnLine(record.message)}`;
    case 'fact':
      return `fact in session ${record.fact.sessionId}: ${record.fact.text} (from ${record.fact.dialogIds.join(', ')})`;
  }
}

export function formatStats(stats: MemoryStats, scope: Scope, scopes: readonly ResolvedScope[]): string {
  const counts = (record: Record<string, number>) =>
    Object.entries(record)
      .map(([name, n]) => `${name} ${n}`)
      .join(', ');
  return [
    `${scopeLabel(scope)}: ${stats.chunks} chunk${stats.chunks === 1 ? '' : 's'}`,
    `  nodes: ${counts(stats.nodes)}`,
    `  edges: ${counts(stats.edges)}`,
    `scopes in this store (${scopes.length}): ${scopes.map(scopeLabel).join('; ') || 'none'}`,
  ].join('\n');
}
