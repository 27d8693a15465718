import { openAsBlob, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';
import * as pw from 'parquet-wasm';

/** A fresh temporary directory. */
export function tempDir(prefix = 'sluice-gen-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export interface ReadBack {
  table: arrow.Table;
  rows: number;
  rowGroups: number[];
  compression: string[];
}

/** Reads a Parquet file back the way the rest of Sluice does: parquet-wasm stream → Arrow JS. */
export async function readBack(path: string, columns?: string[]): Promise<ReadBack> {
  const file = await pw.ParquetFile.fromFile(await openAsBlob(path));
  try {
    const md = file.metadata();
    const rowGroups = md.rowGroups().map((g) => g.numRows());
    const compression =
      md.numRowGroups() > 0
        ? md
            .rowGroup(0)
            .columns()
            .map((c) => pw.Compression[c.compression()] as string)
        : [];
    const stream = (await file.stream({ batchSize: 65536, ...(columns ? { columns } : {}) })) as ReadableStream<pw.RecordBatch>;
    const reader = stream.getReader();
    const batches: arrow.RecordBatch[] = [];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      batches.push(...arrow.tableFromIPC(value.intoIPCStream()).batches);
    }
    const table = batches.length > 0 ? new arrow.Table(batches) : new arrow.Table();
    return { table, rows: md.fileMetadata().numRows(), rowGroups, compression };
  } finally {
    file.free();
  }
}

/** Valid-count and values of an Int32/Float32 column (nulls skipped). */
export function numericStats(v: arrow.Vector): { nulls: number; values: number[] } {
  const values: number[] = [];
  for (const d of v.data) {
    const arr = d.values as Int32Array | Float32Array;
    for (let i = 0; i < d.length; i++) if (d.getValid(i)) values.push(arr[i] as number);
  }
  return { nulls: v.nullCount, values };
}
