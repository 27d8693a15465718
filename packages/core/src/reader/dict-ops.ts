/**
 * Op chains run once per dictionary entry (RECom's "do not compute the same thing twice"): a
 * derived column's input is decoded in indices mode (each row's dictionary index), its ops run on
 * the dictionary, and the results are gathered by index, or laid out straight into a batch
 * (batch/index.ts, `packRows`). See plan/pushdown.ts for which features the reader computes.
 *
 * PLAIN pages (DuckDB's high-cardinality strings, or the pages a writer falls back to once its
 * dictionary is full) have no indices: their values are computed as they are, after the
 * dictionary, and their rows index those results (parquet/plain.ts), so one derived column covers
 * a chunk whatever mix of pages it has.
 */
import type { FileMetaData } from 'hyparquet/src/types.js';
import type { Column, ColumnType, ListColumn, NumericColumn } from '@sluice/ops';
import type { IndexedListSource } from '../batch/index.js';
import { DictShare, type Shared } from './dict-share.js';
import { decodeChunkInto, rowsOf, type RowRange } from './parquet/chunk.js';
import { dictColumn } from './parquet/dictionary.js';
import { decodeListInto } from './parquet/list.js';
import { cutLists, inScratch, type PlainColumn } from './parquet/plain.js';
import type { ReadAt, Zstd } from './parquet/page.js';
import { readable, readableList } from './parquet/schema.js';
import { count, gather, newArray, NotAllDictionary } from './parquet/values.js';

/** A column computed from an input column by a chain of per-value ops (see plan/pushdown.ts). */
export interface DerivedSpec {
  readonly name: string;
  readonly input: string;
  /** Its ops, by name: when every chain on a string input starts with hex2int, PLAIN strings are parsed as they are decoded (parquet/plain-hex.ts). */
  readonly ops?: ReadonlyArray<{ readonly op: string }>;
}

/**
 * Runs derived column `name`'s op chain, from op `from` on (0: all of it), on `input`; throws
 * when an op rejects a value.
 */
export type Apply = (name: string, input: Column, from: number) => Column;

/**
 * A derived column before the gather: the ops' results per dictionary entry (plus the null slot
 * last) and each row's index into them. Row i's value is dict[idx[i]].
 */
export interface IndexedColumn {
  readonly dict: Column;
  readonly idx: Int32Array;
}

/**
 * A list feature before the gather: the ops' results per dictionary entry of the elements (plus
 * the null slot last), each element's index into them, and the lists as read. Valid row r holds
 * dict[idx[j]] for its first `keep` elements j from offsets[r] (a null entry is a null element).
 * batch/index.ts's IndexedListSource with a numeric dictionary: `packRows` lays it out without a
 * gather, and `gatherIndexedList` makes it a list column.
 */
export interface IndexedList extends IndexedListSource {
  readonly dict: NumericColumn;
}

/**
 * A list feature as the reader computes it: indexed, or, for a chunk without a dictionary or a
 * null element (DuckDB's), the list column itself: its lists cut to their kept elements first and
 * the ops run on those, so neither indices nor a gather are made (`cutPlain`).
 */
export type ListDerived = IndexedList | ListColumn;

/** Whether a list feature was computed as its list column. */
export const isListColumn = (l: ListDerived): l is ListColumn => 'child' in l;

/**
 * Applies per-value op chains to dictionary-encoded columns once per dictionary entry, then
 * gathers the results by index (RECom's "do not compute the same thing twice"): a row group of
 * 100k rows with a 5k-entry dictionary runs the ops 5k times instead of 100k, and the strings are
 * never expanded. `apply` runs a derived column's ops on a column (the dictionary, with one extra
 * null slot last, so that ops defined on null, like fillNull, give the null rows' value).
 *
 * Returns the derived columns it could compute. One whose input has pages neither dictionary-
 * encoded nor PLAIN, or whose ops fail on some entry or PLAIN value (bad data), is left out: the
 * caller reads the raw input instead, and the normal path reports the error with its row.
 */
