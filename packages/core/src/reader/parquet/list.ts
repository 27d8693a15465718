/**
 * List column chunks (the standard three-level LIST layout of numbers): rows and element slots
 * from the repetition and definition levels, then each page's values into its slots.
 */
import type { ListColumn, NumericColumn, ValidMask } from '@sluice/ops';
import { readDict, type Dict } from './dictionary.js';
import { chunkPages, decompress, type ReadAt, type Zstd } from './page.js';
import { located, type PagePlace } from './refusal.js';
import { firstIndices, patchNulls, PlainValues, plainIndices, type PlainColumn } from './plain.js';
import { levels } from './rle-wasm.js';
import type { ListChunk } from './schema.js';
import { count, indices, newArray, NotAllDictionary, readValues } from './values.js';

/** Scratch for a page's repetition and definition levels (pages are decoded one at a time per thread). */
let repScratch = new Uint8Array(0);
let defScratch = new Uint8Array(0);

function growLevelScratch(n: number): void {
  if (repScratch.length >= n) return;
  repScratch = new Uint8Array(Math.max(n, 2 * repScratch.length));
  defScratch = new Uint8Array(repScratch.length);
}

/** What `walkLevels` found on a page: the last row it started, the next free slot, and its values. */
const walked = { row: 0, slot: 0, present: 0 };

/** Whether the first `k` entries of a validity are all 1 (or there is none). */
function allValid(v: Uint8Array | null, k: number): boolean {
  return v === null || count(v, 0, k) === k;
}

/**
 * One page's rows and element slots from its `n` levels: each row's first slot into `offsets`, the
 * lists' and elements' validity, and into `walked` the last row started (from `row`), the next
 * slot (from `slot`) and how many slots hold a value. A function of its own, apart from the page
 * loop: inlined there, every kind of page the loop met for the first time (a PLAIN page after
 * dictionary ones, say) threw the whole compiled function away, and V8 compiled it ~8 times per
 * decode thread in an RM5 run (bench/README.md, "RM5: the footer, parsed whole by every decoder").
 */
