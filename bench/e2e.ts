/**
 * End-to-end throughput: Parquet file → ready batches, against DuckDB running the closest SQL to
 * the same plan over the same file, and against decoding the same columns with no ops (the limit
 * for an end-to-end run). See bench/README.md for what each row measures and how to read it.
 *
 *   npx tsx bench/e2e.ts [--rows 1000000] [--rm5-rows 50000] [--reps 5] [--warmup 1] [--only rm1|rm5]
 *                        [--bucketize bsearch|asof|count] [--duckdb-threads 2] [--seed 42] [--json]
 *   --print-sql prints the DuckDB statements of each workload and exits.
 *   --inline runs core's in-process cpu backend even where @sluice/backend-cpu is built.
 *   --one-process runs every contender in this process (by default each Sluice mode has its own).
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { createBackend, DecoderPool, inlineCpuBackend, openDataset, readChunks, readerKernels, type ColumnType } from '@sluice/core/internal';
import { getPreset } from '@sluice/core/gen';
import { pipeline, registerBackend, type Backend, type PlanSpec } from '@sluice/core';
import {
  childContenders,
  cachedDataset,
  emitJson,
  fmtInt,
  fmtMB,
  fmtRate,
  fmtRatio,
  fmtSeconds,
  hostScaling,
  intArg,
  interleaved,
  log,
  machine,
  median,
  printTable,
  serveContenders,
  type CachedDataset,
  type Contender,
  type Measurement,
} from './lib.js';
import { planSql, q, type BucketizeSql } from './duckdb-sql.js';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string' },
    'rm5-rows': { type: 'string' },
    reps: { type: 'string' },
    warmup: { type: 'string' },
    only: { type: 'string' },
    bucketize: { type: 'string' },
    'duckdb-threads': { type: 'string' },
    seed: { type: 'string' },
    'print-sql': { type: 'boolean', default: false },
    inline: { type: 'boolean', default: false },
    'one-process': { type: 'boolean', default: false },
    child: { type: 'string' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});
if (args.help) {
  log(
    'usage: npx tsx bench/e2e.ts [--rows N (RM1, default 1000000)] [--rm5-rows N (default 50000)] [--reps 5] [--warmup 1] [--only rm1|rm5] [--bucketize bsearch|asof|count] [--duckdb-threads 2] [--seed 42] [--inline] [--one-process] [--print-sql] [--json]',
  );
  process.exit(0);
}
// Every Sluice run should find warm decode threads (docs/pipeline.md, "Decoders"). Parked ones end after
// 10 s unused by default, and between two uses of one here DuckDB's runs can take longer than that:
// some timed runs then started cold decoders (bench/README.md, "A noisy host").
process.env.SLUICE_DECODER_IDLE_MS ??= '600000';
const REPS = intArg(args.reps, 5, 'reps');
const WARMUP = intArg(args.warmup, 1, 'warmup', 0);
/** Pause before each run, for the previous contender's threads and GC to settle. */
const SETTLE_MS = 300;
/** Samples of the host's 2-thread scaling taken before the rounds, and again after (`hostScaling`). */
const HOST_SAMPLES = 6;
const SEED = intArg(args.seed, 42, 'seed');
const DUCK_THREADS = intArg(args['duckdb-threads'], 2, 'duckdb-threads');
const BUCKETIZE = (args.bucketize ?? 'bsearch') as BucketizeSql;
if (!['bsearch', 'asof', 'count'].includes(BUCKETIZE)) {
  log(`--bucketize must be bsearch, asof or count`);
  process.exit(2);
}
if (args.only !== undefined && !['rm1', 'rm5'].includes(args.only)) {
  log('--only must be rm1 or rm5');
  process.exit(2);
}

interface Workload {
  readonly preset: 'rm1' | 'rm5';
  readonly rows: number;
  /** RM5 rows are ~2.7 KB: smaller row groups keep several in a short file, so decoders can overlap. */
  readonly rowGroupSize: number;
}
const WORKLOADS: Workload[] = [
  { preset: 'rm1', rows: intArg(args.rows, 1_000_000, 'rows'), rowGroupSize: 100_000 },
  { preset: 'rm5', rows: intArg(args['rm5-rows'], 50_000, 'rm5-rows'), rowGroupSize: 10_000 },
].filter((w) => args.only === undefined || w.preset === args.only) as Workload[];

