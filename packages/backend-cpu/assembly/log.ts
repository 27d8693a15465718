import { tableLookup4, validMask4 } from './common';

/**
 * log kernels: out[i] = f32(log1p(x)) (offset 1) or f32(ln(x + offset)), two f64 lanes at a time.
 *
 * Exactness: the reference is Math.fround(Math.log1p(x)) / Math.fround(Math.log(x + offset)).
 * These kernels compute ln in f64 with fdlibm's polynomial (error a few f64 ulps) and round to
 * f32. That equals the reference unless the true value lies within a few f64 ulps of a point
 * halfway between two f32s; such lanes, and every special input (NaN, ±Inf, x <= -1, results
 * in the f32 subnormal range), are written to `hard` as indices for the JS side to recompute
 * with the reference expression. The window is 256 f64 ulps, so about 1 value in 2^20 is
 * handed back.
 */

// fdlibm / musl log constants.
const LN2_HI: f64 = 6.93147180369123816490e-01;
const LN2_LO: f64 = 1.90821492927058770002e-10;
const LG1: f64 = 6.666666666666735130e-01;
const LG2: f64 = 3.999999999940941908e-01;
const LG3: f64 = 2.857142874366239149e-01;
const LG4: f64 = 2.222219843214978396e-01;
const LG5: f64 = 1.818357216161805012e-01;
const LG6: f64 = 1.531383769920937332e-01;
const LG7: f64 = 1.479819860511658591e-01;

/** f64 distance (in ulps) from an f32 rounding midpoint below which a lane is handed back. */
const WINDOW: i32 = 256;
/** Smallest normal f32: results below it round in the subnormal grid, so they are handed back. */
const F32_MIN_NORMAL: f64 = 1.1754943508222875e-38;
const F64_MIN_NORMAL: f64 = 2.2250738585072014e-308;
const TINY: f64 = 1.862645149230957e-9; // 2^-29: below it log1p(x) = x - x*x/2, as fdlibm does

/**
 * ln(u) of two positive normal f64 lanes, plus `c` added in the low-order part (log1p's
 * correction term, 0 otherwise). Other lanes give garbage; callers flag them.
 */
// @ts-ignore: decorator
@inline function vlog(u: v128, c: v128): v128 {
  // u = 2^k * z with z in [sqrt(2)/2, sqrt(2)). t = bits(u) - bits(sqrt(2)/2) + bits(1.0) is
  // positive for every normal u, so a logical shift gives k + 1023 (no 64-bit arithmetic shift,
  // which SSE lacks).
  const t = i64x2.add(u, i64x2.splat(0x3ff0000000000000 - 0x3fe6a09e667f3bcd));
  const kb = i64x2.shr_u(t, 52);
  const z = i64x2.add(i64x2.sub(u, v128.and(t, i64x2.splat(0xfff0000000000000))), i64x2.splat(0x3ff0000000000000));
  // k + 1023 to f64 exactly through the bits of 2^52, then unbias.
  const dk = f64x2.sub(v128.or(kb, i64x2.splat(0x4330000000000000)), f64x2.splat(4503599627371519.0));
  const f = f64x2.sub(z, f64x2.splat(1.0));
  const hfsq = f64x2.mul(f64x2.mul(f64x2.splat(0.5), f), f);
  const s = f64x2.div(f, f64x2.add(f64x2.splat(2.0), f));
  const z2 = f64x2.mul(s, s);
  const w = f64x2.mul(z2, z2);
  const t1 = f64x2.mul(w, f64x2.add(f64x2.splat(LG2), f64x2.mul(w, f64x2.add(f64x2.splat(LG4), f64x2.mul(w, f64x2.splat(LG6))))));
  const t2 = f64x2.mul(z2, f64x2.add(f64x2.splat(LG1), f64x2.mul(w, f64x2.add(f64x2.splat(LG3), f64x2.mul(w, f64x2.add(f64x2.splat(LG5), f64x2.mul(w, f64x2.splat(LG7))))))));
  const r = f64x2.add(t2, t1);
  // s*(hfsq+R) + (dk*ln2_lo + c) - hfsq + f + dk*ln2_hi  (musl log1p / log)
  let y = f64x2.mul(s, f64x2.add(hfsq, r));
  y = f64x2.add(y, f64x2.add(f64x2.mul(dk, f64x2.splat(LN2_LO)), c));
  y = f64x2.sub(y, hfsq);
  y = f64x2.add(y, f);
  return f64x2.add(y, f64x2.mul(dk, f64x2.splat(LN2_HI)));
}

