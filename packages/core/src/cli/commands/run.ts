/** `sluice run`: preprocess the input and write one column per feature to Parquet, in input order. */
import { statSync } from 'node:fs';
import { loadPlan } from '@sluice/ops';
import { assembleBatch } from '../../batch/index.js';
import { batchToArrow } from '../../output/batch-arrow.js';
import { ParquetFileWriter } from '../../output/parquet-write.js';
import { pipeline } from '../../pipeline/pipeline.js';
import { START } from '../../stream/source.js';
import { inputs, need, pipelineOptions, planArg, type Values } from '../args.js';
import { checkBackendArg } from '../backend.js';
import { partialFile } from '../interrupt.js';
import { checkOutputPath, refuseOverwritingInputs } from '../overwrite.js';
import { Progress } from '../progress.js';

export async function cmdRun(values: Values): Promise<number> {
  const planPath = planArg(values);
  const output = need(values, 'output');
  checkBackendArg(values);
  checkOutputPath('--output', output);
  const plan = loadPlan(planPath);
  await refuseOverwritingInputs(output, { inputs: inputs(values, plan), plan: planPath, ...(typeof values.state === 'string' ? { state: values.state } : {}) });
  const p = pipeline(plan, pipelineOptions(values, plan));
  const info = await p.info();
  const progress = new Progress('run', info.rowsPerEpoch * plan.epochs, 'rows', !!values.quiet);
  // Write to a temporary file and rename at the end, so a failed or interrupted run never leaves a partial output.
  const out = partialFile(output);
  let rows = 0;
  try {
    const writer = await ParquetFileWriter.open(out.path);
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
      throw e;
    }
    out.commit();
  } catch (e) {
    out.discard();
    throw e;
  }
  progress.done();
  process.stdout.write(
    `wrote ${rows} rows x ${info.plan.features.length} features${plan.label ? ' + label' : ''} to ${output} (${(statSync(output).size / 1e6).toFixed(1)} MB) on backend ${info.backend}\n`,
  );
  return 0;
}
