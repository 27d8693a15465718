/**
 * A row group's flat column chunks, decoded page by page into Sluice columns (or, in indices mode,
 * into each row's dictionary index); list columns go to list.ts.
 */
import type { ColumnChunk, FileMetaData, SchemaElement } from 'hyparquet/src/types.js';
import type { Column, ColumnType, PrimitiveType } from '@sluice/ops';
import { keepDictPage, readDict, type Dict } from './dictionary.js';
import { decodeListChunk } from './list.js';
import { chunkPages, decompress, type ReadAt, type Zstd } from './page.js';
import { located, Refusal, Unsupported, type PagePlace } from './refusal.js';
import { patchNulls, PlainValues, plainIndices, type PlainColumn } from './plain.js';
import { levels } from './rle-wasm.js';
import { readable, readableList } from './schema.js';
import { count, indices, newArray, NotAllDictionary, readValues, Utf8Out } from './values.js';

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
   * Shared by the parts of one row group (../dict-share.ts): derived columns' results per
   * dictionary entry, computed by the first part to reach each column and read by the others.
   */
  readonly share?: SharedArrayBuffer;
  /** Walk the derived columns last to first, so that two parts reading at once meet in the middle. */
  readonly reverse?: boolean;
}

/** The rows a read covers: all of row group `rg` (`range` absent), or the range, checked against it. */
export function rowsOf(rg: FileMetaData['row_groups'][number], range: RowRange | undefined): { first: number; rows: number } {
  const all = Number(rg.num_rows);
  if (range === undefined) return { first: 0, rows: all };
  if (!Number.isInteger(range.first) || !Number.isInteger(range.rows) || range.first < 0 || range.rows < 1 || range.first + range.rows > all) {
    throw new Error(`rows ${range.first}..${range.first + range.rows} are not within the row group's ${all} rows`);
  }
  return range;
}

/**
 * Decodes the named columns of one row group that this decoder handles; `rest` lists the ones
 * that need the general reader (see index.ts). `types` are the Sluice types the dataset's
 * Arrow schema gave.
 */
export function decodeFlatRowGroup(
  md: FileMetaData,
  rowGroup: number,
  names: readonly string[],
  types: ReadonlyMap<string, ColumnType>,
  readAt: ReadAt,
  zstd: Zstd,
  range?: RowRange,
): { columns: Map<string, Column>; rest: string[] } {
  const rg = md.row_groups[rowGroup];
  if (rg === undefined) throw new Error(`row group ${rowGroup} does not exist (the file has ${md.row_groups.length})`);
  const { first, rows } = rowsOf(rg, range);
  const columns = new Map<string, Column>();
  const rest: string[] = [];
  for (const name of names) {
    const c = readable(md, rg, name, types);
    if (c !== null) {
      const { column } = decodeChunkInto(c.chunk, c.el, c.type, rows, readAt, zstd, null, first);
      if (c.unsigned64) checkUnsigned64(column!, name, first);
      columns.set(name, column!);
      continue;
    }
    const l = readableList(md, rg, name, types);
    if (l !== null && range !== undefined) throw new Unsupported(`column ${name}: a list column is read by whole row groups only`);
    if (l !== null) columns.set(name, decodeListChunk(l, rows, readAt, zstd));
    else rest.push(name);
  }
  return { columns, rest };
}

/**
 * Decodes `rows` rows of a column chunk from row `first` (a page boundary; see RowRange). With
 * `rowIdx`, dictionary pages are not expanded: rowIdx[i] gets row i's dictionary index (the
 * dictionary's size for null) and the dictionary comes back instead of the column. PLAIN pages
 * then throw NotAllDictionary, unless `withPlain`: their values come back as `plain` and their
 * rows' indices point past the dictionary's null slot (plain.ts); with 'hex', strings come back
 * parsed by hex2int (plain-hex.ts).
 */
export function decodeChunkInto(
  chunk: ColumnChunk,
  el: SchemaElement,
  type: PrimitiveType,
  rows: number,
  readAt: ReadAt,
  zstd: Zstd,
  rowIdx: Int32Array | null,
  first = 0,
  dictSize?: number,
  withPlain: false | 'values' | 'hex' = false,
): { column?: Column; dict?: Dict; plain?: PlainColumn | null } {
  const m = chunk.meta_data!;
  const col = m.path_in_schema[0]!;
  /** The page being decoded, for errors. */
  let place: PagePlace | null = null;
  try {
    return decodePages(chunk, el, type, rows, readAt, zstd, rowIdx, first, dictSize, withPlain, (p) => (place = p));
  } catch (e) {
    throw located(e, col, place, (x) => x instanceof NotAllDictionary);
  }
}

