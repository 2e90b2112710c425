import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** Where @sap-ux/fiori-docs-embeddings keeps its 778 texts (`records.jsonl`) and their all-MiniLM-L6-v2 vectors (`embeddings.bin`). */
export const GOLDEN_DIR = join(dirname(createRequire(import.meta.url).resolve('@sap-ux/fiori-docs-embeddings')), 'data', 'embeddings');

/**
 * The golden texts as the package's generator embedded them: whitespace collapsed, cut at 8192
 * characters (see the golden test in embed.test.ts).
 */
export function goldenTexts(): string[] {
  return readFileSync(join(GOLDEN_DIR, 'records.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => (JSON.parse(line) as { content: string }).content)
    .map((text) => text.replace(/\n+/g, ' ').replace(/\s+/g, ' ').trim().substring(0, 8192));
}
