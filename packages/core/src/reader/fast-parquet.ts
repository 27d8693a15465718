/**
 * A direct Parquet column-chunk decoder for flat columns, straight into Sluice columns.
 *
 * Why: parquet-wasm decodes a row group into Arrow record batches, writes them as IPC, and the main
 * thread reads them back with apache-arrow; for RM1 (26 dictionary-encoded hex strings and 13
 * int32 columns, ZSTD) that costs ~2.2 µs per row on one core, most of Sluice's time. The files
 * Sluice reads are almost always flat columns with dictionary or plain pages, so this decoder
 * handles exactly that and nothing else:
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
 * by column (`decodeFlatRowGroup` returns them in `rest`). Page headers and the
 * footer are parsed with hyparquet (thrift compact protocol), ZSTD with zstddec (zstd's own C
 * decoder in WebAssembly); the value decoding is here because it writes typed arrays directly,
 * with no per-value objects.
 *
 * It never guesses: a page that does not add up (value counts, RLE runs past the page end,
 * dictionary indices out of range) throws, and the caller reports the file and row group.
 */
import { gunzipSync } from 'node:zlib';
import { parquetHeader } from 'hyparquet/src/column.js';
import { snappyUncompress } from 'hyparquet/src/snappy.js';
import type { ColumnChunk, ColumnMetaData, FileMetaData, PageHeader, SchemaElement } from 'hyparquet/src/types.js';
import type { Column, ColumnType, ListColumn, NumericColumn, PrimitiveType, ValidMask } from '@sluice/ops';
import type { IndexedListSource } from '../batch/index.js';
import { DictShare, type Shared } from './dict-share.js';

/**
 * Decompresses `src` into exactly `size` bytes. The result may be a view that the next call
 * overwrites (io/zstd.ts decompresses into reused memory): the decoder reads a page before it
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
 * Rows [first, first + rows) of a row group: what one decoder reads when a row group is split
 * between decoders (stream/source.ts). Both ends must be page boundaries of every column read
 * (the offset index says where pages start): pages before `first` are skipped without being
 * decompressed, and a page that straddles either end is refused. Flat columns only.
 */
export interface RowRange {
  readonly first: number;
  readonly rows: number;
  /**
   * Shared by the parts of one row group (io/dict-share.ts): derived columns' results per
   * dictionary entry, computed by the first part to reach each column and read by the others.
   */
  readonly share?: SharedArrayBuffer;
  /** Walk the derived columns last to first, so that two parts reading at once meet in the middle. */
  readonly reverse?: boolean;
}

/** The rows a read covers: all of row group `rg` (`range` absent), or the range, checked against it. */
function rowsOf(rg: FileMetaData['row_groups'][number], range: RowRange | undefined): { first: number; rows: number } {
  const all = Number(rg.num_rows);
  if (range === undefined) return { first: 0, rows: all };
  if (!Number.isInteger(range.first) || !Number.isInteger(range.rows) || range.first < 0 || range.rows < 1 || range.first + range.rows > all) {
    throw new Error(`rows ${range.first}..${range.first + range.rows} are not within the row group's ${all} rows`);
  }
  return range;
}

const PHYSICAL: Record<string, PrimitiveType> = { INT32: 'int32', INT64: 'int64', FLOAT: 'float32', DOUBLE: 'float64', BYTE_ARRAY: 'utf8' };

/** Whether a top-level schema element decodes to exactly `type` the way the Arrow reader would type it. */
function supported(el: SchemaElement | undefined, type: ColumnType): boolean {
  if (el === undefined || el.num_children !== undefined || type.kind === 'list' || type.kind === 'fixed') return false;
  if (el.repetition_type === 'REPEATED' || el.type === undefined || PHYSICAL[el.type] !== type.kind) return false;
  const logical = el.logical_type?.type;
  const converted = el.converted_type;
  if (type.kind === 'utf8') return logical === 'STRING' || converted === 'UTF8';
  if (type.kind === 'int32') return (logical === undefined && converted === undefined) || converted === 'INT_32' || (logical === 'INTEGER' && el.logical_type!.bitWidth === 32 && el.logical_type!.isSigned);
  if (type.kind === 'int64') return (logical === undefined && converted === undefined) || converted === 'INT_64' || (logical === 'INTEGER' && el.logical_type!.bitWidth === 64 && el.logical_type!.isSigned);
  return logical === undefined && converted === undefined;
}

/**
 * Decodes the named columns of one row group that this decoder handles; `rest` lists the ones
 * that need the general reader (see the file comment). `types` are the Sluice types the dataset's
 * Arrow schema gave.
 */
export function decodeFlatRowGroup(
  md: FileMetaData, rowGroup: number, names: readonly string[], types: ReadonlyMap<string, ColumnType>, readAt: ReadAt, zstd: Zstd, range?: RowRange,
): { columns: Map<string, Column>; rest: string[] } {
  const rg = md.row_groups[rowGroup];
  if (rg === undefined) throw new Error(`row group ${rowGroup} does not exist (the file has ${md.row_groups.length})`);
  const { first, rows } = rowsOf(rg, range);
  const columns = new Map<string, Column>();
  const rest: string[] = [];
  for (const name of names) {
    const c = readable(md, rg, name, types);
    if (c !== null) { columns.set(name, decodeChunkInto(c.chunk, c.el, c.type, rows, readAt, zstd, null, first).column!); continue; }
    const l = readableList(md, rg, name, types);
    if (l !== null && range !== undefined) throw new Error(`column ${name}: a list column is read by whole row groups only`);
    if (l !== null) columns.set(name, decodeListChunk(l, rows, readAt, zstd));
    else rest.push(name);
  }
  return { columns, rest };
}

const topLevel = new WeakMap<FileMetaData, Map<string, SchemaElement>>();

/** The top-level columns of a file's schema by name (a group's descendants skipped), cached per footer. */
function topLevelColumns(md: FileMetaData): Map<string, SchemaElement> {
  let top = topLevel.get(md);
  if (top === undefined) {
    top = new Map();
    for (let i = 1, skip = 0; i < md.schema.length; i++) {
      const el = md.schema[i]!;
      if (skip > 0) { skip += (el.num_children ?? 0) - 1; continue; }
      top.set(el.name, el);
      skip = el.num_children ?? 0;
    }
    topLevel.set(md, top);
  }
  return top;
}

/** A column chunk this decoder reads (flat, supported type, codec and encodings), or null. */
function readable(md: FileMetaData, rg: FileMetaData['row_groups'][number], name: string, types: ReadonlyMap<string, ColumnType>): { chunk: ColumnChunk; el: SchemaElement; type: PrimitiveType } | null {
  const type = types.get(name);
  const el = topLevelColumns(md).get(name);
  const chunk = rg.columns.find((c) => c.meta_data?.path_in_schema.length === 1 && c.meta_data.path_in_schema[0] === name);
  const ok = type !== undefined && supported(el, type) && chunk?.meta_data !== undefined && !chunk.file_path
    && CODECS.includes(chunk.meta_data.codec) && chunk.meta_data.encodings.every((e) => ENCODINGS.includes(e));
  return ok ? { chunk: chunk!, el: el!, type: type.kind as PrimitiveType } : null;
}

const CODECS = ['UNCOMPRESSED', 'SNAPPY', 'ZSTD', 'GZIP'];
const ENCODINGS = ['PLAIN', 'RLE', 'RLE_DICTIONARY', 'PLAIN_DICTIONARY', 'BIT_PACKED'];

const schemaIndex = new WeakMap<FileMetaData, Map<SchemaElement, number>>();

/** Where a schema element sits in the footer's flattened (depth-first) schema, cached per footer. */
function indexOf(md: FileMetaData, el: SchemaElement): number {
  let m = schemaIndex.get(md);
  if (m === undefined) { m = new Map(md.schema.map((e, i) => [e, i])); schemaIndex.set(md, m); }
  return m.get(el) ?? -1;
}

