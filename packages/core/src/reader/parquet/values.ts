/**
 * A data page's values: PLAIN values, or dictionary indices gathered from the chunk's dictionary,
 * written straight into typed arrays at the rows the definition levels leave valid. In indices
 * mode (`indices`) a page gives each row's dictionary index instead of its value.
 */
import { copyBytes, type PrimitiveType } from '@sluice/ops';
import { rleHybrid, rleIndicesWithNulls, rleMax } from './rle-wasm.js';

/** A dictionary page: fixed-width values, or strings as byte ranges [starts[i], starts[i] + lens[i]) of `data`. */
export interface Dict {
  readonly type: PrimitiveType;
  readonly values: Int32Array | BigInt64Array | Float32Array | Float64Array | null;
  readonly starts: Int32Array | null;
  readonly lens: Int32Array | null;
  readonly data: Uint8Array | null;
  readonly size: number;
}

/** Growable UTF-8 output: offsets per row, bytes appended. */
export class Utf8Out {
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

/** Thrown in indices mode when a page is not dictionary-encoded (nor PLAIN, where PLAIN pages are taken: plain.ts); the caller decodes values instead. */
export class NotAllDictionary extends Error {}

/** A zeroed typed array for `n` values of a numeric type. */
export function newArray(type: PrimitiveType, n: number): Int32Array | BigInt64Array | Float32Array | Float64Array {
  switch (type) {
    case 'int32':
      return new Int32Array(n);
    case 'int64':
      return new BigInt64Array(n);
    case 'float32':
      return new Float32Array(n);
    default:
      return new Float64Array(n);
  }
}

const WIDTH: Record<string, number> = { int32: 4, int64: 8, float32: 4, float64: 8 };

/** Copies `n` little-endian fixed-width values starting at byte `p` into a fresh aligned array. */
export function plainFixed(page: Uint8Array, p: number, type: PrimitiveType, n: number): Int32Array | BigInt64Array | Float32Array | Float64Array {
  const w = WIDTH[type]!;
  if (p + n * w > page.length) throw new Error(`PLAIN values run past the page (${n} values of ${w} bytes)`);
  // Copy into a fresh buffer for alignment (not page.slice: on a Node Buffer, gunzip's output, that is a view).
  const copy = new Uint8Array(n * w);
  copy.set(page.subarray(p, p + n * w));
  const out = newArray(type, 0);
  const C = out.constructor as new (b: ArrayBuffer, o: number, l: number) => typeof out;
  return new C(copy.buffer, 0, n);
}

/** Scratch for a page's indices of present values (reused: pages are decoded one at a time per thread). */
let scratchIdx = new Int32Array(0);

/**
 * Decodes a data page's values from byte `p` (PLAIN or dictionary-encoded) into rows
 * [at, at + n) of `values`, or of `utf8` for strings: `present` values, at the rows `valid` marks.
 */
export function readValues(
  page: Uint8Array,
  p: number,
  encoding: string,
  type: PrimitiveType,
  n: number,
  present: number,
  at: number,
  valid: Uint8Array | null,
  values: Int32Array | BigInt64Array | Float32Array | Float64Array | null,
  utf8: Utf8Out | null,
  dict: Dict | null,
  col: string,
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

/** Indices mode of a data page: row -> dictionary index; a null row gets dict.size (one past the last entry). */
export function indices(
  page: Uint8Array,
  p: number,
  encoding: string,
  n: number,
  present: number,
  at: number,
  valid: Uint8Array | null,
  rowIdx: Int32Array,
  dict: Dict | null,
  col: string,
): void {
  if (encoding !== 'RLE_DICTIONARY' && encoding !== 'PLAIN_DICTIONARY') throw new NotAllDictionary();
  if (dict === null) throw new Error(`column ${col}: dictionary-encoded page without a dictionary page`);
  const width = page[p]!;
  if (width > 32) throw new Error(`column ${col}: dictionary index bit width ${width}`);
  if (valid === null) {
    rleHybrid(page, p + 1, page.length, width, rowIdx, at, n);
    if (n > 0 && rleMax >= dict.size) throw new Error(`column ${col}: dictionary index ${rleMax} out of range (${dict.size} entries)`);
    return;
  }
  // Decode and merge in wasm where it takes the page (rle-wasm.ts); else as below.
  if (rleIndicesWithNulls(page, p + 1, page.length, width, valid, at, n, present, dict.size, rowIdx)) return;
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

// One copy per array type, so each loop sees one element kind (a loop over a union of typed
// arrays runs several times slower in V8).
export function gather(
  type: PrimitiveType,
  out: Int32Array | BigInt64Array | Float32Array | Float64Array,
  dv: Int32Array | BigInt64Array | Float32Array | Float64Array,
  idx: Int32Array,
  at: number,
  n: number,
  valid: Uint8Array | null,
): void {
  switch (type) {
    case 'int32':
      return gatherI32(out as Int32Array, dv as Int32Array, idx, at, n, valid);
    case 'float32':
      return gatherF32(out as Float32Array, dv as Float32Array, idx, at, n, valid);
    case 'float64':
      return gatherF64(out as Float64Array, dv as Float64Array, idx, at, n, valid);
    default:
      return gatherI64(out as BigInt64Array, dv as BigInt64Array, idx, at, n, valid);
  }
}

function gatherI32(out: Int32Array, dv: Int32Array, idx: Int32Array, at: number, n: number, valid: Uint8Array | null): void {
  if (valid === null) {
    for (let i = 0; i < n; i++) out[at + i] = dv[idx[i]!]!;
    return;
  }
  for (let i = 0, k = 0; i < n; i++) if (valid[at + i] !== 0) out[at + i] = dv[idx[k++]!]!;
}
function gatherF32(out: Float32Array, dv: Float32Array, idx: Int32Array, at: number, n: number, valid: Uint8Array | null): void {
  if (valid === null) {
    for (let i = 0; i < n; i++) out[at + i] = dv[idx[i]!]!;
    return;
  }
  for (let i = 0, k = 0; i < n; i++) if (valid[at + i] !== 0) out[at + i] = dv[idx[k++]!]!;
}
function gatherF64(out: Float64Array, dv: Float64Array, idx: Int32Array, at: number, n: number, valid: Uint8Array | null): void {
  if (valid === null) {
    for (let i = 0; i < n; i++) out[at + i] = dv[idx[i]!]!;
    return;
  }
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
    copyBytes(src, s, s + len, data, end);
    end += len;
  }
  utf8.end = end;
}

/** Places `present` dense values at the valid slots of rows [at, at + n). */
function scatter(
  src: Int32Array | BigInt64Array | Float32Array | Float64Array,
  out: Int32Array | BigInt64Array | Float32Array | Float64Array,
  at: number,
  n: number,
  valid: Uint8Array | null,
): void {
  if (valid === null) {
    (out as Int32Array).set(src as Int32Array, at);
    return;
  }
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
    copyBytes(page, p + 4, p + 4 + len, utf8.data, end);
    end += len;
    p += 4 + len;
    k++;
  }
  if (k !== present) throw new Error(`column ${col}: ${k} strings for ${present} present values`);
  utf8.end = end;
}

/** How many of rows [at, at + n) `valid` marks non-null. */
export function count(valid: Uint8Array, at: number, n: number): number {
  let c = 0;
  for (let i = at; i < at + n; i++) c += valid[i]!;
  return c;
}
