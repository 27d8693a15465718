/** Opening a plan's input (checked against the plan) and fitting its stateful ops: `sluice fit`. */
import { fitPlan, loadPlan, PlanError, typeCheckPlan, type Plan, type PlanSpec, type TypedPlan } from '@sluice/ops';
import { checkColumns, openDataset, type Dataset } from '../reader/dataset.js';
import { DecoderPool } from '../reader/decoder-pool.js';
import { readChunks, type Chunk } from '../stream/source.js';
import { checkFitOptions, type FitOptions } from './options.js';

/**
 * Opens the input's footers and checks the plan against them: every column exists in every file
 * with one type, and every op accepts what it gets. Errors name the file, feature and op.
 */
export async function openInput(
  plan: Plan,
  input: string | readonly string[] | null | undefined,
  pool: DecoderPool,
): Promise<{ dataset: Dataset; plan: TypedPlan }> {
  if (input === undefined || input === null) throw new PlanError('no input: pass { input } to pipeline() or set "input" in the plan');
  const dataset = await openDataset(typeof input === 'string' ? [input] : input, pool);
  const typed = typeCheckPlan(plan, dataset.schema, dataset.files[0]!.source, dataset.unsupported);
  checkColumns(dataset, typed.columns);
  return { dataset, plan: typed };
}

/**
 * Fits a plan's stateful ops (vocabularies) over its input in file order — what `sluice fit`
 * runs. Pass the result to `pipeline(plan, { fitState })`, or write `stateToJSON(plan, state)`.
 *
 * @example
 * const { plan, state } = await fit('plan.json', { input: 'train.parquet' });
 * for await (const b of pipeline(plan, { input: 'train.parquet', fitState: state })) train(b);
 */
export async function fit(
  planSource: PlanSpec | Plan | string,
  fitOptions: FitOptions = {},
): Promise<{ plan: TypedPlan; state: Map<string, unknown>; rows: number }> {
  const plan = loadPlan(planSource);
  const options = checkFitOptions(fitOptions);
  const pool = new DecoderPool(1, { verifyCrc: plan.spec.verifyCrc ?? true });
  try {
    const { dataset, plan: typed } = await openInput(plan, options.input ?? plan.input, pool);
    const columns = new Map(typed.columns.map((c) => [c, dataset.schema.get(c)!]));
    let rows = 0;
    const state = await fitPlan(typed, async function* (): AsyncGenerator<Chunk> {
      rows = 0;
      for await (const c of readChunks(dataset, pool, { columns, chunkRows: 65536, shuffle: null, shard: { rank: 0, worldSize: 1 }, epochs: 1 })) {
        yield c;
        rows += c.rows;
        options.onProgress?.(rows, dataset.totalRows);
      }
    });
    return { plan: typed, state, rows: dataset.totalRows };
  } finally {
    await pool.close();
  }
}
