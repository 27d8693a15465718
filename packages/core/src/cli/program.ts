/**
 * The parser: a commander program built from usage.ts's tables. Commander (rather than yargs,
 * citty or cac) because it alone of the four suggests the nearest option or command for a typo,
 * has per-command options, help and --version, takes several values after one option (what a
 * shell makes of an unquoted glob), lets the caller handle every error, depends on nothing, and
 * adds about 10 ms to `sluice --help`; yargs, the only other one with suggestions, suggests
 * commands only and costs six times as much to load (docs/cli.md#why-commander has the
 * comparison). The help pages are usage.ts's text, not commander's, so that they are static and
 * list what usage.ts lists.
 */
import { createRequire } from 'node:module';
import type * as Commander from 'commander';
import type { Values } from './args.js';
import { ALIASES, COMMAND_HELP, USAGE, commandUsage, isCommand, type CommandName, type OptionRow } from './usage.js';

// Required, not imported: commander is CommonJS, and importing it from ESM first runs Node's
// scan of its exports (cjs-module-lexer) through an ESM wrapper, about 8 ms of a start-up that
// `sluice --help` pays in full (docs/cli.md#why-commander).
const { Command, CommanderError, Option } = createRequire(import.meta.url)('commander') as typeof Commander;
type Command = Commander.Command;
type CommanderError = Commander.CommanderError;
type Option = Commander.Option;

/** What the command line asked for: the command, its options by long name, and its positional arguments. */
export interface Invocation {
  readonly command: CommandName;
  readonly values: Values;
  readonly args: readonly string[];
}

/** A command line the parser refused, with the command it was for (none when the command itself is the problem). */
export class ParseError extends Error {
  constructor(
    readonly command: CommandName | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** `-o, --output O.parquet` → short o, long output, takes a value; `-i, --input F...` takes several. */
function parseFlags(flags: string): { short?: string; long: string; value: boolean; variadic: boolean } {
  const m = /^(?:-([a-zA-Z]), )?--([a-z][a-z0-9-]*)(?: (\S+))?$/.exec(flags);
  if (!m) throw new Error(`usage.ts: cannot read the flags "${flags}"`);
  return { ...(m[1] ? { short: m[1] } : {}), long: m[2]!, value: m[3] !== undefined, variadic: m[3]?.endsWith('...') ?? false };
}

/**
 * Whether a word on the command line is one of a command's own options (`--output`, `-o`,
 * `--output=o.parquet`). `options` holds the flags as written, short and long.
 */
function isOptionOf(options: ReadonlySet<string>, word: string): boolean {
  const eq = word.indexOf('=');
  return options.has(eq > 2 && word.startsWith('--') ? word.slice(0, eq) : word);
}

/**
 * A commander option for a usage.ts row. The placeholder commander sees is plain `<value>`: it
 * splits flags on `|` and `,`, which usage.ts's placeholders (`N|SIZE`, `C1,...,Cn`) contain.
 *
 * Commander gives an option that takes a value the next word whatever it is, so `--input
 * --output o.parquet` would read "--output" as the input and then complain of something else
 * (`--output is required`, a stray `o.parquet`). Commander has no setting for it (an optional
 * `[value]` skips any word starting with `-`, refusing dashed values of every kind), so the
 * option's argParser refuses a value that is one of the command's own options: the user left the
 * value out, and the error says so as it does for an option at the end of the line. Any other
 * value starting with `-` stays a value (`-1`, so `--workers -1` says what is wrong with -1).
 */
function option(row: OptionRow, command: CommandName, options: ReadonlySet<string>): Option {
  const f = parseFlags(row[0]);
  const value = f.value ? (f.variadic ? ' <value...>' : ' <value>') : '';
  const o = new Option(`${f.short ? `-${f.short}, ` : ''}--${f.long}${value}`, row[1]);
  if (!f.value) return o;
  return o.argParser((word: string, previous: unknown) => {
    if (isOptionOf(options, word)) throw new ParseError(command, `--${f.long} needs a value`);
    // A variadic option's values add up, as commander's own parser does it.
    return f.variadic ? [...((previous as string[] | undefined) ?? []), word] : word;
  });
}

/** A command's options as written on a command line: long and short flags, aliases, and the common ones. */
function optionWords(rows: readonly OptionRow[]): Set<string> {
  const words = new Set(['--debug', '-h', '--help', '--version', ...Object.keys(ALIASES).map((old) => `--${old}`)]);
  for (const [flags] of rows) {
    const f = parseFlags(flags);
    words.add(`--${f.long}`);
    if (f.short) words.add(`-${f.short}`);
  }
  return words;
}

/** The first line of commander's message, without its "error: " and with our quoting and suggestion style. */
function describe(e: CommanderError): string {
  const quoted = /'([^']+)'/.exec(e.message)?.[1];
  const guess = /\(Did you mean (.+?)\?\)/.exec(e.message)?.[1];
  const suggestion = guess === undefined ? '' : ` (did you mean ${guess}?)`;
  switch (e.code) {
    case 'commander.unknownOption':
      return `unknown option ${quoted}${suggestion}`;
    case 'commander.unknownCommand':
      return `unknown command "${quoted}"${suggestion}`;
    case 'commander.optionMissingArgument':
      return `${/--[a-z0-9-]+/.exec(quoted ?? '')?.[0] ?? quoted} needs a value`;
    default:
      return e.message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ');
  }
}

