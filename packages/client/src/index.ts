/**
 * `@sluice/client`: fetch ready batches from `sluice serve` (or a cluster's workers) over HTTP.
 * It loads no Parquet reader, no server and no RxJS, so a trainer process stays small; apache-arrow
 * is loaded on the first `BatchClient.arrow` call (the Arrow reader is `@sluice/client/arrow`).
 *
 * @example
 * import { createClient } from '@sluice/client';
 * const client = createClient('http://127.0.0.1:8080');
 * for await (const b of client.batches()) console.log(b.seq, b.rows);
 */
export {
  createClient,
  decodeMsgpackBatch,
  HttpError,
  type BatchClient,
  type ClientBatch,
  type ClientTable,
  type ClientOptions,
  type BatchesOptions,
  type ServerInfo,
} from './client.js';
