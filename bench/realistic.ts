/**
 * The realistic benchmark (issue 31): shuffled and unshuffled RM1 and RM5 reads of files written
 * by three writers — `sluice gen`, DuckDB, and an Arrow writer whose chunks mix dictionary and
 * PLAIN pages — beside DuckDB's closest SQL and Polars' closest query, each as a whole process
 * and warm in a process of its own, interleaved in one run. See bench/README.md, "realistic.ts".
 *
 *   npx tsx bench/realistic.ts [--rows 1000000] [--rm5-rows 100000] [--reps 3] [--warmup 1]
 *                              [--only rm1|rm5] [--writers sluice-gen,duckdb,arrow] [--seed 42]
 *                              [--no-install] [--quick] [--json]
 *   --quick: a smoke test on tiny files (20,000 RM1 rows, 2,000 RM5 rows, one rep, no warm-up).
 *   --no-install: use Polars only where it is already installed (bench/polars.ts), else skip it.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import type { ColumnType } from '@sluice/core/internal';
import { getPreset, type IdCardinality } from '@sluice/core/gen';
import { pipeline, type PlanSpec } from '@sluice/core';
import { planSql } from './duckdb-sql.js';
import {
  cachedDataset,
  childContenders,
  emitJson,
  fmtInt,
  fmtMB,
  fmtRate,
  fmtRatio,
  fmtSeconds,
  intArg,
  interleaved,
  log,
  machine,
  printTable,
  serveContenders,
  type Contender,
  type Measurement,
} from './lib.js';
import { ensurePolars, loadPolars, POLARS_VERSION, polarsQuery } from './polars.js';
import { ARROW_DICT_PAGE_LIMIT, arrowRewrite, duckdbCopy, encodingCensus, fmtCensus, WRITER_NOTES, type EncodingCensus, type WriterName } from './writers.js';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string' },
    'rm5-rows': { type: 'string' },
    reps: { type: 'string' },
    warmup: { type: 'string' },
    only: { type: 'string' },
    writers: { type: 'string' },
    seed: { type: 'string' },
    'no-install': { type: 'boolean', default: false },
    quick: { type: 'boolean', default: false },
    child: { type: 'string' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});
if (args.help) {
  log(
    'usage: npx tsx bench/realistic.ts [--rows N (RM1, default 1000000)] [--rm5-rows N (default 100000)] [--reps 3] [--warmup 1] [--only rm1|rm5] [--writers sluice-gen,duckdb,arrow] [--seed 42] [--no-install] [--quick] [--json]',
  );
  process.exit(0);
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SCRIPT = fileURLToPath(import.meta.url);
const BIN = join(ROOT, 'packages', 'core', 'bin', 'sluice.js');
const PEER = join(ROOT, 'bench', 'peer-run.mjs');
/** How the parent tells an in-process Sluice child what to run (JSON: preset, path, shuffled). */
const CHILD_ENV = 'SLUICE_BENCH_REALISTIC_CHILD';
/** The issue's shuffle: seed 42, a 100,000-row buffer. */
const SHUFFLE = { seed: 42, bufferRows: 100_000 } as const;
/** 2 backend workers (and so 2 decoders) for Sluice, 2 threads for DuckDB and Polars. */
const THREADS = 2;
const SETTLE_MS = 300;

const QUICK = args.quick;
const REPS = intArg(args.reps, QUICK ? 1 : 3, 'reps');
const WARMUP = intArg(args.warmup, QUICK ? 0 : 1, 'warmup', 0);
const SEED = intArg(args.seed, 42, 'seed');
const ALL_WRITERS: WriterName[] = ['sluice-gen', 'duckdb', 'arrow'];
const WRITERS = (args.writers?.split(',') ?? ALL_WRITERS) as WriterName[];
for (const w of WRITERS) {
  if (!ALL_WRITERS.includes(w)) {
    log(`--writers takes ${ALL_WRITERS.join(', ')}; got ${w}`);
    process.exit(2);
  }
}
if (args.only !== undefined && !['rm1', 'rm5'].includes(args.only)) {
  log('--only must be rm1 or rm5');
  process.exit(2);
}

