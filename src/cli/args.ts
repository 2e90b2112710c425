/**
 * Command-line argument parsing for `prism`: a small parser (rather than `node:util`'s
 * `parseArgs`) so unknown flags, missing values and bad numbers get messages that name the
 * command and the flag, and so the parser is pure and testable.
 */
import { PrismError } from '../errors.ts';

export interface FlagSpec {
  type: 'string' | 'boolean';
  /** One-letter alias, e.g. `h` for `-h`. */
  short?: string;
  /** Placeholder for the value in help text, e.g. `<tokens>`. */
  value?: string;
  description: string;
}

export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

export type FlagValues<S extends FlagSpecs> = {
  [K in keyof S]?: S[K]['type'] extends 'boolean' ? boolean : string;
};

export interface ParsedArgs<S extends FlagSpecs> {
  flags: FlagValues<S>;
  positionals: string[];
}

/** A mistake in how the command was called: reported with the command's usage, exit status 2. */
export class UsageError extends PrismError {
  constructor(message: string) {
    super('INVALID_INPUT', message);
    this.name = 'UsageError';
  }
}

/**
 * Parses `--name value`, `--name=value`, boolean `--name`, `-x` short aliases and `--` (the
 * rest are positionals). `command` names the command in error messages.
 */
export function parseArgv<S extends FlagSpecs>(argv: readonly string[], specs: S, command: string): ParsedArgs<S> {
  const flags: Record<string, string | boolean> = {};
  const positionals: string[] = [];
  const byShort = new Map(Object.entries(specs).flatMap(([name, spec]) => (spec.short ? [[spec.short, name] as const] : [])));
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith('-') || arg === '-') {
      positionals.push(arg);
      continue;
    }
    const long = arg.startsWith('--');
    const body = long ? arg.slice(2) : arg.slice(1);
    const equals = long ? body.indexOf('=') : -1;
    const given = equals >= 0 ? body.slice(0, equals) : body;
    const name = long ? given : byShort.get(given);
    const spec = name === undefined ? undefined : specs[name];
    if (name === undefined || spec === undefined) {
      const known = Object.keys(specs).map((n) => `--${n}`).join(', ');
      throw new UsageError(`${command}: unknown option ${long ? `--${given}` : `-${given}`} (options: ${known})`);
    }
    if (spec.type === 'boolean') {
      if (equals >= 0) throw new UsageError(`${command}: --${name} takes no value`);
      flags[name] = true;
      continue;
    }
    const value = equals >= 0 ? body.slice(equals + 1) : argv[++i];
    if (value === undefined || (equals < 0 && value.startsWith('--'))) {
      throw new UsageError(`${command}: --${name} needs a value${spec.value ? ` ${spec.value}` : ''}`);
    }
    flags[name] = value;
  }
  return { flags: flags as FlagValues<S>, positionals };
}

/** A whole number ≥ `min` from a flag's text; `--budget abc` says what was expected. */
export function integerFlag(name: string, text: string | undefined, min = 1): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\s*\d+\s*$/.test(text) || !Number.isSafeInteger(value) || value < min) {
    throw new UsageError(`--${name}: expected a whole number ≥ ${min}, got "${text}"`);
  }
  return value;
}

/** One of `choices` from a flag's text. */
export function choiceFlag<T extends string>(name: string, text: string | undefined, choices: readonly T[]): T | undefined {
  if (text === undefined) return undefined;
  if (!(choices as readonly string[]).includes(text)) {
    throw new UsageError(`--${name}: expected ${choices.map((c) => `"${c}"`).join(' or ')}, got "${text}"`);
  }
  return text as T;
}

/** Help lines for flags: `  --name <value>  description`, aligned. */
export function formatFlags(specs: FlagSpecs): string {
  const rows = Object.entries(specs).map(([name, spec]) => [
    `${spec.short ? `-${spec.short}, ` : '    '}--${name}${spec.value ? ` ${spec.value}` : ''}`,
    spec.description,
  ]);
  const width = Math.max(...rows.map(([left]) => (left as string).length));
  return rows.map(([left, right]) => `  ${(left as string).padEnd(width)}  ${right}`).join('\n');
}
