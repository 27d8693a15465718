/**
 * `backend: "auto"` against every single backend it chooses from, on RM1 and RM5 (issue 7: auto
 * must be no slower than the best single backend). Each contender runs the preset's default plan
 * end to end (Parquet → ready batches); runs are interleaved and repeated, and the table gives the
 * median and the spread (min–max) of rows/s, plus where auto put the features.
 *
 * RM1 defaults to 1M rows, as in e2e.ts: a 200k-row run takes ~0.3 s, where run-to-run noise
 * (±10% here) hides whether auto, which runs the very same path as cpu on RM1, matches it.
 *
 *   npx tsx bench/auto.ts [--rm1-rows 1000000] [--rm5-rows 4000] [--reps 6] [--only rm1|rm5] [--json]
 */
import { parseArgs } from 'node:util';
import '@sluice/backend-cpu';
import { webgpuUnavailable } from '@sluice/backend-webgpu';
import { getPreset } from '@sluice/core/gen';
import { pipeline, type BackendSpec, type PipelineMetrics } from '@sluice/core';
import { cachedDataset, emitJson, fmtInt, fmtRate, intArg, log, machine, median, printTable } from './lib.js';

const { values } = parseArgs({
  options: { 'rm1-rows': { type: 'string' }, 'rm5-rows': { type: 'string' }, reps: { type: 'string' }, only: { type: 'string' }, json: { type: 'boolean' } },
});
const reps = intArg(values.reps, 6, 'reps');
const workloads = [
  { preset: 'rm1', rows: intArg(values['rm1-rows'], 1_000_000, 'rm1-rows'), rowGroupSize: 50_000 },
  { preset: 'rm5', rows: intArg(values['rm5-rows'], 4_000, 'rm5-rows'), rowGroupSize: 2_000 },
].filter((w) => values.only === undefined || w.preset === values.only);

const gpu = await webgpuUnavailable();
if (gpu) log(`webgpu unavailable (${gpu}); comparing auto with cpu only`);
const contenders: Array<{ label: string; spec: BackendSpec }> = [
  { label: 'cpu', spec: { name: 'cpu' } },
  ...(gpu ? [] : [{ label: 'webgpu', spec: { name: 'webgpu' } }]),
  { label: 'auto', spec: { name: 'auto' } },
];

async function runOnce(path: string, preset: string, spec: BackendSpec): Promise<{ rowsPerSec: number; metrics: PipelineMetrics }> {
  const p = pipeline({ ...getPreset(preset).defaultPlan(), backend: spec }, { input: path });
  await p.info();
  const t0 = performance.now();
  let rows = 0;
  for await (const b of p) rows += b.rows;
  return { rowsPerSec: rows / ((performance.now() - t0) / 1000), metrics: p.metrics() };
}

/** Pause before each timed run, for the previous run's threads and GC to settle. */
const SETTLE_MS = 300;

/** Every order of `xs` (3 contenders: 6 orders, each contender after each other one equally often). */
function permutations<T>(xs: readonly T[]): T[][] {
  if (xs.length <= 1) return [xs.slice()];
  return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((rest) => [x, ...rest]));
}

const results: Array<Record<string, unknown>> = [];
for (const w of workloads) {
  const ds = await cachedDataset({ preset: w.preset, rows: w.rows, rowGroupSize: w.rowGroupSize });
  // Warm-up: calibrates auto's cost model (cached afterwards) and compiles the GPU kernel once.
  for (const c of contenders) await runOnce(ds.path, w.preset, c.spec);
  const rates = new Map<string, number[]>(contenders.map((c) => [c.label, []]));
  let placement: PipelineMetrics['placement'] = null;
  const orders = permutations(contenders);
  for (let r = 0; r < reps; r++) {
    // Repetition r runs the contenders in the r-th of all their orders, and each run starts after
    // a pause: webgpu's llvmpipe threads and garbage from its run slow whichever runs next. (A
    // rotation of one order, used before, keeps every contender's predecessor: auto always ran
    // right after webgpu and printed 0.84-0.95x of cpu with the very same cpu path.)
    for (const c of orders[r % orders.length]!) {
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
      const { rowsPerSec, metrics } = await runOnce(ds.path, w.preset, c.spec);
      rates.get(c.label)!.push(rowsPerSec);
      if (c.label === 'auto') placement = metrics.placement;
    }
  }
  const bestSingle = Math.max(...contenders.filter((c) => c.label !== 'auto').map((c) => median(rates.get(c.label)!)));
  const rows = contenders.map((c) => {
    const xs = rates.get(c.label)!;
    return [c.label, fmtRate(median(xs)), `${fmtRate(Math.min(...xs))} – ${fmtRate(Math.max(...xs))}`, `${(median(xs) / bestSingle).toFixed(2)}×`];
  });
  printTable(`${w.preset}: ${fmtInt(w.rows)} rows, ${reps} interleaved runs each (rows/s)`, ['backend', 'median', 'min – max', 'vs best single'], rows);
  const measured = Object.entries(placement?.measured ?? {})
    .map(([k, m]) => `${k} ${m.runMs.toFixed(0)} ms (${m.fixedMs.toFixed(0)} fixed + ${m.perBatchMs.toFixed(1)}/batch)`)
    .join(', ');
  log(
    `auto chose ${placement?.chosen} (${placement?.basis}): features ${JSON.stringify(placement?.features)}; measured run: ${measured || '-'}; cost model ms/batch alone: ${JSON.stringify(placement?.singleMs)}`,
  );
  results.push({ preset: w.preset, rows: w.rows, rates: Object.fromEntries(rates), placement });
}
if (values.json) emitJson({ machine: machine(), results });