interface Workload {
  readonly preset: 'rm1' | 'rm5';
  readonly rows: number;
  /** Row groups of `sluice gen`'s file and the Arrow writer's (DuckDB's are its own 122,880). */
  readonly rowGroupSize: number;
  /** `sluice gen --ids` of the generated file. */
  readonly ids: IdCardinality;
}
const WORKLOADS: Workload[] = (
  [
    // Realistic ids: Criteo's large columns have more distinct values per row group than DuckDB's
    // dictionary limit, so DuckDB writes them PLAIN as it does real files (issue 31).
    { preset: 'rm1', rows: intArg(args.rows, QUICK ? 20_000 : 1_000_000, 'rows'), rowGroupSize: QUICK ? 5_000 : 100_000, ids: 'realistic' },
    // RM5 rows are ~2.7 KB: row groups of 10,000 keep several in the file, so decoders can overlap.
    // Its id lists have no hex columns for --ids to shape, and DuckDB already writes them PLAIN.
    { preset: 'rm5', rows: intArg(args['rm5-rows'], QUICK ? 2_000 : 100_000, 'rm5-rows'), rowGroupSize: QUICK ? 500 : 10_000, ids: 'skewed' },
  ] as const
).filter((w) => args.only === undefined || w.preset === args.only);

/** The preset's default plan on the cpu backend, shuffled as the issue asks or not at all. */
function sluicePlan(preset: string, shuffled: boolean): PlanSpec {
  return { ...getPreset(preset).defaultPlan(), backend: { name: 'cpu', workers: THREADS }, shuffle: shuffled ? { ...SHUFFLE } : false };
}

// ---------------------------------------------------------------------------------------------
// In-process Sluice: a child process serving runs of one pipeline (lib.ts childContenders)

if (args.child !== undefined) {
  const { preset, path, shuffled } = JSON.parse(process.env[CHILD_ENV] ?? '{}') as { preset: string; path: string; shuffled: boolean };
  const plan = sluicePlan(preset, shuffled);
  const c: Contender = {
    name: args.child,
    run: async () => {
      const p = pipeline(plan, { input: path });
      let rows = 0;
      for await (const b of p) {
        rows += b.rows;
        // A training loop's step is done with the batch: its memory may hold a later one.
        b.release?.();
      }
      return { rows };
    },
  };
  await serveContenders([c]);
  process.exit(0);
}

// ---------------------------------------------------------------------------------------------
// Whole processes

/** Runs `node args…` to its exit and returns its wall time (spawn to exit) and its stdout. */
function wholeProcess(nodeArgs: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<{ seconds: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, nodeArgs, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const seconds = (performance.now() - t0) / 1000;
      if (code !== 0) reject(new Error(`node ${nodeArgs.join(' ')} exited with ${code ?? signal}:\n${err.trim().slice(-2000)}`));
      else resolve({ seconds, stdout: out });
    });
  });
}

/** The rows a whole-process run reports: `sluice bench --json` prints a document, peer-run.mjs one line. */
function rowsOf(stdout: string): number {
  const doc = JSON.parse(stdout.trim().startsWith('{\n') ? stdout : (stdout.trim().split('\n').pop() ?? '')) as { rows: number };
  return doc.rows;
}

function wholeContender(name: string, nodeArgs: readonly string[], env?: NodeJS.ProcessEnv): Contender {
  return {
    name,
    run: async () => {
      const { seconds, stdout } = await wholeProcess(nodeArgs, env);
      return { rows: rowsOf(stdout), seconds };
    },
  };
}

// ---------------------------------------------------------------------------------------------
// One file

const CONTENDERS = [
  'sluice shuffled',
  'sluice unshuffled',
  'duckdb',
  'polars',
  'sluice shuffled, in-process',
  'sluice unshuffled, in-process',
  'duckdb, in-process',
  'polars, in-process',
] as const;
type ContenderName = (typeof CONTENDERS)[number];

interface FileResult {
  writer: WriterName;
  path: string;
  bytes: number;
  rowGroups: number;
  census: EncodingCensus;
  /** Polars' and DuckDB's outputs compared column by column (before hashing), or why not. */
  peersAgree: string;
  measurements: Partial<Record<ContenderName, Measurement>>;
  ratios: Record<string, { value: number; target?: number; rounds: number[] }>;
}

interface DatasetResult {
  preset: string;
  rows: number;
  features: number;
  files: FileResult[];
}

type PolarsState = { dir: string } | { skipped: string };

