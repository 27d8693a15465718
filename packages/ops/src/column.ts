/**
 * The column model every kernel works on: plain typed arrays, one validity byte per slot.
 *
 * Why bytes and not Arrow's bit-packed bitmaps: kernels test one slot at a time and chunks are
 * sliced at arbitrary row offsets; a byte mask makes both free. Conversion from and to Arrow
 * happens once at the edges (core's reader/arrow.ts and output/batch-arrow.ts).
 */

import { copyBytes, copyWords, newValues, wordsOf, wordWidth } from './words.js';

/** 1 = valid, 0 = null; `null` means every slot is valid. */
export type ValidMask = Uint8Array | null;

export interface Int32Column {
  readonly type: 'int32';
  readonly values: Int32Array;
  readonly valid: ValidMask;
}
export interface Int64Column {
  readonly type: 'int64';
  readonly values: BigInt64Array;
  readonly valid: ValidMask;
}
export interface Float32Column {
  readonly type: 'float32';
  readonly values: Float32Array;
  readonly valid: ValidMask;
}
export interface Float64Column {
  readonly type: 'float64';
  readonly values: Float64Array;
  readonly valid: ValidMask;
}
/** UTF-8 strings: value i is data[offsets[i] .. offsets[i+1]). offsets[0] need not be 0. */
export interface Utf8Column {
  readonly type: 'utf8';
  readonly offsets: Int32Array;
  readonly data: Uint8Array;
  readonly valid: ValidMask;
}

export type NumericColumn = Int32Column | Int64Column | Float32Column | Float64Column;
export type PrimitiveColumn = NumericColumn | Utf8Column;

/**
 * Variable-length lists. Invariant: offsets[0] === 0 and offsets[length] === child length, so an
 * element-wise op can map the whole child at once. A null list (valid[i] = 0) has zero length.
 */
export interface ListColumn {
  readonly type: 'list';
  readonly offsets: Int32Array;
  readonly child: PrimitiveColumn;
  readonly valid: ValidMask;
}

/** Fixed-size float32 vectors (oneHot output): row i is values[i*size .. (i+1)*size). */
export interface FixedColumn {
  readonly type: 'fixed';
  readonly size: number;
  readonly values: Float32Array;
  readonly valid: ValidMask;
}

export type Column = PrimitiveColumn | ListColumn | FixedColumn;

export type NumericType = NumericColumn['type'];
export type PrimitiveType = PrimitiveColumn['type'];

/** The static type of a column, used to type-check a plan before any data is read. */
export type ColumnType =
  { readonly kind: PrimitiveType } | { readonly kind: 'list'; readonly child: PrimitiveType } | { readonly kind: 'fixed'; readonly size: number };

export const isIntegerType = (t: PrimitiveType): t is 'int32' | 'int64' => t === 'int32' || t === 'int64';
export const isFloatType = (t: PrimitiveType): t is 'float32' | 'float64' => t === 'float32' || t === 'float64';
export const isNumericType = (t: PrimitiveType): t is NumericType => t !== 'utf8';

/** The element type: the primitive type itself, or a list's child type. */
export function elementType(t: ColumnType): PrimitiveType | 'fixed' {
  return t.kind === 'list' ? t.child : t.kind;
}

/** Human-readable type name for error messages, e.g. `list<int64>`. */
export function typeName(t: ColumnType): string {
  if (t.kind === 'list') return `list<${t.child}>`;
  if (t.kind === 'fixed') return `float32[${t.size}]`;
  return t.kind;
}

/** The static type of a concrete column. */
export function columnType(c: Column): ColumnType {
  if (c.type === 'list') return { kind: 'list', child: c.child.type };
  if (c.type === 'fixed') return { kind: 'fixed', size: c.size };
  return { kind: c.type };
}

/** Number of rows (slots) in a column. */
export function columnLength(c: Column): number {
  switch (c.type) {
    case 'utf8':
    case 'list':
      return c.offsets.length - 1;
    case 'fixed':
      return c.size === 0 ? (c.valid ? c.valid.length : 0) : c.values.length / c.size;
    default:
      return c.values.length;
  }
}

