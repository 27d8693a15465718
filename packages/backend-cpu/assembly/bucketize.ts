/**
 * bucketize: out[i] = number of borders < x (right: <= x), compared in f64; NaN → 0; nulls → 0.
 *
 * Branch-free fixed-iteration binary search over the borders padded with +Inf to 2^levels
 * entries: every value takes the same levels + 1 steps, and eight searches run interleaved so
 * their dependent loads overlap. The padding is never < x; with `right` it is <= +Inf, so the
 * result is clamped to nb.
 */
import { tableLookup4 } from './common';

// @ts-ignore: decorator
@inline function less(b: f64, x: f64, right: bool): i32 {
  return right ? <i32>(b <= x) : <i32>(b < x);
}

// @ts-ignore: decorator
@inline function loadF64<T>(src: usize, i: i32): f64 {
  return <f64>load<T>(src + (<usize>i << alignof<T>()));
}

// @ts-ignore: decorator
@inline function bucketLoop<T>(src: usize, valid: usize, n: i32, borders: usize, levels: i32, nb: i32, right: bool, dst: usize): void {
  const top = (1 << levels) >> 1;
  const bm1 = borders - 8; // bm1 + 8 * (p + step) = &borders[p + step - 1]
  let i = 0;
  for (; i + 8 <= n; i += 8) {
    const x0 = loadF64<T>(src, i);
    const x1 = loadF64<T>(src, i + 1);
    const x2 = loadF64<T>(src, i + 2);
    const x3 = loadF64<T>(src, i + 3);
    const x4 = loadF64<T>(src, i + 4);
    const x5 = loadF64<T>(src, i + 5);
    const x6 = loadF64<T>(src, i + 6);
    const x7 = loadF64<T>(src, i + 7);
    let p0 = 0, p1 = 0, p2 = 0, p3 = 0, p4 = 0, p5 = 0, p6 = 0, p7 = 0;
    for (let step = top; step > 0; step >>= 1) {
      p0 += step & -less(load<f64>(bm1 + (<usize>(p0 + step) << 3)), x0, right);
      p1 += step & -less(load<f64>(bm1 + (<usize>(p1 + step) << 3)), x1, right);
      p2 += step & -less(load<f64>(bm1 + (<usize>(p2 + step) << 3)), x2, right);
      p3 += step & -less(load<f64>(bm1 + (<usize>(p3 + step) << 3)), x3, right);
      p4 += step & -less(load<f64>(bm1 + (<usize>(p4 + step) << 3)), x4, right);
      p5 += step & -less(load<f64>(bm1 + (<usize>(p5 + step) << 3)), x5, right);
      p6 += step & -less(load<f64>(bm1 + (<usize>(p6 + step) << 3)), x6, right);
      p7 += step & -less(load<f64>(bm1 + (<usize>(p7 + step) << 3)), x7, right);
    }
    p0 += less(load<f64>(borders + (<usize>p0 << 3)), x0, right);
    p1 += less(load<f64>(borders + (<usize>p1 << 3)), x1, right);
    p2 += less(load<f64>(borders + (<usize>p2 << 3)), x2, right);
    p3 += less(load<f64>(borders + (<usize>p3 << 3)), x3, right);
    p4 += less(load<f64>(borders + (<usize>p4 << 3)), x4, right);
    p5 += less(load<f64>(borders + (<usize>p5 << 3)), x5, right);
    p6 += less(load<f64>(borders + (<usize>p6 << 3)), x6, right);
    p7 += less(load<f64>(borders + (<usize>p7 << 3)), x7, right);
    const o = dst + (<usize>i << 2);
    store<i32>(o, min(p0, nb));
    store<i32>(o, min(p1, nb), 4);
    store<i32>(o, min(p2, nb), 8);
    store<i32>(o, min(p3, nb), 12);
    store<i32>(o, min(p4, nb), 16);
    store<i32>(o, min(p5, nb), 20);
    store<i32>(o, min(p6, nb), 24);
    store<i32>(o, min(p7, nb), 28);
  }
  for (; i < n; i++) {
    const x = loadF64<T>(src, i);
    let p = 0;
    for (let step = top; step > 0; step >>= 1) p += step & -less(load<f64>(bm1 + (<usize>(p + step) << 3)), x, right);
    p += less(load<f64>(borders + (<usize>p << 3)), x, right);
    store<i32>(dst + (<usize>i << 2), min(p, nb));
  }
  if (valid) zeroNulls(valid, n, dst);
}

/** Lookup tables cover the integers [TABLE_MIN, TABLE_MIN + TABLE_SIZE). */
const TABLE_MIN: i32 = -16;
const TABLE_SIZE: i32 = 65536;

export function bucketTableMin(): i32 { return TABLE_MIN; }
export function bucketTableSize(): i32 { return TABLE_SIZE; }

