import { existsSync, writeFileSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { DEMO_ROWS, demoDataset } from '../gen/demo.js';
import { SluiceError } from '@sluice/ops';
import { generateDataset } from '../gen/generate.js';
import { getPreset } from '../gen/presets.js';
import { batchToArrow } from '../output/batch-arrow.js';
import { fit } from '../pipeline/fit.js';
import { ParquetFileWriter } from '../output/parquet-write.js';
import { stateToJSON } from '@sluice/ops';
import { loadPlan, type Plan } from '@sluice/ops';
import type { BackendSpec } from '@sluice/ops';
import { pipeline, type PipelineOptions } from '../pipeline/pipeline.js';
import { assembleBatch } from '../batch/index.js';
import { START } from '../stream/source.js';
import { Progress, formatTable, peakRssMB } from './progress.js';
import { createBatchServer } from '../serve/server.js';
import { LOOKAHEAD_OPTIONS, LOOKAHEAD_USAGE, cmdLookahead } from './lookahead.js';

const USAGE = `sluice — stream preprocessed training data from Parquet

usage: sluice <command> [options]

commands:
  demo                                   generate a small RM1 data set (cached) and stream it through the CPU pipeline
  plan  --preset NAME                    print the default plan for a preset (${'rm1..rm5, piper-d1, rap-plan0..3'})
  gen   --preset NAME --rows N --out F [--seed S] [--row-group-size R]
                                         write seeded synthetic Parquet data
  fit   --plan P --input F --out STATE   build vocabularies for stateful ops
  run   --plan P --input F --output O.parquet [--backend B] [--workers N] [--state STATE]
                                         preprocess and write one column per feature, in input order
  bench --plan P --input F [--backend B] [--workers N] [--state STATE] [--json]
                                         run to ready batches and report rows/s, stage times and peak RSS
  reproduce piper-table4|presto [--rows N] [--json]
                                         rerun a paper's table on the simulated backends (fpga-sim, smartssd-sim)
  serve --plan P --input F --port N [--host H] [--token T] [--backend B] [--state STATE]
                                         serve batches over HTTP: GET /v1/batches/{seq}, /v1/info, /healthz, /metrics
${LOOKAHEAD_USAGE}
  explain --plan P [--input F] [--backend B|auto|B1,B2] [--target-rows-per-sec R] [--json]
                                         the optimizer's work: ops before/after, stages, kernels per batch, placement

common options: --debug (stack traces), --help
--input takes a path, glob or http(s) URL; repeat it for several.`;

type Values = Record<string, string | boolean | string[] | undefined>;

const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
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
  ...LOOKAHEAD_OPTIONS,
  'target-rows-per-sec': { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

class UsageError extends Error {}

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
  if (values.help || cmd === undefined || cmd === 'help') {
    process.stdout.write(USAGE + '\n');
    return cmd === undefined && !values.help ? 2 : 0;
  }
  try {
    switch (cmd) {
      case 'plan': return cmdPlan(values);
      case 'gen': return await cmdGen(values);
      case 'fit': return await cmdFit(values);
      case 'run': return await cmdRun(values);
      case 'bench': return await cmdBench(values);
      case 'demo': return await cmdDemo(values);
      case 'reproduce': return await cmdReproduce(values, positionals[1]);
      case 'serve': return await cmdServe(values);
      case 'lookahead': return await cmdLookahead(values, (m) => new UsageError(m));
      case 'explain': return await cmdExplain(values);
      default: throw new UsageError(`unknown command "${cmd}"`);
    }
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`sluice ${cmd}: ${e.message}\n(see sluice --help)\n`);
      return 2;
    }
    if (values.debug) process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
    else if (e instanceof SluiceError) process.stderr.write(`sluice ${cmd}: ${e.message}\n`);
    else process.stderr.write(`sluice ${cmd}: unexpected error: ${(e as Error).message ?? String(e)} (rerun with --debug for details)\n`);
    return 1;
  }
}

function need(values: Values, name: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

function int(values: Values, name: string, dflt?: number): number {
  const v = values[name];
  if (v === undefined) {
    if (dflt === undefined) throw new UsageError(`--${name} is required`);
    return dflt;
  }
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`--${name} must be a non-negative integer, got "${String(v)}"`);
  return n;
}

function inputs(values: Values): string[] {
  const v = values.input as string[] | undefined;
  if (!v || v.length === 0) throw new UsageError('--input is required');
  return v;
}