function walkLevels(
  rep: Uint8Array,
  def: Uint8Array,
  n: number,
  maxDef: number,
  empty: number,
  offsets: Int32Array,
  listValid: Uint8Array | null,
  elemValid: Uint8Array | null,
  row: number,
  slot: number,
  rows: number,
  col: string,
): void {
  const first = slot;
  let present = 0;
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
  } else
    for (let e = 0; e < n; e++) {
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
  walked.row = row;
  walked.slot = slot;
  walked.present = present;
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
export function decodeListChunk(l: ListChunk, rows: number, readAt: ReadAt, zstd: Zstd): ListColumn {
  const r = decodeListInto(l, rows, readAt, zstd, false);
  return { type: 'list', offsets: r.offsets, child: r.child!, valid: r.valid };
}

/**
 * A decoded list chunk: values (`child`), or in indices mode each slot's dictionary index (`idx`,
 * dict.size for a null element), the dictionary, and the PLAIN pages' values (`plain`, which the
 * slots of PLAIN pages point to past the null slot, plain.ts; null when there are none). In
 * indices mode `idx` is null only for a chunk without a dictionary or a null element: slot i then
 * holds PLAIN value i.
 */
export interface ListDecoded {
  readonly offsets: Int32Array;
  readonly valid: ValidMask;
  readonly child: NumericColumn | null;
  readonly idx: Int32Array | null;
  readonly dict: Dict | null;
  readonly plain?: PlainColumn | null;
}

/**
 * decodeListChunk, or with `indexMode` its dictionary indices instead of values (throws
 * NotAllDictionary when a data page is not dictionary-encoded, unless `withPlain`: see ListDecoded).
 */
export function decodeListInto(l: ListChunk, rows: number, readAt: ReadAt, zstd: Zstd, indexMode: boolean, withPlain = false): ListDecoded {
  const col = l.chunk.meta_data!.path_in_schema.join('.');
  /** The page being decoded, for errors. */
  let place: PagePlace | null = null;
  try {
    return decodeListPages(l, rows, readAt, zstd, indexMode, indexMode && withPlain, (p) => (place = p));
  } catch (e) {
    throw located(e, col, place, (x) => x instanceof NotAllDictionary);
  }
}

function decodeListPages(
  l: ListChunk,
  rows: number,
  readAt: ReadAt,
  zstd: Zstd,
  indexMode: boolean,
  withPlain: boolean,
  at_: (p: PagePlace) => void,
): ListDecoded {
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
  const plain = withPlain ? new PlainValues(l.type, entries) : null;
  let row = -1;
  let slot = 0;
  let seen = 0;
  while (seen < entries) {
    const pg = nextPage();
    if (pg === null) throw new Error(`column ${col}: the column chunk ends after ${seen} of its ${entries} values`);
    at_(pg);
    const { h, body } = pg;
    if (h.type === 'DICTIONARY_PAGE') {
      // PLAIN slots' indices count from the dictionary's size (plain.ts): it must come first.
      if (indexMode && (seen > 0 || dict !== null)) throw new NotAllDictionary();
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
      for (const [out, max] of [
        [repScratch, 1],
        [defScratch, maxDef],
      ] as const) {
        if (p + 4 > page.length) throw new Error(`column ${col}: levels run past the page`);
        const len = page[p]! | (page[p + 1]! << 8) | (page[p + 2]! << 16) | (page[p + 3]! << 24);
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
    walkLevels(repScratch, defScratch, n, maxDef, empty, offsets, listValid, elemValid, row, slot, rows, col);
    row = walked.row;
    slot = walked.slot;
    const present = walked.present;
    if (slot > entries) throw new Error(`column ${col}: more elements than the chunk's ${entries} values`);
    if (indexMode) {
      // A chunk without a dictionary (DuckDB's): its slots' indices are the values' order, so
      // none is written as its pages are read (plain.ts, `firstIndices`).
      if (plain !== null && encoding === 'PLAIN' && dict === null) plainIndices(page, p, slot - first, present, first, elemValid, null, null, plain, col);
      else {
        idx ??= new Int32Array(slot + entries - seen - n);
        if (plain !== null && encoding === 'PLAIN') plainIndices(page, p, slot - first, present, first, elemValid, idx, dict?.size ?? null, plain, col);
        else indices(page, p, encoding, slot - first, present, first, elemValid, idx, dict, col);
      }
    } else {
      values ??= newArray(l.type, slot + entries - seen - n);
      readValues(page, p, encoding, l.type, slot - first, present, first, elemValid, values, null, dict, col);
    }
    seen += n;
  }
  if (row + 1 !== rows) throw new Error(`column ${col}: pages hold ${row + 1} of the row group's ${rows} rows`);
  offsets[rows] = slot;
  const valid = allValid(listValid, rows) ? null : listValid;
  if (indexMode) {
    // No element at all (every list null or empty) needs no dictionary, nor does a chunk of PLAIN pages.
    if (dict === null && slot > 0 && (plain === null || plain.count + plain.nulls === 0)) throw new NotAllDictionary();
    if (plain !== null && idx !== null) patchNulls(idx, slot, plain);
    const plainValues = plain !== null && plain.count + plain.nulls > 0 ? plain.column() : null;
    // Without a dictionary no index was written: made here where a slot is null, else left null
    // (each slot its own value).
    if (plain?.first === true && idx === null) idx = firstIndices(elemValid, slot, plain);
    else idx = (idx ?? new Int32Array(0)).subarray(0, slot);
    return {
      offsets,
      valid,
      child: null,
      idx,
      dict: dict ?? readDict(new Uint8Array(0), l.type, 0),
      plain: plainValues,
    };
  }
  // The child is exactly the slots (null and empty lists took level entries but no slot).
  values ??= newArray(l.type, 0);
  if (values.length > slot) values = values.slice(0, slot);
  if (elemValid !== null && elemValid.length > slot) elemValid = elemValid.slice(0, slot);
  return { offsets, valid, child: { type: l.type, values, valid: allValid(elemValid, slot) ? null : elemValid } as NumericColumn, idx: null, dict: null };
}