/** Compares the peers' column sums and counts (relative tolerance 1e-6: float sums in another order). */
function comparePeers(duck: Record<string, { sum: number; count: number }>, polars: Record<string, { sum: number; count: number }>): string[] {
  const bad: string[] = [];
  for (const [c, d] of Object.entries(duck)) {
    const p = polars[c];
    if (p === undefined) bad.push(`${c}: missing from Polars' output`);
    else if (p.count !== d.count || Math.abs(p.sum - d.sum) > 1e-6 * Math.max(1, Math.abs(d.sum)))
      bad.push(`${c}: DuckDB sum ${d.sum} over ${d.count} values, Polars ${p.sum} over ${p.count}`);
  }
  return bad;
}

async function runFile(w: Workload, writer: WriterName, path: string, polars: PolarsState, tmp: string): Promise<FileResult & { features: number }> {
  const census = encodingCensus(path);
  const planSpec = sluicePlan(w.preset, false);
  const info = await pipeline(planSpec, { input: path }).info();
  const types = new Map<string, ColumnType>(info.plan.columns.map((c) => [c, info.dataset.schema.get(c)!]));
  log(`\n${w.preset} × ${writer}: ${fmtInt(w.rows)} rows (${w.ids} ids), ${info.dataset.units.length} row groups, ${fmtCensus(census)}`);

  const tag = `${w.preset}-${writer}`;
  const write = (name: string, doc: unknown): string => {
    const f = join(tmp, `${tag}-${name}.json`);
    writeFileSync(f, JSON.stringify(doc));
    return f;
  };
  const plans = { shuffled: write('plan-shuffled', sluicePlan(w.preset, true)), unshuffled: write('plan-unshuffled', planSpec) };
  const duckJob = (hash: boolean): string => {
    const sql = planSql(planSpec, path, types, 'bsearch', { hash });
    return write(`duckdb${hash ? '' : '-nohash'}`, {
      engine: 'duckdb',
      name: 'duckdb, in-process',
      file: path,
      threads: THREADS,
      setup: sql.setup,
      select: sql.select,
    });
  };
  const polarsEnv = { ...process.env, POLARS_MAX_THREADS: String(THREADS) };
  const polarsJob = (dir: string, hash: boolean): string =>
    write(`polars${hash ? '' : '-nohash'}`, {
      engine: 'polars',
      name: 'polars, in-process',
      dir,
      file: path,
      query: polarsQuery(loadPolars(dir), planSpec, types, { hash }),
    });

  // The peers must compute the same thing: their outputs before hashing (their hash functions
  // differ from each other and from sigridHash), column by column.
  let peersAgree = 'not compared (Polars skipped)';
  if ('dir' in polars) {
    const sums = async (job: string, env?: NodeJS.ProcessEnv) =>
      (
        JSON.parse((await wholeProcess([PEER, '--checksum', job], env)).stdout.trim().split('\n').pop()!) as {
          checksums: Record<string, { sum: number; count: number }>;
        }
      ).checksums;
    const bad = comparePeers(await sums(duckJob(false)), await sums(polarsJob(polars.dir, false), polarsEnv));
    if (bad.length > 0) throw new Error(`Polars and DuckDB disagree on ${w.preset} × ${writer}:\n  ${bad.slice(0, 10).join('\n  ')}`);
    peersAgree = `yes: ${info.plan.columns.length} input columns, every output's sum and count equal (hashes left out)`;
  }

  const sluiceArgs = (plan: string): string[] => [BIN, 'bench', '--plan', plan, '--input', path, '--workers', String(THREADS), '--json', '--quiet'];
  const whole: Array<[ContenderName, Contender | null]> = [
    ['sluice shuffled', wholeContender('sluice shuffled', sluiceArgs(plans.shuffled))],
    ['sluice unshuffled', wholeContender('sluice unshuffled', sluiceArgs(plans.unshuffled))],
    ['duckdb', wholeContender('duckdb', [PEER, duckJob(true)])],
    ['polars', 'dir' in polars ? wholeContender('polars', [PEER, polarsJob(polars.dir, true)], polarsEnv) : null],
  ];
  const kids: Array<{ close: () => Promise<void> }> = [];
  const kid = (name: ContenderName, script: string, kidArgs: string[], opts: Parameters<typeof childContenders>[3]): Contender => {
    const k = childContenders([name], script, kidArgs, opts);
    kids.push(k);
    return k.contenders[0]!;
  };
  // Parked decode threads must outlive the other contenders' runs in between (as in e2e.ts).
  const sluiceEnv = (shuffled: boolean): NodeJS.ProcessEnv => ({
    ...process.env,
    SLUICE_DECODER_IDLE_MS: '600000',
    [CHILD_ENV]: JSON.stringify({ preset: w.preset, path, shuffled }),
  });
  const inProcess: Array<[ContenderName, () => Contender | null]> = [
    ['sluice shuffled, in-process', () => kid('sluice shuffled, in-process', SCRIPT, ['--child', 'sluice shuffled, in-process'], { env: sluiceEnv(true) })],
    [
      'sluice unshuffled, in-process',
      () => kid('sluice unshuffled, in-process', SCRIPT, ['--child', 'sluice unshuffled, in-process'], { env: sluiceEnv(false) }),
    ],
    ['duckdb, in-process', () => kid('duckdb, in-process', PEER, ['--serve', duckJob(true)], { nodeArgs: ['--expose-gc'] })],
    [
      'polars, in-process',
      () => ('dir' in polars ? kid('polars, in-process', PEER, ['--serve', polarsJob(polars.dir, true)], { nodeArgs: ['--expose-gc'], env: polarsEnv }) : null),
    ],
  ];
  // Two phases, each interleaved: the whole processes first, while no in-process child is alive,
  // then the in-process contenders. The children hold 2-3 GB each after an RM5 run, and with them
  // alive every fresh process (Sluice's and DuckDB's alike) ran 40-70% slower (bench/README.md,
  // "The decoders place a window's ids"). Each ratio compares runs of one phase.
  const named: Array<[ContenderName, Contender]> = [];
  for (const [n, c] of whole) if (c !== null) named.push([n, c]);
  const ms: Measurement[] = await interleaved(
    named.map(([, c]) => c),
    REPS,
    w.rows,
    WARMUP,
    SETTLE_MS,
  );
  try {
    const warm: Contender[] = [];
    for (const [n, make] of inProcess) {
      const c = make();
      if (c === null) continue;
      named.push([n, c]);
      warm.push(c);
    }
    ms.push(...(await interleaved(warm, REPS, w.rows, WARMUP, SETTLE_MS)));
  } finally {
    await Promise.all(kids.map((k) => k.close()));
  }
  const measurements: FileResult['measurements'] = {};
  named.forEach(([n], i) => (measurements[n] = ms[i]!));

  // Throughput ratios of medians (> 1: the first is faster), with the same ratio in each round.
  const ratios: FileResult['ratios'] = {};
  const ratio = (key: string, fast: ContenderName, slow: ContenderName, target?: number): void => {
    const a = measurements[fast];
    const b = measurements[slow];
    if (a === undefined || b === undefined) return;
    ratios[key] = { value: b.median / a.median, ...(target !== undefined ? { target } : {}), rounds: a.seconds.map((s, r) => b.seconds[r]! / s) };
  };
  ratio('sluice shuffled vs duckdb', 'sluice shuffled', 'duckdb', 2);
  ratio('sluice shuffled vs polars', 'sluice shuffled', 'polars', w.preset === 'rm1' ? 1 : undefined);
  ratio('sluice shuffled / unshuffled rate', 'sluice shuffled', 'sluice unshuffled', 0.85);
  ratio('sluice unshuffled vs duckdb', 'sluice unshuffled', 'duckdb');
  ratio('sluice unshuffled vs polars', 'sluice unshuffled', 'polars');
  ratio('in-process: sluice shuffled vs duckdb', 'sluice shuffled, in-process', 'duckdb, in-process');
  ratio('in-process: sluice shuffled vs polars', 'sluice shuffled, in-process', 'polars, in-process');
  ratio('in-process: shuffled / unshuffled rate', 'sluice shuffled, in-process', 'sluice unshuffled, in-process');
  return {
    writer,
    path,
    bytes: statSync(path).size,
    rowGroups: info.dataset.units.length,
    census,
    peersAgree,
    measurements,
    ratios,
    features: planSpec.features.length,
  };
}