/** A column chunk of a top-level list column that this decoder reads, and the shape of its levels. */
interface ListChunk { readonly chunk: ColumnChunk; readonly outerOptional: boolean; readonly elementOptional: boolean; readonly type: NumericColumn['type'] }

/** The chunk of list column `name` when this decoder reads it (see the file comment), else null. */
function readableList(md: FileMetaData, rg: FileMetaData['row_groups'][number], name: string, types: ReadonlyMap<string, ColumnType>): ListChunk | null {
  const type = types.get(name);
  if (type?.kind !== 'list' || type.child === 'utf8') return null;
  const outer = topLevelColumns(md).get(name);
  if (outer === undefined || outer.num_children !== 1 || outer.type !== undefined) return null;
  if (outer.converted_type !== 'LIST' && outer.logical_type?.type !== 'LIST') return null;
  if (outer.repetition_type !== 'OPTIONAL' && outer.repetition_type !== 'REQUIRED') return null;
  const i = indexOf(md, outer);
  if (i < 0) return null;
  const mid = md.schema[i + 1];
  const leaf = md.schema[i + 2];
  if (mid === undefined || mid.repetition_type !== 'REPEATED' || mid.num_children !== 1 || mid.type !== undefined) return null;
  if (leaf === undefined || leaf.repetition_type === 'REPEATED' || !supported(leaf, { kind: type.child })) return null;
  const chunk = rg.columns.find((c) => {
    const path = c.meta_data?.path_in_schema;
    return path?.length === 3 && path[0] === name && path[1] === mid.name && path[2] === leaf.name;
  });
  if (chunk?.meta_data === undefined || chunk.file_path || !CODECS.includes(chunk.meta_data.codec)) return null;
  if (!chunk.meta_data.encodings.every((e) => ENCODINGS.includes(e))) return null;
  return { chunk, outerOptional: outer.repetition_type === 'OPTIONAL', elementOptional: leaf.repetition_type === 'OPTIONAL', type: type.child };
}

/** A dictionary page: fixed-width values, or strings as byte ranges [starts[i], starts[i] + lens[i]) of `data`. */
interface Dict { readonly type: PrimitiveType; readonly values: Int32Array | BigInt64Array | Float32Array | Float64Array | null; readonly starts: Int32Array | null; readonly lens: Int32Array | null; readonly data: Uint8Array | null; readonly size: number }

/** Growable UTF-8 output: offsets per row, bytes appended. */
class Utf8Out {
  offsets: Int32Array;
  data: Uint8Array;
  end = 0;
  constructor(rows: number, guess: number) {
    this.offsets = new Int32Array(rows + 1);
    this.data = new Uint8Array(Math.max(16, guess));
  }
  reserve(more: number): void {
    if (this.end + more <= this.data.length) return;
    const next = new Uint8Array(Math.max(this.data.length * 2, this.end + more));
    next.set(this.data.subarray(0, this.end));
    this.data = next;
  }
}

/** Thrown in indices mode when a page is not dictionary-encoded (the caller decodes values instead). */
class NotAllDictionary extends Error {}

/**
 * Reads a column chunk (one read) and returns a function that gives its pages in order: each
 * page's header and its body as stored (compressed), or null after the last.
 */
function chunkPages(m: ColumnMetaData, readAt: ReadAt): () => { h: PageHeader; body: Uint8Array } | null {
  const dictAt = m.dictionary_page_offset !== undefined && m.dictionary_page_offset > 0n ? Number(m.dictionary_page_offset) : Infinity;
  const start = Math.min(dictAt, Number(m.data_page_offset));
  const bytes = readAt(start, Number(m.total_compressed_size));
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let pos = 0;
  return () => {
    if (pos >= bytes.length) return null;
    const reader = { view, offset: pos };
    const h = parquetHeader(reader);
    const body = bytes.subarray(reader.offset, reader.offset + h.compressed_page_size);
    if (body.length !== h.compressed_page_size) throw new Error(`column ${m.path_in_schema.join('.')}: page runs past the column chunk`);
    pos = reader.offset + h.compressed_page_size;
    return { h, body };
  };
}

/**
 * Decodes `rows` rows of a column chunk from row `first` (a page boundary; see RowRange). With
 * `rowIdx`, dictionary pages are not expanded: rowIdx[i] gets row i's dictionary index (the
 * dictionary's size for null) and the dictionary comes back instead of the column.
 */
function decodeChunkInto(
  chunk: ColumnChunk, el: SchemaElement, type: PrimitiveType, rows: number, readAt: ReadAt, zstd: Zstd, rowIdx: Int32Array | null, first = 0, dictSize?: number,
): { column?: Column; dict?: Dict } {
  const m = chunk.meta_data!;
  /** Rows still to pass over before the range starts: whole pages, never decompressed. */
  let skip = first;
  const skipPage = (n: number): void => {
    if (n > skip) throw new Error(`column ${m.path_in_schema[0]}: a page spans row ${first}, where this read starts (not a page boundary)`);
    skip -= n;
  };
  const tooMany = (): Error => new Error(`column ${m.path_in_schema[0]}: pages hold more values than the ${rows} rows read from row ${first} of the row group`);
  const nextPage = chunkPages(m, readAt);
  const optional = el.repetition_type === 'OPTIONAL';
  // In indices mode validity is only read page by page (see `indices`): a reused scratch array.
  const valid = !optional ? null : rowIdx !== null ? scratchValid(rows) : new Uint8Array(rows);
  const utf8 = type === 'utf8' && rowIdx === null ? new Utf8Out(rows, Number(m.total_uncompressed_size)) : null;
  const values = type === 'utf8' || rowIdx !== null ? null : newArray(type, rows);
  let dict: Dict | null = null;
  let at = 0;
  while (at < rows) {
    const pg = nextPage();
    if (pg === null) throw new Error(`column ${m.path_in_schema[0]}: column chunk ended after ${at} of ${rows} rows`);
    const { h, body } = pg;
    if (h.type === 'DICTIONARY_PAGE' && dictSize !== undefined && rowIdx !== null) {
      // Indices mode with the entries' results already computed (a shared row group): only the
      // dictionary's size matters, for the bounds checks and the null slot.
      if (h.dictionary_page_header!.num_values !== dictSize) throw new Error(`column ${m.path_in_schema[0]}: dictionary of ${h.dictionary_page_header!.num_values} entries, ${dictSize} shared`);
      dict = { type, values: null, starts: null, lens: null, data: null, size: dictSize };
    } else if (h.type === 'DICTIONARY_PAGE') {
      // The data pages decompress after it, and may reuse its memory (see Zstd): strings are
      // kept as a copy (fixed-width values are copied out by readDict).
      const raw = decompress(body, h.uncompressed_page_size, m.codec, zstd);
      const page = type === 'utf8' ? keepDictPage(raw) : raw;
      dict = readDict(page, type, h.dictionary_page_header!.num_values);
      if (utf8 !== null && dict.lens !== null) {
        // Size the output once from the dictionary's longest string rather than growing it per page.
        let max = 0;
        for (let i = 0; i < dict.size; i++) if (dict.lens[i]! > max) max = dict.lens[i]!;
        if (rows * max <= 1 << 26) utf8.reserve(rows * max);
      }
    } else if (h.type === 'DATA_PAGE') {
      const d = h.data_page_header!;
      const n = d.num_values;
      if (skip > 0) { skipPage(n); continue; }
      if (at + n > rows) throw tooMany();
      const page = decompress(body, h.uncompressed_page_size, m.codec, zstd);
      let p = 0;
      let present = n;
      if (optional) {
        const len = page[0]! | page[1]! << 8 | page[2]! << 16 | page[3]! << 24;
        p = 4 + len;
        if (p > page.length) throw new Error(`column ${m.path_in_schema[0]}: definition levels run past the page`);
        levels(page, 4, p, 1, valid!, n, at);
        present = count(valid!, at, n);
      }
      if (rowIdx !== null) indices(page, p, d.encoding, n, present, at, valid, rowIdx, dict, m.path_in_schema[0]!);
      else readValues(page, p, d.encoding, type, n, present, at, valid, values, utf8, dict, m.path_in_schema[0]!);
      at += n;
    } else if (h.type === 'DATA_PAGE_V2') {
      const d = h.data_page_header_v2!;
      const n = d.num_values;
      if (d.num_rows !== n) throw new Error(`column ${m.path_in_schema[0]}: a flat column's v2 page has ${n} values for ${d.num_rows} rows`);
      if (skip > 0) { skipPage(n); continue; }
      if (at + n > rows) throw tooMany();
      const levelBytes = d.repetition_levels_byte_length + d.definition_levels_byte_length;
      let present = n;
      if (optional) {
        levels(body, d.repetition_levels_byte_length, levelBytes, 1, valid!, n, at);
        present = count(valid!, at, n);
      }
      const rest = body.subarray(levelBytes);
      const page = d.is_compressed ? decompress(rest, h.uncompressed_page_size - levelBytes, m.codec, zstd) : rest;
      if (rowIdx !== null) indices(page, 0, d.encoding, n, present, at, valid, rowIdx, dict, m.path_in_schema[0]!);
      else readValues(page, 0, d.encoding, type, n, present, at, valid, values, utf8, dict, m.path_in_schema[0]!);
      at += n;
    }
    // Index pages and unknown page types carry no values.
  }
  if (rowIdx !== null) {
    if (dict === null) throw new NotAllDictionary();
    return { dict };
  }
  const validOut = valid !== null && count(valid, 0, rows) === rows ? null : valid;
  if (utf8) {
    utf8.offsets[rows] = utf8.end;
    return { column: { type: 'utf8', offsets: utf8.offsets, data: utf8.data.subarray(0, utf8.end), valid: validOut } };
  }
  return { column: { type, values, valid: validOut } as Column };
}

