import type { Column } from '@sluice/ops';
import { int64ToNumber, int64Words } from '@sluice/ops';
import { DataError } from '@sluice/ops';
import type { RowLocator } from '@sluice/ops';
import type { TypedPlan } from '@sluice/ops';
import type { Cursor } from './cursor.js';
import { copyElements } from '../util/copy.js';
import { defineRelease } from '@sluice/ops';

/**
 * One mini-batch, laid out as ARCHITECTURE.md says: a row-major float32 dense matrix, a keyed
 * jagged sparse tensor (key-major lengths, concatenated int64 values), and float32 labels.
 * Every array is a plain typed array with its own buffer, so a batch can be transferred.
 */
export interface Batch {
  /** 0-based position in the run's batch sequence (continues across epochs and resumes). */
  readonly seq: number;
  readonly epoch: number;
  readonly rows: number;
  readonly dense: {
    /** Column names of the matrix (a oneHot feature `f` of n classes gives `f:0` … `f:n-1`). */
    readonly names: readonly string[];
    /** Features and where their columns start. */
    readonly features: ReadonlyArray<{ readonly name: string; readonly offset: number; readonly width: number; readonly vector: boolean }>;
    /** Columns per row (D). */
    readonly dim: number;
    /** rows × dim values, row-major. */
    readonly data: Float32Array;
  };
  readonly sparse: {
    readonly keys: readonly string[];
    /** keys.length × rows list lengths, key-major: lengths[k*rows + r]. */
    readonly lengths: Int32Array;
    /** Start of each key's values in `values` (keys.length + 1 entries). */
    readonly offsets: Int32Array;
    readonly values: BigInt64Array;
  };
  readonly labels: Float32Array | null;
  /** Cursor of the row after this batch: where a resumed run starts. */
  readonly end: Cursor;
  /**
   * Says you are done with this batch, so that its memory may hold a later batch. Optional: a
   * batch never released is collected as usual. Once one batch is released, a pipeline whose
   * decode threads lay batches out lays them in reused shared memory, which saves allocating
   * ~0.5 GB per 1M RM1 rows and the garbage collections that causes (io/pack-arena.ts). After
   * `release()` nothing may read the batch's arrays (nor views of their buffers): they may be
   * overwritten. Repeated calls do nothing. Batches of pipelines only (not enumerable); absent
   * on batches decoded from a transport or HTTP.
   */
  readonly release?: () => void;
}

/** A chunk after preprocessing: output columns by feature name, plus the label column. */
export interface ProcessedChunk {
  /** Output columns by feature name (empty when the chunk is `packed`). */
  readonly outputs: ReadonlyMap<string, Column>;
  readonly label: Column | null;
  readonly rows: number;
  readonly at: Cursor;
  readonly windowRows: number;
  readonly lastInEpoch: boolean;
  readonly locate: RowLocator;
  /** The chunk's rows already laid out as batch arrays (by a decode worker); `outputs` is then empty. */
  readonly packed?: Pack;
}

/** A run of rows [from, to) of a processed chunk. */
export interface Segment {
  readonly chunk: ProcessedChunk;
  readonly from: number;
  readonly to: number;
}

/** The static shape of batches for a plan. */
export interface BatchLayout {
  readonly dense: Batch['dense']['features'];
  readonly denseNames: readonly string[];
  readonly dim: number;
  readonly sparseKeys: readonly string[];
  readonly label: boolean;
}

/** Works out the dense columns and sparse keys of a type-checked plan. */
export function batchLayout(plan: TypedPlan): BatchLayout {
  const dense: Array<{ name: string; offset: number; width: number; vector: boolean }> = [];
  const denseNames: string[] = [];
  let dim = 0;
  const sparseKeys: string[] = [];
  for (const f of plan.features) {
    if (f.kind === 'sparse') { sparseKeys.push(f.name); continue; }
    const vector = f.outputType.kind === 'fixed';
    dense.push({ name: f.name, offset: dim, width: f.width, vector });
    if (vector) for (let j = 0; j < f.width; j++) denseNames.push(`${f.name}:${j}`);
    else denseNames.push(f.name);
    dim += f.width;
  }
  return { dense, denseNames, dim, sparseKeys, label: plan.label !== null };
}

