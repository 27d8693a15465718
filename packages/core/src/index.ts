/**
 * `@sluice/core`: stream preprocessed recommendation-model training data from Parquet files.
 *
 * This is the curated public API: what a training script calls. Sibling packages and tools reach
 * the rest through `@sluice/core/internal`; HTTP serving, transports, the lookahead cache and the
 * data generator have subpaths of their own (`/serve`, `/transport`, `/lookahead`, `/gen`).
 *
 * @example
 * import { pipeline } from '@sluice/core';
 * for await (const batch of pipeline('plan.json', { input: 'train.parquet' })) console.log(batch.rows);
 */
export { pipeline, Pipeline, type IteratorState, type PipelineInfo, type PipelineMetrics, type PipelineOptions } from './pipeline/pipeline.js';
export { Flow, source, preprocess, batch, prefetch, type BatchOptions } from './stream/operators.js';
export type { Batch } from './batch/index.js';
export type { Chunk, Cursor, SourceOptions } from './stream/source.js';
export { loadPlan, typeCheckPlan, SluiceError, PlanError, InputError, DataError, type ErrorWhere } from '@sluice/ops';
export type { BackendSpec, FeatureSpec, OpSpec, PlanSpec, ShuffleSpec, Plan, TypedPlan } from '@sluice/ops';
export { registerBackend, backendNames, type BackendRegistration } from './backend/registry.js';
export type { Backend, BackendFactory, Capabilities, CostReport } from './backend/types.js';
export { fit } from './pipeline/fit.js';
export type { FitOptions } from './pipeline/options.js';
export { registerPipelineMetrics, type MetricsSource, type PipelineMetricsOptions } from './pipeline/prometheus.js';
