/**
 * The command line's static part: every command's options and help text. It imports only plain
 * data, so that `sluice --help` and `sluice <command> --help` answer without loading a command's
 * module. program.ts builds the parser from these same tables, so the help lists exactly the
 * options each command accepts.
 */
import { REPRODUCTIONS, formatBytes, formatCount, formatSeconds, reproductionBytes, reproductionSeconds, type ReproductionName } from './reproductions.js';

/**
 * One option: its flags as the help shows them and what it does. Flags are `--name`, optionally
 * after `-x, `, then the value's placeholder if it takes one; a placeholder ending in `...` takes
 * several values (`--input a.parquet b.parquet`, as a shell expands an unquoted glob).
 */
export type OptionRow = readonly [flags: string, what: string];

/** One command's help: its synopsis and summary (in the overview too), argument, options and notes. */
interface CommandHelp {
  /** The arguments after the command's name, in the overview. */
  readonly args: string;
  /** The arguments on the command's own page, where they differ (optional ones the overview leaves out). */
  readonly pageArgs?: string;
  readonly summary: string;
  /** The one positional argument the command takes, if any: its name and values, [value, what]. */
  readonly argument?: { readonly name: string; readonly values: readonly OptionRow[] };
  /** Positional arguments it takes (default: 1 with an `argument`, else 0). */
  readonly argumentCount?: number;
  /** Option lines for `sluice <command> --help`. */
  readonly options: readonly OptionRow[];
  /** Paragraphs after the options. */
  readonly notes?: readonly string[];
}

/**
 * Older spellings still accepted, each with the option it stands for. `gen` and `fit` took `--out`
 * where `run` took `--output`; all three now say `--output` (`-o`), and `--out` keeps working.
 */
export const ALIASES: Readonly<Record<string, string>> = { out: 'output' };

const PLAN: OptionRow = ['-p, --plan P', "plan JSON file (`sluice plan` prints a preset's)"];
const INPUT: OptionRow = [
  '-i, --input F...',
  'Parquet input: paths, globs (quoted or not), folders, http(s) URLs or s3:// objects, prefixes and globs; list several after one --input, or repeat it (default: the plan\'s "input")',
];
const BACKEND: OptionRow = ['-b, --backend B', "run on backend B instead of the plan's: cpu, webgpu, fpga-sim, smartssd-sim, auto or B1,B2"];
const WORKERS: OptionRow = ['-w, --workers N', 'worker threads of the backend (1 to 256)'];
const STATE: OptionRow = ['--state STATE', "vocabularies from `sluice fit`, for the plan's stateful ops"];
const QUIET: OptionRow = ['-q, --quiet', 'no progress on stderr'];
const NO_CRC: OptionRow = ['--no-verify-crc', 'skip checking page CRCs where the file has them (the plan\'s "verifyCrc": false; docs/reliability.md)'];
const JSON_OUT: OptionRow = ['--json', 'print the result as JSON'];
const PRESET_NAMES = 'rm1..rm5, piper-d1, rap-plan0..3';
const OLD_OUT = '(--out, its older spelling, also works)';

/** The reproduce page's notes: each target's default size, time and memory, from reproductions.ts. */
function reproduceNotes(): string[] {
  const lines = (Object.keys(REPRODUCTIONS) as ReproductionName[]).map((name) => {
    const r = REPRODUCTIONS[name];
    const rows = r.defaultRows;
    return `  ${name}: ${formatCount(rows)} rows by default: about ${formatSeconds(reproductionSeconds(r, rows))}, up to ${formatBytes(reproductionBytes(r, rows))}; each 100,000 rows more add about ${formatSeconds(r.msPerRow * 100)} and ${formatBytes(r.bytesPerRow * 1e5)}`;
  });
  return [
    'Default sizes and cost (measured on a 2-core VM; docs/cli.md#reproduce):',
    ...lines,
    'A --rows whose estimated memory exceeds what this machine has available is refused before anything runs.',
    'Progress goes to stderr, one line per step, with the time so far.',
  ];
}

