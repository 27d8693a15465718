/**
 * @sluice/backend-cpu — importing it registers the worker-pool `cpu` backend with core.
 *
 * @example
 * import '@sluice/backend-cpu';
 * import { pipeline } from '@sluice/core';
 * for await (const b of pipeline(plan, { input: 'train.parquet', backend: { name: 'cpu', workers: 2 } })) train(b);
 */
import { registerBackend } from '@sluice/core';
import { cpuReaderKernels, createCpuBackend } from './backend.js';

registerBackend('cpu', createCpuBackend, { readerKernels: cpuReaderKernels });

export { cpuReaderKernels, createCpuBackend, type CpuBackendOptions } from './backend.js';
export type { WorkerData, WorkerFailure, WorkerResult, WorkerTask } from './protocol.js';
