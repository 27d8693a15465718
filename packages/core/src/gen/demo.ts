/**
 * The data `sluice demo` and the examples run on: an RM1 data set generated once into the cache
 * folder and reused.
 */
import { existsSync, mkdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { SluiceError } from '@sluice/ops';
import { generateDataset } from './generate.js';
import { cacheRoot } from '../util/cache.js';

/** Where `sluice demo` keeps generated data between runs (`SLUICE_CACHE_DIR` overrides it). */
export function cacheDir(): string {
  const base = cacheRoot();
  try {
    mkdirSync(base, { recursive: true });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why =
      code === 'EEXIST' || code === 'ENOTDIR'
        ? 'a file is in the way of the folder'
        : code === 'EACCES' || code === 'EPERM' || code === 'EROFS'
          ? 'it cannot be written here'
          : (e as Error).message;
    throw new SluiceError(`cannot use ${base} as the cache folder (set SLUICE_CACHE_DIR to another): ${why}`, {}, { cause: e });
  }
  return base;
}

export const DEMO_ROWS = 200_000;

/**
 * Path of the demo RM1 data set, generating it on first use. Generation writes a temporary file
 * and renames it, so an interrupted run never leaves a truncated cache entry.
 *
 * @example
 * const file = await demoDataset();
 * for await (const b of pipeline(getPreset('rm1').defaultPlan(), { input: file })) console.log(b.rows);
 */
export async function demoDataset(
  opts: { rows?: number; seed?: number; onGenerate?: (file: string) => void; onProgress?: (rows: number) => void } = {},
): Promise<string> {
  const rows = opts.rows ?? DEMO_ROWS;
  const seed = opts.seed ?? 42;
  const file = join(cacheDir(), `demo-rm1-${rows}-s${seed}.parquet`);
  if (existsSync(file)) return file;
  opts.onGenerate?.(file);
  const tmp = `${file}.partial-${process.pid}`;
  await generateDataset({ preset: 'rm1', rows, out: tmp, seed, rowGroupSize: 50_000, ...(opts.onProgress ? { onProgress: opts.onProgress } : {}) });
  renameSync(tmp, file);
  return file;
}
