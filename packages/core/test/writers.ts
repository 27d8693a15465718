// Rewrites of a Parquet file by other writers, for tests that must hold on files Sluice did not
// write: DuckDB (its high-cardinality strings are PLAIN from the first page) and an Arrow writer
// (arrow-rs, through parquet-wasm) whose column chunks start with a dictionary and fall back to
// PLAIN pages part way, as pyarrow, arrow-rs and parquet-mr do once a dictionary passes their
// page-size limit. `pageEncodings` reads what a file's pages really are with Sluice's own page
// reader, so a test can check the rewrite has the shape it is meant to have.
import { closeSync, openSync, readFileSync, readSync, fstatSync, writeFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
import * as pw from 'parquet-wasm';
import { readFooter } from '../src/reader/parquet/check.js';
import { chunkPages } from '../src/reader/parquet/page.js';

/** `src` rewritten by DuckDB's `COPY … TO dest (FORMAT parquet)` with its defaults. */
export async function writeDuckdb(src: string, dest: string): Promise<string> {
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  try {
    const q = (s: string): string => `'${s.replaceAll("'", "''")}'`;
    await con.run(`COPY (SELECT * FROM read_parquet(${q(src)})) TO ${q(dest)} (FORMAT parquet)`);
  } finally {
    con.closeSync();
    db.closeSync();
  }
  return dest;
}

export interface ArrowMixedOptions {
  /** Bytes a column chunk's dictionary page may reach before the writer falls back to PLAIN pages (default 1024). */
  readonly dictionaryPageBytes?: number;
  /** Bytes per data page (default 1024): small pages, so a chunk has dictionary pages before the fallback. */
  readonly dataPageBytes?: number;
  /** Rows per row group (default: the writer's, 1M). */
  readonly rowGroupRows?: number;
  /** Rows the writer buffers per write batch; the limits are checked between batches (default 256). */
  readonly writeBatchRows?: number;
}

/**
 * `src` rewritten by arrow-rs's writer (parquet-wasm) with a small dictionary page limit and small
 * data pages, so that a column with more distinct values than the limit holds is written as
 * dictionary pages first, then PLAIN pages in the same column chunk.
 */
export function writeArrowMixed(src: string, dest: string, opts: ArrowMixedOptions = {}): string {
  const table = pw.readParquet(readFileSync(src));
  let b = new pw.WriterPropertiesBuilder()
    .setCompression(pw.Compression.SNAPPY)
    .setDictionaryPageSizeLimit(opts.dictionaryPageBytes ?? 1024)
    .setDataPageSizeLimit(opts.dataPageBytes ?? 1024)
    .setWriteBatchSize(opts.writeBatchRows ?? 256);
  if (opts.rowGroupRows !== undefined) b = b.setMaxRowGroupSize(opts.rowGroupRows);
  writeFileSync(dest, pw.writeParquet(table, b.build()));
  return dest;
}

/** Per row group, per column path (dot-joined), the encodings of its data pages in order ('PLAIN', 'RLE_DICTIONARY', …). */
export function pageEncodings(file: string): Array<Map<string, string[]>> {
  const fd = openSync(file, 'r');
  try {
    const readAt = (offset: number, length: number): Uint8Array => {
      const buf = new Uint8Array(length);
      let got = 0;
      while (got < length) {
        const n = readSync(fd, buf, got, length - got, offset + got);
        if (n === 0) throw new Error(`${file}: unexpected end of file at byte ${offset + got}`);
        got += n;
      }
      return buf;
    };
    const md = readFooter(fstatSync(fd).size, readAt);
    return md.row_groups.map((rg) => {
      const out = new Map<string, string[]>();
      for (const c of rg.columns) {
        const m = c.meta_data!;
        const encodings: string[] = [];
        const next = chunkPages(m, readAt);
        for (let p = next(); p !== null; p = next()) {
          const d = p.h.data_page_header ?? p.h.data_page_header_v2;
          if (d !== undefined) encodings.push(d.encoding);
        }
        out.set(m.path_in_schema.join('.'), encodings);
      }
      return out;
    });
  } finally {
    closeSync(fd);
  }
}

const isDict = (e: string): boolean => e === 'RLE_DICTIONARY' || e === 'PLAIN_DICTIONARY';

/** How a column's chunks are encoded across a file: every data page PLAIN, every one dictionary, or chunks that switch (`mixed`). */
export function chunkShape(encodings: ReadonlyArray<ReadonlyMap<string, readonly string[]>>, column: string): 'plain' | 'dictionary' | 'mixed' | 'varies' {
  const shapes = new Set(
    encodings.map((rg) => {
      const e = rg.get(column);
      if (e === undefined) throw new Error(`no column ${column}`);
      if (e.every(isDict)) return 'dictionary';
      if (e.every((x) => x === 'PLAIN')) return 'plain';
      return e.some(isDict) && e.some((x) => x === 'PLAIN') ? 'mixed' : 'other';
    }),
  );
  if (shapes.size !== 1) return 'varies';
  return [...shapes][0] as 'plain' | 'dictionary' | 'mixed';
}