/** True when slot i holds a value. */
export const isValid = (valid: ValidMask, i: number): boolean => valid === null || valid[i] === 1;

/** Count of null slots. */
export function nullCount(valid: ValidMask): number {
  if (valid === null) return 0;
  let n = 0;
  for (let i = 0; i < valid.length; i++) n += valid[i] === 0 ? 1 : 0;
  return n;
}

/**
 * Little-endian 32-bit words of an int64 array: word 2i is the low half of value i, 2i+1 the high.
 * Kernels read and write int64 through this view: indexing a BigInt64Array allocates a BigInt per
 * value, where two u32 loads allocate nothing.
 */
export function int64Words(values: BigInt64Array): Uint32Array {
  return new Uint32Array(values.buffer, values.byteOffset, values.length * 2);
}

/** Number value of an int64 given its two words (exact below 2^53 in magnitude, rounded beyond). */
export function int64ToNumber(lo: number, hi: number): number {
  // hi is read as u32; (hi | 0) makes it signed so the result is the two's-complement value.
  return (hi | 0) * 4294967296 + (lo >>> 0);
}

// ---- constructors ---------------------------------------------------------------------------

export const int32Column = (values: Int32Array, valid: ValidMask = null): Int32Column => ({ type: 'int32', values, valid });
export const int64Column = (values: BigInt64Array, valid: ValidMask = null): Int64Column => ({ type: 'int64', values, valid });
export const float32Column = (values: Float32Array, valid: ValidMask = null): Float32Column => ({ type: 'float32', values, valid });
export const float64Column = (values: Float64Array, valid: ValidMask = null): Float64Column => ({ type: 'float64', values, valid });

/** Builds a column of the given numeric type over a fresh array of n zeros. */
export function allocNumeric(type: NumericType, n: number, valid: ValidMask = null): NumericColumn {
  switch (type) {
    case 'int32':
      return int32Column(new Int32Array(n), valid);
    case 'int64':
      return int64Column(new BigInt64Array(n), valid);
    case 'float32':
      return float32Column(new Float32Array(n), valid);
    case 'float64':
      return float64Column(new Float64Array(n), valid);
  }
}

/** A list column from offsets (starting at 0) and a child column. */
export function listColumn(offsets: Int32Array, child: PrimitiveColumn, valid: ValidMask = null): ListColumn {
  return { type: 'list', offsets, child, valid };
}

/** UTF-8 column from JS strings (tests and small inputs only: it creates one string per value). */
export function utf8FromStrings(values: ReadonlyArray<string | null>): Utf8Column {
  const enc = new TextEncoder();
  const parts = values.map((v) => (v === null ? new Uint8Array(0) : enc.encode(v)));
  const offsets = new Int32Array(values.length + 1);
  for (let i = 0; i < parts.length; i++) offsets[i + 1] = offsets[i]! + parts[i]!.length;
  const data = new Uint8Array(offsets[values.length]!);
  parts.forEach((p, i) => data.set(p, offsets[i]!));
  const hasNull = values.some((v) => v === null);
  const valid = hasNull ? Uint8Array.from(values, (v) => (v === null ? 0 : 1)) : null;
  return { type: 'utf8', offsets, data, valid };
}

// ---- slicing and gathering (used by the source for chunks and by the shuffle) ---------------

