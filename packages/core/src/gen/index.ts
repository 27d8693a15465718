/**
 * `@sluice/core/gen`: the seeded, Criteo-shaped data generator and its workload presets (PreSto RM1-RM5, PIPER, RAP).
 *
 * @example
 * import { generateDataset, getPreset } from '@sluice/core/gen';
 * await generateDataset({ preset: 'rm1', rows: 100_000, out: 'rm1.parquet' });
 * const plan = getPreset('rm1').defaultPlan();
 */
export { PRESETS, getPreset, presetNames, withIds, ID_CARDINALITIES, type IdCardinality, type Preset } from './presets.js';
export { generateDataset, generateBatches, type GenerateOptions, type GenerateResult } from './generate.js';
export { demoDataset, cacheDir, DEMO_ROWS } from './demo.js';
export { ParquetFileWriter, writeParquetTable, type ParquetWriteOptions } from '../output/parquet-write.js';
export { presetSchemaFor, typedForExplain } from './schema.js';
