/**
 * One process that needs MiniLM from the per-user cache, for the tests of the shared download:
 * `node --import tsx test/helpers/model-download.ts <cacheDir> <baseUrl> <files.json>`. Every
 * progress event goes to stdout as one JSON line (`{"event": …}`), then the first values of the
 * vector it embeds (`{"vector": […]}`).
 */
import { readFileSync } from 'node:fs';
import { createNodeMiniLmEmbedder } from '../../src/embed/minilm.node.ts';
import { cachedModelSource } from '../../src/embed/model-source.node.ts';
import type { ModelFile } from '../../src/embed/model-source.ts';

const [cacheDir, baseUrl, filesPath] = process.argv.slice(2);
if (cacheDir === undefined || baseUrl === undefined || filesPath === undefined) throw new Error('usage: model-download.ts <cacheDir> <baseUrl> <files.json>');
const files = JSON.parse(readFileSync(filesPath, 'utf8')) as ModelFile[];

const source = cachedModelSource({
  cacheDir,
  download: { name: 'test/all-MiniLM-L6-v2', baseUrl, files },
  onProgress: (event) => {
    // Per-piece progress would flood the pipe; the rest tells the story.
    if (event.status !== 'progress') process.stdout.write(`${JSON.stringify({ event })}\n`);
  },
});
const embedder = await createNodeMiniLmEmbedder({ source, numThreads: 1 });
const [vector] = await embedder.embed(['A man is eating food.']);
process.stdout.write(`${JSON.stringify({ vector: Array.from(vector?.subarray(0, 8) ?? []) })}\n`);
await embedder.dispose();