/** Scratch for a page's repetition and definition levels (pages are decoded one at a time per thread). */
let repScratch = new Uint8Array(0);
let defScratch = new Uint8Array(0);

function growLevelScratch(n: number): void {
  if (repScratch.length >= n) return;
  repScratch = new Uint8Array(Math.max(n, 2 * repScratch.length));
  defScratch = new Uint8Array(repScratch.length);
}

/**
 * Decodes a list column chunk (see `readableList`) into offsets, list validity and a child column,
 * as the Arrow reader gives it: a null list and an empty list both have length zero, a null
 * element is a child slot with validity 0 and value 0, and a validity with no zero is null.
 *
 * The levels say where rows and elements are: repetition level 0 starts a row (1 continues its
 * list); a definition level below `empty` is a null list, `empty` an empty list, `empty + 1` a null
 * element (when elements are OPTIONAL), and `maxDef` an element with a value. Values are stored
 * only for the latter, so each page's values land in its element slots like a flat optional
 * column's in its rows.
 */
function decodeListChunk(l: ListChunk, rows: number, readAt: ReadAt, zstd: Zstd): ListColumn {
  const r = decodeListInto(l, rows, readAt, zstd, false);
  return { type: 'list', offsets: r.offsets, child: r.child!, valid: r.valid };
}

/** A decoded list chunk: values (`child`), or in indices mode each slot's dictionary index (`idx`, dict.size for a null element) and the dictionary. */
interface ListDecoded { readonly offsets: Int32Array; readonly valid: ValidMask; readonly child: NumericColumn | null; readonly idx: Int32Array | null; readonly dict: Dict | null }

/**
 * decodeListChunk, or with `indexMode` its dictionary indices instead of values (throws
 * NotAllDictionary when a data page is not dictionary-encoded).
 */
function decodeListInto(l: ListChunk, rows: number, readAt: ReadAt, zstd: Zstd, indexMode: boolean): ListDecoded {
  const m = l.chunk.meta_data!;
  const col = m.path_in_schema.join('.');
  const nextPage = chunkPages(m, readAt);
  const empty = l.outerOptional ? 1 : 0;
  const maxDef = empty + 1 + (l.elementOptional ? 1 : 0);
  // Level entries in the chunk: one per element, null element, empty list and null list, so
  // never fewer than the element slots.
  const entries = Number(m.num_values);
  const offsets = new Int32Array(rows + 1);
  const listValid = l.outerOptional ? new Uint8Array(rows) : null;
  // Allocated at the first data page, once its levels say how many slots it has: exactly the
  // chunk's slots when it has one page (the usual case), else an upper bound trimmed at the end.
  let values: Int32Array | BigInt64Array | Float32Array | Float64Array | null = null;
  let idx: Int32Array | null = null;
  let elemValid = l.elementOptional ? new Uint8Array(entries) : null;
  let dict: Dict | null = null;
  let row = -1;
  let slot = 0;
  let seen = 0;
  while (seen < entries) {
    const pg = nextPage();
    if (pg === null) throw new Error(`column ${col}: column chunk ended after ${seen} of ${entries} values`);
    const { h, body } = pg;
    if (h.type === 'DICTIONARY_PAGE') {
      dict = readDict(decompress(body, h.uncompressed_page_size, m.codec, zstd), l.type, h.dictionary_page_header!.num_values);
      continue;
    }
    const d = h.type === 'DATA_PAGE' ? h.data_page_header : h.type === 'DATA_PAGE_V2' ? h.data_page_header_v2 : undefined;
    if (d === undefined) continue; // Index pages and unknown page types carry no values.
    const n = d.num_values;
    const encoding = d.encoding;
    if (seen + n > entries) throw new Error(`column ${col}: pages hold more values than the chunk's ${entries}`);
    growLevelScratch(n);
    let page: Uint8Array;
    let p = 0;
    if (h.type === 'DATA_PAGE') {
      page = decompress(body, h.uncompressed_page_size, m.codec, zstd);
      // v1: repetition then definition levels, each behind its 4-byte length.
      for (const [out, max] of [[repScratch, 1], [defScratch, maxDef]] as const) {
        if (p + 4 > page.length) throw new Error(`column ${col}: levels run past the page`);
        const len = page[p]! | page[p + 1]! << 8 | page[p + 2]! << 16 | page[p + 3]! << 24;
        if (len < 0 || p + 4 + len > page.length) throw new Error(`column ${col}: levels run past the page`);
        levels(page, p + 4, p + 4 + len, max, out, n);
        p += 4 + len;
      }
    } else {
      // v2: the levels come first, uncompressed, with their lengths in the header.
      const v2 = h.data_page_header_v2!;
      const rl = v2.repetition_levels_byte_length;
      const dl = v2.definition_levels_byte_length;
      if (rl < 0 || dl < 0 || rl + dl > body.length) throw new Error(`column ${col}: levels run past the page`);
      levels(body, 0, rl, 1, repScratch, n);
      levels(body, rl, rl + dl, maxDef, defScratch, n);
      const rest = body.subarray(rl + dl);
      page = v2.is_compressed ? decompress(rest, h.uncompressed_page_size - rl - dl, m.codec, zstd) : rest;
    }
    // Rows and element slots from the levels; then the page's values into its slots.
    const first = slot;
    let present = 0;
    const rep = repScratch;
    const def = defScratch;
    let full = n > 0;
    for (let e = 0; e < n && full; e++) full = def[e] === maxDef;
    if (full) {
      // Every entry an element with a value (the common page): rows start where rep is 0.
      if (rep[0] !== 0 && row < 0) throw new Error(`column ${col}: a list continues before its first row`);
      const firstRow = row + 1;
      for (let e = 0; e < n; e++) {
        if (rep[e] !== 0) continue;
        if (++row >= rows) throw new Error(`column ${col}: pages hold more than the row group's ${rows} rows`);
        offsets[row] = slot + e;
      }
      if (listValid !== null) listValid.fill(1, firstRow, row + 1);
      slot += n;
      present = n;
      if (elemValid !== null) elemValid.fill(1, first, slot);
    } else for (let e = 0; e < n; e++) {
      const r = rep[e]!;
      const d = def[e]!;
      if (r === 0) {
        if (++row >= rows) throw new Error(`column ${col}: pages hold more than the row group's ${rows} rows`);
        offsets[row] = slot;
        if (listValid !== null) listValid[row] = d >= empty ? 1 : 0;
      } else if (row < 0 || d <= empty) {
        throw new Error(`column ${col}: a list continues ${row < 0 ? 'before its first row' : 'with no element'}`);
      }
      if (d <= empty) continue;
      const has = d === maxDef ? 1 : 0;
      if (elemValid !== null) elemValid[slot] = has;
      present += has;
      slot++;
    }
    if (slot > entries) throw new Error(`column ${col}: more elements than the chunk's ${entries} values`);
    if (indexMode) {
      idx ??= new Int32Array(slot + entries - seen - n);
      indices(page, p, encoding, slot - first, present, first, elemValid, idx, dict, col);
    } else {
      values ??= newArray(l.type, slot + entries - seen - n);
      readValues(page, p, encoding, l.type, slot - first, present, first, elemValid, values, null, dict, col);
    }
    seen += n;
  }
  if (row + 1 !== rows) throw new Error(`column ${col}: pages hold ${row + 1} of the row group's ${rows} rows`);
  offsets[rows] = slot;
  const allValid = (v: Uint8Array | null, k: number): boolean => v === null || count(v, 0, k) === k;
  const valid = allValid(listValid, rows) ? null : listValid;
  if (indexMode) {
    // No element at all (every list null or empty) needs no dictionary.
    if (dict === null && slot > 0) throw new NotAllDictionary();
    return { offsets, valid, child: null, idx: (idx ?? new Int32Array(0)).subarray(0, slot), dict: dict ?? readDict(new Uint8Array(0), l.type, 0) };
  }
  // The child is exactly the slots (null and empty lists took level entries but no slot).
  values ??= newArray(l.type, 0);
  if (values.length > slot) values = values.slice(0, slot);
  if (elemValid !== null && elemValid.length > slot) elemValid = elemValid.slice(0, slot);
  return { offsets, valid, child: { type: l.type, values, valid: allValid(elemValid, slot) ? null : elemValid } as NumericColumn, idx: null, dict: null };
}

