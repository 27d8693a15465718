// Typed-array writers that copy one column's rows [from, to) into a batch's dense, lengths or
// sparse-value arrays. One function per array type: see the note in `writeDense`.
import { copyWords, int64ToNumber, int64Words, type Column } from '@sluice/ops';
import { copyElements } from '../util/copy.js';
import type { IndexedListSource } from './types.js';

/** Reads element i of a numeric column as a JS number (int64 through its words). */
export function numberReader(c: Column): (i: number) => number {
  switch (c.type) {
    case 'int32':
    case 'float32':
    case 'float64': {
      const v = c.values;
      return (i) => v[i]!;
    }
    case 'int64': {
      const w = int64Words(c.values);
      return (i) => int64ToNumber(w[2 * i]!, w[2 * i + 1]!);
    }
    default:
      throw new TypeError(`not a numeric scalar column: ${c.type}`);
  }
}

/**
 * Dense values a shuffled window's writer lays out row-major at a time before it copies each row
 * to its place (2 MiB: about what the cache holds). Writing each value straight to its permuted
 * place would miss the cache on about every write; laying a whole read out first takes fresh
 * memory, which a cold process pays for in page faults (bench/README.md, "A cold process's memory").
 */
export const DENSE_BLOCK_WORDS = 1 << 19;

/**
 * Rows of dense values (`from`, row-major, as words so that every float keeps its bits, NaN
 * payloads included), row r copied whole to row at[r] of chunk where[r] (none where it is -1).
 */
export function placeRows(from: Uint32Array, dim: number, where: Int32Array, at: Int32Array, to: readonly Uint32Array[]): void {
  for (let r = 0; r < where.length; r++) {
    const c = where[r]!;
    if (c >= 0) copyWords(from, r * dim, r * dim + dim, to[c]!, at[r]! * dim);
  }
}

export function writeDense(
  c: Column,
  seg: { readonly from: number; readonly to: number },
  out: Float32Array,
  row0: number,
  dim: number,
  offset: number,
  width: number,
): void {
  const { from, to } = seg;
  const valid = c.valid;
  if (c.type === 'fixed') {
    for (let r = from, o = row0 * dim + offset; r < to; r++, o += dim) {
      if (valid === null || valid[r] === 1) out.set(c.values.subarray(r * width, r * width + width), o);
    }
    return;
  }
  // One loop per array type: a loop over a union of typed arrays is megamorphic and several
  // times slower in V8. A value still null after the feature's ops becomes 0 (add fillNull to
  // choose another).
  if (c.type === 'float32') return denseF32(c.values, valid, from, to, out, row0 * dim + offset, dim);
  if (c.type === 'int32') return denseI32(c.values, valid, from, to, out, row0 * dim + offset, dim);
  if (c.type === 'float64') return denseF64(c.values, valid, from, to, out, row0 * dim + offset, dim);
  const read = numberReader(c);
  for (let r = from, o = row0 * dim + offset; r < to; r++, o += dim) out[o] = valid === null || valid[r] === 1 ? read(r) : 0;
}

function denseF32(v: Float32Array, valid: Uint8Array | null, from: number, to: number, out: Float32Array, o: number, dim: number): void {
  if (valid === null) for (let r = from; r < to; r++, o += dim) out[o] = v[r]!;
  else for (let r = from; r < to; r++, o += dim) out[o] = valid[r] === 1 ? v[r]! : 0;
}
function denseI32(v: Int32Array, valid: Uint8Array | null, from: number, to: number, out: Float32Array, o: number, dim: number): void {
  if (valid === null) for (let r = from; r < to; r++, o += dim) out[o] = v[r]!;
  else for (let r = from; r < to; r++, o += dim) out[o] = valid[r] === 1 ? v[r]! : 0;
}
function denseF64(v: Float64Array, valid: Uint8Array | null, from: number, to: number, out: Float32Array, o: number, dim: number): void {
  if (valid === null) for (let r = from; r < to; r++, o += dim) out[o] = v[r]!;
  else for (let r = from; r < to; r++, o += dim) out[o] = valid[r] === 1 ? v[r]! : 0;
}

