/** `sluice gen`: write a preset's seeded synthetic data to Parquet. */
import { generateDataset } from '../../gen/generate.js';
import { ID_CARDINALITIES, withIds, type IdCardinality, type Preset } from '../../gen/presets.js';
import { int, need, UsageError, type Values } from '../args.js';
import { partialFile } from '../interrupt.js';
import { checkOutputPath } from '../overwrite.js';
import { Progress } from '../progress.js';
import { preset } from './plan.js';

export async function cmdGen(values: Values): Promise<number> {
  const name = need(values, 'preset');
  const base = preset(name);
  const rows = int(values, 'rows', undefined, { min: 1 });
  const output = need(values, 'output');
  const seed = int(values, 'seed', 42);
  const rowGroupSize = int(values, 'row-group-size', 100_000, { min: 1 });
  const ids = (values.ids ?? 'skewed') as IdCardinality;
  if (!ID_CARDINALITIES.includes(ids)) throw new UsageError(`--ids must be ${ID_CARDINALITIES.join(' or ')}, got "${String(values.ids)}"`);
  let shaped: Preset;
  try {
    shaped = withIds(base, ids);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  checkOutputPath('--output', output);
  const progress = new Progress(`gen ${name}`, rows, 'rows', !!values.quiet);
  // Under a temporary name until complete: an interrupted gen leaves no truncated file behind.
  const out = partialFile(output);
  let r: Awaited<ReturnType<typeof generateDataset>>;
  try {
    r = await generateDataset({ preset: shaped, rows, out: out.path, seed, rowGroupSize, onProgress: (done: number) => progress.update(done) });
    out.commit();
  } catch (e) {
    out.discard();
    throw e;
  }
  progress.done();
  process.stdout.write(`wrote ${r.rows} rows to ${output} (${(r.bytes / 1e6).toFixed(1)} MB) in ${r.seconds.toFixed(1)} s\n`);
  return 0;
}