/** Scratch for a page's indices of present values (reused: pages are decoded one at a time per thread). */
let scratchIdx = new Int32Array(0);
let validScratch = new Uint8Array(0);

function scratchValid(rows: number): Uint8Array {
  if (validScratch.length < rows) validScratch = new Uint8Array(rows);
  return validScratch;
}

/**
 * Row-index arrays of derived columns (`decodeDerivedIndexed`), reused across row groups: a
 * consumer that is done with an IndexedColumn hands its `idx` back with `releaseIndexed`.
 */
const idxPool: Int32Array[] = [];

function takeIdx(rows: number): Int32Array {
  for (let i = idxPool.length - 1; i >= 0; i--) {
    const a = idxPool[i]!;
    if (a.length === rows) { idxPool.splice(i, 1); return a; }
  }
  return new Int32Array(rows);
}

/** Returns the row-index arrays of indexed columns the caller no longer reads, for reuse. */
export function releaseIndexed(columns: Iterable<IndexedColumn>): void {
  const seen = new Set<Int32Array>();
  for (const c of columns) if (!seen.has(c.idx)) { seen.add(c.idx); if (idxPool.length < 256) idxPool.push(c.idx); }
}

/** Indices mode of a data page: row -> dictionary index; a null row gets dict.size (one past the last entry). */
function indices(page: Uint8Array, p: number, encoding: string, n: number, present: number, at: number, valid: Uint8Array | null, rowIdx: Int32Array, dict: Dict | null, col: string): void {
  if (encoding !== 'RLE_DICTIONARY' && encoding !== 'PLAIN_DICTIONARY') throw new NotAllDictionary();
  if (dict === null) throw new Error(`column ${col}: dictionary-encoded page without a dictionary page`);
  const width = page[p]!;
  if (width > 32) throw new Error(`column ${col}: dictionary index bit width ${width}`);
  if (valid === null) {
    rleHybrid(page, p + 1, page.length, width, rowIdx, at, n);
    if (n > 0 && rleMax >= dict.size) throw new Error(`column ${col}: dictionary index ${rleMax} out of range (${dict.size} entries)`);
    return;
  }
  // One spare slot: the branch-free merge below reads idx[present] (and discards it).
  if (scratchIdx.length < present + 1) scratchIdx = new Int32Array(Math.max(present + 1, 2 * scratchIdx.length));
  const idx = scratchIdx;
  rleHybrid(page, p + 1, page.length, width, idx, 0, present);
  if (present > 0 && rleMax >= dict.size) throw new Error(`column ${col}: dictionary index ${rleMax} out of range (${dict.size} entries)`);
  const nul = dict.size;
  // rowIdx = valid ? idx[k++] : nul, without a branch (nulls are scattered: a branch mispredicts).
  for (let i = 0, k = 0; i < n; i++) {
    const v = valid[at + i]!;
    rowIdx[at + i] = nul ^ ((idx[k]! ^ nul) & -v);
    k += v;
  }
}

/** A column computed from an input column by a chain of per-value ops (see plan/pushdown.ts). */
export interface DerivedSpec {
  readonly name: string;
  readonly input: string;
}

/**
 * Applies per-value op chains to dictionary-encoded columns once per dictionary entry, then
 * gathers the results by index (RECom's "do not compute the same thing twice"): a row group of
 * 100k rows with a 5k-entry dictionary runs the ops 5k times instead of 100k, and the strings are
 * never expanded. `apply` runs a derived column's ops on a column (the dictionary, with one extra
 * null slot last, so that ops defined on null, like fillNull, give the null rows' value).
 *
 * Returns the derived columns it could compute. One whose input has non-dictionary pages, or
 * whose ops fail on some entry (bad data), is left out: the caller reads the raw input instead,
 * and the normal path reports the error with its row.
 */
export function decodeDerived(
  md: FileMetaData, rowGroup: number, derived: readonly DerivedSpec[], types: ReadonlyMap<string, ColumnType>,
  readAt: ReadAt, zstd: Zstd, apply: (name: string, input: Column) => Column,
): Map<string, Column> {
  const out = new Map<string, Column>();
  const indexed = decodeDerivedIndexed(md, rowGroup, derived, types, readAt, zstd, apply);
  for (const [name, d] of indexed) out.set(name, gatherIndexed(d));
  releaseIndexed(indexed.values());
  return out;
}

/**
 * A derived column before the gather: the ops' results per dictionary entry (plus the null slot
 * last) and each row's index into them. Row i's value is dict[idx[i]].
 */
export interface IndexedColumn {
  readonly dict: Column;
  readonly idx: Int32Array;
}