/** Writes how many ids rows [from, to) contribute (nulls, null lists and null elements give none). */
export function writeLengths(c: Column, from: number, to: number, out: Int32Array, at: number): number {
  const valid = c.valid;
  if (c.type !== 'list') {
    if (valid === null) {
      out.fill(1, at, at + to - from);
      return to - from;
    }
    let sum = 0;
    for (let r = from, o = at; r < to; r++, o++) sum += out[o] = valid[r]!;
    return sum;
  }
  const { offsets } = c;
  const cv = c.child.valid;
  let sum = 0;
  for (let r = from, o = at; r < to; r++, o++) {
    if (valid !== null && valid[r] === 0) {
      out[o] = 0;
      continue;
    }
    if (cv === null) {
      sum += out[o] = offsets[r + 1]! - offsets[r]!;
      continue;
    }
    let n = 0;
    for (let j = offsets[r]!; j < offsets[r + 1]!; j++) n += cv[j]!;
    sum += out[o] = n;
  }
  return sum;
}

/** Copies the ids of rows [from, to) into `dst` words starting at value index `at`; returns the new index. */
export function writeSparse(c: Column, from: number, to: number, dst: Uint32Array, at: number): number {
  const el = c.type === 'list' ? c.child : c;
  if (el.type !== 'int64' && el.type !== 'int32') throw new TypeError(`sparse output must be integer, got ${el.type}`);
  // Element range and validity: a scalar row r is element r; a list row r is its child range.
  const lists = c.type === 'list' ? c : null;
  const rowValid = c.valid;
  const elValid = el.valid;
  const ranges = lists === null;
  const wide = el.type === 'int64';
  const src: Uint32Array | Int32Array = wide ? int64Words(el.values as BigInt64Array) : (el.values as Int32Array);
  if (elValid === null && (rowValid === null || (lists !== null && nullListsEmpty(lists.offsets, rowValid, from, to)))) {
    // No nulls, or only null lists that hold no elements: rows [from, to) are one contiguous run
    // of elements.
    const j0 = ranges ? from : lists!.offsets[from]!;
    const j1 = ranges ? to : lists!.offsets[to]!;
    if (wide) copyElements(dst, 2 * at, (src as Uint32Array).subarray(2 * j0, 2 * j1));
    else
      for (let j = j0, o = 2 * at; j < j1; j++, o += 2) {
        const x = src[j]!;
        dst[o] = x >>> 0;
        dst[o + 1] = x < 0 ? 0xffffffff : 0;
      }
    return at + (j1 - j0);
  }
  if (ranges) {
    // Scalars with nulls: element r is row r.
    return wide
      ? scalarsWide(src as Uint32Array, rowValid, elValid, from, to, dst, at)
      : scalarsNarrow(src as Int32Array, rowValid, elValid, from, to, dst, at);
  }
  for (let r = from; r < to; r++) {
    if (rowValid !== null && rowValid[r] === 0) continue;
    const j0 = lists!.offsets[r]!;
    const j1 = lists!.offsets[r + 1]!;
    if (wide) {
      for (let j = j0; j < j1; j++)
        if (elValid === null || elValid[j] === 1) {
          dst[2 * at] = src[2 * j]!;
          dst[2 * at + 1] = src[2 * j + 1]!;
          at++;
        }
    } else {
      for (let j = j0; j < j1; j++) {
        if (elValid !== null && elValid[j] === 0) continue;
        const x = src[j]!;
        dst[2 * at] = x >>> 0;
        dst[2 * at + 1] = x < 0 ? 0xffffffff : 0;
        at++;
      }
    }
  }
  return at;
}

/** Whether every null list of rows [from, to) is empty (the column invariant; a list column from elsewhere may break it). */
function nullListsEmpty(offsets: Int32Array, valid: Uint8Array, from: number, to: number): boolean {
  for (let r = from; r < to; r++) if (valid[r] === 0 && offsets[r + 1] !== offsets[r]) return false;
  return true;
}

function scalarsWide(
  src: Uint32Array,
  rowValid: Uint8Array | null,
  elValid: Uint8Array | null,
  from: number,
  to: number,
  dst: Uint32Array,
  at: number,
): number {
  for (let r = from; r < to; r++) {
    if ((rowValid !== null && rowValid[r] === 0) || (elValid !== null && elValid[r] === 0)) continue;
    dst[2 * at] = src[2 * r]!;
    dst[2 * at + 1] = src[2 * r + 1]!;
    at++;
  }
  return at;
}

function scalarsNarrow(
  src: Int32Array,
  rowValid: Uint8Array | null,
  elValid: Uint8Array | null,
  from: number,
  to: number,
  dst: Uint32Array,
  at: number,
): number {
  for (let r = from; r < to; r++) {
    if ((rowValid !== null && rowValid[r] === 0) || (elValid !== null && elValid[r] === 0)) continue;
    const x = src[r]!;
    dst[2 * at] = x >>> 0;
    dst[2 * at + 1] = x < 0 ? 0xffffffff : 0;
    at++;
  }
  return at;
}