export function decodeDerived(
  md: FileMetaData,
  rowGroup: number,
  derived: readonly DerivedSpec[],
  types: ReadonlyMap<string, ColumnType>,
  readAt: ReadAt,
  zstd: Zstd,
  apply: Apply,
  range?: RowRange,
): Map<string, Column> {
  const out = new Map<string, Column>();
  // Each input's results gathered as soon as they are computed, and its row indices reused for
  // the next input's: kept until the end, they were an array of the row group's rows per input
  // (200 MB of fresh memory for RM5's 504 dense inputs in one 100k-row group).
  const last: LastInput = { src: null };
  eachOnDictionary(
    md,
    rowGroup,
    derived,
    decodeIndexedInput.bind(null, md, types, readAt, zstd, range),
    apply,
    gatherNow.bind(null, out, last),
    shareOf(range),
  );
  if (last.src !== null) releaseIdx(last.src.idx);
  return out;
}

/**
 * decodeDerived without the final gather, for a consumer that gathers on its own (packing a batch).
 *
 * With `order` (a shuffled window of this one row group, read whole and laid out by its decoder:
 * reader/decode-worker.ts), each input's row indices come back in that order (idx[i] is the index
 * of row order[i]), put in it as soon as the input is decoded. Then the 400 KB of a 100k-row
 * input's indices are still in the cache while the permutation reads them at random; permuted
 * after every input was decoded, they were not, and the permutation took about twice as long
 * (bench/README.md, "RM1 shuffled: permuting the row indices as they are decoded").
 */
export function decodeDerivedIndexed(
  md: FileMetaData,
  rowGroup: number,
  derived: readonly DerivedSpec[],
  types: ReadonlyMap<string, ColumnType>,
  readAt: ReadAt,
  zstd: Zstd,
  apply: Apply,
  range?: RowRange,
  order?: Int32Array,
): Map<string, IndexedColumn> {
  const out = new Map<string, IndexedColumn>();
  const last: PermutedInput = { src: null, idx: EMPTY_IDX };
  // Bound module-level functions, not closures made per call (see eachOnDictionary).
  const use: (d: DerivedSpec, src: { readonly idx: Int32Array }, res: NumericColumn) => void =
    order === undefined ? setIndexed.bind(null, out) : setPermuted.bind(null, out, last, order);
  eachOnDictionary<IndexedInput>(md, rowGroup, derived, decodeIndexedInput.bind(null, md, types, readAt, zstd, range), apply, use, shareOf(range));
  if (last.src !== null) releaseIdx(last.src.idx);
  return out;
}

/** The results other parts of a row group split by rows publish, for a part that has a share. */
function shareOf(range: RowRange | undefined): { view: DictShare; reverse: boolean } | undefined {
  return range?.share !== undefined ? { view: new DictShare(range.share), reverse: range.reverse === true } : undefined;
}

/** A permuted read's input being used (decodeDerivedIndexed with `order`): its row indices as decoded, and in the window's order. */
interface PermutedInput extends LastInput {
  idx: Int32Array;
}

const EMPTY_IDX = new Int32Array(0);

/** decodeDerivedIndexed's `use` with `order`: an input's indices are permuted at its first member, and the previous input's as decoded go back to the pool. */
function setPermuted(
  out: Map<string, IndexedColumn>,
  last: PermutedInput,
  order: Int32Array,
  d: DerivedSpec,
  src: { readonly idx: Int32Array },
  res: NumericColumn,
): void {
  if (nextInput(last, src)) {
    last.idx = takeIdx(order.length);
    gather('int32', last.idx, src.idx, order, 0, order.length, null);
  }
  out.set(d.name, { dict: res, idx: last.idx });
}

/** decodeDerived's input being gathered: its row indices go back once the next input's are in use. */
interface LastInput {
  src: { readonly idx: Int32Array } | null;
}

/**
 * Whether `src` is a new input; if so the previous one's row indices go back to the pool (its
 * members are all used: eachOnDictionary uses an input's members one after another).
 */
function nextInput(last: LastInput, src: { readonly idx: Int32Array }): boolean {
  if (last.src === src) return false;
  if (last.src !== null) releaseIdx(last.src.idx);
  last.src = src;
  return true;
}

/** decodeDerived's `use`: the rows of derived column `d`, gathered at once. */
function gatherNow(out: Map<string, Column>, last: LastInput, d: DerivedSpec, src: { readonly idx: Int32Array }, res: NumericColumn): void {
  nextInput(last, src);
  out.set(d.name, gatherRows(res, src.idx)!);
  releaseResults(res);
}

/** An input decoded in indices mode (`decodeIndexedInput`). */
type IndexedInput = { readonly dict: Column | null; readonly idx: Int32Array; readonly plain: PlainColumn | null };