/**
 * Turns commander's exits into results: help and version (printed, exit code 0) and help shown
 * for a missing command (printed to stderr) stay CommanderErrors; the rest become ParseErrors.
 */
function exitHandler(command: CommandName | undefined): (e: CommanderError) => never {
  return (e) => {
    if (e.exitCode === 0 || e.code === 'commander.help') throw e;
    throw new ParseError(command, describe(e));
  };
}

/** Options by their long names (`row-group-size`, not commander's `rowGroupSize`), aliases folded in. */
function valuesOf(cmd: Command, program: Command): Values {
  const opts = cmd.opts();
  const values: Values = { debug: program.opts().debug as boolean | undefined };
  for (const o of cmd.options) values[o.long!.slice(2)] = opts[o.attributeName()] as Values[string];
  for (const [old, name] of Object.entries(ALIASES)) {
    if (values[old] === undefined) continue;
    if (values[name] !== undefined && values[name] !== values[old])
      throw new ParseError(cmd.name() as CommandName, `--${old} and --${name} are the same option (--${old} is its older spelling): give it once`);
    values[name] = values[old];
    delete values[old];
  }
  return values;
}

/**
 * The `sluice` program. Parsing it (`parseAsync(argv, { from: 'user' })`) calls `run` with the
 * invocation, prints help or the version and resolves, or throws a ParseError.
 *
 * @example
 * let call: Invocation | undefined;
 * await buildProgram('0.1.0', (c) => (call = c)).parseAsync(['plan', '--preset', 'rm1'], { from: 'user' });
 */
export function buildProgram(version: string, run: (call: Invocation) => void): Command {
  const program = new Command('sluice')
    .configureOutput({
      writeOut: (s) => process.stdout.write(s),
      writeErr: (s) => process.stderr.write(s),
      // main.ts prints the ParseError: one line in Sluice's words, then a pointer to --help.
      outputError: () => undefined,
    })
    .configureHelp({ formatHelp: (cmd) => `${cmd.parent !== null && isCommand(cmd.name()) ? commandUsage(cmd.name() as CommandName) : USAGE}\n` })
    .exitOverride(exitHandler(undefined))
    // main.ts answers `sluice help [command]` itself, from the same text.
    .helpCommand(false)
    .version(`sluice ${version}`, '--version', 'print the version')
    .option('--debug', 'print stack traces of errors');
  for (const name of Object.keys(COMMAND_HELP) as CommandName[]) {
    const h = COMMAND_HELP[name];
    const cmd = program
      .command(name)
      .description(h.summary)
      // Stray arguments are checked in main.ts, which knows what to say about them.
      .allowExcessArguments(true)
      .exitOverride(exitHandler(name));
    if ('argument' in h) cmd.argument(`[${h.argument.name}]`);
    if ('argumentCount' in h) for (let i = 1; i < h.argumentCount; i++) cmd.argument(`[arg${i}]`);
    const words = optionWords(h.options);
    for (const row of h.options) cmd.addOption(option(row, name, words));
    for (const [old, to] of Object.entries(ALIASES)) {
      if (h.options.some(([flags]) => parseFlags(flags).long === to)) cmd.addOption(option([`--${old} F`, ''], name, words).hideHelp());
    }
    cmd.action((...params: unknown[]) => {
      const self = params.at(-1) as Command;
      run({ command: name, values: valuesOf(self, program), args: self.args });
    });
  }
  return program;
}

export { CommanderError };
