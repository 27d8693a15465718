/** `sluice demo`: generate a small RM1 data set (cached) and stream it through the pipeline. */
import { loadPlan } from '@sluice/ops';
import type { Batch } from '../../batch/index.js';
import { DEMO_ROWS, demoDataset } from '../../gen/demo.js';
import { getPreset } from '../../gen/presets.js';
import { pipeline } from '../../pipeline/pipeline.js';
import { int, type Values } from '../args.js';
import { onInterrupt, removePartials } from '../interrupt.js';
import { checkBackendArg } from '../backend.js';
import { Progress, formatTable, peakRssMB } from '../progress.js';

export async function cmdDemo(values: Values): Promise<number> {
  const rows = int(values, 'rows', DEMO_ROWS, { min: 1 });
  const seed = int(values, 'seed', 42);
  // Before the data is generated (200,000 rows by default), not after.
  checkBackendArg(values);
  const quiet = !!values.quiet;
  let generated = false;
  // demoDataset writes the cache entry as `<file>.partial-<pid>` and renames it: Ctrl-C removes that.
  let generating = (): void => undefined;
  const genProgress = new Progress('gen rm1', rows, 'rows', quiet);
  const file = await demoDataset({
    rows,
    seed,
    onGenerate: (f) => {
      generated = true;
      generating = onInterrupt(() => removePartials(f));
      if (!quiet) process.stderr.write(`generating ${rows.toLocaleString('en-US')} RM1 rows (seed ${seed}) -> ${f}\n`);
    },
    onProgress: (d) => genProgress.update(d),
  }).finally(() => generating());
  genProgress.done();
  if (!generated && !quiet) process.stderr.write(`using cached ${file}\n`);
  const planSpec = getPreset('rm1').defaultPlan();
  const plan = loadPlan(planSpec);
  const p = pipeline(plan, { input: file, ...(values.backend ? { backend: values.backend as string } : {}) });
  const info = await p.info();
  const progress = new Progress('demo', info.rowsPerEpoch, 'rows', quiet);
  const t0 = performance.now();
  let n = 0;
  let first: Batch | null = null;
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
  process.stdout.write(
    [
      `Sluice demo: RM1 preset, ${plan.features.length} features (${info.layout.dim} dense columns, ${info.layout.sparseKeys.length} sparse keys), backend ${info.backend}`,
      '',
      formatTable(
        ['metric', 'value'],
        [
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
        ],
      ),
      '',
      'Next: `npx sluice plan --preset rm1 > plan.json`, then `npx sluice run --plan plan.json --input ' + file + ' --output out.parquet`.',
      '',
    ].join('\n'),
  );
  return 0;
}

function minMax(v: BigInt64Array): [string, string] {
  if (v.length === 0) return ['-', '-'];
  let lo = v[0]!;
  let hi = v[0]!;
  for (const x of v) {
    if (x < lo) lo = x;
    if (x > hi) hi = x;
  }
  return [String(lo), String(hi)];
}