/** decodeDerivedIndexed's `decode`: the input's row indices (this read's rows), and its dictionary unless `dictSize` is given. */
function decodeIndexedInput(
  md: FileMetaData,
  types: ReadonlyMap<string, ColumnType>,
  readAt: ReadAt,
  zstd: Zstd,
  range: RowRange | undefined,
  input: string,
  rg: FileMetaData['row_groups'][number],
  _rows: number,
  hex: boolean,
  dictSize?: number,
): IndexedInput | null {
  const c = readable(md, rg, input, types);
  // An unsigned 64-bit input is read raw: each row's value is checked to fit int64 (chunk.ts).
  if (c === null || c.unsigned64) return null;
  const { first, rows } = rowsOf(rg, range);
  const idx = takeIdx(rows);
  const { dict, plain } = decodeChunkInto(c.chunk, c.el, c.type, rows, readAt, zstd, idx, first, dictSize, hex ? 'hex' : 'values');
  return { dict: dictSize === undefined ? dictColumn(dict!) : null, idx, plain: plain ?? null };
}

/** decodeDerivedIndexed's `use`. */
function setIndexed(out: Map<string, IndexedColumn>, d: DerivedSpec, src: { readonly idx: Int32Array }, res: NumericColumn): void {
  out.set(d.name, { dict: res, idx: src.idx });
}

/**
 * decodeDerivedIndexed for list inputs (see plan/pushdown.ts): a list feature's per-value ops run
 * once per dictionary entry of the list's elements (`apply`, on the dictionary plus a null slot,
 * as for scalars); each list keeps its first `keep(name)` elements (its firstX ops; Infinity for
 * none). Per-value ops act on each element and firstX only on the lists' lengths, so their order
 * in the chain does not change the result. PLAIN pages' elements are computed as they are (see
 * the module comment). A derived column whose input has pages of another encoding, or whose ops
 * fail, is left out, as in decodeDerived.
 */
export function decodeListDerivedIndexed(
  md: FileMetaData,
  rowGroup: number,
  derived: readonly DerivedSpec[],
  types: ReadonlyMap<string, ColumnType>,
  readAt: ReadAt,
  zstd: Zstd,
  apply: Apply,
  keep: (name: string) => number,
): Map<string, ListDerived> {
  const out = new Map<string, ListDerived>();
  eachOnDictionary(
    md,
    rowGroup,
    derived,
    decodeIndexedList.bind(null, md, types, readAt, zstd),
    apply,
    setIndexedList.bind(null, out, keep),
    undefined,
    cutPlain.bind(null, keep),
  );
  return out;
}

/** A list input decoded in indices mode (`idx` null: each element is its own PLAIN value, list.ts), and its lists' cuts by `keep`, as made. */
interface DecodedList {
  readonly offsets: Int32Array;
  readonly valid: Uint8Array | null;
  readonly idx: Int32Array | null;
  readonly dict: Column;
  readonly plain: PlainColumn | null;
  readonly cuts: Map<number, Int32Array>;
}

/** decodeListDerivedIndexed's `decode`. */
function decodeIndexedList(
  md: FileMetaData,
  types: ReadonlyMap<string, ColumnType>,
  readAt: ReadAt,
  zstd: Zstd,
  input: string,
  rg: FileMetaData['row_groups'][number],
  rows: number,
): DecodedList | null {
  const l = readableList(md, rg, input, types);
  if (l === null) return null;
  const r = decodeListInto(l, rows, readAt, zstd, true, true);
  return { offsets: r.offsets, valid: r.valid, idx: r.idx, dict: dictColumn(r.dict!), plain: r.plain ?? null, cuts: new Map() };
}

/** The lists of `src` cut to their first `x` elements: their offsets (`src.offsets` when none is longer). */
function cutOf(src: DecodedList, x: number): Int32Array {
  let cut = src.cuts.get(x);
  if (cut === undefined) {
    cut = firstOffsets(src.offsets, x) ?? src.offsets;
    src.cuts.set(x, cut);
  }
  return cut;
}

/**
 * decodeListDerivedIndexed's PLAIN values for feature `d`: a chunk without indices (`idx` null)
 * has its lists cut to the elements `d` keeps first, so that its ops run on those alone and their
 * results are the list column's values as they come.
 */
