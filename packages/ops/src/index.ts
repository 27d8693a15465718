/**
 * `@sluice/ops`: the column model, the operator kernels (the reference every backend matches) and
 * the plan (load, type-check, execute). It is the bottom layer: backend worker threads import it
 * and nothing heavier, so a worker starts without the Parquet reader, Arrow or RxJS.
 *
 * @example
 * import { executePlan, loadPlan, typeCheckPlan } from '@sluice/ops';
 */
export * from './column.js';
export * from './scatter.js';
export { copyBytes, copyWords } from './words.js';
export * from './errors.js';
export * from './ops/index.js';
export * from './ops/types.js';
export type * from './plan/types.js';
export * from './plan/load.js';
export * from './plan/execute.js';
export * from './pack.js';
export { HEX_DIGITS } from './ops/hex2int.js';
export { show } from './util/show.js';
export { parseJsonText, readJsonFile } from './util/json-text.js';
export { defineRelease } from './util/release.js';