function decodePages(
  chunk: ColumnChunk,
  el: SchemaElement,
  type: PrimitiveType,
  rows: number,
  readAt: ReadAt,
  zstd: Zstd,
  rowIdx: Int32Array | null,
  first: number,
  dictSize: number | undefined,
  withPlain: false | 'values' | 'hex',
  at_: (p: PagePlace) => void,
): { column?: Column; dict?: Dict; plain?: PlainColumn | null } {
  const m = chunk.meta_data!;
  /** Rows still to pass over before the range starts: whole pages, never decompressed. */
  let skip = first;
  const skipPage = (n: number): void => {
    if (n > skip) throw new Unsupported(`column ${m.path_in_schema[0]}: a page spans row ${first}, where this read starts (not a page boundary)`);
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
  const plain = rowIdx !== null && withPlain !== false ? new PlainValues(type, rows, withPlain === 'hex') : null;
  let at = 0;
  while (at < rows) {
    const pg = nextPage();
    if (pg === null) throw new Error(`column ${m.path_in_schema[0]}: the column chunk ends after ${at} of the ${rows} rows`);
    at_(pg);
    const { h, body } = pg;
    // PLAIN rows' indices count from the dictionary's size (plain.ts): a dictionary page after a
    // data page (no writer does that) would move them. Read such a chunk as values.
    if (h.type === 'DICTIONARY_PAGE' && rowIdx !== null && (at > 0 || dict !== null)) throw new NotAllDictionary();
    if (h.type === 'DICTIONARY_PAGE' && dictSize !== undefined && rowIdx !== null) {
      // Indices mode with the entries' results already computed (a shared row group): only the
      // dictionary's size matters, for the bounds checks and the null slot.
      if (h.dictionary_page_header!.num_values !== dictSize)
        throw new Error(`column ${m.path_in_schema[0]}: dictionary of ${h.dictionary_page_header!.num_values} entries, ${dictSize} shared`);
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
      if (skip > 0) {
        skipPage(n);
        continue;
      }
      if (at + n > rows) throw tooMany();
      const page = decompress(body, h.uncompressed_page_size, m.codec, zstd);
      let p = 0;
      let present = n;
      if (optional) {
        const len = page[0]! | (page[1]! << 8) | (page[2]! << 16) | (page[3]! << 24);
        p = 4 + len;
        if (p > page.length) throw new Error(`column ${m.path_in_schema[0]}: definition levels run past the page`);
        levels(page, 4, p, 1, valid!, n, at);
        present = count(valid!, at, n);
      }
      if (plain !== null && d.encoding === 'PLAIN') plainIndices(page, p, n, present, at, valid, rowIdx!, dict?.size ?? null, plain, m.path_in_schema[0]!);
      else if (rowIdx !== null) indices(page, p, d.encoding, n, present, at, valid, rowIdx, dict, m.path_in_schema[0]!);
      else readValues(page, p, d.encoding, type, n, present, at, valid, values, utf8, dict, m.path_in_schema[0]!);
      at += n;
    } else if (h.type === 'DATA_PAGE_V2') {
      const d = h.data_page_header_v2!;
      const n = d.num_values;
      if (d.num_rows !== n) throw new Error(`column ${m.path_in_schema[0]}: a flat column's v2 page has ${n} values for ${d.num_rows} rows`);
      if (skip > 0) {
        skipPage(n);
        continue;
      }
      if (at + n > rows) throw tooMany();
      const levelBytes = d.repetition_levels_byte_length + d.definition_levels_byte_length;
      let present = n;
      if (optional) {
        levels(body, d.repetition_levels_byte_length, levelBytes, 1, valid!, n, at);
        present = count(valid!, at, n);
      }
      const rest = body.subarray(levelBytes);
      const page = d.is_compressed ? decompress(rest, h.uncompressed_page_size - levelBytes, m.codec, zstd) : rest;
      if (plain !== null && d.encoding === 'PLAIN') plainIndices(page, 0, n, present, at, valid, rowIdx!, dict?.size ?? null, plain, m.path_in_schema[0]!);
      else if (rowIdx !== null) indices(page, 0, d.encoding, n, present, at, valid, rowIdx, dict, m.path_in_schema[0]!);
      else readValues(page, 0, d.encoding, type, n, present, at, valid, values, utf8, dict, m.path_in_schema[0]!);
      at += n;
    }
    // Index pages and unknown page types carry no values.
  }
  if (rowIdx !== null) {
    if (plain !== null) {
      patchNulls(rowIdx, rows, plain);
      return { dict: dict ?? emptyDict(type), plain: plain.count > 0 || plain.nulls > 0 ? plain.column() : null };
    }
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

/**
 * Refuses an unsigned 64-bit column holding a value above int64's maximum, which Sluice's int64
 * columns cannot hold: read as int64 it would wrap to a negative number. Rows count from `first`
 * of the row group.
 */
export function checkUnsigned64(c: Column, name: string, first: number): void {
  if (c.type !== 'int64') return;
  const v = c.values;
  // The high words' signs, through an int32 view: BigInt element access allocates.
  const w = new Int32Array(v.buffer, v.byteOffset, v.length * 2);
  for (let i = 0; i < v.length; i++) {
    if (w[2 * i + 1]! < 0 && (c.valid === null || c.valid[i] === 1)) {
      throw new Refusal(
        name,
        `row ${first + i} of the row group holds the unsigned 64-bit value ${BigInt.asUintN(64, v[i]!)}, above the largest int64 (9223372036854775807); Sluice reads ids as int64 and will not wrap it to a negative number`,
      );
    }
  }
}

/** The dictionary of a chunk that has none (every page PLAIN): no entries, so null rows take slot 0. */
function emptyDict(type: PrimitiveType): Dict {
  return readDict(new Uint8Array(0), type, 0);
}

/** Scratch validity for indices mode (reused: chunks are decoded one at a time per thread). */
let validScratch = new Uint8Array(0);

function scratchValid(rows: number): Uint8Array {
  if (validScratch.length < rows) validScratch = new Uint8Array(rows);
  return validScratch;
}
