/**
 * `@sluice/core/gen`: the seeded, Criteo-shaped data generator and its workload presets (RM1-RM5).
 *
 * @example
 * import { generateDataset } from '@sluice/core/gen';
 */
export { PRESETS, getPreset, presetNames, type Preset } from './presets.js';
export { generateDataset, generateBatches, type GenerateOptions, type GenerateResult } from './generate.js';
export { demoDataset, cacheDir, DEMO_ROWS } from './demo.js';
export { ParquetFileWriter, writeParquetTable, type ParquetWriteOptions } from '../output/parquet-write.js';
export { presetSchemaFor, typedForExplain } from './schema.js';