// ---- indexed columns: row r is dict[idx[r]] (one pass from the dictionary to the batch) ------

export function writeDenseIndexed(c: Column, idx: Int32Array, from: number, to: number, out: Float32Array, o: number, dim: number): void {
  const valid = c.valid;
  if (c.type === 'float32') return denseIdxF32(c.values, valid, idx, from, to, out, o, dim);
  if (c.type === 'int32') return denseIdxI32(c.values, valid, idx, from, to, out, o, dim);
  if (c.type === 'float64') return denseIdxF64(c.values, valid, idx, from, to, out, o, dim);
  const read = numberReader(c);
  for (let r = from; r < to; r++, o += dim) {
    const j = idx[r]!;
    out[o] = valid === null || valid[j] === 1 ? read(j) : 0;
  }
}

function denseIdxF32(v: Float32Array, valid: Uint8Array | null, idx: Int32Array, from: number, to: number, out: Float32Array, o: number, dim: number): void {
  if (valid === null) for (let r = from; r < to; r++, o += dim) out[o] = v[idx[r]!]!;
  else
    for (let r = from; r < to; r++, o += dim) {
      const j = idx[r]!;
      out[o] = valid[j] === 1 ? v[j]! : 0;
    }
}
function denseIdxI32(v: Int32Array, valid: Uint8Array | null, idx: Int32Array, from: number, to: number, out: Float32Array, o: number, dim: number): void {
  if (valid === null) for (let r = from; r < to; r++, o += dim) out[o] = v[idx[r]!]!;
  else
    for (let r = from; r < to; r++, o += dim) {
      const j = idx[r]!;
      out[o] = valid[j] === 1 ? v[j]! : 0;
    }
}
function denseIdxF64(v: Float64Array, valid: Uint8Array | null, idx: Int32Array, from: number, to: number, out: Float32Array, o: number, dim: number): void {
  if (valid === null) for (let r = from; r < to; r++, o += dim) out[o] = v[idx[r]!]!;
  else
    for (let r = from; r < to; r++, o += dim) {
      const j = idx[r]!;
      out[o] = valid[j] === 1 ? v[j]! : 0;
    }
}

const compactCache = new WeakMap<Column, Int32Array | null>();

/**
 * The ids of a dictionary as int32 with -1 for null, when every valid id is in [0, 2^31) (hashed
 * or bucketized ids usually are): one 4-byte load per row then gives both the length and the id,
 * and the table is half the size of int64 ids plus validity, so more of it stays in cache.
 * Null when some id does not fit. Computed once per dictionary.
 */
function compactIds(c: Column): Int32Array | null {
  let r = compactCache.get(c);
  if (r !== undefined) return r;
  r = null;
  if (c.type === 'int64' || c.type === 'int32') {
    const n = c.values.length;
    const valid = c.valid;
    const out = new Int32Array(n);
    let ok = true;
    if (c.type === 'int64') {
      const w = int64Words(c.values);
      for (let j = 0; j < n && ok; j++) {
        if (valid !== null && valid[j] === 0) out[j] = -1;
        else if (w[2 * j + 1] !== 0 || w[2 * j]! > 0x7fffffff) ok = false;
        else out[j] = w[2 * j]!;
      }
    } else {
      const v = c.values;
      for (let j = 0; j < n && ok; j++) {
        if (valid !== null && valid[j] === 0) out[j] = -1;
        else if (v[j]! < 0) ok = false;
        else out[j] = v[j]!;
      }
    }
    r = ok ? out : null;
  }
  compactCache.set(c, r);
  return r;
}

const nullSlotCache = new WeakMap<Column, number>();

/**
 * The one null entry of a derived dictionary (the null slot the decoder appends), or -1 when it
 * has none or several. With exactly one, a row is null iff its index is that slot, so a key's
 * lengths come from a sequential scan of the indices instead of a gather from the dictionary.
 */
function soleNullSlot(c: Column): number {
  let r = nullSlotCache.get(c);
  if (r !== undefined) return r;
  r = -1;
  const valid = c.valid;
  if (valid !== null) {
    for (let j = 0; j < valid.length; j++) {
      if (valid[j] !== 0) continue;
      if (r >= 0) {
        r = -1;
        break;
      }
      r = j;
    }
  }
  nullSlotCache.set(c, r);
  return r;
}