function cutPlain(keep: (name: string) => number, d: DerivedSpec, src: DecodedList): PlainColumn | null {
  const plain = src.plain;
  if (src.idx !== null || plain === null || plain.column === null) return plain;
  const cut = cutOf(src, keep(d.name));
  return cut === src.offsets ? plain : { ...plain, column: cutLists(plain.column, src.offsets, cut) };
}

/** decodeListDerivedIndexed's `use`. */
function setIndexedList(out: Map<string, ListDerived>, keep: (name: string) => number, d: DerivedSpec, src: DecodedList, res: NumericColumn): void {
  if (src.idx !== null) {
    out.set(d.name, { dict: res, idx: src.idx, offsets: src.offsets, valid: src.valid, keep: keep(d.name) });
    return;
  }
  // Computed on the kept elements (`cutPlain`): their results then a null slot, or just theirs.
  const offsets = cutOf(src, keep(d.name));
  const n = offsets[offsets.length - 1]!;
  const values = res.values.length === n ? res.values : res.values.subarray(0, n);
  const valid = res.valid === null || count(res.valid, 0, n) === n ? null : res.valid.subarray(0, n);
  out.set(d.name, { type: 'list', offsets, child: { type: res.type, values, valid } as NumericColumn, valid: src.valid });
}

/**
 * The loop both pushdowns share, over row group `rowGroup` (none when it does not exist): each
 * derived column's input decoded once in indices mode (`decode`: null when this decoder does not
 * read the column; NotAllDictionary when a page is neither dictionary-encoded nor PLAIN), its ops
 * run on the input's dictionary and on its PLAIN values (`apply`), and `use` called for those
 * whose ops succeed with a numeric result. The others are left to the caller's fallback.
 *
 * With a `share` (a part of a row group split by rows), results another part published are used
 * as they are, and an input whose results are all published is decoded for its indices only
 * (`decode` gets the dictionary's size); results this part computes first are published.
 */
function eachOnDictionary<S extends { readonly dict: Column | null; readonly plain: PlainColumn | null }>(
  md: FileMetaData,
  rowGroup: number,
  derived: readonly DerivedSpec[],
  decode: Decode<S>,
  apply: Apply,
  use: (d: DerivedSpec, src: S, res: NumericColumn) => void,
  share?: { readonly view: DictShare; readonly reverse: boolean },
  plainOf: (d: DerivedSpec, src: S) => PlainColumn | null = plainAsRead,
): void {
  const rg = md.row_groups[rowGroup];
  if (rg === undefined) return;
  const rows = Number(rg.num_rows);
  // Plain loops and module-level helpers, not callbacks made per call: see the note above
  // `packRows` (batch/). Derived columns by input, in order of first appearance: each input is decoded once.
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
    let hex = true;
    for (let k = 0; k < members.length; k++) if (derived[members[k]!]!.ops?.[0]?.op !== 'hex2int') hex = false;
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
      const src = tryDecode(decode, input, rg, rows, hex, anyResult.values.length - 1);
      if (src === null) continue;
      for (let k = 0; k < members.length; k++) {
        if (known[k] === 'failed') continue;
        const d = derived[members[k]!]!;
        const res = withPlain(apply, d.name, known[k] as NumericColumn, plainOf(d, src));
        if (res !== null) use(d, src, res);
      }
      continue;
    }
    // Results no part has published: this part computes them, and publishes those it claims.
    const mine = new Set<number>();
    if (view !== undefined) for (let k = 0; k < members.length; k++) if (known[k] === null && view.claim(members[k]!)) mine.add(members[k]!);
    let src: S | null;
    try {
      src = tryDecode(decode, input, rg, rows, hex);
    } catch (e) {
      for (const i of mine) view!.unclaim(i);
      throw e;
    }
    // This part has a page of the input in another encoding: another part's pages may not.
    if (src === null) {
      for (const i of mine) view!.unclaim(i);
      continue;
    }
    for (let k = 0; k < members.length; k++) {
      const i = members[k]!;
      const d = derived[i]!;
      const shared = known[k]!;
      if (shared === 'failed') continue;
      let onDict: NumericColumn | null = shared;
      if (onDict === null) {
        onDict = tryApply(apply, d.name, src.dict!);
        // Only the dictionary's results are shared: each part has its own PLAIN pages.
        if (mine.has(i)) {
          if (onDict !== null) view!.publish(i, onDict);
          else view!.fail(i);
        }
        if (onDict === null) continue;
      }
      const res = withPlain(apply, d.name, onDict, plainOf(d, src));
      if (res !== null) use(d, src, res);
    }
  }
}

