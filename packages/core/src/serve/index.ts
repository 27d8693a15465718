/**
 * `@sluice/core/serve`: serve a pipeline's batches over HTTP by sequence number (`sluice serve`).
 *
 * @example
 * import { createBatchServer } from '@sluice/core/serve';
 */
export { createBatchServer, type BatchServer, type ServeOptions } from './server.js';
export { BatchStore, type BatchStoreOptions } from './store.js';
export { batchToMsgpack, batchToArrowStream, negotiate, ARROW_STREAM, MSGPACK, type BodyFormat } from './encode.js';