/** decodeDerived without the final gather, for a consumer that gathers on its own (packing a batch). */
export function decodeDerivedIndexed(
  md: FileMetaData, rowGroup: number, derived: readonly DerivedSpec[], types: ReadonlyMap<string, ColumnType>,
  readAt: ReadAt, zstd: Zstd, apply: (name: string, input: Column) => Column, range?: RowRange,
): Map<string, IndexedColumn> {
  const out = new Map<string, IndexedColumn>();
  const share = range?.share !== undefined ? { view: new DictShare(range.share), reverse: range.reverse === true } : undefined;
  // Bound module-level functions, not closures made per call (see eachOnDictionary).
  eachOnDictionary(md, rowGroup, derived, decodeIndexedInput.bind(null, md, types, readAt, zstd, range), apply, setIndexed.bind(null, out), share);
  return out;
}

/** decodeDerivedIndexed's `decode`: the input's row indices (this read's rows), and its dictionary unless `dictSize` is given. */
function decodeIndexedInput(
  md: FileMetaData, types: ReadonlyMap<string, ColumnType>, readAt: ReadAt, zstd: Zstd, range: RowRange | undefined,
  input: string, rg: FileMetaData['row_groups'][number], _rows: number, dictSize?: number,
): { dict: Column | null; idx: Int32Array } | null {
  const c = readable(md, rg, input, types);
  if (c === null) return null;
  const { first, rows } = rowsOf(rg, range);
  const idx = takeIdx(rows);
  const { dict } = decodeChunkInto(c.chunk, c.el, c.type, rows, readAt, zstd, idx, first, dictSize);
  return { dict: dictSize === undefined ? dictColumn(dict!) : null, idx };
}

/** decodeDerivedIndexed's `use`. */
function setIndexed(out: Map<string, IndexedColumn>, d: DerivedSpec, src: { readonly idx: Int32Array }, res: NumericColumn): void {
  out.set(d.name, { dict: res, idx: src.idx });
}

/**
 * A list feature before the gather: the ops' results per dictionary entry of the elements (plus
 * the null slot last), each element's index into them, and the lists as read. Valid row r holds
 * dict[idx[j]] for its first `keep` elements j from offsets[r] (a null entry is a null element).
 * stream/batch.ts's IndexedListSource with a numeric dictionary: `packRows` lays it out without a
 * gather, and `gatherIndexedList` makes it a list column.
 */
export interface IndexedList extends IndexedListSource {
  readonly dict: NumericColumn;
}

/**
 * decodeDerivedIndexed for list inputs (see plan/pushdown.ts): a list feature's per-value ops run
 * once per dictionary entry of the list's elements (`apply`, on the dictionary plus a null slot,
 * as for scalars); each list keeps its first `keep(name)` elements (its firstX ops; Infinity for
 * none). Per-value ops act on each element and firstX only on the lists' lengths, so their order
 * in the chain does not change the result. A derived column whose input has non-dictionary
 * pages, or whose ops fail, is left out, as in decodeDerived.
 */
export function decodeListDerivedIndexed(
  md: FileMetaData, rowGroup: number, derived: readonly DerivedSpec[], types: ReadonlyMap<string, ColumnType>,
  readAt: ReadAt, zstd: Zstd, apply: (name: string, input: Column) => Column, keep: (name: string) => number,
): Map<string, IndexedList> {
  const out = new Map<string, IndexedList>();
  eachOnDictionary(md, rowGroup, derived, decodeIndexedList.bind(null, md, types, readAt, zstd), apply, setIndexedList.bind(null, out, keep));
  return out;
}

/** decodeListDerivedIndexed's `decode`. */
function decodeIndexedList(
  md: FileMetaData, types: ReadonlyMap<string, ColumnType>, readAt: ReadAt, zstd: Zstd, input: string, rg: FileMetaData['row_groups'][number], rows: number,
): { offsets: Int32Array; valid: Uint8Array | null; idx: Int32Array; dict: Column } | null {
  const l = readableList(md, rg, input, types);
  if (l === null) return null;
  const r = decodeListInto(l, rows, readAt, zstd, true);
  return { offsets: r.offsets, valid: r.valid, idx: r.idx!, dict: dictColumn(r.dict!) };
}

/** decodeListDerivedIndexed's `use`. */
function setIndexedList(
  out: Map<string, IndexedList>, keep: (name: string) => number, d: DerivedSpec,
  src: { readonly offsets: Int32Array; readonly valid: Uint8Array | null; readonly idx: Int32Array }, res: NumericColumn,
): void {
  out.set(d.name, { dict: res, idx: src.idx, offsets: src.offsets, valid: src.valid, keep: keep(d.name) });
}

/** An indexed list as a list column: each list cut to its first `keep` elements, then gathered. */
export function gatherIndexedList(l: IndexedList): ListColumn {
  const { offsets, idx } = firstOf(l.offsets, l.idx, l.keep);
  return { type: 'list', offsets, child: gatherRows(l.dict, idx) as NumericColumn, valid: l.valid };
}

/**
 * The loop both pushdowns share, over row group `rowGroup` (none when it does not exist): each
 * derived column's input decoded once in indices mode (`decode`: null when this decoder does not
 * read the column; NotAllDictionary when a page is not dictionary-encoded), its ops run on the
 * input's dictionary (`apply`), and `use` called for those whose ops succeed with a numeric
 * result. The others are left to the caller's fallback.
 *
 * With a `share` (a part of a row group split by rows), results another part published are used
 * as they are, and an input whose results are all published is decoded for its indices only
 * (`decode` gets the dictionary's size); results this part computes first are published.
 */
function eachOnDictionary<S extends { readonly dict: Column | null }>(
  md: FileMetaData, rowGroup: number, derived: readonly DerivedSpec[],
  decode: (input: string, rg: FileMetaData['row_groups'][number], rows: number, dictSize?: number) => S | null, apply: (name: string, input: Column) => Column,
  use: (d: DerivedSpec, src: S, res: NumericColumn) => void, share?: { readonly view: DictShare; readonly reverse: boolean },
): void {
  const rg = md.row_groups[rowGroup];
  if (rg === undefined) return;
  const rows = Number(rg.num_rows);
  // Plain loops and module-level helpers, not callbacks made per call: see stream/batch.ts, above
  // `packRows`. Derived columns by input, in order of first appearance: each input is decoded once.
  const byInput = new Map<string, number[]>();
  for (let i = 0; i < derived.length; i++) {
    const g = byInput.get(derived[i]!.input);
    if (g === undefined) byInput.set(derived[i]!.input, [i]);
    else g.push(i);
  }
  const inputs = [...byInput];
  if (share?.reverse === true) inputs.reverse();
  const view = share?.view;
  for (const [input, members] of inputs) {
    // What other parts published for each member (all null without a share).
    const known: Shared[] = [];
    let allKnown = view !== undefined;
    let anyResult: NumericColumn | null = null;
    for (let k = 0; k < members.length; k++) {
      const r = view === undefined ? null : view.lookup(members[k]!);
      known.push(r);
      if (r === null) allKnown = false;
      else if (r !== 'failed' && anyResult === null) anyResult = r;
    }
    if (allKnown) {
      // Every op chain on this input fails on its dictionary: the caller reads it raw.
      if (anyResult === null) continue;
      const src = tryDecode(decode, input, rg, rows, anyResult.values.length - 1);
      if (src !== null) for (let k = 0; k < members.length; k++) if (known[k] !== 'failed') use(derived[members[k]!]!, src, known[k] as NumericColumn);
      continue;
    }
    // Results no part has published: this part computes them, and publishes those it claims.
    const mine = new Set<number>();
    if (view !== undefined) for (let k = 0; k < members.length; k++) if (known[k] === null && view.claim(members[k]!)) mine.add(members[k]!);
    let src: S | null;
    try {
      src = tryDecode(decode, input, rg, rows);
    } catch (e) {
      for (const i of mine) view!.unclaim(i);
      throw e;
    }
    // This part's pages of the input are not all dictionary-encoded: another part's may be.
    if (src === null) { for (const i of mine) view!.unclaim(i); continue; }
    for (let k = 0; k < members.length; k++) {
      const i = members[k]!;
      const d = derived[i]!;
      const shared = known[k]!;
      if (shared === 'failed') continue;
      if (shared !== null) { use(d, src, shared); continue; }
      let res: Column | null;
      try {
        res = apply(d.name, src.dict!);
      } catch {
        res = null;
      }
      const numeric = res !== null && (res.type === 'int32' || res.type === 'int64' || res.type === 'float32' || res.type === 'float64');
      if (mine.has(i)) {
        if (numeric) view!.publish(i, res as NumericColumn);
        else view!.fail(i);
      }
      if (numeric) use(d, src, res as NumericColumn);
    }
  }
}

