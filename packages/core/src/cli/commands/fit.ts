/** `sluice fit`: build the vocabularies of a plan's stateful ops and save them as JSON. */
import { renameSync, writeFileSync } from 'node:fs';
import { stateToJSON } from '@sluice/ops';
import { fit } from '../../pipeline/fit.js';
import { inputs, need, type Values } from '../args.js';
import { Progress } from '../progress.js';

export async function cmdFit(values: Values): Promise<number> {
  const out = need(values, 'out');
  let progress: Progress | null = null;
  const { plan, state, rows } = await fit(need(values, 'plan'), {
    input: inputs(values),
    onProgress: (done, total) => {
      (progress ??= new Progress('fit', total, 'rows', !!values.quiet)).update(done);
    },
  });
  (progress as Progress | null)?.done();
  const json = stateToJSON(plan, state);
  writeAtomic(out, JSON.stringify(json) + '\n');
  const sizes = Object.entries(json.ops).map(([k, v]) => `${k}: ${(v as { state: { keys?: unknown[] } }).state.keys?.length ?? '?'} ids`);
  process.stderr.write(`fitted ${Object.keys(json.ops).length} stateful op(s) over ${rows} rows -> ${out}${sizes.length ? '\n  ' + sizes.join('\n  ') : ''}\n`);
  return 0;
}

/** Writes through a temporary file and a rename, so a reader never sees half a state file. */
function writeAtomic(path: string, text: string): void {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}
