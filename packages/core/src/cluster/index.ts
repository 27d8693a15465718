/**
 * `@sluice/core/cluster`: preprocessing on many machines, coordinated by Redis Streams
 * (docs/cluster.md). Submit a job once; start workers anywhere; trainers read batches from any
 * worker over the `sluice serve` protocol.
 *
 * @example
 * import { buildJob, submitJob, startWorker } from '@sluice/core/cluster';
 * await submitJob(redis, await buildJob({ name: 'ctr', plan: 'plan.json', input: 'day1.parquet' }));
 * const w = await startWorker({ redis: 'redis://127.0.0.1:6379', job: 'ctr', port: 8081 });
 */
export { buildJob, submitJob, loadJob, planSplits, splitOf, describeSplit, type JobSpec, type JobRequest, type Split } from './job.js';
export { startWorker, type WorkerOptions, type ClusterWorker } from './worker.js';
export { clusterStatus, formatStatus, type ClusterStatus, type WorkerStatus } from './status.js';
export { jobKeys, type JobKeys } from './keys.js';
