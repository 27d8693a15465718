/** `sluice gen`: write a preset's seeded synthetic data to Parquet. */
import { generateDataset } from '../../gen/generate.js';
import { int, need, UsageError, type Values } from '../args.js';
import { Progress } from '../progress.js';
import { preset } from './plan.js';

export async function cmdGen(values: Values): Promise<number> {
  const name = need(values, 'preset');
  preset(name);
  const rows = int(values, 'rows');
  if (rows === 0) throw new UsageError('--rows must be at least 1');
  const out = need(values, 'out');
  const progress = new Progress(`gen ${name}`, rows, 'rows', !!values.quiet);
  const r = await generateDataset({
    preset: name,
    rows,
    out,
    seed: int(values, 'seed', 42),
    rowGroupSize: int(values, 'row-group-size', 100_000),
    onProgress: (done: number) => progress.update(done),
  });
  progress.done();
  process.stderr.write(`wrote ${r.rows} rows to ${out} (${(r.bytes / 1e6).toFixed(1)} MB) in ${r.seconds.toFixed(1)} s\n`);
  return 0;
}
