/**
 * PLAIN pages in indices mode. A derived column's input is read as each row's dictionary index
 * (values.ts, `indices`) so that its ops run once per dictionary entry; a PLAIN page has no
 * indices, so its values are appended here instead (present values only, in row order) and its
 * rows get indices past the dictionary's null slot: with D dictionary entries, row r holding the
 * k-th PLAIN value of the chunk gets D + 1 + k. The ops then run on the dictionary (plus the null
 * slot) and on these values, and the two results, one after the other, are what the indices point
 * into (../dict-ops.ts). A chunk written wholly PLAIN (DuckDB's high-cardinality strings; known
 * at its first data page, as a dictionary page comes first) is laid out the other way round, so
 * that the ops' results on its values can be used as they are, without a copy: row r holding the
 * k-th value gets k, and a null row the slot after the last value (`first`; marked -1 until the
 * values are counted, then `patchNulls`).
 */
import { copyBytes, type Column, type PrimitiveType } from '@sluice/ops';
import { parsePlainHex } from './plain-hex.js';
import { count, newArray } from './values.js';

const WIDTH: Record<string, number> = { int32: 4, int64: 8, float32: 4, float64: 8 };

/**
 * Grow-only memory the PLAIN values of one chunk at a time are written to: a chunk's values are
 * computed on (and copied out of) before the next chunk is decoded in this thread, and fresh
 * arrays per chunk were tens of MB of garbage per row group for the decode thread's GC.
 */
const scratch: ArrayBuffer[] = [new ArrayBuffer(0), new ArrayBuffer(0), new ArrayBuffer(0)];

/** Scratch slot of `cutLists`' values (slots 0 and 1 hold the chunk's PLAIN values, which it reads). */
const CUT = 2;

/** Scratch slot `i` with at least `bytes` bytes; `keep` bytes of its contents survive a grow. */
function scratchOf(i: number, bytes: number, keep = 0): ArrayBuffer {
  let b = scratch[i]!;
  if (b.byteLength < bytes) {
    const next = new ArrayBuffer(Math.max(bytes, 2 * b.byteLength));
    if (keep > 0) new Uint8Array(next).set(new Uint8Array(b, 0, keep));
    b = scratch[i] = next;
  }
  return b;
}

/**
 * A chunk's PLAIN values as the derived columns' ops take them: `column`, on which ops from index
 * `from` are still to run (1 when hex2int ran as the strings were decoded, plain-hex.ts), or
 * `column` null when a string is not what hex2int takes (the pipeline then reports it).
 */
export interface PlainColumn {
  readonly column: Column | null;
  readonly from: number;
  /** The chunk has no dictionary: its values come first and the null slot after them (module comment). */
  readonly first: boolean;
  /** Rows (or list elements) of the PLAIN pages that are null. */
  readonly nulls: number;
}

/** Whether an array lies in the PLAIN scratch memory, which the next chunk overwrites. */
export function inScratch(a: ArrayBufferView | null): boolean {
  return a !== null && scratch.includes(a.buffer as ArrayBuffer);
}

/** The PLAIN values of one column chunk, appended page by page. */
export class PlainValues {
  /** Values appended so far. */
  count = 0;
  /** Null rows (or elements) of the PLAIN pages so far. */
  nulls = 0;
  /** Whether the chunk has no dictionary (set at the first PLAIN page; see the module comment). */
  first: boolean | null = null;
  private values: Int32Array | BigInt64Array | Float32Array | Float64Array | null = null;
  private offsets: Int32Array | null = null;
  private data: Uint8Array | null = null;
  private end = 0;
  /** hex2int's results (`hex` mode): int64 words and validity (an empty string is null). */
  private words: Int32Array | null = null;
  private valid: Uint8Array | null = null;
  private invalid = false;

  /**
   * `capacity`: the most values the chunk can hold (its rows, or a list chunk's level entries).
   * `hex`: every op chain on these strings starts with hex2int, which then runs as they are
   * decoded, without copying them out (plain-hex.ts).
   */
  constructor(
    readonly type: PrimitiveType,
    private readonly capacity: number,
    private readonly hex = false,
  ) {}