async function runDataset(w: Workload, con: DuckDBConnection, polars: PolarsState, tmp: string): Promise<DatasetResult> {
  const gen = await cachedDataset({ preset: w.preset, rows: w.rows, seed: SEED, rowGroupSize: w.rowGroupSize, ids: w.ids });
  const files: Record<WriterName, () => Promise<string>> = {
    'sluice-gen': () => Promise.resolve(gen.path),
    duckdb: () => duckdbCopy(con, gen.path),
    // Tiny quick-mode row groups stay under 32 KiB of dictionary: a smaller limit still mixes pages.
    arrow: () => arrowRewrite(gen.path, w.rowGroupSize, QUICK ? 2048 : ARROW_DICT_PAGE_LIMIT),
  };
  const out: FileResult[] = [];
  let features = 0;
  for (const writer of WRITERS) {
    const r = await runFile(w, writer, await files[writer](), polars, tmp);
    features = r.features;
    out.push(r);
  }
  return { preset: w.preset, rows: w.rows, features, files: out };
}

// ---------------------------------------------------------------------------------------------
// Output

function printDataset(d: DatasetResult): void {
  const P = d.preset.toUpperCase();
  const headers = ['contender', ...d.files.flatMap((f) => [`${f.writer} median s`, `${f.writer} rows/s`])];
  const rows = CONTENDERS.filter((c) => d.files.some((f) => f.measurements[c] !== undefined)).map((c) => [
    c,
    ...d.files.flatMap((f) => {
      const m = f.measurements[c];
      return m === undefined ? ['skipped', '-'] : [fmtSeconds(m.median), fmtRate(m.rows / m.median)];
    }),
  ]);
  printTable(
    `${P} — ${fmtInt(d.rows)} rows, ${d.features} features, ${THREADS} workers / threads each; median of ${REPS} interleaved run${REPS === 1 ? '' : 's'} after ${WARMUP} untimed; whole process = a fresh node process per run, spawn to exit`,
    headers,
    rows,
  );
  const keys = [...new Set(d.files.flatMap((f) => Object.keys(f.ratios)))];
  printTable(
    `${P} — throughput ratios of the medians (> 1: the first is faster); the same ratio in each round in brackets`,
    ['ratio', 'target', ...d.files.map((f) => f.writer)],
    keys.map((k) => {
      const target = d.files.map((f) => f.ratios[k]?.target).find((t) => t !== undefined);
      return [
        k,
        target === undefined ? '' : `≥ ${target}`,
        ...d.files.map((f) => {
          const r = f.ratios[k];
          if (r === undefined) return '-';
          const mark = r.target === undefined ? '' : r.rounds.every((x) => x >= r.target!) ? ' ✓' : r.value >= r.target ? ' ~' : ' ✗';
          return `${fmtRatio(r.value)}${mark} [${r.rounds.map((x) => x.toFixed(2)).join(' ')}]`;
        }),
      ];
    }),
  );
}