/** --backend / --workers as an override; the pipeline keeps the plan's options for the same backend. */
function backendOverride(values: Values, plan: Plan): BackendSpec | undefined {
  const name = values.backend as string | undefined;
  const workers = values.workers === undefined ? undefined : int(values, 'workers');
  if (name === undefined && workers === undefined) return undefined;
  return { name: name ?? plan.backend.name, ...(workers !== undefined ? { workers } : {}) };
}

function preset(name: string): ReturnType<typeof getPreset> {
  try {
    return getPreset(name);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

function cmdPlan(values: Values): number {
  const p = preset(need(values, 'preset'));
  process.stdout.write(JSON.stringify(p.defaultPlan(), null, 2) + '\n');
  return 0;
}

async function cmdGen(values: Values): Promise<number> {
  const name = need(values, 'preset');
  preset(name);
  const rows = int(values, 'rows');
  if (rows === 0) throw new UsageError('--rows must be at least 1');
  const out = need(values, 'out');
  const progress = new Progress(`gen ${name}`, rows, 'rows', !!values.quiet);
  const r = await generateDataset({
    preset: name, rows, out, seed: int(values, 'seed', 42), rowGroupSize: int(values, 'row-group-size', 100_000),
    onProgress: (done: number) => progress.update(done),
  });
  progress.done();
  process.stderr.write(`wrote ${r.rows} rows to ${out} (${(r.bytes / 1e6).toFixed(1)} MB) in ${r.seconds.toFixed(1)} s\n`);
  return 0;
}

function pipelineOptions(values: Values, plan: Plan): PipelineOptions {
  const o: PipelineOptions = { input: inputs(values) };
  const b = backendOverride(values, plan);
  if (b) o.backend = b;
  if (typeof values.state === 'string') o.fitState = values.state;
  return o;
}

async function cmdFit(values: Values): Promise<number> {
  const out = need(values, 'out');
  let progress: Progress | null = null;
  const { plan, state, rows } = await fit(need(values, 'plan'), {
    input: inputs(values),
    onProgress: (done, total) => { (progress ??= new Progress('fit', total, 'rows', !!values.quiet)).update(done); },
  });
  (progress as Progress | null)?.done();
  const json = stateToJSON(plan, state);
  writeAtomic(out, JSON.stringify(json) + '\n');
  const sizes = Object.entries(json.ops).map(([k, v]) => `${k}: ${((v as { state: { keys?: unknown[] } }).state.keys?.length ?? '?')} ids`);
  process.stderr.write(`fitted ${Object.keys(json.ops).length} stateful op(s) over ${rows} rows -> ${out}${sizes.length ? '\n  ' + sizes.join('\n  ') : ''}\n`);
  return 0;
}

function writeAtomic(path: string, text: string): void {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

async function cmdRun(values: Values): Promise<number> {
  const plan = loadPlan(need(values, 'plan'));
  const output = need(values, 'output');
  const p = pipeline(plan, pipelineOptions(values, plan));
  const info = await p.info();
  const progress = new Progress('run', info.rowsPerEpoch * plan.epochs, 'rows', !!values.quiet);
  // Write to a temporary file and rename at the end, so a failed run never leaves a partial output.
  const tmp = `${output}.partial-${process.pid}`;
  const writer = await ParquetFileWriter.open(tmp);
  let rows = 0;
  try {
    for await (const b of p) {
      await writer.write(batchToArrow(b, plan.label));
      // The writer has serialised the batch (IPC bytes made in write): its memory may be reused.
      b.release?.();
      rows += b.rows;
      progress.update(rows);
    }
    // Input with no rows: the output still has the columns (and no rows), as tools downstream expect.
    if (rows === 0) await writer.write(batchToArrow(assembleBatch(info.layout, [], 0, START), plan.label));
    await writer.close();
  } catch (e) {
    await writer.abort?.();
    try { if (existsSync(tmp)) unlinkSync(tmp); } catch { /* nothing to clean */ }
    throw e;
  }
  renameSync(tmp, output);
  progress.done();
  process.stderr.write(`wrote ${rows} rows x ${info.plan.features.length} features${plan.label ? ' + label' : ''} to ${output} (${(statSync(output).size / 1e6).toFixed(1)} MB) on backend ${info.backend}\n`);
  return 0;
}

async function cmdBench(values: Values): Promise<number> {
  const plan = loadPlan(need(values, 'plan'));
  const p = pipeline(plan, pipelineOptions(values, plan));
  const info = await p.info();
  const progress = new Progress('bench', info.rowsPerEpoch * plan.epochs, 'rows', !!values.quiet || !!values.json);
  const t0 = performance.now();
  let rows = 0;
  let bytes = 0;
  for await (const b of p) {
    rows += b.rows;
    bytes += b.dense.data.byteLength + b.sparse.values.byteLength + b.sparse.lengths.byteLength + (b.labels?.byteLength ?? 0);
    progress.update(rows);
    // Done with it: its memory may hold a later batch (Batch.release), as in a training loop.
    b.release?.();
  }
  const seconds = (performance.now() - t0) / 1000;
  progress.done();
  const m = p.metrics();
  const result = {
    backend: info.backend,
    rows,
    batches: m.batches,
    seconds,
    rowsPerSecond: rows / seconds,
    batchesPerSecond: m.batches / seconds,
    mbPerSecond: bytes / 1e6 / seconds,
    stages: { sourceWaitMs: m.sourceWaitMs, preprocessMs: m.preprocessMs, batchMs: m.batchMs },
    peakRssMB: peakRssMB(),
    lastReport: m.lastReport,
    reportTotals: m.reportTotals,
    backendSummary: m.backendSummary,
  };
  if (values.json) {
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
    return 0;
  }
  process.stdout.write(formatTable(['metric', 'value'], [
    ['backend', info.backend],
    ['rows', String(rows)],
    ['batches', String(m.batches)],
    ['seconds', seconds.toFixed(2)],
    ['rows/s', Math.round(result.rowsPerSecond).toLocaleString('en-US')],
    ['batches/s', result.batchesPerSecond.toFixed(1)],
    ['batch MB/s', result.mbPerSecond.toFixed(1)],
    ['source wait (decode) ms', m.sourceWaitMs.toFixed(0)],
    ['preprocess ms', m.preprocessMs.toFixed(0)],
    ['batch assembly ms', m.batchMs.toFixed(0)],
    ['peak RSS MB', result.peakRssMB.toFixed(0)],
    // Backend-specific figures: summed report fields, then the backend's own summary.
    ...Object.entries(m.reportTotals).map(([k, v]) => [`report: ${k} (sum)`, fmtNumber(v)]),
    ...Object.entries(m.backendSummary ?? {}).map(([k, v]) => [k, typeof v === 'number' ? fmtNumber(v) : v]),
  ]) + '\n');
  return 0;
}

/** Which simulator package owns each `sluice reproduce` target. */
const REPRODUCTIONS: Record<string, string> = { 'piper-table4': 'fpga-sim', presto: 'smartssd-sim' };

async function cmdReproduce(values: Values, target: string | undefined): Promise<number> {
  const backend = target === undefined ? undefined : REPRODUCTIONS[target];
  if (backend === undefined) throw new UsageError(`reproduce takes one of ${Object.keys(REPRODUCTIONS).join(', ')}${target === undefined ? '' : `, got "${target}"`}`);
  // Loaded at run time so that core never imports a backend package.
  let pkg: { reproductions?: Record<string, (o: { rows?: number; json?: boolean }) => Promise<string>> };
  try {
    pkg = (await import(`@sluice/backend-${backend}`)) as typeof pkg;
  } catch (e) {
    throw new UsageError(`reproduce ${target} needs the package @sluice/backend-${backend} (${(e as Error).message})`);
  }
  const run = pkg.reproductions?.[target!];
  if (run === undefined) throw new UsageError(`@sluice/backend-${backend} has no reproduction "${target}"`);
  const rows = values.rows === undefined ? undefined : int(values, 'rows');
  process.stdout.write((await run({ ...(rows !== undefined ? { rows } : {}), json: !!values.json })) + '\n');
  return 0;
}

function fmtNumber(v: number): string {
  return Number.isInteger(v) ? v.toLocaleString('en-US') : Math.abs(v) >= 100 ? v.toFixed(1) : v.toPrecision(4);
}

async function cmdDemo(values: Values): Promise<number> {
  const rows = int(values, 'rows', DEMO_ROWS);
  if (rows === 0) throw new UsageError('--rows must be at least 1');
  const seed = int(values, 'seed', 42);
  let generated = false;
  const genProgress = new Progress('gen rm1', rows, 'rows', !!values.quiet);
  const file = await demoDataset({
    rows, seed,
    onGenerate: (f) => { generated = true; process.stderr.write(`generating ${rows.toLocaleString('en-US')} RM1 rows (seed ${seed}) -> ${f}\n`); },
    onProgress: (d) => genProgress.update(d),
  });
  genProgress.done();
  if (!generated) process.stderr.write(`using cached ${file}\n`);
  const planSpec = getPreset('rm1').defaultPlan();
  const plan = loadPlan(planSpec);
  const p = pipeline(plan, { input: file, ...(values.backend ? { backend: values.backend as string } : {}) });
  const info = await p.info();
  const progress = new Progress('demo', info.rowsPerEpoch, 'rows', !!values.quiet);
  const t0 = performance.now();
  let n = 0;
  let first: import('../batch/index.js').Batch | null = null;
  let ids = 0;
  let positives = 0;
  for await (const b of p) {
    first ??= b;
    n += b.rows;
    ids += b.sparse.values.length;
    if (b.labels) for (const l of b.labels) positives += l;
    progress.update(n);
    // The first batch is summarised after the loop; the others' memory may be reused.
    if (b !== first) b.release?.();
  }
  const seconds = (performance.now() - t0) / 1000;
  progress.done();
  const m = p.metrics();
  const f = first!;
  const denseMean = f.dense.data.reduce((a, x) => a + x, 0) / f.dense.data.length;
  process.stdout.write([
    `Sluice demo: RM1 preset, ${plan.features.length} features (${info.layout.dim} dense columns, ${info.layout.sparseKeys.length} sparse keys), backend ${info.backend}`,
    '',
    formatTable(['metric', 'value'], [
      ['input', file],
      ['rows', n.toLocaleString('en-US')],
      ['batches (size ' + plan.batchSize + ')', String(m.batches)],
      ['seconds', seconds.toFixed(2)],
      ['rows/s', Math.round(n / seconds).toLocaleString('en-US')],
      ['decode wait / preprocess ms', `${m.sourceWaitMs.toFixed(0)} / ${m.preprocessMs.toFixed(0)}`],
      ['dense matrix of batch 0', `${f.rows} x ${f.dense.dim} float32, mean ${denseMean.toFixed(3)}`],
      ['sparse ids per row (all keys)', (ids / n).toFixed(2)],
      ['sparse id range of batch 0', `[${minMax(f.sparse.values).join(', ')}]`],
      ['label positive rate', (positives / n).toFixed(3)],
      ['peak RSS MB', peakRssMB().toFixed(0)],
    ]),
    '',
    'Next: `sluice plan --preset rm1 > plan.json`, then `sluice run --plan plan.json --input ' + file + ' --output out.parquet`.',
    '',
  ].join('\n'));
  return 0;
}

function minMax(v: BigInt64Array): [string, string] {
  if (v.length === 0) return ['-', '-'];
  let lo = v[0]!;
  let hi = v[0]!;
  for (const x of v) { if (x < lo) lo = x; if (x > hi) hi = x; }
  return [String(lo), String(hi)];
}

async function cmdServe(values: Values): Promise<number> {
  const plan = loadPlan(need(values, 'plan'));
  const port = int(values, 'port');
  if (port > 65535) throw new UsageError(`--port must be at most 65535, got ${port}`);
  const token = (values.token as string | undefined) ?? process.env.SLUICE_TOKEN;
  const s = await createBatchServer(plan, pipelineOptions(values, plan), token === undefined ? {} : { token });
  const host = (values.host as string | undefined) ?? '127.0.0.1';
  // Listening for the stop signals before saying "serving", which a supervisor may answer at once.
  const stopped = new Promise<void>((resolve) => {
    const stop = (): void => { process.off('SIGINT', stop); process.off('SIGTERM', stop); resolve(); };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  const url = await s.listen(port, host).catch(async (e: unknown) => { await s.close(); throw e; });
  if (token === undefined && !/^(127\.|::1$|localhost$)/.test(host)) {
    process.stderr.write(`warning: serving on ${host} without --token (or SLUICE_TOKEN): anyone who can reach port ${new URL(url).port} can read the data\n`);
  }
  process.stderr.write(`serving ${s.store.batches} batches of ${plan.batchSize} rows at ${url}/v1/batches/{seq}${token === undefined ? '' : ' (bearer token required)'}\n`);
  await stopped;
  await s.close();
  return 0;
}

// ---- explain (issue 7): the optimizer's rewrite, stages and kernels per batch ---------------------
async function cmdExplain(values: Values): Promise<number> {
  const { explainCommand } = await import('./explain.js');
  const target = values['target-rows-per-sec'];
  const rate = target === undefined ? undefined : Number(target);
  if (rate !== undefined && !(Number.isFinite(rate) && rate > 0)) throw new UsageError(`--target-rows-per-sec must be a positive number, got "${String(target)}"`);
  const r = await explainCommand({
    plan: need(values, 'plan'),
    input: (values.input as string[] | undefined) ?? [],
    ...(typeof values.backend === 'string' ? { backend: values.backend } : {}),
    ...(rate !== undefined ? { targetRowsPerSec: rate } : {}),
    json: !!values.json,
  });
  process.stdout.write(r + '\n');
  return 0;
}
