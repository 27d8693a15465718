/**
 * The memory-bound element-wise ops: neg2zero, clamp, fillNull and int32 modulus, 4 lanes per
 * step (two f64x2 / i64x2 vectors for 64-bit types). Null slots get 0 unless stated otherwise.
 * float32 results that pass a NaN through set its quiet bit, as the reference's f32 → f64 → f32
 * round trip does.
 */
import { highMask64, lowMask64, quarterMask32, quarterMask64, validMask4 } from './common';

/** NaN lanes of f32x4 `x` get the quiet bit (0x00400000), like a conversion to f64 and back. */
// @ts-ignore: decorator
@inline function quietF32(r: v128, x: v128): v128 {
  return v128.or(r, v128.and(f32x4.ne(x, x), i32x4.splat(0x00400000)));
}

// ---- neg2zero: x < 0 → 0; -0 and NaN stay ------------------------------------------------

/** max(x, 0) is clamp to [0, i32.MAX_VALUE]: the same loops, nulls 0 alike. */
export function neg2zeroI32(src: usize, valid: usize, n: i32, dst: usize): void {
  clampI32(src, valid, n, 0, i32.MAX_VALUE, dst);
}

export function neg2zeroF32(src: usize, valid: usize, n: i32, dst: usize): void {
  for (let i = 0; i < n; i += 4) {
    const o = <usize>i << 2;
    const x = v128.load(src + o);
    const r = quietF32(v128.andnot(x, f32x4.lt(x, f32x4.splat(0))), x);
    v128.store(dst + o, v128.and(r, validMask4(valid, i)));
  }
}

export function neg2zeroF64(src: usize, valid: usize, n: i32, dst: usize): void {
  for (let i = 0; i < n; i += 4) {
    const o = <usize>i << 3;
    const a = v128.load(src + o);
    const b = v128.load(src + o, 16);
    const vm = validMask4(valid, i);
    v128.store(dst + o, v128.and(v128.andnot(a, f64x2.lt(a, f64x2.splat(0))), lowMask64(vm)));
    v128.store(dst + o, v128.and(v128.andnot(b, f64x2.lt(b, f64x2.splat(0))), highMask64(vm)), 16);
  }
}

export function neg2zeroI64(src: usize, valid: usize, n: i32, dst: usize): void {
  for (let i = 0; i < n; i += 4) {
    const o = <usize>i << 3;
    const a = v128.load(src + o);
    const b = v128.load(src + o, 16);
    const vm = validMask4(valid, i);
    v128.store(dst + o, v128.and(v128.andnot(a, i64x2.lt_s(a, i64x2.splat(0))), lowMask64(vm)));
    v128.store(dst + o, v128.and(v128.andnot(b, i64x2.lt_s(b, i64x2.splat(0))), highMask64(vm)), 16);
  }
}

// ---- clamp: x < lo ? lo : x > hi ? hi : x (NaN stays) ---------------------------------------

export function clampI32(src: usize, valid: usize, n: i32, lo: i32, hi: i32, dst: usize): void {
  const l = i32x4.splat(lo);
  const h = i32x4.splat(hi);
  let i = 0;
  // 16 slots a step (with validity: one load of their 16 bytes, as fillNull32 does).
  if (valid) {
    for (; i + 16 <= n; i += 16) {
      const o = <usize>i << 2;
      const v = i8x16.ne(v128.load(valid + <usize>i), i8x16.splat(0));
      v128.store(dst + o, v128.and(i32x4.min_s(i32x4.max_s(v128.load(src + o), l), h), quarterMask32(v, 0)));
      v128.store(dst + o, v128.and(i32x4.min_s(i32x4.max_s(v128.load(src + o, 16), l), h), quarterMask32(v, 1)), 16);
      v128.store(dst + o, v128.and(i32x4.min_s(i32x4.max_s(v128.load(src + o, 32), l), h), quarterMask32(v, 2)), 32);
      v128.store(dst + o, v128.and(i32x4.min_s(i32x4.max_s(v128.load(src + o, 48), l), h), quarterMask32(v, 3)), 48);
    }
  } else {
    for (; i + 16 <= n; i += 16) {
      const o = <usize>i << 2;
      v128.store(dst + o, i32x4.min_s(i32x4.max_s(v128.load(src + o), l), h));
      v128.store(dst + o, i32x4.min_s(i32x4.max_s(v128.load(src + o, 16), l), h), 16);
      v128.store(dst + o, i32x4.min_s(i32x4.max_s(v128.load(src + o, 32), l), h), 32);
      v128.store(dst + o, i32x4.min_s(i32x4.max_s(v128.load(src + o, 48), l), h), 48);
    }
  }
  for (; i < n; i += 4) {
    const o = <usize>i << 2;
    const x = v128.load(src + o);
    v128.store(dst + o, v128.and(i32x4.min_s(i32x4.max_s(x, l), h), validMask4(valid, i)));
  }
}