  /** Appends a PLAIN page's `present` values, from byte `p` of the decompressed page. */
  append(page: Uint8Array, p: number, present: number, col: string): void {
    if (this.count + present > this.capacity) throw new Error(`column ${col}: PLAIN pages hold more values than the chunk's ${this.capacity}`);
    if (this.type === 'utf8' && this.hex) return this.appendHex(page, p, present, col);
    if (this.type === 'utf8') return this.appendUtf8(page, p, present, col);
    const w = WIDTH[this.type]!;
    if (p + present * w > page.length) throw new Error(`column ${col}: PLAIN values run past the page (${present} values of ${w} bytes)`);
    // Taken at the first PLAIN page: a chunk that is all dictionary pages takes nothing.
    if (this.values === null) {
      const C = newArray(this.type, 0).constructor as new (b: ArrayBuffer, o: number, l: number) => Int32Array;
      this.values = new C(scratchOf(0, w * this.capacity), 0, this.capacity);
    }
    // Bytes, not values: the page's values need not be aligned.
    new Uint8Array(this.values.buffer, this.count * w, present * w).set(page.subarray(p, p + present * w));
    this.count += present;
  }

  private appendHex(page: Uint8Array, p: number, present: number, col: string): void {
    this.words ??= new Int32Array(scratchOf(0, 8 * this.capacity), 0, 2 * this.capacity);
    this.valid ??= new Uint8Array(scratchOf(1, this.capacity), 0, this.capacity);
    // After a value hex2int rejects the rest is not parsed: the column goes to the pipeline.
    if (!this.invalid) {
      const r = parsePlainHex(page, p, present, this.words, this.valid, this.count);
      if (r === 'damaged') throw new Error(`column ${col}: PLAIN strings run past the page`);
      this.invalid = r === 'invalid';
    }
    this.count += present;
  }

  private appendUtf8(page: Uint8Array, p: number, present: number, col: string): void {
    this.offsets ??= new Int32Array(scratchOf(0, 4 * (this.capacity + 1)), 0, this.capacity + 1);
    const bytes = page.length - p;
    if (this.data === null || this.end + bytes > this.data.length) {
      const b = scratchOf(1, this.end + bytes, this.end);
      this.data = new Uint8Array(b, 0, b.byteLength);
    }
    const o = this.offsets;
    const data = this.data;
    let end = this.end;
    let k = this.count;
    for (let i = 0; i < present; i++) {
      if (p + 4 > page.length) throw new Error(`column ${col}: PLAIN strings run past the page`);
      const len = (page[p]! | (page[p + 1]! << 8) | (page[p + 2]! << 16) | (page[p + 3]! << 24)) >>> 0;
      if (p + 4 + len > page.length) throw new Error(`column ${col}: PLAIN string runs past the page`);
      o[k++] = end;
      copyBytes(page, p + 4, p + 4 + len, data, end);
      end += len;
      p += 4 + len;
    }
    o[k] = end;
    this.end = end;
    this.count = k;
  }

  /** The values (its arrays are this object's: read them before the next chunk). */
  column(): PlainColumn {
    const n = this.count;
    if (this.hex && this.type === 'utf8') {
      if (this.invalid) return { column: null, from: 1, first: this.first === true, nulls: this.nulls };
      const words = this.words ?? new Int32Array(0);
      const v = (this.valid ?? new Uint8Array(0)).subarray(0, n);
      const column: Column = { type: 'int64', values: new BigInt64Array(words.buffer, 0, n), valid: v.includes(0) ? v : null };
      return { column, from: 1, first: this.first === true, nulls: this.nulls };
    }
    return { column: this.raw(), from: 0, first: this.first === true, nulls: this.nulls };
  }

  /** The values as they are in the file: a column of `count` rows without nulls. */
  private raw(): Column {
    const n = this.count;
    if (this.type === 'utf8') {
      const offsets = this.offsets ?? new Int32Array(1);
      return { type: 'utf8', offsets: offsets.subarray(0, n + 1), data: (this.data ?? new Uint8Array(0)).subarray(0, this.end), valid: null };
    }
    const values = this.values ?? newArray(this.type, 0);
    return { type: this.type, values: values.subarray(0, n), valid: null } as Column;
  }
}

