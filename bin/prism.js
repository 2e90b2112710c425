#!/usr/bin/env node
// Runs the built CLI (`npm run build` writes dist/).
import { main } from '../dist/cli/main.node.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exit(1);
  },
);