/** `decode(input, rg, rows, dictSize)`, or null when a page of the input is not dictionary-encoded. */
function tryDecode<S>(
  decode: (input: string, rg: FileMetaData['row_groups'][number], rows: number, dictSize?: number) => S | null,
  input: string, rg: FileMetaData['row_groups'][number], rows: number, dictSize?: number,
): S | null {
  try {
    return decode(input, rg, rows, dictSize);
  } catch (e) {
    if (!(e instanceof NotAllDictionary)) throw e;
    return null;
  }
}

/** Each list cut to its first x elements: new offsets and the kept elements' indices (the inputs themselves when nothing is cut). Core's firstX, without its intermediate index. */
function firstOf(offsets: Int32Array, idx: Int32Array, x: number): { offsets: Int32Array; idx: Int32Array } {
  const rows = offsets.length - 1;
  const out = new Int32Array(rows + 1);
  for (let i = 0; i < rows; i++) out[i + 1] = out[i]! + Math.min(x, offsets[i + 1]! - offsets[i]!);
  if (out[rows] === offsets[rows]) return { offsets, idx };
  const kept = new Int32Array(out[rows]!);
  for (let i = 0, k = 0; i < rows; i++) {
    for (let j = offsets[i]!, end = j + out[i + 1]! - out[i]!; j < end; j++) kept[k++] = idx[j]!;
  }
  return { offsets: out, idx: kept };
}

/** The rows of an indexed column as a plain column. */
export function gatherIndexed(d: IndexedColumn): Column {
  return gatherRows(d.dict, d.idx)!;
}

/**
 * Copies src[s, s + len) to dst at d. Short strings (hex ids are 8 bytes) are copied by hand: that
 * is faster than set(), and a subarray per string is a heap object per string; for dictionaries of
 * tens of thousands of ids that garbage alone kept V8's major GC busy.
 */
function copyBytes(src: Uint8Array, s: number, len: number, dst: Uint8Array, d: number): void {
  if (len <= 16) for (let b = 0; b < len; b++) dst[d + b] = src[s + b]!;
  else dst.set(src.subarray(s, s + len), d);
}

/** The dictionary as a column with one extra null slot at the end. */
function dictColumn(d: Dict): Column {
  const n = d.size;
  const valid = new Uint8Array(n + 1).fill(1);
  valid[n] = 0;
  if (d.type !== 'utf8') {
    const values = newArray(d.type, n + 1);
    (values as Int32Array).set(d.values as Int32Array);
    return { type: d.type, values, valid } as Column;
  }
  const offsets = new Int32Array(n + 2);
  let total = 0;
  for (let i = 0; i < n; i++) total += d.lens![i]!;
  const data = new Uint8Array(total);
  const src = d.data!;
  let end = 0;
  for (let i = 0; i < n; i++) {
    offsets[i] = end;
    const s = d.starts![i]!;
    const len = d.lens![i]!;
    copyBytes(src, s, len, data, end);
    end += len;
  }
  offsets[n] = end;
  offsets[n + 1] = end;
  return { type: 'utf8', offsets, data, valid };
}

/** out[i] = c[idx[i]] (value and validity) for a numeric column; null for other column kinds. */
function gatherRows(c: Column, idx: Int32Array): Column | null {
  if (c.type !== 'int32' && c.type !== 'int64' && c.type !== 'float32' && c.type !== 'float64') return null;
  const rows = idx.length;
  if (c.type === 'int64' && c.valid !== null) return gatherRowsI64(c.values, c.valid, idx);
  const values = newArray(c.type, rows);
  gather(c.type, values, c.values, idx, 0, rows, null);
  let valid: Uint8Array | null = null;
  if (c.valid !== null) {
    const v = new Uint8Array(rows);
    const cv = c.valid;
    let all = 1;
    for (let i = 0; i < rows; i++) { const b = cv[idx[i]!]!; v[i] = b; all &= b; }
    valid = all === 1 ? null : v;
  }
  return { type: c.type, values, valid } as Column;
}

/** gatherRows for int64 with validity, in one pass (the sparse-id case). */
function gatherRowsI64(src: BigInt64Array, cv: Uint8Array, idx: Int32Array): Column {
  const rows = idx.length;
  const values = new BigInt64Array(rows);
  const o = new Int32Array(values.buffer);
  const d = new Int32Array(src.buffer, src.byteOffset, src.length * 2);
  const v = new Uint8Array(rows);
  let all = 1;
  for (let i = 0; i < rows; i++) {
    const j = idx[i]!;
    o[2 * i] = d[2 * j]!;
    o[2 * i + 1] = d[2 * j + 1]!;
    const b = cv[j]!;
    v[i] = b;
    all &= b;
  }
  return { type: 'int64', values, valid: all === 1 ? null : v };
}

function newArray(type: PrimitiveType, n: number): Int32Array | BigInt64Array | Float32Array | Float64Array {
  switch (type) {
    case 'int32': return new Int32Array(n);
    case 'int64': return new BigInt64Array(n);
    case 'float32': return new Float32Array(n);
    default: return new Float64Array(n);
  }
}

const WIDTH: Record<string, number> = { int32: 4, int64: 8, float32: 4, float64: 8 };

/** Copies `n` little-endian fixed-width values starting at byte `p` into a fresh aligned array. */
function plainFixed(page: Uint8Array, p: number, type: PrimitiveType, n: number): Int32Array | BigInt64Array | Float32Array | Float64Array {
  const w = WIDTH[type]!;
  if (p + n * w > page.length) throw new Error(`PLAIN values run past the page (${n} values of ${w} bytes)`);
  // Copy into a fresh buffer for alignment (not page.slice: on a Node Buffer, gunzip's output, that is a view).
  const copy = new Uint8Array(n * w);
  copy.set(page.subarray(p, p + n * w));
  const out = newArray(type, 0);
  const C = out.constructor as new (b: ArrayBuffer, o: number, l: number) => typeof out;
  return new C(copy.buffer, 0, n);
}

/**
 * Scratch for the current column chunk's dictionary: the page's bytes and its strings' starts and
 * lengths. A Dict lives for its chunk only (a derived column's `dictColumn` copies it out right
 * after), and chunks are decoded one at a time per thread, so the arrays are reused across chunks
 * rather than made per chunk (~20 MB per 1M RM1 rows of garbage in the decode worker otherwise).
 */
let dictPage = new Uint8Array(0);
let dictStarts = new Int32Array(0);
let dictLens = new Int32Array(0);

function keepDictPage(page: Uint8Array): Uint8Array {
  if (dictPage.length < page.length) dictPage = new Uint8Array(Math.max(page.length, 2 * dictPage.length));
  dictPage.set(page);
  return dictPage.subarray(0, page.length);
}