/** eachOnDictionary's PLAIN values for every derived column of an input: the chunk's, as read. */
const plainAsRead = (_: DerivedSpec, src: { readonly plain: PlainColumn | null }): PlainColumn | null => src.plain;

/** `apply(name, input)` when it succeeds with a numeric column, else null (the caller reads the input raw). */
function tryApply(apply: Apply, name: string, input: Column, from = 0): NumericColumn | null {
  let res: Column;
  try {
    res = apply(name, input, from);
  } catch {
    return null;
  }
  return res.type === 'int32' || res.type === 'int64' || res.type === 'float32' || res.type === 'float64' ? res : null;
}

/**
 * A derived column's results for the dictionary (`onDict`, its null slot last) and for the chunk's
 * PLAIN values, laid out as the rows' indices expect (parquet/plain.ts): the dictionary's then the
 * values'; or, for a chunk without a dictionary, the values' (as the kernels gave them, when no
 * row is null and they are not in the PLAIN scratch) then the null slot. Null when the ops fail
 * on a PLAIN value (the caller reads the input raw, and the pipeline reports it).
 */
function withPlain(apply: Apply, name: string, onDict: NumericColumn, plain: PlainColumn | null): NumericColumn | null {
  if (plain === null) return onDict;
  if (plain.column === null) return null;
  const onPlain = tryApply(apply, name, plain.column, plain.from);
  if (onPlain === null || onPlain.type !== onDict.type) return null;
  if (!plain.first) return concatNumeric(onDict, onPlain);
  if (plain.nulls === 0 && !inScratch(onPlain.values) && !inScratch(onPlain.valid)) return onPlain;
  return concatNumeric(onPlain, onDict);
}

/** `a`'s rows then `b`'s, of one numeric type, in pooled memory (`releaseIndexed` returns it). */
function concatNumeric(a: NumericColumn, b: NumericColumn): NumericColumn {
  const na = a.values.length;
  const nb = b.values.length;
  const C = a.values.constructor as new (buf: ArrayBuffer, offset: number, length: number) => Int32Array;
  const values = new C(takeBuffer((na + nb) * a.values.BYTES_PER_ELEMENT), 0, na + nb);
  values.set(a.values as Int32Array);
  values.set(b.values as Int32Array, na);
  let valid: Uint8Array | null = null;
  if (a.valid !== null || b.valid !== null) {
    valid = new Uint8Array(takeBuffer(na + nb), 0, na + nb);
    if (a.valid !== null) valid.set(a.valid);
    else valid.fill(1, 0, na);
    if (b.valid !== null) valid.set(b.valid, na);
    else valid.fill(1, na);
  }
  return { type: a.type, values, valid } as NumericColumn;
}

/**
 * Memory of derived columns' results for chunks with PLAIN pages (concatNumeric), reused across
 * row groups like the row indices: such a result holds a value per PLAIN row, and a fresh one per
 * column and row group was most of a decode thread's garbage on PLAIN-heavy files. A result lives
 * until its rows are packed or gathered (both copy); the consumer then hands it back with
 * `releaseIndexed`. Only buffers taken here go back (`pooled`): other results may be a share's
 * memory or a kernel's output that is still referenced.
 */
const bufferPool: ArrayBuffer[] = [];
const pooled = new WeakSet<ArrayBuffer>();
/** Bytes the pool may keep: about what one row group's results take on a PLAIN-heavy file. */
const POOL_BYTES = 64 << 20;
let poolBytes = 0;

function takeBuffer(bytes: number): ArrayBuffer {
  for (let i = bufferPool.length - 1; i >= 0; i--) {
    const b = bufferPool[i]!;
    if (b.byteLength === bytes) {
      bufferPool.splice(i, 1);
      poolBytes -= bytes;
      return b;
    }
  }
  const b = new ArrayBuffer(bytes);
  pooled.add(b);
  return b;
}

function giveBuffer(b: ArrayBufferLike, seen: Set<ArrayBufferLike>): void {
  if (!pooled.has(b as ArrayBuffer) || seen.has(b)) return;
  seen.add(b);
  if (poolBytes + b.byteLength > POOL_BYTES) return;
  poolBytes += b.byteLength;
  bufferPool.push(b as ArrayBuffer);
}

