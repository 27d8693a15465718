/**
 * The `sluice` command line: parses argv (program.ts), answers --help and --version from static
 * text, and imports a command's module only to run it. Loading a command pulls in the Parquet
 * reader, Arrow, RxJS or a backend; help and version need none of them, so they start fast.
 */
import { readFileSync } from 'node:fs';
import { SluiceError } from '@sluice/ops/errors';
import { MAX_WORKERS, UsageError, positiveInt, type Values } from './args.js';
import { CommanderError, ParseError, buildProgram, type Invocation } from './program.js';
import { COMMAND_HELP, USAGE, commandUsage, isCommand, type CommandName } from './usage.js';

/** Each command's module, imported when the command runs. */
const COMMANDS: Record<CommandName, (values: Values, args: readonly string[]) => Promise<number>> = {
  demo: async (v) => (await import('./commands/demo.js')).cmdDemo(v),
  plan: async (v) => (await import('./commands/plan.js')).cmdPlan(v),
  gen: async (v) => (await import('./commands/gen.js')).cmdGen(v),
  fit: async (v) => (await import('./commands/fit.js')).cmdFit(v),
  run: async (v) => (await import('./commands/run.js')).cmdRun(v),
  bench: async (v) => (await import('./commands/bench.js')).cmdBench(v),
  reproduce: async (v, a) => (await import('./commands/reproduce.js')).cmdReproduce(v, a[0]),
  serve: async (v) => (await import('./commands/serve.js')).cmdServe(v),
  lookahead: async (v) => (await import('./commands/lookahead.js')).cmdLookahead(v),
  explain: async (v) => (await import('./commands/explain.js')).cmdExplain(v),
  worker: async (v) => (await import('./commands/worker.js')).cmdWorker(v),
  job: async (v, a) => (await import('./commands/job.js')).cmdJob(v, a),
};

/** @sluice/core's version, from its package.json (two folders up from src/cli and dist/cli). */
function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** Prints a usage error (one line, then where help is) and returns its exit code, 2. */
function usageError(command: CommandName | undefined, message: string): number {
  process.stderr.write(`sluice${command ? ` ${command}` : ''}: ${message}\n(see sluice ${command ? `${command} ` : ''}--help)\n`);
  return 2;
}

/**
 * Positional arguments beyond what the command takes. Every one is refused, never skipped: the
 * usual cause is `--input=data/*.parquet` or a path after another option, and running on part
 * of the files would be a silent error.
 */
function strayArguments(call: Invocation): string | null {
  const h = COMMAND_HELP[call.command] as { argument?: unknown; argumentCount?: number };
  const extra = call.args.slice(h.argumentCount ?? (h.argument !== undefined ? 1 : 0));
  if (extra.length === 0) return null;
  const shown = extra.slice(0, 3).map((a) => `"${a}"`);
  const list = extra.length > 3 ? `${shown.join(', ')} and ${extra.length - 3} more` : shown.join(', ');
  const takesInput = (COMMAND_HELP[call.command].options as ReadonlyArray<readonly [string, string]>).some(([f]) => f.includes('--input'));
  const hint = takesInput
    ? ': to read several files, list them all right after --input (--input a.parquet b.parquet), repeat --input, or quote a glob (--input "data/*.parquet")'
    : '';
  return `unexpected argument${extra.length > 1 ? 's' : ''} ${list}${hint}`;
}

/** Runs the `sluice` command line; resolves to the process exit code. */
export async function main(argv: string[]): Promise<number> {
  if (argv.length === 0) {
    process.stdout.write(`${USAGE}\n`);
    return 2;
  }
  if (argv[0] === 'help') {
    const about = argv[1];
    if (about === undefined || isCommand(about)) {
      process.stdout.write(`${about === undefined ? USAGE : commandUsage(about)}\n`);
      return 0;
    }
    // Not a command: the parser names it, with the nearest command's name.
    argv = [about];
  }
  let call: Invocation | undefined;
  try {
    await buildProgram(version(), (c) => (call = c)).parseAsync(argv, { from: 'user' });
  } catch (e) {
    // Help and --version end the parse once printed: exit 0, or 2 when help stood in for a missing command.
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
    if (e instanceof ParseError) return usageError(e.command, e.message);
    throw e;
  }
  if (call === undefined) return 0;
  const { command, values, args } = call;
  const stray = strayArguments(call);
  if (stray !== null) return usageError(command, stray);
  try {
    // Decode threads start while this thread loads the command's modules (the pipeline, RxJS,
    // Arrow): a pipeline has as many decoders as workers when the reader computes every feature.
    if (command === 'run' || command === 'bench')
      (await import('../reader/decoder-pool.js')).prestartDecoders(positiveInt(values, 'workers', MAX_WORKERS) ?? 1);
    return await COMMANDS[command](values, args);
  } catch (e) {
    if (e instanceof UsageError) return usageError(command, e.message);
    if (values.debug) process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
    else if (e instanceof SluiceError) process.stderr.write(`sluice ${command}: ${e.message}\n`);
    else process.stderr.write(`sluice ${command}: unexpected error: ${(e as Error).message ?? String(e)} (rerun with --debug for details)\n`);
    return 1;
  }
}
