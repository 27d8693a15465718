/**
 * `@sluice/core/serve`: serve a pipeline's batches over HTTP by sequence number (`sluice serve`).
 *
 * @example
 * import { createBatchServer } from '@sluice/core/serve';
 * const server = await createBatchServer('plan.json', { input: 'train.parquet' });
 * console.log(await server.listen(8080));
 */
export { createBatchServer, type BatchServer, type ServeOptions } from './server.js';
export { BatchStore, type BatchStoreOptions } from './store.js';
export type { GuardOptions, ConnectionGuard } from './guard.js';
export type { Body } from './shelf.js';
export { TargetError, parseTarget, type Route } from './target.js';
export { batchToMsgpack, batchToArrowStream, batchFromMsgpack, negotiate, ARROW_STREAM, MSGPACK, type BodyFormat, type BatchBody } from './encode.js';
export {
  createDashboard,
  DASHBOARD_PATH,
  METRICS_JSON_PATH,
  CLUSTER_PATH,
  type Dashboard,
  type DashboardOptions,
  type DashboardSnapshot,
} from './dashboard.js';