function readDict(page: Uint8Array, type: PrimitiveType, n: number): Dict {
  if (type !== 'utf8') return { type, values: plainFixed(page, 0, type, n), starts: null, lens: null, data: null, size: n };
  if (dictStarts.length < n) {
    dictStarts = new Int32Array(Math.max(n, 2 * dictStarts.length));
    dictLens = new Int32Array(dictStarts.length);
  }
  const starts = dictStarts;
  const lens = dictLens;
  const view = new DataView(page.buffer, page.byteOffset, page.byteLength);
  let p = 0;
  for (let i = 0; i < n; i++) {
    if (p + 4 > page.length) throw new Error('dictionary page ends inside a string length');
    const len = view.getUint32(p, true);
    starts[i] = p + 4;
    lens[i] = len;
    p += 4 + len;
    if (p > page.length) throw new Error('dictionary string runs past the page');
  }
  return { type, values: null, starts, lens, data: page, size: n };
}

function readValues(
  page: Uint8Array, p: number, encoding: string, type: PrimitiveType, n: number, present: number, at: number,
  valid: Uint8Array | null, values: Int32Array | BigInt64Array | Float32Array | Float64Array | null, utf8: Utf8Out | null, dict: Dict | null, col: string,
): void {
  if (encoding === 'PLAIN') {
    if (utf8) return plainUtf8(page, p, n, present, at, valid, utf8, col);
    const src = plainFixed(page, p, type, present);
    scatter(src, values!, at, n, valid);
    return;
  }
  if (encoding !== 'RLE_DICTIONARY' && encoding !== 'PLAIN_DICTIONARY') throw new Error(`column ${col}: unsupported encoding ${encoding}`);
  if (dict === null) throw new Error(`column ${col}: dictionary-encoded page without a dictionary page`);
  const width = page[p]!;
  if (width > 32) throw new Error(`column ${col}: dictionary index bit width ${width}`);
  if (scratchIdx.length < present) scratchIdx = new Int32Array(Math.max(present, 2 * scratchIdx.length));
  const idx = scratchIdx;
  rleHybrid(page, p + 1, page.length, width, idx, 0, present);
  if (present > 0 && rleMax >= dict.size) throw new Error(`column ${col}: dictionary index ${rleMax} out of range (${dict.size} entries)`);
  if (utf8) return gatherUtf8(utf8, dict, idx, at, n, present, valid);
  gather(type, values!, dict.values!, idx, at, n, valid);
}

// One copy per array type, so each loop sees one element kind (a loop over a union of typed
// arrays runs several times slower in V8).
function gather(type: PrimitiveType, out: Int32Array | BigInt64Array | Float32Array | Float64Array, dv: Int32Array | BigInt64Array | Float32Array | Float64Array, idx: Int32Array, at: number, n: number, valid: Uint8Array | null): void {
  switch (type) {
    case 'int32': return gatherI32(out as Int32Array, dv as Int32Array, idx, at, n, valid);
    case 'float32': return gatherF32(out as Float32Array, dv as Float32Array, idx, at, n, valid);
    case 'float64': return gatherF64(out as Float64Array, dv as Float64Array, idx, at, n, valid);
    default: return gatherI64(out as BigInt64Array, dv as BigInt64Array, idx, at, n, valid);
  }
}

function gatherI32(out: Int32Array, dv: Int32Array, idx: Int32Array, at: number, n: number, valid: Uint8Array | null): void {
  if (valid === null) { for (let i = 0; i < n; i++) out[at + i] = dv[idx[i]!]!; return; }
  for (let i = 0, k = 0; i < n; i++) if (valid[at + i] !== 0) out[at + i] = dv[idx[k++]!]!;
}
function gatherF32(out: Float32Array, dv: Float32Array, idx: Int32Array, at: number, n: number, valid: Uint8Array | null): void {
  if (valid === null) { for (let i = 0; i < n; i++) out[at + i] = dv[idx[i]!]!; return; }
  for (let i = 0, k = 0; i < n; i++) if (valid[at + i] !== 0) out[at + i] = dv[idx[k++]!]!;
}
function gatherF64(out: Float64Array, dv: Float64Array, idx: Int32Array, at: number, n: number, valid: Uint8Array | null): void {
  if (valid === null) { for (let i = 0; i < n; i++) out[at + i] = dv[idx[i]!]!; return; }
  for (let i = 0, k = 0; i < n; i++) if (valid[at + i] !== 0) out[at + i] = dv[idx[k++]!]!;
}
function gatherI64(out: BigInt64Array, dv: BigInt64Array, idx: Int32Array, at: number, n: number, valid: Uint8Array | null): void {
  // Through int32 word views: BigInt element access allocates.
  const o = new Int32Array(out.buffer, out.byteOffset, out.length * 2);
  const d = new Int32Array(dv.buffer, dv.byteOffset, dv.length * 2);
  for (let i = 0, k = 0; i < n; i++) {
    if (valid !== null && valid[at + i] === 0) continue;
    const j = idx[k++]! * 2;
    o[(at + i) * 2] = d[j]!;
    o[(at + i) * 2 + 1] = d[j + 1]!;
  }
}

function gatherUtf8(utf8: Utf8Out, dict: Dict, idx: Int32Array, at: number, n: number, present: number, valid: Uint8Array | null): void {
  const starts = dict.starts!;
  const lens = dict.lens!;
  const src = dict.data!;
  let need = 0;
  for (let k = 0; k < present; k++) need += lens[idx[k]!]!;
  utf8.reserve(need);
  const o = utf8.offsets;
  const data = utf8.data;
  let end = utf8.end;
  for (let i = 0, k = 0; i < n; i++) {
    o[at + i] = end;
    if (valid !== null && valid[at + i] === 0) continue;
    const j = idx[k++]!;
    const s = starts[j]!;
    const len = lens[j]!;
    copyBytes(src, s, len, data, end);
    end += len;
  }
  utf8.end = end;
}

/** Places `present` dense values at the valid slots of rows [at, at + n). */
function scatter(src: Int32Array | BigInt64Array | Float32Array | Float64Array, out: Int32Array | BigInt64Array | Float32Array | Float64Array, at: number, n: number, valid: Uint8Array | null): void {
  if (valid === null) { (out as Int32Array).set(src as Int32Array, at); return; }
  let k = 0;
  for (let i = 0; i < n; i++) if (valid[at + i] !== 0) out[at + i] = src[k++]!;
}

function plainUtf8(page: Uint8Array, p: number, n: number, present: number, at: number, valid: Uint8Array | null, utf8: Utf8Out, col: string): void {
  const view = new DataView(page.buffer, page.byteOffset, page.byteLength);
  utf8.reserve(page.length - p);
  const o = utf8.offsets;
  let end = utf8.end;
  let k = 0;
  for (let i = 0; i < n; i++) {
    o[at + i] = end;
    if (valid !== null && valid[at + i] === 0) continue;
    if (p + 4 > page.length) throw new Error(`column ${col}: PLAIN strings run past the page`);
    const len = view.getUint32(p, true);
    if (p + 4 + len > page.length) throw new Error(`column ${col}: PLAIN string runs past the page`);
    copyBytes(page, p + 4, len, utf8.data, end);
    end += len;
    p += 4 + len;
    k++;
  }
  if (k !== present) throw new Error(`column ${col}: ${k} strings for ${present} present values`);
  utf8.end = end;
}

function count(valid: Uint8Array, at: number, n: number): number {
  let c = 0;
  for (let i = at; i < at + n; i++) c += valid[i]!;
  return c;
}

function decompress(body: Uint8Array, size: number, codec: string, zstd: Zstd): Uint8Array {
  let out: Uint8Array;
  if (codec === 'UNCOMPRESSED') out = body;
  else if (codec === 'ZSTD') out = zstd(body, size);
  else if (codec === 'SNAPPY') { out = new Uint8Array(size); snappyUncompress(body, out); }
  else if (codec === 'GZIP') out = gunzipSync(body);
  else throw new Error(`unsupported codec ${codec}`);
  if (out.length !== size) throw new Error(`page decompressed to ${out.length} bytes, header says ${size}`);
  return out;
}