export function clampF32(src: usize, valid: usize, n: i32, lo: f32, hi: f32, dst: usize): void {
  const l = f32x4.splat(lo);
  const h = f32x4.splat(hi);
  for (let i = 0; i < n; i += 4) {
    const o = <usize>i << 2;
    const x = v128.load(src + o);
    const r = v128.bitselect(l, v128.bitselect(h, x, f32x4.gt(x, h)), f32x4.lt(x, l));
    v128.store(dst + o, v128.and(quietF32(r, x), validMask4(valid, i)));
  }
}

export function clampF64(src: usize, valid: usize, n: i32, lo: f64, hi: f64, dst: usize): void {
  const l = f64x2.splat(lo);
  const h = f64x2.splat(hi);
  for (let i = 0; i < n; i += 4) {
    const o = <usize>i << 3;
    const a = v128.load(src + o);
    const b = v128.load(src + o, 16);
    const vm = validMask4(valid, i);
    const ra = v128.bitselect(l, v128.bitselect(h, a, f64x2.gt(a, h)), f64x2.lt(a, l));
    const rb = v128.bitselect(l, v128.bitselect(h, b, f64x2.gt(b, h)), f64x2.lt(b, l));
    v128.store(dst + o, v128.and(ra, lowMask64(vm)));
    v128.store(dst + o, v128.and(rb, highMask64(vm)), 16);
  }
}

export function clampI64(src: usize, valid: usize, n: i32, lo: i64, hi: i64, dst: usize): void {
  const l = i64x2.splat(lo);
  const h = i64x2.splat(hi);
  for (let i = 0; i < n; i += 4) {
    const o = <usize>i << 3;
    const a = v128.load(src + o);
    const b = v128.load(src + o, 16);
    const vm = validMask4(valid, i);
    const ra = v128.bitselect(l, v128.bitselect(h, a, i64x2.gt_s(a, h)), i64x2.lt_s(a, l));
    const rb = v128.bitselect(l, v128.bitselect(h, b, i64x2.gt_s(b, h)), i64x2.lt_s(b, l));
    v128.store(dst + o, v128.and(ra, lowMask64(vm)));
    v128.store(dst + o, v128.and(rb, highMask64(vm)), 16);
  }
}

// ---- fillNull: null slots ← fill (raw bits, like the reference's out.set(src) + stores) ------

export function fillNull32(src: usize, valid: usize, n: i32, fill: i32, dst: usize): void {
  const f = i32x4.splat(fill);
  let i = 0;
  // 16 slots a step: one load of their validity bytes, widened to four lane masks (quarterMask32;
  // a null byte becomes an all-ones lane). The 4-slot loop below takes the rest.
  if (valid) {
    for (; i + 16 <= n; i += 16) {
      const o = <usize>i << 2;
      const z = i8x16.eq(v128.load(valid + <usize>i), i8x16.splat(0));
      v128.store(dst + o, v128.bitselect(f, v128.load(src + o), quarterMask32(z, 0)));
      v128.store(dst + o, v128.bitselect(f, v128.load(src + o, 16), quarterMask32(z, 1)), 16);
      v128.store(dst + o, v128.bitselect(f, v128.load(src + o, 32), quarterMask32(z, 2)), 32);
      v128.store(dst + o, v128.bitselect(f, v128.load(src + o, 48), quarterMask32(z, 3)), 48);
    }
  }
  for (; i < n; i += 4) {
    const o = <usize>i << 2;
    v128.store(dst + o, v128.bitselect(v128.load(src + o), f, validMask4(valid, i)));
  }
}