// @ts-ignore: decorator
@inline function search4(src: usize, i: i32, borders: usize, top: i32, nb: i32, right: bool, dst: usize): void {
  const bm1 = borders - 8;
  const x0 = <f64>load<i32>(src + (<usize>i << 2));
  const x1 = <f64>load<i32>(src + (<usize>i << 2), 4);
  const x2 = <f64>load<i32>(src + (<usize>i << 2), 8);
  const x3 = <f64>load<i32>(src + (<usize>i << 2), 12);
  let p0 = 0, p1 = 0, p2 = 0, p3 = 0;
  for (let step = top; step > 0; step >>= 1) {
    p0 += step & -less(load<f64>(bm1 + (<usize>(p0 + step) << 3)), x0, right);
    p1 += step & -less(load<f64>(bm1 + (<usize>(p1 + step) << 3)), x1, right);
    p2 += step & -less(load<f64>(bm1 + (<usize>(p2 + step) << 3)), x2, right);
    p3 += step & -less(load<f64>(bm1 + (<usize>(p3 + step) << 3)), x3, right);
  }
  p0 += less(load<f64>(borders + (<usize>p0 << 3)), x0, right);
  p1 += less(load<f64>(borders + (<usize>p1 << 3)), x1, right);
  p2 += less(load<f64>(borders + (<usize>p2 << 3)), x2, right);
  p3 += less(load<f64>(borders + (<usize>p3 << 3)), x3, right);
  const o = dst + (<usize>i << 2);
  store<i32>(o, min(p0, nb));
  store<i32>(o, min(p1, nb), 4);
  store<i32>(o, min(p2, nb), 8);
  store<i32>(o, min(p3, nb), 12);
}

// @ts-ignore: decorator
@inline function tableLoop(src: usize, valid: usize, n: i32, borders: usize, levels: i32, nb: i32, right: bool, dst: usize, table: usize): void {
  const top = (1 << levels) >> 1;
  for (let i = 0; i < n; i += 4) {
    if (!tableLookup4(src + (<usize>i << 2), dst + (<usize>i << 2), table, TABLE_MIN, TABLE_SIZE)) {
      search4(src, i, borders, top, nb, right, dst);
    }
  }
  if (valid) zeroNulls(valid, n, dst);
}

/**
 * int32 bucketize with a lookup table: `table` holds the bucket of every integer in
 * [TABLE_MIN, TABLE_MIN + TABLE_SIZE) (computed by the JS side with the reference kernel); groups
 * of 4 with a value outside it are searched. Reads and writes whole groups of 4 (callers pad).
 */
export function bucketizeTableI32(src: usize, valid: usize, n: i32, borders: usize, levels: i32, nb: i32, right: bool, dst: usize, table: usize): void {
  if (right) tableLoop(src, valid, n, borders, levels, nb, true, dst, table);
  else tableLoop(src, valid, n, borders, levels, nb, false, dst, table);
}

/** Zeroes the lanes whose validity byte is 0, four at a time. */
function zeroNulls(valid: usize, n: i32, dst: usize): void {
  for (let j = 0; j < n; j += 4) {
    const b = v128.load32_zero(valid + <usize>j);
    const m = i32x4.ne(i32x4.extend_low_i16x8_u(i16x8.extend_low_i8x16_u(b)), i32x4.splat(0));
    const o = dst + (<usize>j << 2);
    v128.store(o, v128.and(v128.load(o), m));
  }
}

/**
 * Bucket indices of n values into i32 `dst`. `borders` holds 2^levels f64s (nb real, the rest
 * +Inf); `valid` is 0 when there are no nulls. Writes whole groups of 4 when `valid` is given.
 */
export function bucketizeI32(src: usize, valid: usize, n: i32, borders: usize, levels: i32, nb: i32, right: bool, dst: usize): void {
  if (right) bucketLoop<i32>(src, valid, n, borders, levels, nb, true, dst);
  else bucketLoop<i32>(src, valid, n, borders, levels, nb, false, dst);
}
export function bucketizeF32(src: usize, valid: usize, n: i32, borders: usize, levels: i32, nb: i32, right: bool, dst: usize): void {
  if (right) bucketLoop<f32>(src, valid, n, borders, levels, nb, true, dst);
  else bucketLoop<f32>(src, valid, n, borders, levels, nb, false, dst);
}
export function bucketizeF64(src: usize, valid: usize, n: i32, borders: usize, levels: i32, nb: i32, right: bool, dst: usize): void {
  if (right) bucketLoop<f64>(src, valid, n, borders, levels, nb, true, dst);
  else bucketLoop<f64>(src, valid, n, borders, levels, nb, false, dst);
}
export function bucketizeI64(src: usize, valid: usize, n: i32, borders: usize, levels: i32, nb: i32, right: bool, dst: usize): void {
  if (right) bucketLoop<i64>(src, valid, n, borders, levels, nb, true, dst);
  else bucketLoop<i64>(src, valid, n, borders, levels, nb, false, dst);
}