/** The commands in the order `sluice --help` lists them. */
export const COMMAND_HELP = {
  demo: {
    args: '',
    pageArgs: '[--rows N] [--seed S] [--backend B]',
    summary: 'generate a small RM1 data set (cached) and stream it through the pipeline (cpu backend unless --backend)',
    // The default row count is gen/demo.ts's DEMO_ROWS (test/cli.test.ts checks that they agree).
    options: [['--rows N', 'rows of the demo data set (default 200,000)'], ['--seed S', 'generator seed (default 42)'], BACKEND, QUIET],
  },
  plan: {
    args: '--preset NAME',
    summary: `print the default plan for a preset (${PRESET_NAMES})`,
    options: [['--preset NAME', `the preset: ${PRESET_NAMES}`]],
  },
  gen: {
    args: '--preset NAME --rows N --output F [--seed S] [--row-group-size R] [--ids MODE]',
    summary: 'write seeded synthetic Parquet data',
    options: [
      ['--preset NAME', `the data set's shape: ${PRESET_NAMES}`],
      ['--rows N', 'rows to write'],
      ['-o, --output F', `the Parquet file to write (renamed into place when complete) ${OLD_OUT}`],
      ['--seed S', 'generator seed (default 42); the same seed writes the same data'],
      ['--row-group-size R', 'rows per Parquet row group (default 100,000)'],
      ['--ids MODE', "hex ids: skewed (default) or realistic (Criteo's spread on columns of 1M+ ids; docs/cli.md#gen)"],
      QUIET,
    ],
  },
  fit: {
    args: '--plan P --input F --output STATE',
    summary: 'build vocabularies for stateful ops',
    options: [PLAN, INPUT, ['-o, --output STATE', `the JSON state file to write (for --state of run, bench, serve) ${OLD_OUT}`], QUIET],
  },
  run: {
    args: '--plan P --input F --output O.parquet [--backend B] [--workers N] [--state STATE]',
    summary: 'preprocess and write one column per feature, in input order',
    options: [
      PLAN,
      INPUT,
      ['-o, --output O.parquet', 'the Parquet file to write (renamed into place when complete; never one of the inputs)'],
      BACKEND,
      WORKERS,
      STATE,
      NO_CRC,
      QUIET,
    ],
  },
  bench: {
    args: '--plan P --input F [--backend B] [--workers N] [--state STATE] [--json] [--report R.html]',
    summary: 'run to ready batches and report rows/s, stage times and peak RSS',
    options: [
      PLAN,
      INPUT,
      BACKEND,
      WORKERS,
      STATE,
      NO_CRC,
      JSON_OUT,
      ['--report R.html', 'also write the result as a self-contained HTML report with plots (docs/dashboard.md)'],
      QUIET,
    ],
  },
  reproduce: {
    args: 'piper-table4|presto [--rows N] [--json]',
    summary: "rerun a paper's table on the simulated backends (fpga-sim, smartssd-sim)",
    argument: {
      name: 'target',
      values: (Object.keys(REPRODUCTIONS) as ReproductionName[]).map((name): OptionRow => [
        name,
        `${REPRODUCTIONS[name].what} (needs @sluice/backend-${REPRODUCTIONS[name].backend})`,
      ]),
    },
    options: [['--rows N', 'rows of synthetic data to generate and run (defaults below)'], JSON_OUT, QUIET],
    notes: reproduceNotes(),
  },
  serve: {
    args: '--plan P --input F --port N [--host H] [--token T] [--backend B] [--workers N] [--state STATE]',
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
      NO_CRC,
    ],
  },
  worker: {
    args: '--redis URL --job NAME [--port N] [--host H] [--advertise URL] [--token T] [--backend B]',
    summary: 'join a cluster job: make its splits, serve their batches over HTTP as serve does (docs/cluster.md)',
    options: [
      ['--redis URL', 'Redis: redis://[:password@]host:port, or rediss:// for TLS (default: $SLUICE_REDIS)'],
      ['--job NAME', 'the job to work on (sluice job submit NAME first)'],
      ['--port N', 'TCP port (default 0: a free one)'],
      ['--host H', 'address to listen on (default 127.0.0.1)'],
      ['--advertise URL', 'the URL other workers redirect trainers to (default: the listening address)'],
      ['--token T', 'bearer token clients must send (default: $SLUICE_TOKEN; none if unset)'],
      ['--metrics-auth token|open', '/metrics needs the token too (token, the default) or is open to anyone who reaches the port'],
      ['--lease-ms MS', 'a lease not renewed for this long is taken by another worker (default 10000)'],
      ['--max-held N', 'made batches held for delivery before the worker stops leasing (default 64)'],
      ['--wait-ms MS', 'how long a request waits for a batch nobody has made yet before a 503 (default 30000)'],
      ['--max-attempts N', 'starts of a split before it goes to the dead-letter stream (default 3)'],
      ['--lease-splits N', 'consecutive splits taken at a time, made by one pipeline run (default 4)'],
      ['--decoders N', 'Parquet decode threads per run'],
      BACKEND,
    ],
  },
  job: {
    args: 'submit|status NAME --redis URL [--plan P --input F [--seed S] [--epochs E] [--batch-size B] [--split-batches K]] [--json]',
    summary: 'submit a cluster job once (idempotent), or show its splits, workers and throughput',
    argumentCount: 2,
    argument: {
      name: 'action',
      values: [
        ['submit NAME', 'put the job (plan, inputs, seed, epochs, batch size) and its splits into Redis; the same job again changes nothing'],
        ['status NAME', 'splits done / leased / pending / dead, the workers and their rows/s (--json: the /v1/cluster object)'],
      ],
    },
    options: [
      ['--redis URL', 'Redis: redis://[:password@]host:port, or rediss:// for TLS (default: $SLUICE_REDIS)'],
      PLAN,
      INPUT,
      ['--seed S', "shuffle seed (shuffles row-group order, and rows within the plan's buffer)"],
      ['--epochs E', "epochs (default: the plan's)"],
      ['--batch-size B', "rows per batch (default: the plan's)"],
      ['--split-batches K', 'most batches in one split (default 16)'],
      STATE,
      JSON_OUT,
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
      ['-i, --input F...', "data to take column statistics and the run's length from (optional)"],
      ['-b, --backend B', 'the backend to explain for; auto or B1,B2 adds the placement over those backends'],
      ['--target-rows-per-sec R', 'also say how many units of each backend reach R rows/s'],
      JSON_OUT,
    ],
  },
} as const satisfies Record<string, CommandHelp>;

