/**
 * One self-rewriting progress line on stderr for long work (ingest, evaluation): redrawn at
 * most every 100 ms on a terminal, one plain line every 10 s otherwise (logs, CI), and always
 * for the final step. stdout stays free for results and `--json`.
 */
export class ProgressLine {
  private lastWrite = 0;
  private written = false;

  /** `enabled: false` makes every call a no-op (e.g. for `--json` runs). */
  constructor(private readonly enabled = true) {}

  update(what: string, done: number, total: number): void {
    if (!this.enabled) return;
    const now = performance.now();
    const final = done === total;
    if (!final && now - this.lastWrite < (process.stderr.isTTY ? 100 : 10_000)) return;
    this.lastWrite = now;
    const share = total > 0 ? done / total : 0;
    const width = 30;
    const bar = '#'.repeat(Math.round(share * width)).padEnd(width, '.');
    const line = `[${bar}] ${(share * 100).toFixed(0).padStart(3)}% ${what}`;
    if (process.stderr.isTTY) process.stderr.write(`\r${line.padEnd(process.stderr.columns ? process.stderr.columns - 1 : 100)}`);
    else process.stderr.write(`${line}\n`);
    this.written = true;
  }

  /** Ends the line so the next output starts on its own. */
  finish(): void {
    if (this.written && process.stderr.isTTY) process.stderr.write('\n');
    this.written = false;
  }
}
