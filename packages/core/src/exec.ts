/**
 * `@sluice/core/exec`: the part of core that runs a plan on columns, for backend worker threads.
 *
 * A worker thread loads its modules afresh. The full `@sluice/core` entry also brings the
 * Parquet reader, Apache Arrow, RxJS, the HTTP server and client: about 200 ms of module loading
 * per thread on the development VM, against about 15 ms for this subset. Backends start a worker
 * per core, and `backend: "auto"` starts one backend per op while it calibrates, so that was most
 * of a first auto run's op microbenchmarks.
 *
 * @example
 * import { executePlan, loadPlan, typeCheckPlan } from '@sluice/core/exec';
 */
export * from './column.js';
export * from './errors.js';
export { OPS } from './ops/index.js';
export type { OpContext } from './ops/types.js';
export { loadPlan, typeCheckPlan, type TypedPlan } from './plan/load.js';
export { executePlan, stateFromJSON, type KernelOverride, type KernelOverrides, type PlanState, type RowLocator } from './plan/execute.js';
export { packColumns, unpackColumns, type ColumnDesc, type PackedColumns } from './io/pack.js';
