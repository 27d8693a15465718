import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Field, Int32, Int64, List, Table, Utf8, makeBuilder, tableToIPC, type DataType, type Vector } from 'apache-arrow';
import * as pw from 'parquet-wasm';

/** What a `sluice` child process did. */
export interface SluiceRun {
  status: number;
  stdout: string;
  stderr: string;
}

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/**
 * Runs the built `sluice ...args` from the repository root with `env` over the process's own
 * environment (give it a SLUICE_CACHE_DIR of the test's); never rejects: a failure is its status.
 */
export function runSluice(args: readonly string[], env: Record<string, string> = {}): Promise<SluiceRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'packages', 'core', 'bin', 'sluice.js'), ...args],
      { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 256 << 20 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : (err as { code?: unknown }).code;
        resolve({ status: typeof code === 'number' ? code : -1, stdout, stderr });
      },
    );
  });
}

/** A fresh temporary directory. */
export function tempDir(prefix = 'sluice-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Builds an Arrow vector of the given type from JS values (null = null). */
export function vec(type: DataType, values: ReadonlyArray<unknown>): Vector {
  const b = makeBuilder({ type, nullValues: [null, undefined] });
  for (const v of values) b.append(v);
  return b.finish().toVector();
}

export const i32 = (values: ReadonlyArray<number | null>): Vector => vec(new Int32(), values);
export const i64 = (values: ReadonlyArray<bigint | null>): Vector => vec(new Int64(), values);
export const str = (values: ReadonlyArray<string | null>): Vector => vec(new Utf8(), values);
export const listI64 = (values: ReadonlyArray<ReadonlyArray<bigint> | null>): Vector => vec(new List(new Field('item', new Int64(), true)), values);

/** Writes columns to a Parquet file with parquet-wasm (ZSTD, the given row-group size). */
export function writeParquet(path: string, columns: Record<string, Vector>, rowGroupSize = 1024): string {
  const table = new Table(columns);
  const wasm = pw.Table.fromIPCStream(tableToIPC(table, 'stream'));
  const props = new pw.WriterPropertiesBuilder().setCompression(pw.Compression.ZSTD).setMaxRowGroupSize(rowGroupSize).build();
  writeFileSync(path, pw.writeParquet(wasm, props));
  return path;
}

/** A deterministic small data set: `id` 0..n-1, dense `I1` with nulls and negatives, hex `C1`, label. */
export function writeSmall(path: string, n: number, rowGroupSize: number): string {
  const ids = Array.from({ length: n }, (_, i) => i);
  return writeParquet(
    path,
    {
      label: vec(
        new Int32(),
        ids.map((i) => i % 2),
      ),
      id: i32(ids),
      I1: i32(ids.map((i) => (i % 7 === 0 ? null : (i % 5) - 2 + i))),
      C1: str(ids.map((i) => (i % 11 === 0 ? null : ((i * 2654435761) % 4096).toString(16).padStart(8, '0')))),
    },
    rowGroupSize,
  );
}