export function fillNull64(src: usize, valid: usize, n: i32, fill: i64, dst: usize): void {
  const f = i64x2.splat(fill);
  let i = 0;
  // 8 slots a step from one 8-byte validity load, as fillNull32 does with 16.
  if (valid) {
    for (; i + 8 <= n; i += 8) {
      const o = <usize>i << 3;
      const z = i8x16.eq(v128.load64_zero(valid + <usize>i), i8x16.splat(0));
      v128.store(dst + o, v128.bitselect(f, v128.load(src + o), quarterMask64(z, 0)));
      v128.store(dst + o, v128.bitselect(f, v128.load(src + o, 16), quarterMask64(z, 1)), 16);
      v128.store(dst + o, v128.bitselect(f, v128.load(src + o, 32), quarterMask64(z, 2)), 32);
      v128.store(dst + o, v128.bitselect(f, v128.load(src + o, 48), quarterMask64(z, 3)), 48);
    }
  }
  for (; i < n; i += 4) {
    const o = <usize>i << 3;
    const vm = validMask4(valid, i);
    v128.store(dst + o, v128.bitselect(v128.load(src + o), f, lowMask64(vm)));
    v128.store(dst + o, v128.bitselect(v128.load(src + o, 16), f, highMask64(vm)), 16);
  }
}

// ---- modulus on int32: ((x mod m) + m) mod m for 1 <= m <= 2^31 ---------------------------

/**
 * In f64: q = floor(x * (1/m)) is the true floor quotient or one off (|x| < 2^31, so the product
 * is within 2^-20 of x/m), q * m and x - q * m are exact, and one correction each way lands the
 * remainder in [0, m).
 */
// @ts-ignore: decorator
@inline function modF64(x: v128, mf: v128, inv: v128): v128 {
  const q = f64x2.floor(f64x2.mul(x, inv));
  let r = f64x2.sub(x, f64x2.mul(q, mf));
  r = f64x2.add(r, v128.and(f64x2.lt(r, f64x2.splat(0)), mf));
  return f64x2.sub(r, v128.and(f64x2.ge(r, mf), mf));
}

/** modulus on int32 for 1 <= m <= 2^31; a power of two is a mask (two's complement floor modulus). */
export function modulusI32(src: usize, valid: usize, n: i32, m: f64, dst: usize): void {
  const mi = <i64>m;
  if ((mi & (mi - 1)) == 0) {
    const mk = i32x4.splat(<i32>(mi - 1));
    for (let i = 0; i < n; i += 4) {
      const o = <usize>i << 2;
      v128.store(dst + o, v128.and(v128.and(v128.load(src + o), mk), validMask4(valid, i)));
    }
    return;
  }
  const mf = f64x2.splat(m);
  const inv = f64x2.splat(1.0 / m);
  for (let i = 0; i < n; i += 4) {
    const o = <usize>i << 2;
    const x = v128.load(src + o);
    const ra = i32x4.trunc_sat_f64x2_s_zero(modF64(f64x2.convert_low_i32x4_s(x), mf, inv));
    const rb = i32x4.trunc_sat_f64x2_s_zero(modF64(f64x2.convert_low_i32x4_s(i64x2.shuffle(x, x, 1, 0)), mf, inv));
    v128.store(dst + o, v128.and(i64x2.shuffle(ra, rb, 0, 2), validMask4(valid, i)));
  }
}
