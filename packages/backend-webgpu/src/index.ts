/**
 * @sluice/backend-webgpu — importing it registers the `webgpu` backend with core: fused WGSL
 * kernels on Dawn (the `webgpu` npm package), with string and stateful ops co-running on the CPU.
 *
 * @example
 * import '@sluice/backend-webgpu';
 * import { pipeline } from '@sluice/core';
 * for await (const b of pipeline(plan, { input: 'train.parquet', backend: 'webgpu' })) train(b);
 */
import { registerBackend } from '@sluice/core';
import { createWebGpuBackend } from './backend.js';

registerBackend('webgpu', createWebGpuBackend);

export { createWebGpuBackend, type WebGpuBackendOptions } from './backend.js';
export { ADAPTER_HELP, webgpuUnavailable } from './device.js';
export { placeFeature, type FeaturePlacement } from './placement.js';