/**
 * Decodes an input in indices mode (null when this decoder does not read it): `hex` when every
 * chain on it starts with hex2int; `dictSize` when the dictionary's results are known (a share).
 */
type Decode<S> = (input: string, rg: FileMetaData['row_groups'][number], rows: number, hex: boolean, dictSize?: number) => S | null;

/** `decode(input, rg, rows, hex, dictSize)`, or null when a page of the input is neither dictionary-encoded nor PLAIN. */
function tryDecode<S>(decode: Decode<S>, input: string, rg: FileMetaData['row_groups'][number], rows: number, hex: boolean, dictSize?: number): S | null {
  try {
    return decode(input, rg, rows, hex, dictSize);
  } catch (e) {
    if (!(e instanceof NotAllDictionary)) throw e;
    return null;
  }
}

/** The rows of an indexed column as a plain column. */
export function gatherIndexed(d: IndexedColumn): Column {
  return gatherRows(d.dict, d.idx)!;
}

/** A list feature as a list column: an indexed one's lists cut to their first `keep` elements, then gathered. */
export function gatherIndexedList(l: ListDerived): ListColumn {
  if (isListColumn(l)) return l;
  const { offsets, idx } = firstOf(l.offsets, l.idx, l.keep);
  return { type: 'list', offsets, child: gatherRows(l.dict, idx) as NumericColumn, valid: l.valid };
}

/** The offsets of lists `offsets` cut to their first x elements, or null when none is longer. */
function firstOffsets(offsets: Int32Array, x: number): Int32Array | null {
  const rows = offsets.length - 1;
  const out = new Int32Array(rows + 1);
  for (let i = 0; i < rows; i++) out[i + 1] = out[i]! + Math.min(x, offsets[i + 1]! - offsets[i]!);
  return out[rows] === offsets[rows] ? null : out;
}

/** Each list cut to its first x elements: new offsets and the kept elements' indices (the inputs themselves when nothing is cut). Core's firstX, without its intermediate index. */
function firstOf(offsets: Int32Array, idx: Int32Array, x: number): { offsets: Int32Array; idx: Int32Array } {
  const rows = offsets.length - 1;
  const out = firstOffsets(offsets, x);
  if (out === null) return { offsets, idx };
  const kept = new Int32Array(out[rows]!);
  for (let i = 0, k = 0; i < rows; i++) {
    for (let j = offsets[i]!, end = j + out[i + 1]! - out[i]!; j < end; j++) kept[k++] = idx[j]!;
  }
  return { offsets: out, idx: kept };
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
    for (let i = 0; i < rows; i++) {
      const b = cv[idx[i]!]!;
      v[i] = b;
      all &= b;
    }
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

/**
 * Row-index arrays of derived columns (`decodeDerivedIndexed`), reused across row groups: a
 * consumer that is done with an IndexedColumn hands its `idx` back with `releaseIndexed`.
 */
const idxPool: Int32Array[] = [];

function takeIdx(rows: number): Int32Array {
  for (let i = idxPool.length - 1; i >= 0; i--) {
    const a = idxPool[i]!;
    if (a.length === rows) {
      idxPool.splice(i, 1);
      return a;
    }
  }
  return new Int32Array(rows);
}

/** Returns the row-index arrays (and pooled results) of indexed columns the caller no longer reads, for reuse. */
export function releaseIndexed(columns: Iterable<IndexedColumn>): void {
  const seen = new Set<Int32Array>();
  const seenBuffers = new Set<ArrayBufferLike>();
  for (const c of columns) {
    if ('values' in c.dict) giveBuffer(c.dict.values.buffer, seenBuffers);
    if (c.dict.valid !== null) giveBuffer(c.dict.valid.buffer, seenBuffers);
    if (!seen.has(c.idx)) {
      seen.add(c.idx);
      releaseIdx(c.idx);
    }
  }
}

/** One row-index array back to the pool (once: the caller makes sure). */
function releaseIdx(idx: Int32Array): void {
  if (idxPool.length < 256) idxPool.push(idx);
}

/** A derived column's pooled results (concatNumeric) back to the pool, once they are gathered. */
function releaseResults(res: NumericColumn): void {
  const seen = new Set<ArrayBufferLike>();
  giveBuffer(res.values.buffer, seen);
  if (res.valid !== null) giveBuffer(res.valid.buffer, seen);
}
