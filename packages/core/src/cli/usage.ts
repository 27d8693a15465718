/**
 * The command line's static part: the option table and every help text. It imports nothing, so
 * that `sluice --help` and `sluice <command> --help` answer without loading a command's module.
 */
import type { ParseArgsConfig } from 'node:util';

/**
 * Every option of every command. One table for all commands: each command reads the options it
 * needs and ignores the others, and a name in no command is an error for all.
 */
export const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
  debug: { type: 'boolean' },
  json: { type: 'boolean' },
  preset: { type: 'string' },
  rows: { type: 'string' },
  out: { type: 'string' },
  output: { type: 'string', short: 'o' },
  seed: { type: 'string' },
  'row-group-size': { type: 'string' },
  plan: { type: 'string', short: 'p' },
  input: { type: 'string', short: 'i', multiple: true },
  backend: { type: 'string', short: 'b' },
  workers: { type: 'string', short: 'w' },
  state: { type: 'string' },
  quiet: { type: 'boolean', short: 'q' },
  port: { type: 'string' },
  host: { type: 'string' },
  token: { type: 'string' },
  // serve
  'metrics-auth': { type: 'string' },
  'spill-dir': { type: 'string' },
  'spill-size': { type: 'string' },
  'max-connections': { type: 'string' },
  'send-timeout': { type: 'string' },
  // lookahead
  columns: { type: 'string' },
  'batch-size': { type: 'string' },
  window: { type: 'string' },
  'cache-budget': { type: 'string' },
  'bytes-per-id': { type: 'string' },
  // explain
  'target-rows-per-sec': { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

/** One command's help: its synopsis and summary (in the overview too) and its options. */
interface CommandHelp {
  /** The arguments after the command's name, in the overview. */
  readonly args: string;
  /** The arguments on the command's own page, where they differ (optional ones the overview leaves out). */
  readonly pageArgs?: string;
  readonly summary: string;
  /** Option lines for `sluice <command> --help`: [flags, what it does]. */
  readonly options: ReadonlyArray<readonly [string, string]>;
}

const PLAN: readonly [string, string] = ['-p, --plan P', "plan JSON file (`sluice plan` prints a preset's)"];
const INPUT: readonly [string, string] = ['-i, --input F', 'Parquet input: a path, glob or http(s) URL; repeat it for several'];
const BACKEND: readonly [string, string] = ['-b, --backend B', "run on backend B instead of the plan's: cpu, webgpu, fpga-sim, smartssd-sim, auto or B1,B2"];
const WORKERS: readonly [string, string] = ['-w, --workers N', 'worker threads of the backend'];
const STATE: readonly [string, string] = ['--state STATE', "vocabularies from `sluice fit`, for the plan's stateful ops"];
const QUIET: readonly [string, string] = ['-q, --quiet', 'no progress line on stderr'];
const JSON_OUT: readonly [string, string] = ['--json', 'print the result as JSON'];
const PRESET_NAMES = 'rm1..rm5, piper-d1, rap-plan0..3';

/** The commands in the order `sluice --help` lists them. */
export const COMMAND_HELP = {
  demo: {
    args: '',
    pageArgs: '[--rows N] [--seed S] [--backend B]',
    summary: 'generate a small RM1 data set (cached) and stream it through the CPU pipeline',
    // The default row count is gen/demo.ts's DEMO_ROWS (test/cli.test.ts checks that they agree).
    options: [['--rows N', 'rows of the demo data set (default 200,000)'], ['--seed S', 'generator seed (default 42)'], BACKEND, QUIET],
  },
  plan: {
    args: '--preset NAME',
    summary: `print the default plan for a preset (${PRESET_NAMES})`,
    options: [['--preset NAME', `the preset: ${PRESET_NAMES}`]],
  },
  gen: {
    args: '--preset NAME --rows N --out F [--seed S] [--row-group-size R]',
    summary: 'write seeded synthetic Parquet data',
    options: [
      ['--preset NAME', `the data set's shape: ${PRESET_NAMES}`],
      ['--rows N', 'rows to write'],
      ['--out F', 'the Parquet file to write'],
      ['--seed S', 'generator seed (default 42); the same seed writes the same data'],
      ['--row-group-size R', 'rows per Parquet row group (default 100,000)'],
      QUIET,
    ],
  },
  fit: {
    args: '--plan P --input F --out STATE',
    summary: 'build vocabularies for stateful ops',
    options: [PLAN, INPUT, ['--out STATE', 'the JSON state file to write (for --state of run, bench, serve)'], QUIET],
  },
  run: {
    args: '--plan P --input F --output O.parquet [--backend B] [--workers N] [--state STATE]',
    summary: 'preprocess and write one column per feature, in input order',
    options: [PLAN, INPUT, ['-o, --output O.parquet', 'the Parquet file to write (renamed into place when complete)'], BACKEND, WORKERS, STATE, QUIET],
  },
  bench: {
    args: '--plan P --input F [--backend B] [--workers N] [--state STATE] [--json]',
    summary: 'run to ready batches and report rows/s, stage times and peak RSS',
    options: [PLAN, INPUT, BACKEND, WORKERS, STATE, JSON_OUT, QUIET],
  },
  reproduce: {
    args: 'piper-table4|presto [--rows N] [--json]',
    summary: "rerun a paper's table on the simulated backends (fpga-sim, smartssd-sim)",
    options: [
      ['piper-table4', 'PIPER Table 4 on fpga-sim (needs @sluice/backend-fpga-sim)'],
      ['presto', "PreSto's CPU-vs-SmartSSD figures on smartssd-sim (needs @sluice/backend-smartssd-sim)"],
      ['--rows N', "rows of synthetic data to run (default: the reproduction's own)"],
      JSON_OUT,
    ],
  },
  serve: {
    args: '--plan P --input F --port N [--host H] [--token T] [--backend B] [--state STATE]',
    summary: 'serve batches over HTTP: GET /v1/batches/{seq}, /v1/info, /healthz, /metrics',
    options: [
      PLAN,
      INPUT,
      ['--port N', 'TCP port (0 picks a free one)'],
      ['--host H', 'address to listen on (default 127.0.0.1)'],
      ['--token T', 'bearer token clients must send (default: $SLUICE_TOKEN; none if unset)'],
      ['--metrics-auth token|open', '/metrics needs the token too (token, the default) or is open to anyone who reaches the port'],
      ['--spill-dir DIR', 'folder of the disk spill that keeps made batches (default: the OS temporary folder)'],
      ['--spill-size SIZE', 'disk the spill may take, such as 4GiB (the default) or 500MB; 0 keeps batches in memory only'],
      ['--max-connections N', 'connections at once (default 256); at the limit the longest-idle one makes room; 0: no limit'],
      ['--send-timeout S', 'seconds a response may take to be read (default 60); a slower reader is cut off; 0: no limit'],
      BACKEND,
      WORKERS,
      STATE,
    ],
  },
  lookahead: {
    args: '--input F --columns C1,...,Cn --batch-size B --window L [--cache-budget N|SIZE [--bytes-per-id N]] [--json]',
    summary: "BAGPIPE cache hints over those columns' ids (hex2int on strings): samples/s, cache size, hit ratio",
    options: [
      INPUT,
      ['--columns C1,...,Cn', 'the id columns (one embedding table each): integers or hex strings, scalars or lists'],
      ['--batch-size B', 'rows per batch'],
      ['--window L', 'lookahead window in batches (at most L with --cache-budget)'],
      ['--cache-budget N|SIZE', 'cache limit in ids, or in bytes such as 512MiB or 2GB; chooses the window'],
      ['--bytes-per-id N', 'bytes one cached id takes, for a budget in bytes (e.g. 4 x embedding dim)'],
      JSON_OUT,
      QUIET,
    ],
  },
  explain: {
    args: '--plan P [--input F] [--backend B|auto|B1,B2] [--target-rows-per-sec R] [--json]',
    summary: "the optimizer's work: ops before/after, stages, kernels per batch, placement",
    options: [
      PLAN,
      ['-i, --input F', "data to take column statistics and the run's length from (optional)"],
      ['-b, --backend B', 'the backend to explain for; auto or B1,B2 adds the placement over those backends'],
      ['--target-rows-per-sec R', 'also say how many units of each backend reach R rows/s'],
      JSON_OUT,
    ],
  },
} as const satisfies Record<string, CommandHelp>;

export type CommandName = keyof typeof COMMAND_HELP;

export const isCommand = (name: string): name is CommandName => Object.hasOwn(COMMAND_HELP, name);

/** A command and its arguments as one line, the name padded so that short commands' flags line up. */
const synopsis = (name: CommandName): string => `${name.padEnd(5)} ${COMMAND_HELP[name].args}`.trimEnd();

/** Column where the overview's summaries start. */
const SUMMARY_COLUMN = 41;

/** `sluice --help`: every command with its synopsis and summary. */
export const USAGE = `sluice — stream preprocessed training data from Parquet

usage: sluice <command> [options]

commands:
${(Object.keys(COMMAND_HELP) as CommandName[])
  .map((name) => {
    const head = `  ${synopsis(name)}`;
    const summary = COMMAND_HELP[name].summary;
    return head.length < SUMMARY_COLUMN - 1 ? `${head.padEnd(SUMMARY_COLUMN)}${summary}` : `${head}\n${' '.repeat(SUMMARY_COLUMN)}${summary}`;
  })
  .join('\n')}

common options: --debug (stack traces), --help, --version
--input takes a path, glob or http(s) URL; repeat it for several.`;

/** `sluice <command> --help`: the command's synopsis, summary and options. */
export function commandUsage(name: CommandName): string {
  const h: CommandHelp = COMMAND_HELP[name];
  const rows: Array<readonly [string, string]> = [...h.options, ['--debug', 'print stack traces of errors'], ['-h, --help', 'this help']];
  // Long-only flags line up with the long name of "-x, --name".
  const flags = rows.map(([f]) => (f.startsWith('--') ? `    ${f}` : f));
  const width = Math.max(...flags.map((f) => f.length)) + 2;
  return [
    `usage: sluice ${`${name} ${h.pageArgs ?? h.args}`.trimEnd()}`,
    '',
    `${h.summary[0]!.toUpperCase()}${h.summary.slice(1)}.`,
    '',
    'options:',
    ...rows.map(([, what], i) => `  ${flags[i]!.padEnd(width)}${what}`),
  ].join('\n');
}
