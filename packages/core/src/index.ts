/**
 * @sluice/core — stream preprocessed recommendation-model training data from Parquet files.
 *
 * @example
 * import { pipeline } from '@sluice/core';
 * for await (const batch of pipeline('plan.json', { input: 'train.parquet' })) console.log(batch.rows);
 */
export * from './column.js';
export * from './errors.js';
export { OPS } from './ops/index.js';
export { OpDataError, OpPlanError, type OpContext, type OpDef, type StatefulOpDef } from './ops/types.js';
export type { BackendSpec, FeatureSpec, OpSpec, PlanSpec, ShuffleSpec } from './plan/types.js';
export { loadPlan, typeCheckPlan, DEFAULT_BATCH_SIZE, DEFAULT_PREFETCH, type Plan, type PlanFeature, type PlanOp, type TypedFeature, type TypedPlan } from './plan/load.js';
export { executePlan, fitPlan, runFeature, runOps, stateFromJSON, stateToJSON, statefulOps, stateKey, type KernelOverride, type KernelOverrides, type PlanState, type RowLocator } from './plan/execute.js';
export { eliminateRedundant, countOps, type Removal, type RewriteResult } from './plan/optimize.js';
export { readColumnStats, type ColumnStats } from './plan/stats.js';
export { buildGraph, scheduleStages, executeGraph, graphContext, nodeOps, FUSIBLE_OPS, type GraphNode, type PlanGraph, type DeviceOf, type Stage, type Schedule, type KernelLimit, type ScheduleOptions, type GraphRun } from './plan/graph.js';
export { explainPlan, explainStaged, presetSchemaFor, typedForExplain, type Explain, type ExplainStage, type ExplainOptions, type StagedPlan } from './plan/explain.js';
export { calibrate, predictOps, placeFeatures, provision, autoCandidates, costModelCachePath, type CostModel, type OpCost, type Placement, type Provision } from './plan/cost.js';
export { autoBackend, autoPlacement } from './backend/auto.js';
export { candidatePlacements, chooseMeasured, measureCandidates, PROBE_HOPELESS, predictRun, readMeasurements, writeMeasurements, calibrationCachePath, type Candidate, type Measurement } from './plan/calibration.js';
export { packColumns, unpackColumns, type ColumnDesc, type PackedColumns } from './io/pack.js';
export { workerExecArgv } from './util/worker-argv.js';
export { registerBackend, backendNames, createBackend, installedBackendPackages, readerKernels, type BackendRegistration } from './backend/registry.js';
export type { Backend, BackendFactory, Capabilities, CostReport } from './backend/types.js';
export { inlineCpuBackend } from './backend/inline.js';
export { traceExecution, elementCount, type OpVisit } from './backend/work.js';
export { DecoderPool, type FileMeta } from './io/decoder.js';
export { openDataset, checkColumns, resolveInputs, type Dataset, type Unit } from './io/dataset.js';
export { columnFromVector, arrowColumnType } from './io/arrow.js';
export { readChunks, epochWindows, START, type Chunk, type Cursor, type SourceOptions } from './stream/source.js';
export { assembleBatch, batchLayout, mergePacks, packRows, type Batch, type BatchLayout, type Pack, type ProcessedChunk, type Segment } from './stream/batch.js';
export { Flow, source, preprocess, batch, prefetch, cursorAfter, type BatchOptions } from './stream/operators.js';
export { LookaheadCache, LookaheadSummary, type CacheBudget, type IdArray, type LookaheadOptions, type StepHints, type TableHints } from './cache/lookahead.js';
export { lookahead, lookaheadBy, batchIds, type HintedBatch, type LookaheadOperatorOptions } from './stream/lookahead.js';
export { fit, openInput } from './fit.js';
export { pipeline, Pipeline, type IteratorState, type PipelineInfo, type PipelineMetrics, type PipelineOptions } from './pipeline.js';
export { PRESETS, getPreset, presetNames, type Preset } from './gen/presets.js';
export { generateDataset, generateBatches, type GenerateOptions, type GenerateResult } from './gen/generate.js';
export { ParquetFileWriter, writeParquetTable, type ParquetWriteOptions } from './io/parquet-write.js';
export { batchToArrow } from './io/batch-arrow.js';
export { demoDataset, cacheDir, DEMO_ROWS } from './demo.js';
export * from './transport/index.js';
export { createBatchServer, type BatchServer, type ServeOptions } from './serve/server.js';
export { BatchStore, type BatchStoreOptions } from './serve/store.js';
export { batchToMsgpack, batchToArrowStream, negotiate, ARROW_STREAM, MSGPACK, type BodyFormat } from './serve/encode.js';
export { createClient, decodeMsgpackBatch, HttpError, type BatchClient, type ClientBatch, type ClientTable, type ClientOptions, type BatchesOptions, type ServerInfo } from './client/client.js';
