import { columnLength, executePlan, type Column, type KernelOverride, type PlanState, type RowLocator, type TypedFeature, type TypedPlan } from '@sluice/ops';

/** One op application seen while tracing a chunk: which feature and op, and the column it read. */
export interface OpVisit {
  readonly feature: TypedFeature;
  /** Position of the op in the feature's chain. */
  readonly index: number;
  readonly input: Column;
}

/**
 * Runs a plan with core's reference kernels (exactly what {@link executePlan} computes) and calls
 * `visit` with the input column of every op, in execution order. Cost-model backends use it to
 * count the work really done (values, bytes, table sizes) without re-implementing the execution.
 *
 * @example
 * const out = traceExecution(plan, columns, state, locate, (v) => { bytes += columnBytes(v.input); });
 */
export function traceExecution(
  plan: TypedPlan,
  columns: ReadonlyMap<string, Column>,
  state: PlanState,
  locate: RowLocator | undefined,
  visit: (v: OpVisit) => void,
): Map<string, Column> {
  // executePlan consults the override of every op in plan order; an override that returns
  // undefined falls through to the reference kernel, so the n-th call is the n-th op of the plan.
  const order = plan.features.flatMap((feature) => feature.ops.map((_, index) => ({ feature, index })));
  let next = 0;
  const spy: KernelOverride = (input) => {
    const at = order[next++]!;
    visit({ feature: at.feature, index: at.index, input });
    return undefined;
  };
  const overrides = new Map(plan.features.flatMap((f) => f.ops.map((o) => [o.op, spy] as const)));
  return executePlan(plan, columns, state, locate, overrides);
}

/** Number of element values in a column: rows for scalars, list elements for lists, floats for fixed vectors. */
export function elementCount(c: Column): number {
  if (c.type === 'list') return elementCount(c.child);
  if (c.type === 'fixed') return c.values.length;
  return columnLength(c);
}
