#!/usr/bin/env node
// Runs the built CLI (`npm run build` writes dist/).
import { main } from '../dist/cli.js';

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? `${err.name}${'code' in err ? ` [${err.code}]` : ''}: ${err.message}` : err);
    process.exit(1);
  },
);
