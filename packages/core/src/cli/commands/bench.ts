/** `sluice bench`: run the pipeline to ready batches and report throughput, stage times and peak RSS. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { loadPlan } from '@sluice/ops';
import { pipeline } from '../../pipeline/pipeline.js';
import { inputs, pipelineOptions, planArg, UsageError, type Values } from '../args.js';
import { Progress, formatTable, peakRssMB } from '../progress.js';
import { checkBackendArg } from '../backend.js';
import { checkOutputPath, refuseOverwritingInputs } from '../overwrite.js';
import { renderReport } from '../../report/report.js';

/** The timeline's sampling interval: a point per quarter second keeps a long run's JSON small. */
const SAMPLE_MS = 250;

export async function cmdBench(values: Values): Promise<number> {
  const plan = loadPlan(planArg(values));
  checkBackendArg(values);
  const report = values.report;
  if (report !== undefined && (typeof report !== 'string' || report === '')) throw new UsageError('--report takes the HTML file to write');
  if (typeof report === 'string') {
    // Before the bench runs: a report it cannot write would otherwise fail only once it is over.
    checkOutputPath('--report', report);
    await refuseOverwritingInputs(report, { inputs: inputs(values, plan), plan: planArg(values) }, '--report');
  }
  const p = pipeline(plan, pipelineOptions(values, plan));
  const info = await p.info();
  const progress = new Progress('bench', info.rowsPerEpoch * plan.epochs, 'rows', !!values.quiet || !!values.json);
  let t0 = performance.now();
  let rows = 0;
  let bytes = 0;
  // rows/s between samples, for the report's plot of the run.
  const timeline = { seconds: [] as number[], rowsPerSecond: [] as number[] };
  let last = { t: t0, rows: 0 };
  const sample = (now: number): void => {
    timeline.seconds.push(+((now - t0) / 1000).toFixed(3));
    timeline.rowsPerSecond.push(((rows - last.rows) * 1000) / (now - last.t));
    last = { t: now, rows };
  };
  // With auto, the run first chooses its backend (calibration, then probes of the candidates
  // the cache lacks: seconds on a first run), all before its first batch. That time is left out
  // of the timed figures and reported apart, so rows/s measures the backend auto chose, the same
  // as naming that backend. The run reports how long choosing took once its stages exist, that
  // is by its first batch; the clock's start moves past it then.
  let choosingMs: number | null = null;
  const skipChoosing = (): void => {
    if (choosingMs !== null) return;
    choosingMs = p.metrics().placement?.choosingMs ?? 0;
    t0 += choosingMs;
    last = { t: t0, rows: 0 };
  };
  for await (const b of p) {
    skipChoosing();
    rows += b.rows;
    const now = performance.now();
    if (now - last.t >= SAMPLE_MS) sample(now);
    bytes += b.dense.data.byteLength + b.sparse.values.byteLength + b.sparse.lengths.byteLength + (b.labels?.byteLength ?? 0);
    progress.update(rows);
    // Done with it: its memory may hold a later batch (Batch.release), as in a training loop.
    b.release?.();
  }
  skipChoosing();
  const end = performance.now();
  // The last stretch too, so a run shorter than SAMPLE_MS still has a point.
  if (rows > last.rows && end > last.t) sample(end);
  const seconds = (end - t0) / 1000;
  progress.done();
  const m = p.metrics();
  const placement = m.placement;
  const result = {
    bench: 'sluice',
    backend: info.backend,
    // auto's choice as metrics().placement has it: chosen, basis, choosingMs (not in seconds), ...
    placement,
    rows,
    batches: m.batches,
    seconds,
    rowsPerSecond: rows / seconds,
    batchesPerSecond: m.batches / seconds,
    mbPerSecond: bytes / 1e6 / seconds,
    stages: { sourceWaitMs: m.sourceWaitMs, preprocessMs: m.preprocessMs, batchMs: m.batchMs, consumerWaitMs: m.consumerWaitMs },
    peakRssMB: peakRssMB(),
    lastReport: m.lastReport,
    reportTotals: m.reportTotals,
    backendSummary: m.backendSummary,
    timeline,
  };
  if (typeof report === 'string') {
    const on = placement === null ? info.backend : `${info.backend} (chosen: ${placement.chosen})`;
    mkdirSync(dirname(report), { recursive: true });
    writeFileSync(report, renderReport([result], { title: `sluice bench: ${plan.batchSize}-row batches on ${on}` }));
    if (!values.json) process.stderr.write(`report: ${report}\n`);
  }
  if (values.json) {
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
    return 0;
  }
  process.stdout.write(
    formatTable(
      ['metric', 'value'],
      [
        ['backend', info.backend],
        ...(placement === null
          ? []
          : [
              ['chosen by auto', `${placement.chosen} (${BASIS[placement.basis]})`],
              ['choosing s (outside the timed run)', (placement.choosingMs / 1000).toFixed(2)],
            ]),
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

/** How auto's choice was made, in `sluice explain`'s words. */
const BASIS = { measured: 'fastest measured', model: 'cost model', given: 'placement written in the plan' } as const;

function fmtNumber(v: number): string {
  return Number.isInteger(v) ? v.toLocaleString('en-US') : Math.abs(v) >= 100 ? v.toFixed(1) : v.toPrecision(4);
}
