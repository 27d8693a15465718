/** `sluice fit`: build the vocabularies of a plan's stateful ops and save them as JSON. */
import { writeFileSync } from 'node:fs';
import { loadPlan, stateToJSON } from '@sluice/ops';
import { fit } from '../../pipeline/fit.js';
import { inputs, need, planArg, type Values } from '../args.js';
import { partialFile } from '../interrupt.js';
import { checkOutputPath, refuseOverwritingInputs } from '../overwrite.js';
import { Progress } from '../progress.js';

export async function cmdFit(values: Values): Promise<number> {
  const output = need(values, 'output');
  const planPath = planArg(values);
  checkOutputPath('--output', output);
  const loaded = loadPlan(planPath);
  const input = inputs(values, loaded);
  await refuseOverwritingInputs(output, { inputs: input, plan: planPath });
  let progress: Progress | null = null;
  // The plan as loaded above: fit() takes it as it is, without reading the file again.
  const { plan, state, rows } = await fit(loaded, {
    input,
    onProgress: (done, total) => {
      (progress ??= new Progress('fit', total, 'rows', !!values.quiet)).update(done);
    },
  });
  (progress as Progress | null)?.done();
  const json = stateToJSON(plan, state);
  // Through a temporary file and a rename, so a reader never sees half a state file.
  const out = partialFile(output);
  try {
    writeFileSync(out.path, JSON.stringify(json) + '\n');
    out.commit();
  } catch (e) {
    out.discard();
    throw e;
  }
  const sizes = Object.entries(json.ops).map(([k, v]) => `${k}: ${(v as { state: { keys?: unknown[] } }).state.keys?.length ?? '?'} ids`);
  process.stdout.write(
    `fitted ${Object.keys(json.ops).length} stateful op(s) over ${rows} rows -> ${output}${sizes.length ? '\n  ' + sizes.join('\n  ') : ''}\n`,
  );
  return 0;
}