/** Writes the lengths (0 or 1) of rows [from, to) of an indexed scalar column; returns their sum. */
export function writeLengthsIndexed(c: Column, idx: Int32Array, from: number, to: number, out: Int32Array, at: number): number {
  const valid = c.valid;
  if (valid === null) {
    out.fill(1, at, at + to - from);
    return to - from;
  }
  let sum = 0;
  const s = soleNullSlot(c);
  if (s >= 0) {
    for (let r = from, o = at; r < to; r++, o++) sum += out[o] = +(idx[r]! !== s);
    return sum;
  }
  const cd = compactIds(c);
  if (cd !== null) for (let r = from, o = at; r < to; r++, o++) sum += out[o] = ~cd[idx[r]!]! >>> 31;
  else for (let r = from, o = at; r < to; r++, o++) sum += out[o] = valid[idx[r]!]!;
  return sum;
}

/**
 * The ids of rows [from, to) of an indexed scalar column into `dst` words from value index `at`;
 * returns the new index. `narrow`: one word per id (a narrow pack's, Pack.narrow), for a dictionary
 * `hasCompactIds` accepts.
 */
export function writeSparseIndexed(c: Column, idx: Int32Array, from: number, to: number, dst: Uint32Array, at: number, narrow = false): number {
  const cd = compactIds(c);
  if (narrow) return sparseIdxCompactWord(cd!, idx, from, to, dst, at);
  if (cd !== null) return sparseIdxCompact(cd, idx, from, to, dst, at);
  if (c.type === 'int64') return sparseIdxWide(int64Words(c.values), c.valid, idx, from, to, dst, at);
  if (c.type === 'int32') return sparseIdxNarrow(c.values, c.valid, idx, from, to, dst, at);
  throw new TypeError(`sparse output must be integer, got ${c.type}`);
}

const fitsCache = new WeakMap<Column, boolean>();

/**
 * Whether every id of a dictionary is null or in [0, 2^31), so that one 32-bit word holds it (a
 * narrow pack): compactIds' condition, checked without making its table where none is made yet.
 */
export function hasCompactIds(dict: Column): boolean {
  const made = compactCache.get(dict);
  if (made !== undefined) return made !== null;
  let r = fitsCache.get(dict);
  if (r !== undefined) return r;
  r = false;
  if (dict.type === 'int64' || dict.type === 'int32') {
    // Branch-free first: every value, null slots' too, in [0, 2^31) (the high word and the low
    // word's top bit all 0) is the usual case, and a plain OR over the words is several times
    // faster than the checks per entry below, which only a dictionary that fails it needs.
    let bits = 0;
    if (dict.type === 'int64') {
      const w = int64Words(dict.values);
      for (let j = 0; j < w.length; j += 2) bits |= w[j + 1]! | (w[j]! >>> 31);
    } else for (let j = 0, v = dict.values; j < v.length; j++) bits |= v[j]! >>> 31;
    r = bits === 0 || compactIds(dict) !== null;
  }
  fitsCache.set(dict, r);
  return r;
}

/** Writes the lengths of rows [from, to) of an indexed list (valid elements of each list's first `keep`); returns their sum. */
export function writeLengthsIndexedList(l: IndexedListSource, from: number, to: number, out: Int32Array, at: number): number {
  const { offsets, idx, valid, keep } = l;
  const dv = l.dict.valid;
  let sum = 0;
  for (let r = from, o = at; r < to; r++, o++) {
    if (valid !== null && valid[r] === 0) {
      out[o] = 0;
      continue;
    }
    const s = offsets[r]!;
    const e = s + Math.min(keep, offsets[r + 1]! - s);
    if (dv === null) {
      sum += out[o] = e - s;
      continue;
    }
    let n = 0;
    for (let j = s; j < e; j++) n += dv[idx[j]!]!;
    sum += out[o] = n;
  }
  return sum;
}

/**
 * The ids of rows [from, to) of an indexed list into `dst` words from value index `at`; returns the
 * new index. `narrow` as for `writeSparseIndexed`.
 */