/** Reads element i of a numeric column as a JS number (int64 through its words). */
function numberReader(c: Column): (i: number) => number {
  switch (c.type) {
    case 'int32': case 'float32': case 'float64': { const v = c.values; return (i) => v[i]!; }
    case 'int64': { const w = int64Words(c.values); return (i) => int64ToNumber(w[2 * i]!, w[2 * i + 1]!); }
    default: throw new TypeError(`not a numeric scalar column: ${c.type}`);
  }
}

function writeDense(c: Column, seg: { readonly from: number; readonly to: number }, out: Float32Array, row0: number, dim: number, offset: number, width: number): void {
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
function writeLengths(c: Column, from: number, to: number, out: Int32Array, at: number): number {
  const valid = c.valid;
  if (c.type !== 'list') {
    if (valid === null) { out.fill(1, at, at + to - from); return to - from; }
    let sum = 0;
    for (let r = from, o = at; r < to; r++, o++) sum += out[o] = valid[r]!;
    return sum;
  }
  const { offsets } = c;
  const cv = c.child.valid;
  let sum = 0;
  for (let r = from, o = at; r < to; r++, o++) {
    if (valid !== null && valid[r] === 0) { out[o] = 0; continue; }
    if (cv === null) { sum += out[o] = offsets[r + 1]! - offsets[r]!; continue; }
    let n = 0;
    for (let j = offsets[r]!; j < offsets[r + 1]!; j++) n += cv[j]!;
    sum += out[o] = n;
  }
  return sum;
}

/** Copies the ids of rows [from, to) into `dst` words starting at value index `at`; returns the new index. */
function writeSparse(c: Column, from: number, to: number, dst: Uint32Array, at: number): number {
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
    else for (let j = j0, o = 2 * at; j < j1; j++, o += 2) { const x = src[j]!; dst[o] = x >>> 0; dst[o + 1] = x < 0 ? 0xffffffff : 0; }
    return at + (j1 - j0);
  }
  if (ranges) {
    // Scalars with nulls: element r is row r.
    return wide ? scalarsWide(src as Uint32Array, rowValid, elValid, from, to, dst, at) : scalarsNarrow(src as Int32Array, rowValid, elValid, from, to, dst, at);
  }
  for (let r = from; r < to; r++) {
    if (rowValid !== null && rowValid[r] === 0) continue;
    const j0 = lists!.offsets[r]!;
    const j1 = lists!.offsets[r + 1]!;
    if (wide) {
      for (let j = j0; j < j1; j++) if (elValid === null || elValid[j] === 1) { dst[2 * at] = src[2 * j]!; dst[2 * at + 1] = src[2 * j + 1]!; at++; }
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

function scalarsWide(src: Uint32Array, rowValid: Uint8Array | null, elValid: Uint8Array | null, from: number, to: number, dst: Uint32Array, at: number): number {
  for (let r = from; r < to; r++) {
    if ((rowValid !== null && rowValid[r] === 0) || (elValid !== null && elValid[r] === 0)) continue;
    dst[2 * at] = src[2 * r]!;
    dst[2 * at + 1] = src[2 * r + 1]!;
    at++;
  }
  return at;
}

function scalarsNarrow(src: Int32Array, rowValid: Uint8Array | null, elValid: Uint8Array | null, from: number, to: number, dst: Uint32Array, at: number): number {
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

function writeDenseIndexed(c: Column, idx: Int32Array, from: number, to: number, out: Float32Array, o: number, dim: number): void {
  const valid = c.valid;
  if (c.type === 'float32') return denseIdxF32(c.values, valid, idx, from, to, out, o, dim);
  if (c.type === 'int32') return denseIdxI32(c.values, valid, idx, from, to, out, o, dim);
  if (c.type === 'float64') return denseIdxF64(c.values, valid, idx, from, to, out, o, dim);
  const read = numberReader(c);
  for (let r = from; r < to; r++, o += dim) { const j = idx[r]!; out[o] = valid === null || valid[j] === 1 ? read(j) : 0; }
}

function denseIdxF32(v: Float32Array, valid: Uint8Array | null, idx: Int32Array, from: number, to: number, out: Float32Array, o: number, dim: number): void {
  if (valid === null) for (let r = from; r < to; r++, o += dim) out[o] = v[idx[r]!]!;
  else for (let r = from; r < to; r++, o += dim) { const j = idx[r]!; out[o] = valid[j] === 1 ? v[j]! : 0; }
}
function denseIdxI32(v: Int32Array, valid: Uint8Array | null, idx: Int32Array, from: number, to: number, out: Float32Array, o: number, dim: number): void {
  if (valid === null) for (let r = from; r < to; r++, o += dim) out[o] = v[idx[r]!]!;
  else for (let r = from; r < to; r++, o += dim) { const j = idx[r]!; out[o] = valid[j] === 1 ? v[j]! : 0; }
}
function denseIdxF64(v: Float64Array, valid: Uint8Array | null, idx: Int32Array, from: number, to: number, out: Float32Array, o: number, dim: number): void {
  if (valid === null) for (let r = from; r < to; r++, o += dim) out[o] = v[idx[r]!]!;
  else for (let r = from; r < to; r++, o += dim) { const j = idx[r]!; out[o] = valid[j] === 1 ? v[j]! : 0; }
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
      if (r >= 0) { r = -1; break; }
      r = j;
    }
  }
  nullSlotCache.set(c, r);
  return r;
}

/** Writes the lengths (0 or 1) of rows [from, to) of an indexed scalar column; returns their sum. */
function writeLengthsIndexed(c: Column, idx: Int32Array, from: number, to: number, out: Int32Array, at: number): number {
  const valid = c.valid;
  if (valid === null) { out.fill(1, at, at + to - from); return to - from; }
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

function writeSparseIndexed(c: Column, idx: Int32Array, from: number, to: number, dst: Uint32Array, at: number): number {
  const cd = compactIds(c);
  if (cd !== null) return sparseIdxCompact(cd, idx, from, to, dst, at);
  if (c.type === 'int64') return sparseIdxWide(int64Words(c.values), c.valid, idx, from, to, dst, at);
  if (c.type === 'int32') return sparseIdxNarrow(c.values, c.valid, idx, from, to, dst, at);
  throw new TypeError(`sparse output must be integer, got ${c.type}`);
}

/** Writes the lengths of rows [from, to) of an indexed list (valid elements of each list's first `keep`); returns their sum. */
function writeLengthsIndexedList(l: IndexedListSource, from: number, to: number, out: Int32Array, at: number): number {
  const { offsets, idx, valid, keep } = l;
  const dv = l.dict.valid;
  let sum = 0;
  for (let r = from, o = at; r < to; r++, o++) {
    if (valid !== null && valid[r] === 0) { out[o] = 0; continue; }
    const s = offsets[r]!;
    const e = s + Math.min(keep, offsets[r + 1]! - s);
    if (dv === null) { sum += out[o] = e - s; continue; }
    let n = 0;
    for (let j = s; j < e; j++) n += dv[idx[j]!]!;
    sum += out[o] = n;
  }
  return sum;
}

/** The ids of rows [from, to) of an indexed list into `dst` words from value index `at`; returns the new index. */
function writeSparseIndexedList(l: IndexedListSource, from: number, to: number, dst: Uint32Array, at: number): number {
  const { offsets, idx, valid, keep, dict } = l;
  if (dict.type !== 'int64' && dict.type !== 'int32') throw new TypeError(`sparse output must be integer, got ${dict.type}`);
  // Each valid row's first `keep` element indices are a run of `idx`, written as a scalar
  // indexed column's rows are.
  const cd = compactIds(dict);
  const words = dict.type === 'int64' ? int64Words(dict.values) : null;
  for (let r = from; r < to; r++) {
    if (valid !== null && valid[r] === 0) continue;
    const s = offsets[r]!;
    const e = s + Math.min(keep, offsets[r + 1]! - s);
    if (cd !== null) at = sparseIdxCompact(cd, idx, s, e, dst, at);
    else if (words !== null) at = sparseIdxWide(words, dict.valid, idx, s, e, dst, at);
    else at = sparseIdxNarrow(dict.values as Int32Array, dict.valid, idx, s, e, dst, at);
  }
  return at;
}

/**
 * Ids from a compact dictionary (compactIds). Branch-free: every row writes its id at `at` and
 * advances only when it is not null, so a null row's write is overwritten by the next id, or lands
 * on a later key's first slot (written after this key), or past the array's end (ignored).
 * Both words are written (the high one is 0: every compact id is below 2^31), so a reused slot
 * needs no zeroing first: that was a second pass over ~1.7 MB per RM1 batch.
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

/**
 * The arrays of a batch for a run of rows: what `assembleBatch` builds, and what a decode worker
 * builds for a chunk when it computes every feature itself (then the main thread only hands the
 * arrays on, or concatenates two at a row-group boundary). Same layout as `Batch`.
 */
export interface Pack {
  readonly rows: number;
  readonly dense: Float32Array;
  readonly lengths: Int32Array;
  readonly offsets: Int32Array;
  readonly values: BigInt64Array;
  readonly labels: Float32Array | null;
  /**
   * Set when the arrays are in a slot of a PackArena (io/pack-arena.ts): gives the slot back,
   * `byConsumer` when a batch's consumer released it (which turns pooling on). Idempotent.
   */
  readonly release?: (byConsumer: boolean) => void;
}

/** `n` rounded up to a multiple of 8: where `packRows` starts each array of a pack in a slot. */
export const align8 = (n: number): number => (n + 7) & ~7;

/** Bytes a pack's arrays take in a slot (laid out as `packRows` does), for `PackArena.grow`. */
export function packBytes(p: Pack): number {
  return align8(p.dense.byteLength) + align8(p.lengths.byteLength) + align8(p.offsets.byteLength) + (p.labels !== null ? align8(p.labels.byteLength) : 0) + p.values.byteLength;
}

/** Whether every array of a pack lies in `slot`. */
export function packInSlot(p: Pack, slot: SharedArrayBuffer): boolean {
  return [p.dense, p.lengths, p.offsets, p.values, p.labels].every((a) => a === null || a.buffer === slot);
}

/** Where a chunk's output columns are, for `packRows`. */
export interface PackSource {
  readonly outputs: ReadonlyMap<string, Column>;
  readonly label: Column | null;
  readonly locate: RowLocator;
  /**
   * Outputs not gathered yet (a decode worker's derived columns, io/fast-parquet.ts): row r of the
   * feature is dict[idx[r]]. Scalar numeric dicts only; a name here takes precedence over `outputs`.
   */
  readonly indexed?: ReadonlyMap<string, { readonly dict: Column; readonly idx: Int32Array }>;
  /** List outputs not cut or gathered yet (a decode worker's list features): sparse keys only; precedence over `outputs`. */
  readonly indexedLists?: ReadonlyMap<string, IndexedListSource>;
}

/**
 * A list feature as a decode worker computes it (io/fast-parquet.ts IndexedList): valid row r
 * holds dict[idx[j]] for its first `keep` elements j from offsets[r]; a null dict entry is a null
 * element. Laid out straight into a pack, it skips the cut list and the gathered ids array.
 */
export interface IndexedListSource {
  readonly dict: Column;
  readonly idx: Int32Array;
  readonly offsets: Int32Array;
  readonly valid: Uint8Array | null;
  readonly keep: number;
}

/**
 * Lays out rows [from, to) of several sources (in order) as batch arrays. Pure, and free of
 * anything that needs the main thread: decode workers call it too.
 *
 * Hot paths here, in io/fast-parquet.ts and in the decode worker use plain loops and module-level
 * functions, not callbacks made per call (forEach arrows, arrow-function class fields). Each call
 * makes new closures, and in the decode workers V8 compiled such closures again and again:
 * `--trace-opt` over 12 back-to-back RM1 runs with 2 decoders showed the per-key callback that
 * was here compiled with TurboFan 8 times in runs 4-11, for a new closure each time (5-15 ms of a
 * helper thread each, which on 2 cores is taken from a decoder). In the same traces,
 * eachOnDictionary was compiled 3 times (~90 ms each) after "wrong map" deoptimizations.
 */
export function packRows(
  layout: BatchLayout, segments: ReadonlyArray<{ readonly chunk: PackSource; readonly from: number; readonly to: number }>, slot?: SharedArrayBuffer,
): Pack & { readonly inSlot: boolean } {
  const rows = segments.reduce((a, s) => a + s.to - s.from, 0);
  const dim = layout.dim;
  const K = layout.sparseKeys.length;
  // With a slot (io/pack-arena.ts), the arrays are laid out in it in this order as long as they
  // fit, else each gets fresh memory. A reused slot holds an older batch, and some writers count
  // on zeroed memory as a fresh array has it: offsets are summed into, and a null row of a vector
  // feature is skipped. Those arrays are zeroed first; every other one is written in full (both
  // words of every sparse id included).
  const mem = new SlotLayout(slot);
  const data = mem.f32(rows * dim);
  if (data.buffer === slot && layout.dense.some((f) => f.vector)) data.fill(0);
  const lengths = mem.i32(K * rows);
  const offsets = mem.i32(K + 1).fill(0);
  const labels = layout.label ? mem.f32(rows) : null;

  let row0 = 0;
  for (const seg of segments) {
    const ixs = seg.chunk.indexed;
    for (const f of layout.dense) {
      const ix = ixs?.get(f.name);
      if (ix !== undefined) writeDenseIndexed(ix.dict, ix.idx, seg.from, seg.to, data, row0 * dim + f.offset, dim);
      else writeDense(seg.chunk.outputs.get(f.name)!, seg, data, row0, dim, f.offset, f.width);
    }
    // offsets[k + 1] collects key k's value count here; the prefix sum below makes them offsets.
    // Plain loops, not forEach callbacks: see the note on closures above `packRows`.
    const lists = seg.chunk.indexedLists;
    for (let k = 0; k < K; k++) {
      const key = layout.sparseKeys[k]!;
      const ix = ixs?.get(key);
      const il = lists?.get(key);
      offsets[k + 1] += ix !== undefined
        ? writeLengthsIndexed(ix.dict, ix.idx, seg.from, seg.to, lengths, k * rows + row0)
        : il !== undefined
          ? writeLengthsIndexedList(il, seg.from, seg.to, lengths, k * rows + row0)
          : writeLengths(seg.chunk.outputs.get(key)!, seg.from, seg.to, lengths, k * rows + row0);
    }
    row0 += seg.to - seg.from;
  }
  for (let k = 0; k < K; k++) offsets[k + 1] += offsets[k]!;
  const values = mem.i64(offsets[K]!);
  const words = int64Words(values);
  for (let k = 0; k < K; k++) {
    const key = layout.sparseKeys[k]!;
    let at = offsets[k]!;
    for (const seg of segments) {
      const ix = seg.chunk.indexed?.get(key);
      const il = seg.chunk.indexedLists?.get(key);
      at = ix !== undefined
        ? writeSparseIndexed(ix.dict, ix.idx, seg.from, seg.to, words, at)
        : il !== undefined ? writeSparseIndexedList(il, seg.from, seg.to, words, at) : writeSparse(seg.chunk.outputs.get(key)!, seg.from, seg.to, words, at);
    }
  }

  if (labels !== null) {
    let o = 0;
    for (const seg of segments) {
      const c = seg.chunk.label!;
      const read = numberReader(c);
      for (let r = seg.from; r < seg.to; r++, o++) {
        if (c.valid !== null && c.valid[r] === 0) throw new DataError('label is null (filter or fill these rows before training)', seg.chunk.locate(r));
        labels[o] = read(r);
      }
    }
  }
  return { rows, dense: data, lengths, offsets, values, labels, inSlot: mem.inSlot };
}

/**
 * Typed arrays laid out one after another in a slot of shared memory (8-byte aligned) while they
 * fit, else each in fresh memory: how `packRows` and `mergePacks` place a pack's arrays.
 */
class SlotLayout {
  private at = 0;
  /** Whether any array went in the slot. */
  inSlot = false;
  constructor(private readonly slot: SharedArrayBuffer | undefined) {}
  private take(bytes: number): { buffer: ArrayBufferLike; offset: number } {
    const slot = this.slot;
    if (slot !== undefined && this.at + bytes <= slot.byteLength) {
      const offset = this.at;
      this.at = align8(this.at + bytes);
      this.inSlot = true;
      return { buffer: slot, offset };
    }
    return { buffer: new ArrayBuffer(bytes), offset: 0 };
  }
  // Methods, not arrow-function fields: a field makes new closures per instance (see `packRows`).
  f32(n: number): Float32Array { const m = this.take(4 * n); return new Float32Array(m.buffer, m.offset, n); }
  i32(n: number): Int32Array { const m = this.take(4 * n); return new Int32Array(m.buffer, m.offset, n); }
  i64(n: number): BigInt64Array { const m = this.take(8 * n); return new BigInt64Array(m.buffer, m.offset, n); }
}

/** Slots of shared memory to lay batches out in, and where they go back (io/pack-arena.ts). */
export interface SlotLender {
  lend(n: number): Array<[number, SharedArrayBuffer]>;
  give(id: number): void;
  /** A pack of `bytes` did not fit the slot it was lent (PackArena.grow). */
  grow?(bytes: number): void;
}

/**
 * Where row `row` (0 to pack.rows) of sparse key `k` starts in `pack.values`: the key's offset plus
 * the lengths of the rows before it, summed from whichever end of the key's rows is nearer. A
 * merge mostly takes a pack's head or tail (a batch across two row groups), so one end is free;
 * summing from the start cost ~7 ms of main-thread time per 1M RM1 rows.
 */
function rowStart(pack: Pack, k: number, row: number): number {
  const n = pack.rows;
  const l = k * n;
  let at: number;
  if (row <= n - row) {
    at = pack.offsets[k]!;
    for (let j = 0; j < row; j++) at += pack.lengths[l + j]!;
  } else {
    at = pack.offsets[k + 1]!;
    for (let j = row; j < n; j++) at -= pack.lengths[l + j]!;
  }
  return at;
}

/**
 * Concatenates rows [from, to) of packs (in order) into one pack: in `slot` when it is given (as
 * `packRows` lays a pack out, each array in the slot while it fits, else in fresh memory).
 * Every array is written in full, so a used slot needs no zeroing.
 */
export function mergePacks(layout: BatchLayout, parts: ReadonlyArray<{ readonly pack: Pack; readonly from: number; readonly to: number }>, slot?: SharedArrayBuffer): Pack & { readonly inSlot: boolean } {
  // Plain loops, not callbacks: see the note above `packRows`.
  let rows = 0;
  for (let i = 0; i < parts.length; i++) rows += parts[i]!.to - parts[i]!.from;
  const dim = layout.dim;
  const K = layout.sparseKeys.length;
  const mem = new SlotLayout(slot);
  const dense = mem.f32(rows * dim);
  const lengths = mem.i32(K * rows);
  const offsets = mem.i32(K + 1);
  offsets[0] = 0;
  const labels = layout.label ? mem.f32(rows) : null;
  // Part i's values per key k in its pack: [ranges[r], ranges[r + 1]) with r = 2(iK + k), where
  // rows `from` and `to` start.
  const ranges = new Int32Array(2 * K * parts.length);
  for (let i = 0; i < parts.length; i++) {
    const { pack, from, to } = parts[i]!;
    for (let k = 0; k < K; k++) {
      const r = 2 * (i * K + k);
      ranges[r] = rowStart(pack, k, from);
      ranges[r + 1] = rowStart(pack, k, to);
    }
  }
  for (let k = 0; k < K; k++) {
    let n = 0;
    for (let i = 0; i < parts.length; i++) {
      const r = 2 * (i * K + k);
      n += ranges[r + 1]! - ranges[r]!;
    }
    offsets[k + 1] = offsets[k]! + n;
  }
  const values = mem.i64(offsets[K]!);
  let row0 = 0;
  const at = offsets.slice(0, K);
  for (let i = 0; i < parts.length; i++) {
    const { pack, from, to } = parts[i]!;
    // memcpy: TypedArray#set between shared buffers (slots) copies word by word (util/copy.ts).
    copyElements(dense, row0 * dim, pack.dense.subarray(from * dim, to * dim));
    for (let k = 0; k < K; k++) {
      copyElements(lengths, k * rows + row0, pack.lengths.subarray(k * pack.rows + from, k * pack.rows + to));
      const r = 2 * (i * K + k);
      const s = ranges[r]!;
      const e = ranges[r + 1]!;
      copyElements(values, at[k]!, pack.values.subarray(s, e));
      at[k] = at[k]! + e - s;
    }
    if (labels !== null) copyElements(labels, row0, pack.labels!.subarray(from, to));
    row0 += to - from;
  }
  return { rows, dense, lengths, offsets, values, labels, inSlot: mem.inSlot };
}

/**
 * Builds one batch from segments of processed chunks (in order). Pure: the caller decides when a
 * batch is full and what its sequence number and end cursor are. Segments of chunks that arrive
 * packed (laid out by a decode worker) are handed on as they are when one covers the whole batch,
 * and concatenated otherwise.
 */
export function assembleBatch(layout: BatchLayout, segments: readonly Segment[], seq: number, end: Cursor, arena?: SlotLender): Batch {
  let pack: Pack;
  // Packs in shared memory whose release this batch's release calls: it gives a whole pack's
  // memory back, and for packs it copied from (already given back) turns pooling on.
  const from: Pack[] = [];
  // The arena's slot this batch was copied into, given back on release (-1: none).
  let own = -1;
  if (!segments.some((s) => s.chunk.packed !== undefined)) {
    pack = packRows(layout, segments);
  } else {
    const whole = segments.length === 1 && segments[0]!.from === 0 && segments[0]!.to === segments[0]!.chunk.packed?.rows;
    if (whole) {
      pack = segments[0]!.chunk.packed!;
      if (pack.release !== undefined) from.push(pack);
    } else {
      // A batch across a row-group boundary, or a mix of packed and unpacked chunks: copied into
      // a slot of the arena when it lends one (after the first release), as the packs are.
      const [slot] = arena?.lend(1) ?? [];
      // A loop, not segments.map (see the note above packRows): in traces of warm runs,
      // mergePacks deoptimized ("wrong map") on the mapped array at its first use.
      const parts: Array<{ pack: Pack; from: number; to: number }> = [];
      for (const s of segments) parts.push(s.chunk.packed !== undefined ? { pack: s.chunk.packed, from: s.from, to: s.to } : { pack: packRows(layout, [s]), from: 0, to: s.to - s.from });
      const merged = mergePacks(layout, parts, slot?.[1]);
      if (slot !== undefined && !packInSlot(merged, slot[1])) arena!.grow?.(packBytes(merged));
      if (slot !== undefined && merged.inSlot) own = slot[0];
      else if (slot !== undefined) arena!.give(slot[0]);
      pack = merged;
      // The rows are copied: a pack whose last rows this batch took is free now (chunks line up
      // with batches, so a pack is split at most at a batch boundary and its rows go in order).
      for (const s of segments) {
        const p = s.chunk.packed;
        if (p?.release === undefined) continue;
        from.push(p);
        if (s.to === p.rows) p.release(false);
      }
    }
  }
  const batch: Batch = {
    seq,
    epoch: segments[0]?.chunk.at.epoch ?? end.epoch,
    rows: pack.rows,
    dense: { names: layout.denseNames, features: layout.dense, dim: layout.dim, data: pack.dense },
    sparse: { keys: layout.sparseKeys, lengths: pack.lengths, offsets: pack.offsets, values: pack.values },
    labels: pack.labels,
    end,
  };
  return defineRelease(batch, () => {
    for (const p of from) p.release!(true);
    if (own >= 0) arena!.give(own);
  });
}
