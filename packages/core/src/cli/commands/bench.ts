/** `sluice bench`: run the pipeline to ready batches and report throughput, stage times and peak RSS. */
import { loadPlan } from '@sluice/ops';
import { pipeline } from '../../pipeline/pipeline.js';
import { pipelineOptions, planArg, type Values } from '../args.js';
import { Progress, formatTable, peakRssMB } from '../progress.js';

export async function cmdBench(values: Values): Promise<number> {
  const plan = loadPlan(planArg(values));
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
  process.stdout.write(
    formatTable(
      ['metric', 'value'],
      [
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
      ],
    ) + '\n',
  );
  return 0;
}

function fmtNumber(v: number): string {
  return Number.isInteger(v) ? v.toLocaleString('en-US') : Math.abs(v) >= 100 ? v.toFixed(1) : v.toPrecision(4);
}