export function writeSparseIndexedList(l: IndexedListSource, from: number, to: number, dst: Uint32Array, at: number, narrow = false): number {
  const { offsets, idx, valid, keep, dict } = l;
  if (dict.type !== 'int64' && dict.type !== 'int32') throw new TypeError(`sparse output must be integer, got ${dict.type}`);
  // Each valid row's first `keep` element indices are a run of `idx`, written as a scalar
  // indexed column's rows are. A dictionary with as many entries as half the elements (a chunk
  // mostly of PLAIN pages: an entry per PLAIN element) is read about once per entry, in order: a
  // compact table of it would cost a pass and its memory for nothing, so it is read as it is.
  const cd = 2 * dict.values.length <= idx.length ? compactIds(dict) : null;
  const words = dict.type === 'int64' ? int64Words(dict.values) : null;
  for (let r = from; r < to; r++) {
    if (valid !== null && valid[r] === 0) continue;
    const s = offsets[r]!;
    const e = s + Math.min(keep, offsets[r + 1]! - s);
    if (narrow && cd !== null) at = sparseIdxCompactWord(cd, idx, s, e, dst, at);
    else if (narrow)
      at =
        words !== null
          ? sparseIdxWideWord(words, dict.valid, idx, s, e, dst, at)
          : sparseIdxNarrowWord(dict.values as Int32Array, dict.valid, idx, s, e, dst, at);
    else if (cd !== null) at = sparseIdxCompact(cd, idx, s, e, dst, at);
    else if (words !== null) at = sparseIdxWide(words, dict.valid, idx, s, e, dst, at);
    else at = sparseIdxNarrow(dict.values as Int32Array, dict.valid, idx, s, e, dst, at);
  }
  return at;
}

/** `sparseIdxCompact` writing one word per id (a narrow pack's), with the same null rule. */
function sparseIdxCompactWord(cd: Int32Array, idx: Int32Array, from: number, to: number, dst: Uint32Array, at: number): number {
  for (let r = from; r < to; r++) {
    const x = cd[idx[r]!]!;
    dst[at] = x;
    at += ~x >>> 31;
  }
  return at;
}

/** `sparseIdxWide` writing one word per id (a narrow pack's: every valid id fits its low word). */
function sparseIdxWideWord(src: Uint32Array, valid: Uint8Array | null, idx: Int32Array, from: number, to: number, dst: Uint32Array, at: number): number {
  for (let r = from; r < to; r++) {
    const j = idx[r]!;
    if (valid !== null && valid[j] === 0) continue;
    dst[at++] = src[2 * j]!;
  }
  return at;
}

/** `sparseIdxNarrow` writing one word per id (a narrow pack's: every valid id is non-negative). */
function sparseIdxNarrowWord(src: Int32Array, valid: Uint8Array | null, idx: Int32Array, from: number, to: number, dst: Uint32Array, at: number): number {
  for (let r = from; r < to; r++) {
    const j = idx[r]!;
    if (valid !== null && valid[j] === 0) continue;
    dst[at++] = src[j]!;
  }
  return at;
}

/**
 * Ids from a compact dictionary (compactIds). Branch-free: every row writes its id at `at` and
 * advances only when it is not null, so a null row's write is overwritten by the next id, or lands
 * on a later key's first slot (written after this key), or past the array's end (ignored).
 * Both words are written (the high one is 0: every compact id is below 2^31), so a reused slot
 * needs no zeroing first (which would be a second pass over the values).
 */
function sparseIdxCompact(cd: Int32Array, idx: Int32Array, from: number, to: number, dst: Uint32Array, at: number): number {
  for (let r = from; r < to; r++) {
    const x = cd[idx[r]!]!;
    dst[2 * at] = x;
    dst[2 * at + 1] = 0;
    at += ~x >>> 31;
  }
  return at;
}

function sparseIdxWide(src: Uint32Array, valid: Uint8Array | null, idx: Int32Array, from: number, to: number, dst: Uint32Array, at: number): number {
  for (let r = from; r < to; r++) {
    const j = idx[r]!;
    if (valid !== null && valid[j] === 0) continue;
    dst[2 * at] = src[2 * j]!;
    dst[2 * at + 1] = src[2 * j + 1]!;
    at++;
  }
  return at;
}

function sparseIdxNarrow(src: Int32Array, valid: Uint8Array | null, idx: Int32Array, from: number, to: number, dst: Uint32Array, at: number): number {
  for (let r = from; r < to; r++) {
    const j = idx[r]!;
    if (valid !== null && valid[j] === 0) continue;
    const x = src[j]!;
    dst[2 * at] = x >>> 0;
    dst[2 * at + 1] = x < 0 ? 0xffffffff : 0;
    at++;
  }
  return at;
}
