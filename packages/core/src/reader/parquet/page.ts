/**
 * Column chunks into pages: each page's thrift header (parsed with hyparquet), checked before any
 * byte of the page is used, and its body, decompressed with the chunk's codec.
 */
import * as zlib from 'node:zlib';
import { parquetHeader } from 'hyparquet/src/column.js';
import type { ColumnMetaData, FileMetaData, PageHeader } from 'hyparquet/src/types.js';
import { Refusal, type PagePlace } from './refusal.js';
import { pageSnappy, type Snappy } from './snappy.js';

/**
 * Decompresses `src` into exactly `size` bytes. The result may be a view that the next call
 * overwrites (../zstd.ts decompresses into reused memory): the decoder reads a page before it
 * decompresses the next, and copies a dictionary page, which it keeps for the chunk.
 */
export type Zstd = (src: Uint8Array, size: number) => Uint8Array;

/**
 * Reads `length` bytes at absolute file `offset`. The result may be a view that the next call
 * overwrites (the decode worker reads each column chunk into one reused buffer): a chunk is read
 * once and decoded, and what outlives it is copied, before the next read.
 */
export type ReadAt = (offset: number, length: number) => Uint8Array;

/**
 * Page checks a decode thread applies to every chunk it reads. `crc`: verify a page's CRC32 when
 * its header has one (the default; `verifyCrc: false` in a plan or pipeline turns it off, see
 * docs/reliability.md for its cost). One setting per thread, set per read by the decode worker.
 */
export const pageChecks = { crc: true };

/**
 * The largest page, decompressed, that the decoder accepts. A damaged header can claim gigabytes;
 * writers cut pages at about 1 MB (parquet-mr, arrow-rs) or a row group's values (DuckDB).
 */
export const MAX_PAGE_BYTES = 1 << 28;

/** A page of a column chunk: its header, its body as stored, and where it lies. */
export interface Page extends PagePlace {
  readonly h: PageHeader;
  readonly body: Uint8Array;
}

/** Where a column chunk's pages start: its dictionary page when the footer names one at a plausible offset, else its first data page (as DuckDB reads it). */
export function chunkStart(m: ColumnMetaData): number {
  const data = Number(m.data_page_offset);
  // Some writers store 0 for "no dictionary page"; an offset inside the magic, or after the data
  // page, cannot be one either.
  const dict = m.dictionary_page_offset === undefined ? -1 : Number(m.dictionary_page_offset);
  return dict >= 4 && dict < data ? dict : data;
}

/**
 * Reads a column chunk (one read) and returns a function that gives its pages in order, or null
 * after the last. Every header is checked against the chunk before its page is returned (sizes
 * that fit, a header for the page's type, counts that are not negative) and, with
 * `pageChecks.crc`, every page that has a CRC against it: a page that fails throws a Refusal
 * naming the page.
 */