/**
 * All-ones in the low i32 half of each lane where r is within WINDOW f64 ulps of an f32 rounding
 * midpoint (the low 29 bits of r near 2^28). Only the low halves are meaningful (see narrowMask).
 */
// @ts-ignore: decorator
@inline function nearMidpoint(r: v128): v128 {
  const d = i32x4.sub(v128.and(r, i32x4.splat(0x1fffffff)), i32x4.splat(0x10000000));
  return i32x4.le_s(i32x4.abs(d), i32x4.splat(WINDOW));
}

/** All-ones lanes where r is nonzero and below the smallest normal f32 (rounds in the subnormal grid). */
// @ts-ignore: decorator
@inline function f32Subnormal(r: v128): v128 {
  const a = f64x2.abs(r);
  return v128.and(f64x2.lt(a, f64x2.splat(F32_MIN_NORMAL)), f64x2.ne(a, f64x2.splat(0)));
}

/** Handles log1p for general f64 lanes: exact 1 + x correction, and fdlibm's tiny-x branch. */
// @ts-ignore: decorator
@inline function log1pAny(x: v128, exactSum: bool): v128 {
  const u = f64x2.add(x, f64x2.splat(1.0));
  let c = f64x2.splat(0);
  if (!exactSum) {
    // 2Sum: u + e = 1 + x exactly; log1p(x) = log(u) + e/u.
    const bv = f64x2.sub(u, x);
    const av = f64x2.sub(u, bv);
    const e = f64x2.add(f64x2.sub(x, av), f64x2.sub(f64x2.splat(1.0), bv));
    c = f64x2.div(e, u);
  }
  const r = vlog(u, c);
  // |x| < 2^-29: fdlibm returns x - x*x*0.5 (x itself below 2^-54, which this also rounds to).
  const small = f64x2.sub(x, f64x2.mul(f64x2.mul(x, x), f64x2.splat(0.5)));
  return v128.bitselect(small, r, f64x2.lt(f64x2.abs(x), f64x2.splat(TINY)));
}

// @ts-ignore: decorator
@inline function specialLog1p(x: v128): v128 {
  // x <= -1, NaN, +Inf.
  return v128.or(v128.not(f64x2.gt(x, f64x2.splat(-1.0))), f64x2.eq(x, f64x2.splat(Infinity)));
}

// @ts-ignore: decorator
@inline function specialLog(t: v128): v128 {
  // t below the smallest normal (0, negative, subnormal), NaN, +Inf.
  return v128.or(v128.not(f64x2.ge(t, f64x2.splat(F64_MIN_NORMAL))), f64x2.eq(t, f64x2.splat(Infinity)));
}

/** Input lanes i..i+3 as two f64x2 vectors. T: i32, f32, f64 or i64. */
// @ts-ignore: decorator
@inline function loadLo<T>(src: usize, i: i32): v128 {
  if (sizeof<T>() == 8) {
    if (isFloat<T>()) return v128.load(src + (<usize>i << 3));
    const p = src + (<usize>i << 3);
    return f64x2.replace_lane(f64x2.splat(<f64>load<i64>(p)), 1, <f64>load<i64>(p, 8));
  }
  const v = v128.load64_zero(src + (<usize>i << 2));
  if (isFloat<T>()) return f64x2.promote_low_f32x4(v);
  return f64x2.convert_low_i32x4_s(v);
}

// @ts-ignore: decorator
@inline function loadHi<T>(src: usize, i: i32): v128 {
  return loadLo<T>(src, i + 2);
}

/** Two f64x2 results to one f32x4. */
// @ts-ignore: decorator
@inline function demote4(a: v128, b: v128): v128 {
  return i64x2.shuffle(f32x4.demote_f64x2_zero(a), f32x4.demote_f64x2_zero(b), 0, 2);
}

/** The i32 lane mask of two 64-bit lane masks (a: lanes 0-1, b: lanes 2-3). */
// @ts-ignore: decorator
@inline function narrowMask(a: v128, b: v128): v128 {
  return i32x4.shuffle(a, b, 0, 2, 4, 6);
}

/** Appends lanes of `hard` (i32 lanes) that are valid and < n to the index list; returns the new count. */
// @ts-ignore: decorator
@inline function record(hard: v128, vm: v128, i: i32, n: i32, list: usize, count: i32): i32 {
  const m = i32x4.bitmask(v128.and(hard, vm));
  for (let l = 0; l < 4; l++) {
    if ((m >> l) & 1 && i + l < n) {
      store<i32>(list + (<usize>count << 2), i + l);
      count++;
    }
  }
  return count;
}