/**
 * Indices mode of a PLAIN data page: its `present` values appended to `plain`, and rows
 * [at, at + n) given their slots (module comment). `dictSize`: the chunk's dictionary entries, or
 * null when it has no dictionary page; a null row gets the dictionary's size, or -1 without one.
 */
export function plainIndices(
  page: Uint8Array,
  p: number,
  n: number,
  present: number,
  at: number,
  valid: Uint8Array | null,
  rowIdx: Int32Array | null,
  dictSize: number | null,
  plain: PlainValues,
  col: string,
): void {
  plain.first ??= dictSize === null;
  const nul = plain.first ? -1 : dictSize!;
  const base = (plain.first ? 0 : nul + 1) + plain.count;
  plain.append(page, p, present, col);
  plain.nulls += n - present;
  // A chunk without a dictionary whose indices are left unwritten (`firstIndices`): only the count is checked.
  if (rowIdx === null) {
    if (valid !== null && count(valid, at, n) !== present) throw new Error(`column ${col}: ${count(valid, at, n)} rows marked present for ${present} values`);
    return;
  }
  if (valid === null) {
    for (let i = 0; i < n; i++) rowIdx[at + i] = base + i;
    return;
  }
  let k = 0;
  for (let i = 0; i < n; i++) {
    const v = valid[at + i]!;
    // valid ? base + k++ : nul, without a branch (nulls are scattered: a branch mispredicts).
    rowIdx[at + i] = nul ^ (((base + k) ^ nul) & -v);
    k += v;
  }
  if (k !== present) throw new Error(`column ${col}: ${k} rows marked present for ${present} values`);
}

/**
 * The indices of a chunk without a dictionary that were not written as its pages were read (a list
 * chunk's, parquet/list.ts): slot i holding the k-th value gets k, a null slot the one after the
 * values. Null when no slot is null: each slot's index is then its own position, which the caller
 * uses as it is (dict-ops.ts, `cutLists`).
 */
export function firstIndices(valid: Uint8Array | null, n: number, plain: PlainValues): Int32Array | null {
  if (plain.nulls === 0) return null;
  const idx = new Int32Array(n);
  const nul = plain.count;
  for (let i = 0, k = 0; i < n; i++) {
    const v = valid![i]!;
    idx[i] = nul ^ ((k ^ nul) & -v);
    k += v;
  }
  return idx;
}

/**
 * Each list of a chunk's PLAIN values (`column`, no null element, list r at [offsets[r],
 * offsets[r + 1])) cut to the elements `cut` keeps (its first cut[r + 1] - cut[r]): the kept values
 * in a row, in scratch memory that the next call overwrites.
 */
export function cutLists(column: Column, offsets: Int32Array, cut: Int32Array): Column {
  const c = column as Column & { readonly values: Int32Array | BigInt64Array | Float32Array | Float64Array };
  const rows = cut.length - 1;
  const w = c.values.BYTES_PER_ELEMENT;
  const C = c.values.constructor as new (b: ArrayBuffer, o: number, l: number) => Int32Array;
  const values = new C(scratchOf(CUT, w * cut[rows]!), 0, cut[rows]!);
  // As 32-bit words (every numeric type is one or two), in a plain loop: a subarray per list
  // would be an object per row.
  const k = w >> 2;
  const from = new Int32Array(c.values.buffer, c.values.byteOffset, k * c.values.length);
  const to = new Int32Array(values.buffer, 0, k * values.length);
  for (let r = 0; r < rows; r++) {
    for (let i = k * offsets[r]!, j = k * cut[r]!, end = k * cut[r + 1]!; j < end; i++, j++) to[j] = from[i]!;
  }
  return { type: c.type, values, valid: null } as Column;
}

/** A chunk without a dictionary: its null rows' slot, after the values (module comment), in rowIdx[0, n). */
export function patchNulls(rowIdx: Int32Array, n: number, plain: PlainValues): void {
  if (plain.first !== true || plain.nulls === 0) return;
  const slot = plain.count;
  for (let i = 0; i < n; i++) if (rowIdx[i] === -1) rowIdx[i] = slot;
}