export function chunkPages(m: ColumnMetaData, readAt: ReadAt): () => Page | null {
  const col = m.path_in_schema.join('.');
  const start = chunkStart(m);
  const size = Number(m.total_compressed_size);
  if (!Number.isSafeInteger(start) || start < 4 || !Number.isSafeInteger(size) || size < 0 || size > 2 ** 31 - 1) {
    throw new Refusal(col, `the footer places the column chunk at byte ${start} with ${size} bytes, which cannot be`);
  }
  let bytes: Uint8Array;
  try {
    bytes = readAt(start, size);
  } catch (e) {
    throw new Refusal(col, `the column chunk at bytes ${start}..${start + size} is not in the file (${e instanceof Error ? e.message : String(e)})`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let pos = 0;
  let page = 0;
  return () => {
    if (pos >= bytes.length) return null;
    const place = { page, at: start + pos };
    const reader = { view, offset: pos };
    let h: PageHeader;
    try {
      h = parquetHeader(reader);
    } catch {
      throw new Refusal(col, `page ${place.page} (at byte ${place.at}): the page header does not parse`);
    }
    checkHeader(h, bytes.length - reader.offset, col, place);
    const body = bytes.subarray(reader.offset, reader.offset + h.compressed_page_size);
    if (h.crc !== undefined && pageChecks.crc) {
      const crc = pageCrc32(body) | 0;
      if (crc !== h.crc)
        throw new Refusal(
          col,
          `page ${place.page} (at byte ${place.at}): CRC mismatch (the header says ${hex(h.crc)}, the page's bytes give ${hex(crc)}): the page is damaged`,
        );
    }
    pos = reader.offset + h.compressed_page_size;
    page++;
    return { h, body, page: place.page, at: place.at };
  };
}

/**
 * CRC-32 (the zlib / Parquet polynomial) of `b`, unsigned: node:zlib's (zlib's C code, about
 * 3 GB/s here), or on Node releases before 20.15, which lack it, a table-driven one (slower, the
 * same values).
 *
 * @example
 * pageCrc32(new TextEncoder().encode('123456789')); // 0xcbf43926
 */
export const pageCrc32: (b: Uint8Array) => number = typeof zlib.crc32 === 'function' ? (b) => zlib.crc32(b) : tableCrc32;

let table: Uint32Array | null = null;

/**
 * The table-driven CRC-32 `pageCrc32` falls back to (exported for its test).
 *
 * @example
 * tableCrc32(new TextEncoder().encode('123456789')); // 0xcbf43926
 */
export function tableCrc32(b: Uint8Array): number {
  if (table === null) {
    table = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[n] = c >>> 0;
    }
  }
  let c = 0xffffffff;
  for (let i = 0; i < b.length; i++) c = table[(c ^ b[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const hex = (x: number): string => `0x${(x >>> 0).toString(16).padStart(8, '0')}`;

const isCount = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;

/** A header field in a sentence: "no page size" when the header lacks it, else "a page size of 12". */
const shown = (x: unknown, what: string): string => (x === undefined ? `no ${what}` : `a ${what} of ${String(x)}`);

/** Throws a Refusal when header `h`, followed by `left` bytes of the chunk, does not add up. */
function checkHeader(h: PageHeader, left: number, col: string, place: PagePlace): void {
  const bad = (what: string): Refusal => new Refusal(col, `page ${place.page} (at byte ${place.at}): ${what}`);
  if (h.type === undefined) throw bad('the page header names no known page type');
  if (!isCount(h.compressed_page_size) || h.compressed_page_size > left)
    throw bad(`the header gives ${shown(h.compressed_page_size, 'page size')}, and ${left} bytes are left in the column chunk`);
  if (!isCount(h.uncompressed_page_size) || h.uncompressed_page_size > MAX_PAGE_BYTES)
    throw bad(`the header gives ${shown(h.uncompressed_page_size, 'decompressed size')} (at most ${MAX_PAGE_BYTES} bytes are read)`);
  if (h.type === 'DATA_PAGE') {
    const d = h.data_page_header;
    if (d === undefined) throw bad('a data page without its data page header');
    if (!isCount(d.num_values)) throw bad(`the header gives ${shown(d.num_values, 'value count')}`);
    if (d.encoding === undefined) throw bad('the page header names no known encoding');
  } else if (h.type === 'DATA_PAGE_V2') {
    const d = h.data_page_header_v2;
    if (d === undefined) throw bad('a v2 data page without its v2 header');
    if (!isCount(d.num_values) || !isCount(d.num_rows) || !isCount(d.num_nulls) || d.num_nulls > d.num_values || d.num_rows > d.num_values)
      throw bad(`the header's counts do not add up (${d.num_values ?? 'no'} values, ${d.num_nulls ?? 'no'} nulls, ${d.num_rows ?? 'no'} rows)`);
    if (d.encoding === undefined) throw bad('the page header names no known encoding');
    const levels = d.repetition_levels_byte_length + d.definition_levels_byte_length;
    if (
      !isCount(d.repetition_levels_byte_length) ||
      !isCount(d.definition_levels_byte_length) ||
      levels > h.compressed_page_size ||
      levels > h.uncompressed_page_size
    )
      throw bad(
        `the header's level lengths (${d.repetition_levels_byte_length ?? 'none'} and ${d.definition_levels_byte_length ?? 'none'} bytes) do not fit its ${h.compressed_page_size}-byte page`,
      );
  } else if (h.type === 'DICTIONARY_PAGE') {
    const d = h.dictionary_page_header;
    if (d === undefined) throw bad('a dictionary page without its dictionary page header');
    if (!isCount(d.num_values)) throw bad(`the header gives ${shown(d.num_values, 'dictionary size')}`);
    if (place.page !== 0) throw bad('a dictionary page after the first page of the column chunk');
  }
}

/** This thread's SNAPPY decoder, loaded on the first SNAPPY page (files of other codecs never load it). */
let snappy: Snappy | null = null;

/** A page body decompressed with the chunk's codec, checked to be `size` bytes (ZSTD's and SNAPPY's may be reused memory: see Zstd). */
export function decompress(body: Uint8Array, size: number, codec: string, zstd: Zstd): Uint8Array {
  let out: Uint8Array;
  if (codec === 'UNCOMPRESSED') out = body;
  else {
    try {
      if (codec === 'ZSTD') out = zstd(body, size);
      else if (codec === 'SNAPPY') out = (snappy ??= pageSnappy())(body, size);
      else if (codec === 'GZIP') out = zlib.gunzipSync(body, { maxOutputLength: Math.max(size, 1) });
      else throw new Error(`unsupported codec ${codec}`);
    } catch {
      throw new Error(`the page does not decompress with ${codec} to the ${size} bytes its header says`);
    }
  }
  if (out.length !== size) throw new Error(`the page decompressed to ${out.length} bytes, its header says ${size}`);
  return out;
}

/**
 * Every page body of a Parquet file held in memory that is compressed with `codec` (of a v2 page,
 * the compressed part after its levels), with its decompressed size: what the decompressors' tests
 * and bench/snappy.ts, bench/zstd.ts run over.
 */
export function codecPages(buf: Uint8Array, md: FileMetaData, codec: 'SNAPPY' | 'ZSTD'): Array<[Uint8Array, number]> {
  const pages: Array<[Uint8Array, number]> = [];
  for (const rg of md.row_groups)
    for (const c of rg.columns) {
      const m = c.meta_data!;
      if (m.codec !== codec) continue;
      const next = chunkPages(m, (at, n) => buf.subarray(at, at + n));
      for (let p = next(); p !== null; p = next()) {
        const v2 = p.h.data_page_header_v2;
        if (v2 === undefined) pages.push([p.body, p.h.uncompressed_page_size]);
        else if (v2.is_compressed !== false) {
          const levels = v2.repetition_levels_byte_length + v2.definition_levels_byte_length;
          pages.push([p.body.subarray(levels), p.h.uncompressed_page_size - levels]);
        }
      }
    }
  return pages;
}

/** `codecPages` of the SNAPPY pages. */
export const snappyPages = (buf: Uint8Array, md: FileMetaData): Array<[Uint8Array, number]> => codecPages(buf, md, 'SNAPPY');