/**
 * Lookup tables cover the integers [TABLE_MIN, TABLE_MIN + TABLE_SIZE). TABLE_MIN = 0 saves a
 * subtraction per value (log follows neg2zero in the standard plans; negatives take the polynomial path).
 */
const TABLE_MIN: i32 = 0;
const TABLE_SIZE: i32 = 65536;

export function logTableMin(): i32 { return TABLE_MIN; }
export function logTableSize(): i32 { return TABLE_SIZE; }

/**
 * Table lanes: when all 4 input lanes are integers inside the table, the f32 results straight
 * from `table` (filled by the JS side with the reference expression, so exact by construction).
 * Returns the table indices, or a splat of -1 when the group must take the polynomial path.
 */
// @ts-ignore: decorator
@inline function tableIndex<T>(src: usize, i: i32): v128 {
  const x = v128.load(src + (<usize>i << 2));
  let idx: v128;
  let ok: v128;
  if (isInteger<T>()) {
    idx = i32x4.sub(x, i32x4.splat(TABLE_MIN));
    ok = i32x4.lt_u(idx, i32x4.splat(TABLE_SIZE));
  } else {
    // f32: integral values only; comparing bits keeps -0 (and NaN) off the table.
    const iv = i32x4.trunc_sat_f32x4_s(x);
    idx = i32x4.sub(iv, i32x4.splat(TABLE_MIN));
    ok = v128.and(i32x4.eq(f32x4.convert_i32x4_s(iv), x), i32x4.lt_u(idx, i32x4.splat(TABLE_SIZE)));
  }
  return i32x4.all_true(ok) ? idx : i32x4.splat(-1);
}

// @ts-ignore: decorator
@inline function tableLookup(table: usize, idx: v128): v128 {
  let o = v128.load32_zero(table + (<usize><u32>i32x4.extract_lane(idx, 0) << 2));
  o = v128.load32_lane(table + (<usize><u32>i32x4.extract_lane(idx, 1) << 2), o, 1);
  o = v128.load32_lane(table + (<usize><u32>i32x4.extract_lane(idx, 2) << 2), o, 2);
  return v128.load32_lane(table + (<usize><u32>i32x4.extract_lane(idx, 3) << 2), o, 3);
}

/** The polynomial path for the group of 4 at i: writes 4 results, appends hard lanes; returns the new count. */
// @ts-ignore: decorator
@inline function polyGroup<T>(src: usize, valid: usize, n: i32, i: i32, offset: f64, dst: usize, list: usize, count: i32, log1p: bool): i32 {
  const vm = validMask4(valid, i);
  const xa = loadLo<T>(src, i);
  const xb = loadHi<T>(src, i);
  let ra: v128, rb: v128, ha: v128, hb: v128;
  if (log1p) {
    if (isInteger<T>()) {
      // 1 + x is exact for every int32 and for int64 below 2^53 (beyond, the error is < 1 f64 ulp).
      ra = vlog(f64x2.add(xa, f64x2.splat(1.0)), f64x2.splat(0));
      rb = vlog(f64x2.add(xb, f64x2.splat(1.0)), f64x2.splat(0));
      ha = v128.or(v128.not(f64x2.gt(xa, f64x2.splat(-1.0))), nearMidpoint(ra));
      hb = v128.or(v128.not(f64x2.gt(xb, f64x2.splat(-1.0))), nearMidpoint(rb));
    } else {
      // f32: 1 + x is exact from 2^-29 (below, the tiny branch) up to 2^53 (beyond, < 1 f64 ulp off).
      ra = log1pAny(xa, sizeof<T>() == 4);
      rb = log1pAny(xb, sizeof<T>() == 4);
      ha = v128.or(v128.or(specialLog1p(xa), nearMidpoint(ra)), f32Subnormal(ra));
      hb = v128.or(v128.or(specialLog1p(xb), nearMidpoint(rb)), f32Subnormal(rb));
    }
  } else {
    const off = f64x2.splat(offset);
    const ta = f64x2.add(xa, off);
    const tb = f64x2.add(xb, off);
    ra = vlog(ta, f64x2.splat(0));
    rb = vlog(tb, f64x2.splat(0));
    // |ln t| is 0 or >= 2^-53 for normal t, never in the f32 subnormal range.
    ha = v128.or(specialLog(ta), nearMidpoint(ra));
    hb = v128.or(specialLog(tb), nearMidpoint(rb));
  }
  v128.store(dst + (<usize>i << 2), demote4(ra, rb));
  const h = narrowMask(ha, hb);
  if (v128.any_true(h)) count = record(h, vm, i, n, list, count);
  return count;
}

