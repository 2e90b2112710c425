import type { ChunkTurn } from './types.ts';

/** One line per turn, with its dialog id so packed context can be scored against gold evidence. */
export function turnLine(turn: ChunkTurn): string {
  return `(${turn.dialogId}) ${turn.speaker}: ${turn.text}`;
}

/** A chunk's canonical text: its header, then one line per turn (`Chunk.text`; its SHA-256 is the chunk id). */
export function chunkText(header: string, turns: readonly ChunkTurn[]): string {
  return [header, ...turns.map(turnLine)].join('\n');
}