// ---------------------------------------------------------------------------------------------
// Which CPU backend runs: a transparent probe around whatever `cpu` is registered

/** Whether the worker-pool backend package could be imported (importing it registers `cpu`). */
async function cpuBackendPackage(): Promise<{ loaded: boolean; note: string }> {
  if (args.inline) return { loaded: false, note: "core's in-process cpu backend (--inline)" };
  try {
    // A variable specifier: this file type-checks whether or not the package is built.
    const name = '@sluice/backend-cpu';
    await import(name);
    return { loaded: true, note: '@sluice/backend-cpu (worker pool)' };
  } catch (e) {
    const msg = (e as Error).message.split('\n')[0]!;
    return { loaded: false, note: `core's in-process cpu backend (@sluice/backend-cpu not loadable: ${msg.slice(0, 120)})` };
  }
}

interface Probe {
  name: string;
  concurrency: number;
  inflight: number;
  maxInflight: number;
}
let probe: Probe = { name: '', concurrency: 0, inflight: 0, maxInflight: 0 };

/**
 * `bench-cpu` builds the registered `cpu` backend (core's in-process one with `--inline`) and
 * forwards everything to it, counting how many `run` calls overlap: the concurrency the pipeline
 * really got, whatever `cpu` turns out to be (core's in-process backend ignores `workers`).
 */
