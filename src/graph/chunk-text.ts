import type { ChunkTurn } from './types.ts';

/** One line per turn, with its dialog id so packed context can be scored against gold evidence. */
export function turnLine(turn: ChunkTurn): string {
  return `(${turn.dialogId}) ${turn.speaker}: ${turn.text}`;
}

/** A chunk's canonical text: its header, then one line per turn (`Chunk.text`; its SHA-256 is the chunk id). */
export function chunkText(header: string, turns: readonly ChunkTurn[]): string {
  return [header, ...turns.map(turnLine)].join('\n');
}

/** A turn's theme, as the local extractor names a turn's Facet: its speaker and its text on one line, capped at 160 characters. */
export function turnTheme(speaker: string, text: string): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return `${speaker}: ${oneLine.length > 160 ? `${oneLine.slice(0, 157)}…` : oneLine}`;
}
