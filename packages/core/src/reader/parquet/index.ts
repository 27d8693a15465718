/**
 * A direct Parquet column-chunk decoder for flat columns, straight into Sluice columns.
 *
 * Why: parquet-wasm decodes a row group into Arrow record batches, writes them as IPC, and the main
 * thread reads them back with apache-arrow, which was most of Sluice's time. The files Sluice reads
 * are almost always flat columns with dictionary or plain pages, so this decoder handles exactly
 * that and nothing else:
 *
 *  - physical INT32 / INT64 / FLOAT / DOUBLE and UTF-8 BYTE_ARRAY, REQUIRED or OPTIONAL, top level;
 *  - lists of those numeric types in the standard three-level LIST layout (`optional group c
 *    (LIST) { repeated group list { optional int64 element; } }`, either level REQUIRED or
 *    OPTIONAL), the shape Arrow writers give a list column (RM5's id lists);
 *  - PLAIN, PLAIN_DICTIONARY and RLE_DICTIONARY values; RLE/bit-packed repetition and definition
 *    levels;
 *  - data pages v1 and v2; UNCOMPRESSED, SNAPPY, ZSTD and GZIP.
 *
 * Anything else (lists of strings, nested lists or structs, two-level legacy lists, other
 * encodings or codecs, logical types that change the Arrow type) is left to parquet-wasm, column
 * by column (`decodeFlatRowGroup` returns them in `rest`). Page headers and the footer are parsed
 * with hyparquet (thrift compact protocol), ZSTD with zstddec (zstd's own C decoder in
 * WebAssembly, ../zstd.ts), SNAPPY with hysnappy (snappy-c in WebAssembly, snappy.ts); the value
 * decoding is here because it writes typed arrays directly, with no per-value objects.
 *
 * It never guesses: a page that does not add up (a header whose sizes do not fit, a CRC that does
 * not match, value counts, RLE runs past the page end, dictionary indices out of range) throws a
 * Refusal naming the column and page, which the caller reports with the file and row group; a
 * shape it does not read throws Unsupported (refusal.ts), and parquet-wasm gets the column. The
 * pages parquet-wasm is given are checked first the same way (check.ts).
 *
 * The files, bottom up: refusal.ts (why a chunk is not read), page.ts (column chunk -> pages, decompression), rle.ts (the RLE /
 * bit-packed hybrid: indices and levels), values.ts (a page's values), dictionary.ts (dictionary
 * pages), schema.ts (which chunks it reads), list.ts (list chunks), chunk.ts (flat chunks and the
 * row group), check.ts (the footer, and pages before parquet-wasm decodes them), column-types.ts (a file's
 * column types from its footer), thrift.ts (a repaired footer). Ops computed per
 * dictionary entry are ../dict-ops.ts.
 */
export { checkChunks, FileRefusal, readFooter, repairedFooter, rowGroupRows } from './check.js';
export { footerColumns, type FooterColumns } from './column-types.js';
export { decodeFlatRowGroup, type RowRange } from './chunk.js';
export { pageChecks, type ReadAt, type Zstd } from './page.js';
export { Refusal, Unsupported } from './refusal.js';
export { levels, rleHybrid } from './rle-wasm.js';