registerBackend(
  'bench-cpu',
  async (plan, spec, state) => {
    const inner = args.inline ? inlineCpuBackend(plan, { ...spec, name: 'cpu' }, state) : await createBackend(plan, { ...spec, name: 'cpu' }, state);
    const p: Probe = { name: inner.name, concurrency: inner.concurrency, inflight: 0, maxInflight: 0 };
    probe = p;
    const run: Backend['run'] = async (columns, locate) => {
      p.maxInflight = Math.max(p.maxInflight, ++p.inflight);
      try {
        return await inner.run(columns, locate);
      } finally {
        p.inflight--;
      }
    };
    return new Proxy(inner, {
      get(target, key) {
        if (key === 'run') return run;
        const v: unknown = Reflect.get(target, key, target);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  },
  {
    // The reader computes pushed-down ops with the kernels `cpu` gives it (none with --inline).
    readerKernels: (spec) => (args.inline ? null : readerKernels({ ...spec, name: 'cpu' })),
  },
);

// ---------------------------------------------------------------------------------------------
// One workload

interface WorkloadResult {
  preset: string;
  rows: number;
  file: { path: string; bytes: number; rowGroupSize: number; generatedSeconds: number };
  columns: number;
  features: number;
  measurements: Measurement[];
  ratios: Record<string, number>;
  /**
   * sluice 1 worker's time over sluice 2 workers' time in each round (the two run in the same
   * round of the interleaving, most often one right after the other), in round order.
   */
  pairedSluice2vs1: number[];
  /** `hostScaling` samples: half just before the rounds, half just after. */
  hostScaling: number[];
}

// ---------------------------------------------------------------------------------------------
// Sluice's contenders, grouped by the process they run in

interface Family {
  readonly sluice: (workers: number, pushdown?: boolean) => Contender;
  readonly decodeOnly: (decoders: number) => Contender;
}
type PlanInfo = Awaited<ReturnType<ReturnType<typeof pipeline>['info']>>;

/** The plan's input columns and their types, exactly as the pipeline reads them. */
function planColumns(info: PlanInfo): Map<string, ColumnType> {
  return new Map(info.plan.columns.map((c) => [c, info.dataset.schema.get(c)!]));
}

/** Sluice's runs of `planSpec` over the file at `path`: the pipeline, and decode-only of its columns. */
function family(planSpec: PlanSpec, path: string, info: PlanInfo): Family {
  const columns = planColumns(info);
  // Pushdown (plan/pushdown.ts) is what `cpu` does by default; `bench-cpu` asks for it explicitly.
  const sluice = (workers: number, pushdown = true): Contender => ({
    name: `sluice ${workers} worker${workers > 1 ? 's' : ''}${pushdown ? '' : ', no pushdown'}`,
    run: async () => {
      probe = { name: 'none (every feature pushed into the reader)', concurrency: 0, inflight: 0, maxInflight: 0 };
      const p = pipeline(planSpec, { input: path, backend: { name: 'bench-cpu', workers, pushdown }, decoders: workers });
      let rows = 0;
      // A trainer's loop: done with each batch after its step, so its memory can be reused.
      for await (const b of p) {
        rows += b.rows;
        b.release?.();
      }
      const m = p.metrics();
      return {
        rows,
        extra: {
          backend: probe.name,
          backendConcurrency: probe.concurrency,
          maxInflight: probe.maxInflight,
          decoders: workers,
          preprocessMs: Math.round(m.preprocessMs),
          sourceWaitMs: Math.round(m.sourceWaitMs),
          batchMs: Math.round(m.batchMs),
          batches: m.batches,
        },
      };
    },
  });
  const decodeOnly = (decoders: number): Contender => ({
    name: `decode-only ${decoders} decoder${decoders > 1 ? 's' : ''}`,
    run: async () => {
      const pool = new DecoderPool(decoders);
      try {
        const ds = await openDataset([path], pool);
        let rows = 0;
        for await (const c of readChunks(ds, pool, { columns, chunkRows: info.plan.batchSize, shuffle: null, shard: { rank: 0, worldSize: 1 }, epochs: 1 }))
          rows += c.rows;
        return { rows };
      } finally {
        await pool.close();
      }
    },
  });
  return { sluice, decodeOnly };
}

/**
 * The Sluice contenders that share a process: the 1- and 2-worker pipelines (one mode, run
 * alternately, as a trainer's process would run one pipeline after another), decode-only, and the
 * pipeline without pushdown.
 */
const GROUPS = {
  sluice: (f: Family) => [f.sluice(1), f.sluice(2)],
  decode: (f: Family) => [f.decodeOnly(1), f.decodeOnly(2)],
  nopushdown: (f: Family) => [f.sluice(2, false)],
} as const satisfies Record<string, (f: Family) => Contender[]>;
type Group = keyof typeof GROUPS;
const SCRIPT = fileURLToPath(import.meta.url);
/** How the parent tells a contender child which file and plan to run (JSON: preset, path). */
const CHILD_ENV = 'SLUICE_BENCH_E2E_CHILD';

async function runWorkload(w: Workload, con: DuckDBConnection): Promise<WorkloadResult | null> {
  const data: CachedDataset = await cachedDataset({ preset: w.preset, rows: w.rows, seed: SEED, rowGroupSize: w.rowGroupSize });
  const planSpec = getPreset(w.preset).defaultPlan();
  const info = await pipeline(planSpec, { input: data.path }).info();
  const columns = planColumns(info);
  const colNames = [...columns.keys()];
  log(
    `\n${w.preset}: ${fmtInt(w.rows)} rows, ${fmtMB(data.bytes)}, ${info.dataset.units.length} row groups, ${colNames.length} columns read, ${planSpec.features.length} features`,
  );

  const sql = planSql(planSpec, data.path, columns, BUCKETIZE);
  const rawSql = `SELECT ${colNames.map(q).join(', ')} FROM read_parquet('${data.path.replace(/'/g, "''")}')`;
  if (args['print-sql']) {
    process.stdout.write(
      `-- ${w.preset}: setup (untimed)\n${sql.setup.map((x) => `${x};\n`).join('')}-- ${w.preset}: plan\nCREATE TABLE __out AS ${sql.select};\n-- ${w.preset}: decode-only\nCREATE TABLE __out AS ${rawSql};\n`,
    );
    return null;
  }

  const duck = (name: string, select: string, setup: string[]): Contender => ({
    name,
    setup: async () => {
      for (const s of setup) await con.run(s);
    },
    run: async () => {
      await con.run(`CREATE OR REPLACE TABLE __out AS ${select}`);
      const r = await con.runAndReadAll('SELECT count(*) FROM __out');
      return { rows: Number(r.getRows()[0]![0] as bigint) };
    },
    after: async () => {
      await con.run('DROP TABLE IF EXISTS __out');
    },
  });

  // Each Sluice mode runs in a process of its own, kept for all rounds (`childContenders`), unless
  // --one-process; DuckDB runs here, in its own threads.
  const fam = family(planSpec, data.path, info);
  const children: Array<{ close: () => Promise<void> }> = [];
  const group = (g: Group): Contender[] => {
    const local = GROUPS[g](fam);
    if (args['one-process']) return local;
    const kid = childContenders(
      local.map((c) => c.name),
      SCRIPT,
      ['--child', g, ...(args.inline ? ['--inline'] : [])],
      { env: { ...process.env, [CHILD_ENV]: JSON.stringify({ preset: w.preset, path: data.path }) } },
    );
    children.push(kid);
    return kid.contenders;
  };
  const [sluice1, sluice2] = group('sluice') as [Contender, Contender];
  const [decode1, decode2] = group('decode') as [Contender, Contender];
  const [noPushdown] = group('nopushdown') as [Contender];
  const contenders = [
    sluice1,
    sluice2,
    decode1,
    decode2,
    duck(`duckdb plan (${BUCKETIZE})`, sql.select, sql.setup),
    duck('duckdb decode-only', rawSql, []),
    noPushdown,
  ];
  let ms: Measurement[];
  let host: number[];
  try {
    // The host's own 2-thread scaling, just before and just after the rounds (`hostScaling`).
    host = await hostScaling(HOST_SAMPLES);
    ms = await interleaved(contenders, REPS, w.rows, WARMUP, SETTLE_MS);
    host.push(...(await hostScaling(HOST_SAMPLES)));
  } finally {
    await Promise.all(children.map((c) => c.close()));
  }
  const t = (i: number): number => ms[i]!.best;
  const ratios: Record<string, number> = {
    'sluice2/duckdb': t(4) / t(1),
    'sluice2/decodeOnly': t(3) / t(1),
    'sluice2/sluice1': t(0) / t(1),
    'sluice2/sluice2NoPushdown': t(6) / t(1),
    'duckdb/duckdbDecodeOnly': t(5) / t(4),
    'decodeOnly2/duckdbDecodeOnly': t(5) / t(3),
  };
  // Best-of-k compares each contender's luckiest run. Where the host's speed drifts from run to
  // run (bench/README.md, "A noisy host"), a 1-worker run, timed by one thread, varies more than a
  // 2-worker run, whose two threads average out: its best lies further below its typical time,
  // which pulls the ratio of bests down. The ratio within each round, where both met the same
  // host, does not have that bias. Both are printed.
  const paired = ms[0]!.seconds.map((s1, r) => s1 / ms[1]!.seconds[r]!);
  ratios['sluice2/sluice1 (median of rounds)'] = median(paired);
  ratios['host2/host1 (compute loop)'] = median(host);
  return {
    preset: w.preset,
    rows: w.rows,
    file: { path: data.path, bytes: data.bytes, rowGroupSize: w.rowGroupSize, generatedSeconds: +data.generatedSeconds.toFixed(1) },
    columns: colNames.length,
    features: planSpec.features.length,
    measurements: ms,
    ratios,
    pairedSluice2vs1: paired,
    hostScaling: host,
  };
}

function printWorkload(r: WorkloadResult): void {
  const rows = r.measurements.map((m) => {
    const x = m.extra;
    const note =
      x.backend !== undefined
        ? `${String(x.backend)}: concurrency ${String(x.backendConcurrency)}, ≤${String(x.maxInflight)} chunks in flight, ${String(x.decoders)} decoder(s)`
        : '';
    return [m.name, fmtSeconds(m.best), fmtSeconds(m.median), fmtRate(m.rows / m.best), m.cpuCores.toFixed(2), note];
  });
  printTable(
    `${r.preset.toUpperCase()} — ${fmtInt(r.rows)} rows, ${r.columns} columns read, ${r.features} features, ${fmtMB(r.file.bytes)} Parquet (row groups of ${fmtInt(r.file.rowGroupSize)}); best of ${REPS} after ${WARMUP} untimed warm-up round${WARMUP === 1 ? '' : 's'}, interleaved`,
    ['contender', 'best s', 'median s', 'rows/s', 'cores', 'notes'],
    rows,
    'lrrrrl',
  );
  const s = r.measurements.filter((m) => m.extra.preprocessMs !== undefined);
  printTable(
    `${r.preset.toUpperCase()} — Sluice stage times of the best run (ms; preprocess sums overlapping chunks)`,
    ['run', 'preprocess', 'source wait', 'batch', 'batches'],
    s.map((m) => [m.name, String(m.extra.preprocessMs), String(m.extra.sourceWaitMs), String(m.extra.batchMs), String(m.extra.batches)]),
  );
  const ex = {
    'sluice2/duckdb': 'throughput ratio; > 1 = Sluice faster than DuckDB running the plan',
    'sluice2/decodeOnly': 'fraction of the decode-only limit reached (> 1: reused batch memory beats fresh arrays)',
    'sluice2/sluice1': 'speed-up from the second worker (best 1-worker run ÷ best 2-worker run)',
    'sluice2/sluice1 (median of rounds)': `the same within each round, median (rounds: ${r.pairedSluice2vs1.map((x) => x.toFixed(2)).join(' ')})`,
    'host2/host1 (compute loop)': `the host's own ceiling for sluice2/sluice1: a loop that shares nothing, 2 threads vs 1, median (samples: ${r.hostScaling.map((x) => x.toFixed(2)).join(' ')})`,
    'sluice2/sluice2NoPushdown': 'speed-up from evaluating ops per dictionary entry in the reader',
    'duckdb/duckdbDecodeOnly': 'DuckDB: its plan run vs. its own decode-only (context)',
    'decodeOnly2/duckdbDecodeOnly': "Sluice's decoder vs. DuckDB's reader (context)",
  } as Record<string, string>;
  printTable(
    `${r.preset.toUpperCase()} — ratios (throughput; from this one run)`,
    ['ratio', 'value', 'meaning'],
    Object.entries(r.ratios).map(([k, v]) => [k, fmtRatio(v), ex[k] ?? '']),
    'lrl',
  );
}

// ---------------------------------------------------------------------------------------------

const pkg = await cpuBackendPackage();
if (args.child !== undefined) {
  // A contender child (`childContenders`): serve the group's runs until the parent closes stdin.
  if (!(args.child in GROUPS)) {
    log(`--child must be one of ${Object.keys(GROUPS).join(', ')}`);
    process.exit(2);
  }
  const { preset, path } = JSON.parse(process.env[CHILD_ENV] ?? '{}') as { preset: 'rm1' | 'rm5'; path: string };
  const planSpec = getPreset(preset).defaultPlan();
  const info = await pipeline(planSpec, { input: path }).info();
  await serveContenders(GROUPS[args.child as Group](family(planSpec, path, info)));
  process.exit(0);
}
const duckdb = await DuckDBInstance.create(':memory:');
const con = await duckdb.connect();
await con.run(`SET threads = ${DUCK_THREADS}`);
const duckVersion = String((await con.runAndReadAll('SELECT version()')).getRows()[0]![0]);

const results: WorkloadResult[] = [];
for (const w of WORKLOADS) {
  const r = await runWorkload(w, con);
  if (r !== null) results.push(r);
}
con.closeSync();
if (args['print-sql']) process.exit(0);

const env = {
  ...machine(),
  duckdb: duckVersion,
  duckdbThreads: DUCK_THREADS,
  cpuBackend: pkg.note,
  bucketizeSql: BUCKETIZE,
  reps: REPS,
  warmup: WARMUP,
  seed: SEED,
};
if (args.json) {
  emitJson({ bench: 'e2e', env, workloads: results });
} else {
  process.stdout.write(
    `\nSluice end-to-end benchmark\n${Object.entries(env)
      .map(([k, v]) => `  ${k}: ${String(v)}`)
      .join('\n')}\n`,
  );
  for (const r of results) printWorkload(r);
  process.stdout.write('\nRatios are throughput ratios (time of the second ÷ time of the first); absolute times are context only.\n');
}