// ---------------------------------------------------------------------------------------------

const tmp = mkdtempSync(join(tmpdir(), 'sluice-realistic-'));
const polars: PolarsState = ensurePolars(!args['no-install']);
if ('skipped' in polars) log(polars.skipped);
const duckdb = await DuckDBInstance.create(':memory:');
const con = await duckdb.connect();
const duckVersion = String((await con.runAndReadAll('SELECT version()')).getRows()[0]![0]);
const env = {
  ...machine(),
  duckdb: duckVersion,
  polars: 'dir' in polars ? `nodejs-polars ${POLARS_VERSION} (${polars.dir})` : polars.skipped,
  threads: THREADS,
  shuffle: `seed ${SHUFFLE.seed}, bufferRows ${SHUFFLE.bufferRows}`,
  reps: REPS,
  warmup: WARMUP,
  seed: SEED,
  writers: WRITERS.map((w) => `${w}: ${WRITER_NOTES[w]}`).join(' | '),
};
if (!args.json)
  process.stdout.write(
    `\nSluice realistic benchmark\n${Object.entries(env)
      .map(([k, v]) => `  ${k}: ${String(v)}`)
      .join('\n')}\n`,
  );
// Each data set's tables as soon as it is done: a full run takes a while on a busy host.
const results: DatasetResult[] = [];
try {
  for (const w of WORKLOADS) {
    const d = await runDataset(w, con, polars, tmp);
    results.push(d);
    if (args.json) continue;
    for (const f of d.files)
      process.stdout.write(
        `\n  ${d.preset} × ${f.writer}: ${basename(f.path)}, ${fmtMB(f.bytes)}, ${f.rowGroups} row groups; ${fmtCensus(f.census)}; Polars = DuckDB: ${f.peersAgree}`,
      );
    process.stdout.write('\n');
    printDataset(d);
  }
} finally {
  con.closeSync();
  rmSync(tmp, { recursive: true, force: true });
}
if (args.json) emitJson({ bench: 'realistic', env, datasets: results });
else process.stdout.write('\n✓ the target holds in every round; ~ it holds for the medians but not in every round; ✗ it does not hold.\n');