/** The largest value (unsigned) the last `rleHybrid` call decoded, for dictionary bounds checks. */
let rleMax = 0;

/**
 * Decodes `n` values of the RLE / bit-packed hybrid encoding from bytes [pos, end) into
 * out[at ..]. Throws when the runs end before `n` values (a truncated or corrupt page).
 */
export function rleHybrid(b: Uint8Array, pos: number, end: number, width: number, out: Int32Array, at: number, n: number): number {
  let seen = 0;
  let max = 0;
  const mask = width >= 32 ? -1 : (1 << width) - 1;
  const bw = (width + 7) >> 3;
  let dv: DataView | undefined;
  while (seen < n) {
    if (pos >= end) throw new Error(`RLE data ends after ${seen} of ${n} values`);
    let h = 0;
    let sh = 0;
    let byte: number;
    // A ULEB128 run header; `mul` (2 ** sh) by multiplication, since `2 ** sh` calls into C++.
    let mul = 1;
    do { byte = b[pos++]!; h += (byte & 0x7f) * mul; mul *= 128; sh += 7; } while (byte & 0x80 && sh < 35);
    if (h % 2 === 1) {
      const groups = Math.floor(h / 2);
      const stop = Math.min(n, seen + groups * 8);
      const next = pos + groups * width;
      if (width === 0) { out.fill(0, at + seen, at + stop); seen = stop; pos = next; continue; }
      if (pos + Math.ceil(((stop - seen) * width) / 8) > end) throw new Error('bit-packed run past the end of its data');
      if (width <= 25) {
        // Value k of the run starts at bit k * width; a little-endian 32-bit read at its byte
        // holds all of it (bit offset <= 7, width <= 25). Values whose 4-byte window would pass the
        // end of the buffer take the byte-at-a-time loop below.
        const count = stop - seen;
        const lim = b.length - 4 - pos;
        const fast = lim < 0 ? 0 : Math.min(count, Math.floor(((lim + 1) * 8 - 1) / width) + 1);
        if (fast > 0) {
          dv ??= new DataView(b.buffer, b.byteOffset, b.byteLength);
          for (let i = at + seen, e = i + fast, bit = 0; i < e; i++, bit += width) {
            const x = (dv.getUint32(pos + (bit >>> 3), true) >>> (bit & 7)) & mask;
            out[i] = x;
            if (x > max) max = x;
          }
        }
        const bit0 = fast * width;
        let p = pos + (bit0 >>> 3);
        let acc = 0;
        let have = 0;
        if (fast < count && (bit0 & 7) !== 0) { acc = b[p++]! >>> (bit0 & 7); have = 8 - (bit0 & 7); }
        for (let i = at + seen + fast, e = at + stop; i < e; i++) {
          while (have < width) { acc |= b[p++]! << have; have += 8; }
          const x = acc & mask;
          out[i] = x;
          if (x > max) max = x;
          acc >>>= width;
          have -= width;
        }
      } else {
        // Wide indices: read each value bit by bit through a float accumulator (rare).
        let bit = pos * 8;
        for (let i = at + seen, e = at + stop; i < e; i++) {
          let v = 0;
          for (let k = 0; k < width; k++, bit++) if (b[bit >> 3]! & (1 << (bit & 7))) v += 2 ** k;
          out[i] = v | 0;
          if (v > max) max = v;
        }
      }
      pos = next;
      seen = stop;
    } else {
      const runLen = Math.floor(h / 2);
      if (pos + bw > end) throw new Error('RLE run value past the end of its data');
      let v = 0;
      for (let k = 0, mul = 1; k < bw; k++, mul *= 256) v += b[pos++]! * mul;
      const stop = Math.min(n, seen + runLen);
      if (runLen === 0) throw new Error('empty RLE run');
      // TypedArray#fill is a ~15 ns call into C++ whatever the length (development VM); most
      // runs are short, and a loop writes up to 16 values in less.
      if (stop - seen <= 16) for (let i = at + seen, e = at + stop, x = v | 0; i < e; i++) out[i] = x;
      else out.fill(v | 0, at + seen, at + stop);
      if (v > max) max = v;
      seen = stop;
    }
  }
  rleMax = max;
  return pos;
}

/**
 * Repetition or definition levels: `n` values of the RLE / bit-packed hybrid at the bit width of
 * `max` (1 to 8 bits), one byte each, into out[at ..]. A flat OPTIONAL column's definition levels
 * (max 1) are its validity bytes. Throws when the runs end early or a level exceeds `max` (a
 * corrupt page). Its own function rather than `rleHybrid` with a byte output, which would make
 * that hot loop polymorphic.
 */
export function levels(b: Uint8Array, pos: number, end: number, max: number, out: Uint8Array, n: number, at = 0): void {
  if (!Number.isInteger(max) || max < 1 || max > 255) throw new RangeError(`level maximum ${max} is not 1 to 255`);
  const width = 32 - Math.clz32(max);
  const mask = (1 << width) - 1;
  let seen = 0;
  while (seen < n) {
    if (pos >= end) throw new Error(`levels end after ${seen} of ${n} values`);
    let h = 0;
    let sh = 0;
    let byte: number;
    // A ULEB128 run header; `mul` (2 ** sh) by multiplication, since `2 ** sh` calls into C++.
    let mul = 1;
    do { byte = b[pos++]!; h += (byte & 0x7f) * mul; mul *= 128; sh += 7; } while (byte & 0x80 && sh < 35);
    if (h % 2 === 1) {
      // Bit-packed groups of 8 values in `width` bytes, least significant bit first.
      const groups = Math.floor(h / 2);
      const stop = Math.min(n, seen + groups * 8);
      if (pos + Math.ceil(((stop - seen) * width) / 8) > end) throw new Error('bit-packed levels past the end of their data');
      let i = at + seen;
      const e = at + stop;
      let q = pos;
      if (width === 1) {
        for (; i + 8 <= e; i += 8) {
          const v = b[q++]!;
          out[i] = v & 1; out[i + 1] = (v >> 1) & 1; out[i + 2] = (v >> 2) & 1; out[i + 3] = (v >> 3) & 1;
          out[i + 4] = (v >> 4) & 1; out[i + 5] = (v >> 5) & 1; out[i + 6] = (v >> 6) & 1; out[i + 7] = v >> 7;
        }
      } else if (width === 2) {
        for (; i + 4 <= e; i += 4) {
          const v = b[q++]!;
          out[i] = v & 3; out[i + 1] = (v >> 2) & 3; out[i + 2] = (v >> 4) & 3; out[i + 3] = v >> 6;
        }
      }
      // The rest (and every width above 2) through a bit accumulator.
      let acc = 0;
      let have = 0;
      for (; i < e; i++) {
        if (have < width) { acc |= b[q++]! << have; have += 8; }
        out[i] = acc & mask;
        acc >>>= width;
        have -= width;
      }
      if (mask > max) for (let k = at + seen; k < e; k++) if (out[k]! > max) throw new Error(`level ${out[k]} above the column's maximum ${max}`);
      pos += groups * width;
      seen = stop;
    } else {
      const runLen = Math.floor(h / 2);
      if (runLen === 0) throw new Error('empty RLE run');
      if (pos >= end) throw new Error('RLE run value past the end of its data');
      const v = b[pos++]!;
      if (v > max) throw new Error(`level ${v} above the column's maximum ${max}`);
      const stop = Math.min(n, seen + runLen);
      // As in rleHybrid: a loop for short runs, fill's memset for long ones.
      if (stop - seen <= 16) for (let i = at + seen, e = at + stop; i < e; i++) out[i] = v;
      else out.fill(v, at + seen, at + stop);
      seen = stop;
    }
  }
}
