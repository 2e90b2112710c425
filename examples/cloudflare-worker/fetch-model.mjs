// Puts the files the Worker reads into public/models/all-MiniLM-L6-v2/ (its static assets):
// `node fetch-model.mjs` downloads them from the Hugging Face hub (Xenova/all-MiniLM-L6-v2),
// `node fetch-model.mjs <folder>` copies them from a folder in the same layout.
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

const FILES = ['tokenizer.json', 'tokenizer_config.json', 'onnx/model_quantized.onnx'];
const HUB = 'https://huggingface.co/Xenova/all-MiniLM-L6-v2/resolve/main/';
const target = join(import.meta.dirname, 'public', 'models', 'all-MiniLM-L6-v2');
const from = process.argv[2];

for (const file of FILES) {
  const destination = join(target, file);
  await mkdir(dirname(destination), { recursive: true });
  if (from) {
    await copyFile(join(from, file), destination);
  } else {
    const response = await fetch(HUB + file);
    if (!response.ok) throw new Error(`${HUB + file}: HTTP ${response.status}`);
    await writeFile(destination, new Uint8Array(await response.arrayBuffer()));
  }
  console.log(destination);
}
