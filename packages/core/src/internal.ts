/**
 * `@sluice/core/internal`: everything the sibling packages (backends, benchmarks, tests) reach
 * below the curated public API of `@sluice/core`. Not a stable interface: names here move.
 */
export * from '@sluice/ops';
export { eliminateRedundant, countOps, type Removal, type RewriteResult } from './plan/optimize.js';
export { readColumnStats, type ColumnStats } from './plan/stats.js';
export {
  buildGraph,
  scheduleStages,
  executeGraph,
  graphContext,
  nodeOps,
  FUSIBLE_OPS,
  type GraphNode,
  type PlanGraph,
  type DeviceOf,
  type Stage,
  type Schedule,
  type StagedPlan,
  type KernelLimit,
  type ScheduleOptions,
  type GraphRun,
} from './plan/graph.js';
export { explainPlan, explainStaged, type Explain, type ExplainStage, type ExplainOptions } from './plan/explain.js';
export {
  calibrate,
  predictOps,
  placeFeatures,
  provision,
  autoCandidates,
  costModelCachePath,
  type CostModel,
  type OpCost,
  type Placement,
  type Provision,
} from './placement/cost.js';
export { autoBackend, autoPlacement } from './placement/auto.js';
export {
  candidatePlacements,
  chooseMeasured,
  measureCandidates,
  PROBE_HOPELESS,
  predictRun,
  readMeasurements,
  writeMeasurements,
  calibrationCachePath,
  type Candidate,
  type Measurement,
} from './placement/calibration.js';
export { workerExecArgv } from './util/worker-argv.js';
export { registerBackend, backendNames, createBackend, installedBackendPackages, readerKernels, type BackendRegistration } from './backend/registry.js';
export type { Backend, BackendFactory, Capabilities, CostReport } from './backend/types.js';
export { inlineCpuBackend } from './backend/inline.js';
export { traceExecution, elementCount, type OpVisit } from './backend/work.js';
export { DecoderPool, type FileMeta } from './reader/decoder-pool.js';
export { openDataset, checkColumns, resolveInputs, type Dataset, type Unit } from './reader/dataset.js';
export { resolveS3Access, type S3Access } from './reader/s3/access.js';
export { S3Client, type S3Bytes, type S3RetryOptions } from './reader/s3/client.js';
export { S3Error } from './reader/s3/errors.js';
export { rowGroupRanges, s3Concurrency, openS3Object, fetchRowGroup } from './reader/s3/object.js';
export { resolveS3Input } from './reader/s3/list.js';
export { isS3Url, parseS3Url, s3Url } from './reader/s3/url.js';
export { columnFromVector, arrowColumnType } from './reader/arrow.js';
export { readChunks, epochWindows, START, type Chunk, type Cursor, type SourceOptions } from './stream/source.js';
export { assembleBatch, batchLayout, mergePacks, packRows, type Batch, type BatchLayout, type Pack, type ProcessedChunk, type Segment } from './batch/index.js';
export { Flow, source, preprocess, batch, prefetch, cursorAfter, type BatchOptions } from './stream/operators.js';
export { fit, openInput } from './pipeline/fit.js';
export { pipeline, Pipeline, type IteratorState, type PipelineInfo, type PipelineMetrics, type PipelineOptions } from './pipeline/pipeline.js';
export { registerPipelineMetrics, type MetricsSource, type PipelineMetricsOptions } from './pipeline/prometheus.js';
export { sumMetrics } from './pipeline/metrics.js';
export { batchToArrow } from './output/batch-arrow.js';
export { ParquetFileWriter, writeParquetTable, type ParquetWriteOptions } from './output/parquet-write.js';
export { chartsFor, parseBenchOutput, renderReport, reportMachine, type BenchDoc, type ChartSpec } from './report/report.js';
export { readFooter } from './reader/parquet/check.js';
export { chunkPages, codecPages, snappyPages } from './reader/parquet/page.js';
export { nativePageZstd, wasmPageZstd } from './reader/zstd.js';
export type { Zstd } from './reader/parquet/page.js';
export { jsSnappy, pageSnappy, wasmSnappy, type Snappy } from './reader/parquet/snappy.js';
export { levelsJs, rleHybridJs } from './reader/parquet/rle.js';
export { levels, rleHybrid, rleIndicesWithNulls, rleKernel, MIN_WASM_INDICES, MIN_WASM_LEVELS } from './reader/parquet/rle-wasm.js';
export { Rng } from './util/rng.js';
