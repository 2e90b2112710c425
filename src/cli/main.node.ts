/**
 * `prism`: the command line over a store directory. `main` returns the exit status: 0 done,
 * 1 failed, 2 called wrongly (the message says how), 130 interrupted.
 */
import { PrismError } from '../errors.ts';
import { packageVersion } from '../util/package-root.node.ts';
import { formatFlags, UsageError } from './args.ts';
import { COMMANDS, commandHelp, GLOBAL_FLAGS } from './commands.node.ts';

function overview(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'prism — long-term memory for LLM agents',
    '',
    'usage: prism <command> [options]     prism <command> --help for its options',
    '',
    'commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'options of every memory command:',
    formatFlags(GLOBAL_FLAGS),
    '',
    'examples:',
    ...COMMANDS.map((c) => `  ${c.example}`),
    '',
    'prism --version prints the version.',
  ].join('\n');
}

export async function main(argv: readonly string[]): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined) {
    console.error(overview());
    return 2;
  }
  if (first === '--help' || first === '-h' || first === 'help') {
    const topic = COMMANDS.find((c) => c.name === rest[0]);
    console.log(topic ? commandHelp(topic) : overview());
    return 0;
  }
  if (first === '--version' || first === '-V') {
    console.log(await packageVersion());
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === first);
  if (!command) {
    console.error(`prism: unknown command "${first}" (commands: ${COMMANDS.map((c) => c.name).join(', ')}; prism --help)`);
    return 2;
  }
  try {
    return await command.run(rest);
  } catch (error) {
    return report(error, command.name);
  }
}

/** One line per failure: what went wrong and, for a wrong call, where to look. */
function report(error: unknown, name: string): number {
  if (error instanceof UsageError) {
    const message = error.message.startsWith('prism ') ? error.message : `prism ${name}: ${error.message}`;
    console.error(`${message}\n(prism ${name} --help shows the options)`);
    return 2;
  }
  if (error instanceof PrismError) {
    if (error.code === 'ABORTED') {
      console.error('interrupted: what was committed is kept; the same command resumes');
      return 130;
    }
    console.error(`prism ${name}: ${error.message} [${error.code}]`);
    return error.code === 'INVALID_INPUT' ? 2 : 1;
  }
  // Not PrismError: the system's own (a file that cannot be written, …); its message says what.
  console.error(`prism ${name}: ${error instanceof Error ? error.message : String(error)}`);
  return 1;
}