/** Rows [start, end) of a column. Primitive slices share memory; list slices rebase offsets. */
export function sliceColumn(c: Column, start: number, end: number): Column {
  const v = c.valid ? c.valid.subarray(start, end) : null;
  switch (c.type) {
    case 'int32':
      return { type: 'int32', values: c.values.subarray(start, end), valid: v };
    case 'int64':
      return { type: 'int64', values: c.values.subarray(start, end), valid: v };
    case 'float32':
      return { type: 'float32', values: c.values.subarray(start, end), valid: v };
    case 'float64':
      return { type: 'float64', values: c.values.subarray(start, end), valid: v };
    case 'utf8':
      return { type: 'utf8', offsets: c.offsets.subarray(start, end + 1), data: c.data, valid: v };
    case 'fixed':
      return { type: 'fixed', size: c.size, values: c.values.subarray(start * c.size, end * c.size), valid: v };
    case 'list': {
      const base = c.offsets[start]!;
      const stop = c.offsets[end]!;
      const offsets = new Int32Array(end - start + 1);
      for (let i = 0; i <= end - start; i++) offsets[i] = c.offsets[start + i]! - base;
      return { type: 'list', offsets, child: sliceColumn(c.child, base, stop) as PrimitiveColumn, valid: v };
    }
  }
}

function gatherValid(valid: ValidMask, idx: Int32Array | Uint32Array): ValidMask {
  if (valid === null) return null;
  const out = new Uint8Array(idx.length);
  for (let i = 0; i < idx.length; i++) out[i] = valid[idx[i]!]!;
  return out;
}

/** Rows idx[0], idx[1], … of a column, as a new column (the shuffle's permutation). */
export function gatherColumn(c: Column, idx: Int32Array | Uint32Array): Column {
  const n = idx.length;
  const valid = gatherValid(c.valid, idx);
  switch (c.type) {
    case 'int32': {
      const o = new Int32Array(n);
      for (let i = 0; i < n; i++) o[i] = c.values[idx[i]!]!;
      return int32Column(o, valid);
    }
    case 'float32': {
      const o = new Float32Array(n);
      for (let i = 0; i < n; i++) o[i] = c.values[idx[i]!]!;
      return float32Column(o, valid);
    }
    case 'float64': {
      const o = new Float64Array(n);
      for (let i = 0; i < n; i++) o[i] = c.values[idx[i]!]!;
      return float64Column(o, valid);
    }
    case 'int64': {
      const o = new BigInt64Array(n);
      const src = int64Words(c.values);
      const dst = int64Words(o);
      for (let i = 0; i < n; i++) {
        const j = idx[i]! * 2;
        dst[2 * i] = src[j]!;
        dst[2 * i + 1] = src[j + 1]!;
      }
      return int64Column(o, valid);
    }
    case 'fixed': {
      const s = c.size;
      const o = new Float32Array(n * s);
      for (let i = 0; i < n; i++) o.set(c.values.subarray(idx[i]! * s, idx[i]! * s + s), i * s);
      return { type: 'fixed', size: s, values: o, valid };
    }
    case 'utf8':
    case 'list':
      return gatherJagged(c, idx, valid);
  }
}
/**
 * Lists and strings gathered in one pass per array: the offsets first, then each row's run of
 * elements (words of a numeric child, bytes of a string) copied whole. A list of strings gathers
 * its child through per-element indices.
 */
function gatherJagged(c: Utf8Column | ListColumn, idx: Int32Array | Uint32Array, valid: ValidMask): Utf8Column | ListColumn {
  const n = idx.length;
  const src = c.offsets;
  const offsets = new Int32Array(n + 1);
  for (let i = 0; i < n; i++) offsets[i + 1] = offsets[i]! + src[idx[i]! + 1]! - src[idx[i]!]!;
  const total = offsets[n]!;
  if (c.type === 'utf8') {
    const data = new Uint8Array(total);
    for (let i = 0; i < n; i++) copyBytes(c.data, src[idx[i]!]!, src[idx[i]! + 1]!, data, offsets[i]!);
    return { type: 'utf8', offsets, data, valid };
  }
  if (c.child.type === 'utf8') {
    const childIdx = new Int32Array(total);
    for (let i = 0, k = 0; i < n; i++) for (let j = src[idx[i]!]!; j < src[idx[i]! + 1]!; j++) childIdx[k++] = j;
    return { type: 'list', offsets, child: gatherColumn(c.child, childIdx) as PrimitiveColumn, valid };
  }
  const child = c.child;
  const values = newValues(child.type, total);
  const w = wordWidth(child.type);
  const from = wordsOf(child.values);
  const to = wordsOf(values);
  for (let i = 0; i < n; i++) copyWords(from, src[idx[i]!]! * w, src[idx[i]! + 1]! * w, to, offsets[i]! * w);
  let childValid: ValidMask = null;
  if (child.valid !== null) {
    childValid = new Uint8Array(total);
    for (let i = 0; i < n; i++) copyBytes(child.valid, src[idx[i]!]!, src[idx[i]! + 1]!, childValid, offsets[i]!);
  }
  return { type: 'list', offsets, child: { type: child.type, values, valid: childValid } as NumericColumn, valid };
}