export type CommandName = keyof typeof COMMAND_HELP;

export const isCommand = (name: string): name is CommandName => Object.hasOwn(COMMAND_HELP, name);

/** The options every command takes besides its own. */
export const COMMON_OPTIONS: readonly OptionRow[] = [
  ['--debug', 'print stack traces of errors'],
  ['-h, --help', 'this help'],
];

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

common options: --debug (stack traces), --help, --version; \`sluice <command> --help\` shows a command's options
--input takes paths, globs, folders, http(s) URLs or s3:// objects, prefixes and globs: list several after one --input, or repeat it.`;

/** Rows as an aligned two-column block; long-only flags line up with the long name of "-x, --name". */
function table(rows: readonly OptionRow[]): string[] {
  const flags = rows.map(([f]) => (f.startsWith('--') ? `    ${f}` : f));
  const width = Math.max(...flags.map((f) => f.length)) + 2;
  return rows.map(([, what], i) => `  ${flags[i]!.padEnd(width)}${what}`);
}

/** `sluice <command> --help`: the command's synopsis, summary, argument, options and notes. */
export function commandUsage(name: CommandName): string {
  const h: CommandHelp = COMMAND_HELP[name];
  return [
    `usage: sluice ${`${name} ${h.pageArgs ?? h.args}`.trimEnd()}`,
    '',
    `${h.summary[0]!.toUpperCase()}${h.summary.slice(1)}.`,
    ...(h.argument ? ['', `${h.argument.name}:`, ...table(h.argument.values)] : []),
    '',
    'options:',
    ...table([...h.options, ...COMMON_OPTIONS]),
    ...(h.notes ? ['', ...h.notes] : []),
  ].join('\n');
}
