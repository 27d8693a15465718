/**
 * The same rows as other writers lay them out: `sluice gen`'s file rewritten by DuckDB and by an
 * Arrow writer, cached beside it, and a census of each file's page encodings read with Sluice's
 * own page-header reader (bench/README.md, "realistic.ts").
 *
 * Why: `sluice gen` writes every string column with dictionary pages, the case Sluice's reader is
 * fastest on. DuckDB writes a high-cardinality string column PLAIN; arrow-rs, pyarrow and
 * parquet-mr start each chunk with a dictionary and fall back to PLAIN pages once the dictionary
 * page passes its size limit, so a chunk mixes both.
 */
import { closeSync, existsSync, openAsBlob, openSync, readSync, renameSync, rmSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import * as pw from 'parquet-wasm';
import { chunkPages, readFooter } from '@sluice/core/internal';
import { benchCacheDir, fmtInt, log } from './lib.js';

export type WriterName = 'sluice-gen' | 'duckdb' | 'arrow';

/**
 * arrow-rs's dictionary page size limit for the Arrow writer's files (its default is 1 MiB). With
 * 32 KiB, 21 of the 80 column chunks of 196,608 RM1 rows (row groups of 100,000) mixed dictionary
 * and PLAIN pages; the rest stayed under it.
 */
export const ARROW_DICT_PAGE_LIMIT = 32 * 1024;

/** What each writer's file is, in one line for the bench's header. */
export const WRITER_NOTES: Record<WriterName, string> = {
  'sluice-gen': '`sluice gen` (ZSTD, dictionary pages throughout)',
  duckdb: "DuckDB `COPY … (FORMAT parquet)`, its defaults (SNAPPY, row groups of 122,880; PLAIN where a chunk's dictionary would be too large)",
  arrow:
    "arrow-rs (parquet-wasm's writer), SNAPPY, a small dictionary page size limit (in the file's name): a chunk falls back to PLAIN pages once its dictionary passes it",
};

/** Writes through `write(tmp)` and renames into place, so an interrupted run never leaves half a file. */
async function cached(path: string, what: string, write: (tmp: string) => Promise<void>): Promise<string> {
  if (existsSync(path)) return path;
  const tmp = `${path}.partial-${process.pid}`;
  log(`writing ${what} into ${path} …`);
  const t0 = performance.now();
  try {
    await write(tmp);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
  renameSync(tmp, path);
  log(`  done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return path;
}

const sqlString = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/**
 * `src` rewritten by DuckDB's `COPY … TO … (FORMAT parquet)` with its default settings, as a user
 * exporting a table gets it (row groups of 122,880 rows, SNAPPY).
 */
export function duckdbCopy(con: DuckDBConnection, src: string): Promise<string> {
  const dst = join(benchCacheDir(), basename(src).replace(/\.parquet$/, '-duckdb.parquet'));
  return cached(dst, 'a DuckDB copy', async (tmp) => {
    await con.run(`COPY (SELECT * FROM read_parquet(${sqlString(src)})) TO ${sqlString(tmp)} (FORMAT parquet)`);
  });
}

/**
 * `src` rewritten by arrow-rs (parquet-wasm's streaming writer, the encoder pyarrow's C++ writer
 * and parquet-mr resemble): SNAPPY, and a dictionary page limit of `dictPageLimit` bytes, past
 * which a column chunk goes on with PLAIN pages.
 */
export function arrowRewrite(src: string, rowGroupSize: number, dictPageLimit = ARROW_DICT_PAGE_LIMIT): Promise<string> {
  const dst = join(benchCacheDir(), basename(src).replace(/\.parquet$/, `-arrow-d${dictPageLimit}.parquet`));
  return cached(dst, 'an Arrow-writer copy', async (tmp) => {
    const file = await pw.ParquetFile.fromFile(await openAsBlob(src));
    const batches = await file.stream({ batchSize: 8192 });
    const props = new pw.WriterPropertiesBuilder()
      .setCompression(pw.Compression.SNAPPY)
      .setMaxRowGroupSize(rowGroupSize)
      .setDictionaryEnabled(true)
      .setDictionaryPageSizeLimit(dictPageLimit)
      .setCreatedBy('sluice bench/writers.ts (parquet-wasm)')
      .build();
    const out = (await pw.transformParquetStream(batches, props)).getReader();
    const fh = await open(tmp, 'w');
    try {
      for (;;) {
        const { done, value } = (await out.read()) as { done: boolean; value?: Uint8Array };
        if (done) break;
        await fh.write(value!);
      }
    } finally {
      await fh.close();
    }
  });
}

/** Column chunks of a file by how their data pages are encoded. */
export interface EncodingCensus {
  readonly chunks: number;
  /** Every data page dictionary-encoded. */
  readonly dictionary: number;
  /** Every data page PLAIN. */
  readonly plain: number;
  /** Dictionary pages first, then PLAIN ones: the writer's dictionary passed its limit. */
  readonly mixed: number;
  /** Any other encoding (DELTA_*, …). */
  readonly other: number;
  /** Data pages in all, and how many were PLAIN. */
  readonly dataPages: number;
  readonly plainPages: number;
}

/** Reads every page header of every column chunk of `path` with Sluice's own reader (footer and page checks included). */
export function encodingCensus(path: string): EncodingCensus {
  const fd = openSync(path, 'r');
  try {
    const readAt = (offset: number, length: number): Uint8Array => {
      const b = Buffer.allocUnsafe(length);
      let got = 0;
      while (got < length) {
        const n = readSync(fd, b, got, length - got, offset + got);
        if (n === 0) throw new Error(`unexpected end of ${path} at byte ${offset + got}`);
        got += n;
      }
      return b;
    };
    const md = readFooter(statSync(path).size, readAt);
    const c = { chunks: 0, dictionary: 0, plain: 0, mixed: 0, other: 0, dataPages: 0, plainPages: 0 };
    for (const rg of md.row_groups) {
      for (const col of rg.columns) {
        const next = chunkPages(col.meta_data!, readAt);
        let dict = 0;
        let plain = 0;
        let other = 0;
        for (let p = next(); p !== null; p = next()) {
          if (p.h.type === 'DICTIONARY_PAGE') continue;
          const enc = p.h.data_page_header?.encoding ?? p.h.data_page_header_v2?.encoding;
          if (enc === 'PLAIN') plain++;
          else if (enc === 'PLAIN_DICTIONARY' || enc === 'RLE_DICTIONARY') dict++;
          else other++;
        }
        c.chunks++;
        c.dataPages += dict + plain + other;
        c.plainPages += plain;
        if (other > 0) c.other++;
        else if (dict > 0 && plain > 0) c.mixed++;
        else if (plain > 0) c.plain++;
        else c.dictionary++;
      }
    }
    return c;
  } finally {
    closeSync(fd);
  }
}

export function fmtCensus(c: EncodingCensus): string {
  return (
    `${fmtInt(c.chunks)} column chunks: ${fmtInt(c.dictionary)} dictionary, ${fmtInt(c.plain)} PLAIN, ${fmtInt(c.mixed)} mixed (dictionary then PLAIN pages)` +
    `${c.other > 0 ? `, ${fmtInt(c.other)} other` : ''}; ${fmtInt(c.plainPages)} of ${fmtInt(c.dataPages)} data pages PLAIN`
  );
}