/** Concatenates same-typed columns (used when a shuffle window spans several record batches). */
export function concatColumns(cols: readonly Column[]): Column {
  if (cols.length === 1) return cols[0]!;
  const lengths = cols.map(columnLength);
  const total = lengths.reduce((a, b) => a + b, 0);
  let valid: Uint8Array | null = null;
  if (cols.some((c) => c.valid !== null)) {
    valid = new Uint8Array(total);
    let at = 0;
    cols.forEach((c, k) => {
      if (c.valid) valid!.set(c.valid, at);
      else valid!.fill(1, at, at + lengths[k]!);
      at += lengths[k]!;
    });
  }
  const first = cols[0]!;
  switch (first.type) {
    case 'int32':
    case 'int64':
    case 'float32':
    case 'float64': {
      const Ctor = first.values.constructor as { new (n: number): Int32Array | BigInt64Array | Float32Array | Float64Array };
      const out = new Ctor(total);
      let at = 0;
      for (const c of cols) {
        (out as Int32Array).set((c as Int32Column).values, at);
        at += (c as Int32Column).values.length;
      }
      return { type: first.type, values: out, valid } as NumericColumn;
    }
    case 'fixed': {
      const out = new Float32Array(total * first.size);
      let at = 0;
      for (const c of cols) {
        out.set((c as FixedColumn).values, at);
        at += (c as FixedColumn).values.length;
      }
      return { type: 'fixed', size: first.size, values: out, valid };
    }
    case 'utf8': {
      const bytes = cols.reduce((a, c) => {
        const u = c as Utf8Column;
        return a + u.offsets[u.offsets.length - 1]! - u.offsets[0]!;
      }, 0);
      const data = new Uint8Array(bytes);
      const offsets = new Int32Array(total + 1);
      let row = 0;
      let at = 0;
      for (const c of cols) {
        const u = c as Utf8Column;
        const n = u.offsets.length - 1;
        const b0 = u.offsets[0]!;
        data.set(u.data.subarray(b0, u.offsets[n]!), at);
        for (let i = 1; i <= n; i++) offsets[row + i] = at + u.offsets[i]! - b0;
        row += n;
        at += u.offsets[n]! - b0;
      }
      return { type: 'utf8', offsets, data, valid };
    }
    case 'list': {
      const offsets = new Int32Array(total + 1);
      let row = 0;
      for (const c of cols) {
        const l = c as ListColumn;
        const n = l.offsets.length - 1;
        const base = offsets[row]!;
        for (let i = 1; i <= n; i++) offsets[row + i] = base + l.offsets[i]!;
        row += n;
      }
      const child = concatColumns(cols.map((c) => (c as ListColumn).child)) as PrimitiveColumn;
      return { type: 'list', offsets, child, valid };
    }
  }
}

/** Bytes a column's buffers occupy (values, offsets, validity), for cost reports. */
export function columnBytes(c: Column): number {
  const v = c.valid ? c.valid.byteLength : 0;
  switch (c.type) {
    case 'utf8':
      return v + c.offsets.byteLength + (c.offsets[c.offsets.length - 1]! - c.offsets[0]!);
    case 'list':
      return v + c.offsets.byteLength + columnBytes(c.child);
    default:
      return v + c.values.byteLength;
  }
}