/**
 * With a table: a tight first pass serves groups of 4 whose values are all table integers and
 * queues the others (at `pending`, after the room for n hard indices), which a second pass runs
 * through the polynomial; keeping the passes apart keeps the first loop free of the polynomial's
 * register pressure.
 */
// @ts-ignore: decorator
@inline function logLoop<T>(src: usize, valid: usize, n: i32, offset: f64, dst: usize, list: usize, table: usize, log1p: bool): i32 {
  let count = 0;
  if (sizeof<T>() == 4 && table != 0) {
    const pending = list + ((<usize>n + 4) << 2);
    let np = 0;
    for (let i = 0; i < n; i += 4) {
      if (isInteger<T>()) {
        // (With TABLE_MIN = 0 the subtractions fold away.)
        if (tableLookup4(src + (<usize>i << 2), dst + (<usize>i << 2), table, TABLE_MIN, TABLE_SIZE)) continue;
      } else {
        const idx = tableIndex<T>(src, i);
        if (i32x4.extract_lane(idx, 0) >= 0) {
          v128.store(dst + (<usize>i << 2), tableLookup(table, idx));
          continue;
        }
      }
      store<i32>(pending + (<usize>np << 2), i);
      np++;
    }
    for (let j = 0; j < np; j++) {
      count = polyGroup<T>(src, valid, n, load<i32>(pending + (<usize>j << 2)), offset, dst, list, count, log1p);
    }
  } else {
    for (let i = 0; i < n; i += 4) count = polyGroup<T>(src, valid, n, i, offset, dst, list, count, log1p);
  }
  if (valid) {
    // Null slots get 0.
    for (let i = 0; i < n; i += 4) {
      const o = dst + (<usize>i << 2);
      v128.store(o, v128.and(v128.load(o), validMask4(valid, i)));
    }
  }
  return count;
}

/**
 * log1p of n values at `src` (element type by name) into f32 `dst`; null slots (valid byte 0,
 * `valid` = 0 for none) get 0. `table` (i32/f32 only, 0 for none) holds the f32 results for the
 * integers [TABLE_MIN, TABLE_MIN + TABLE_SIZE). Reads and writes whole groups of 4 (callers pad).
 * Returns the number of row indices written to `list` (room for 2n + 8 i32s) for the caller to
 * recompute.
 */
export function log1pI32(src: usize, valid: usize, n: i32, dst: usize, list: usize, table: usize): i32 { return logLoop<i32>(src, valid, n, 1, dst, list, table, true); }
export function log1pF32(src: usize, valid: usize, n: i32, dst: usize, list: usize, table: usize): i32 { return logLoop<f32>(src, valid, n, 1, dst, list, table, true); }
export function log1pI64(src: usize, valid: usize, n: i32, dst: usize, list: usize): i32 { return logLoop<i64>(src, valid, n, 1, dst, list, 0, true); }
export function log1pF64(src: usize, valid: usize, n: i32, dst: usize, list: usize): i32 { return logLoop<f64>(src, valid, n, 1, dst, list, 0, true); }

/** f32(ln(x + offset)), the same contract as the log1p kernels (a table is per offset). */
export function logI32(src: usize, valid: usize, n: i32, offset: f64, dst: usize, list: usize, table: usize): i32 { return logLoop<i32>(src, valid, n, offset, dst, list, table, false); }
export function logF32(src: usize, valid: usize, n: i32, offset: f64, dst: usize, list: usize, table: usize): i32 { return logLoop<f32>(src, valid, n, offset, dst, list, table, false); }
export function logI64(src: usize, valid: usize, n: i32, offset: f64, dst: usize, list: usize): i32 { return logLoop<i64>(src, valid, n, offset, dst, list, 0, false); }
export function logF64(src: usize, valid: usize, n: i32, offset: f64, dst: usize, list: usize): i32 { return logLoop<f64>(src, valid, n, offset, dst, list, 0, false); }

/** Test hook: the raw f64 log1p (general path) of n f64 values, for measuring the ulp error. */
export function log1pRawF64(src: usize, n: i32, dst: usize): void {
  for (let i = 0; i < n; i += 2) {
    const x = v128.load(src + (<usize>i << 3));
    v128.store(dst + (<usize>i << 3), log1pAny(x, false));
  }
}

/** Test hook: the raw f64 ln of n f64 values. */
export function logRawF64(src: usize, n: i32, dst: usize): void {
  for (let i = 0; i < n; i += 2) {
    const x = v128.load(src + (<usize>i << 3));
    v128.store(dst + (<usize>i << 3), vlog(x, f64x2.splat(0)));
  }
}
