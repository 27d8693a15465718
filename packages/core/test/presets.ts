/**
 * Small files of every preset for the tests that compare two ways of reading them (conformance,
 * other writers, pushdown under shuffle): enough rows for several row groups and chunks, few
 * enough for CI. Shared so those suites read the same shapes.
 */
import { join } from 'node:path';
import { generateDataset, presetNames } from '../src/gen/index.js';

/** Rows per preset. */
export const PRESET_ROWS: Readonly<Record<string, number>> = {
  rm1: 3000,
  rm2: 300,
  rm3: 300,
  rm4: 300,
  rm5: 300,
  'piper-d1': 3000,
  'rap-plan0': 2000,
  'rap-plan1': 2000,
  'rap-plan2': 1500,
  'rap-plan3': 1000,
};

/** The presets that have a row count above, in the generator's order. */
export const SMALL_PRESETS: readonly string[] = presetNames().filter((p) => p in PRESET_ROWS);

/** Several row groups per file (700 or 120 rows): a 1000-row window spans two to nine of them. */
export const presetRowGroupSize = (preset: string): number => (PRESET_ROWS[preset]! > 1000 ? 700 : 120);

/** Writes `preset`'s small file as `dir/<preset>.parquet` (seed 11) and returns its path. */
export async function writePresetFile(dir: string, preset: string): Promise<string> {
  const out = join(dir, `${preset}.parquet`);
  await generateDataset({ preset, rows: PRESET_ROWS[preset]!, out, seed: 11, rowGroupSize: presetRowGroupSize(preset) });
  return out;
}
