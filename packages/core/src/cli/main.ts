/**
 * The `sluice` command line: parses argv, answers --help and --version from static text, and
 * imports a command's module only to run it. Loading a command pulls in the Parquet reader,
 * Arrow, RxJS or a backend; help and version need none of them, so they start fast.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { SluiceError } from '@sluice/ops/errors';
import { UsageError, type Values } from './args.js';
import { OPTIONS, USAGE, commandUsage, isCommand, type CommandName } from './usage.js';

/** Each command's module, imported when the command runs. */
const COMMANDS: Record<CommandName, (values: Values, positionals: string[]) => Promise<number>> = {
  demo: async (v) => (await import('./commands/demo.js')).cmdDemo(v),
  plan: async (v) => (await import('./commands/plan.js')).cmdPlan(v),
  gen: async (v) => (await import('./commands/gen.js')).cmdGen(v),
  fit: async (v) => (await import('./commands/fit.js')).cmdFit(v),
  run: async (v) => (await import('./commands/run.js')).cmdRun(v),
  bench: async (v) => (await import('./commands/bench.js')).cmdBench(v),
  reproduce: async (v, p) => (await import('./commands/reproduce.js')).cmdReproduce(v, p[1]),
  serve: async (v) => (await import('./commands/serve.js')).cmdServe(v),
  lookahead: async (v) => (await import('./commands/lookahead.js')).cmdLookahead(v),
  explain: async (v) => (await import('./commands/explain.js')).cmdExplain(v),
};

/** @sluice/core's version, from its package.json (two folders up from src/cli and dist/cli). */
function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** Runs the `sluice` command line; resolves to the process exit code. */
export async function main(argv: string[]): Promise<number> {
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true }) as { values: Values; positionals: string[] });
  } catch (e) {
    process.stderr.write(`sluice: ${(e as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  const cmd = positionals[0];
  if (values.version) {
    process.stdout.write(`sluice ${version()}\n`);
    return 0;
  }
  if (values.help || cmd === undefined || cmd === 'help') {
    // `sluice run --help` and `sluice help run` show run's page; anything else the overview.
    const about = cmd === 'help' ? positionals[1] : cmd;
    process.stdout.write((about !== undefined && isCommand(about) ? commandUsage(about) : USAGE) + '\n');
    return cmd === undefined && !values.help ? 2 : 0;
  }
  try {
    if (!isCommand(cmd)) throw new UsageError(`unknown command "${cmd}"`);
    return await COMMANDS[cmd](values, positionals);
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`sluice ${cmd}: ${e.message}\n(see sluice ${isCommand(cmd) ? `${cmd} ` : ''}--help)\n`);
      return 2;
    }
    if (values.debug) process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
    else if (e instanceof SluiceError) process.stderr.write(`sluice ${cmd}: ${e.message}\n`);
    else process.stderr.write(`sluice ${cmd}: unexpected error: ${(e as Error).message ?? String(e)} (rerun with --debug for details)\n`);
    return 1;
  }
}
