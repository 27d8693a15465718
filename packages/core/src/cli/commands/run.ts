/** `sluice run`: preprocess the input and write one column per feature to Parquet, in input order. */
import { existsSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { loadPlan } from '@sluice/ops';
import { assembleBatch } from '../../batch/index.js';
import { batchToArrow } from '../../output/batch-arrow.js';
import { ParquetFileWriter } from '../../output/parquet-write.js';
import { pipeline } from '../../pipeline/pipeline.js';
import { START } from '../../stream/source.js';
import { need, pipelineOptions, type Values } from '../args.js';
import { Progress } from '../progress.js';

export async function cmdRun(values: Values): Promise<number> {
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
    try {
      if (existsSync(tmp)) unlinkSync(tmp);
    } catch {
      /* nothing to clean */
    }
    throw e;
  }
  renameSync(tmp, output);
  progress.done();
  process.stderr.write(
    `wrote ${rows} rows x ${info.plan.features.length} features${plan.label ? ' + label' : ''} to ${output} (${(statSync(output).size / 1e6).toFixed(1)} MB) on backend ${info.backend}\n`,
  );
  return 0;
}
