/**
 * The `prism` command run from source, for tests that spawn it as a user would:
 * `node --import tsx test/helpers/prism-cli.ts <args>` (bin/prism.js runs the same `main` from dist/).
 */
import { main } from '../../src/cli/main.node.ts';

process.exitCode = await main(process.argv.slice(2));
