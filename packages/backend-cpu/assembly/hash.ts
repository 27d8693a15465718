/**
 * sigridHash (OPS.md, TorchArrow sigrid_hash) on native i64: twang_mix64, hash_128_to_64 with the
 * salt, then floorMod by the fixed `max` through a precomputed magic multiplier (no division).
 */
import { floorMod64 } from './common';

const K_MUL: u64 = 0x9ddfea08eb382d69;

// @ts-ignore: decorator
@inline function twangMix64(k: u64): u64 {
  k = ~k + (k << 21);
  k ^= k >> 24;
  k = k + (k << 3) + (k << 8);
  k ^= k >> 14;
  k = k + (k << 2) + (k << 4);
  k ^= k >> 28;
  return k + (k << 31);
}

// @ts-ignore: decorator
@inline function hash128To64(upper: u64, lower: u64): u64 {
  let a = (lower ^ upper) * K_MUL;
  a ^= a >> 47;
  let b = (upper ^ a) * K_MUL;
  b ^= b >> 47;
  return b * K_MUL;
}

/** How floorMod by the fixed modulus is computed (the JS side picks the fastest for this CPU). */
const MOD_REM: i32 = 0; // i64.rem_s: fastest where 64-bit division is cheap (AMD Zen, Intel Ice Lake+)
const MOD_MAGIC: i32 = 1; // magic multiplier, no division (older Intel: 64-bit idiv is 40+ cycles)
const MOD_MASK: i32 = 2; // m a power of two: x & (m - 1) is the floor modulus in two's complement

// @ts-ignore: decorator
@inline function reduce(x: i64, mode: i32, m: u64, magic: u64, sh1: u64, sh2: u64, c64: u64): i64 {
  if (mode == MOD_MASK) return x & <i64>(m - 1);
  if (mode == MOD_REM) {
    const r = x % <i64>m;
    return r + ((r >> 63) & <i64>m);
  }
  return floorMod64(x, m, magic, sh1, sh2, c64);
}

// @ts-ignore: decorator
@inline function sigridLoop<T>(src: usize, valid: usize, n: i32, salt: u64, mode: i32, m: u64, magic: u64, sh1: u64, sh2: u64, c64: u64, dst: usize): void {
  for (let i = 0; i < n; i++) {
    const x = <u64><i64>load<T>(src + (<usize>i << alignof<T>()));
    const r = reduce(<i64>hash128To64(salt, twangMix64(x)), mode, m, magic, sh1, sh2, c64);
    const ok = valid ? load<u8>(valid + <usize>i) != 0 : true;
    store<i64>(dst + (<usize>i << 3), select<i64>(r, 0, ok));
  }
}

// @ts-ignore: decorator
@inline function sigridAny<T>(src: usize, valid: usize, n: i32, salt: u64, mode: i32, m: u64, magic: u64, sh1: u64, sh2: u64, c64: u64, dst: usize): void {
  if (mode == MOD_REM) sigridLoop<T>(src, valid, n, salt, MOD_REM, m, magic, sh1, sh2, c64, dst);
  else if (mode == MOD_MASK) sigridLoop<T>(src, valid, n, salt, MOD_MASK, m, magic, sh1, sh2, c64, dst);
  else sigridLoop<T>(src, valid, n, salt, MOD_MAGIC, m, magic, sh1, sh2, c64, dst);
}

/**
 * sigridHash of n int64 (or sign-extended int32) values into i64 `dst`; nulls (valid byte 0) get
 * 0. `mode` picks the floorMod method; (magic, sh1, sh2, c64) describe `m` as in floorMod64.
 */
export function sigridI64(src: usize, valid: usize, n: i32, salt: u64, mode: i32, m: u64, magic: u64, sh1: u64, sh2: u64, c64: u64, dst: usize): void {
  sigridAny<i64>(src, valid, n, salt, mode, m, magic, sh1, sh2, c64, dst);
}
export function sigridI32(src: usize, valid: usize, n: i32, salt: u64, mode: i32, m: u64, magic: u64, sh1: u64, sh2: u64, c64: u64, dst: usize): void {
  sigridAny<i32>(src, valid, n, salt, mode, m, magic, sh1, sh2, c64, dst);
}

// @ts-ignore: decorator
@inline function modLoop(src: usize, valid: usize, n: i32, mode: i32, m: u64, magic: u64, sh1: u64, sh2: u64, c64: u64, dst: usize): void {
  for (let i = 0; i < n; i++) {
    const r = reduce(load<i64>(src + (<usize>i << 3)), mode, m, magic, sh1, sh2, c64);
    // modulusWords computes only where valid[i] === 1; every other slot stays 0.
    const ok = valid ? load<u8>(valid + <usize>i) == 1 : true;
    store<i64>(dst + (<usize>i << 3), select<i64>(r, 0, ok));
  }
}

/** modulus on int64: floorMod(x, m) for every value; nulls get 0. Same parameters as sigridI64. */
export function modI64(src: usize, valid: usize, n: i32, mode: i32, m: u64, magic: u64, sh1: u64, sh2: u64, c64: u64, dst: usize): void {
  if (mode == MOD_REM) modLoop(src, valid, n, MOD_REM, m, magic, sh1, sh2, c64, dst);
  else if (mode == MOD_MASK) modMask64(src, valid, n, <i64>(m - 1), dst);
  else modLoop(src, valid, n, MOD_MAGIC, m, magic, sh1, sh2, c64, dst);
}

/** floorMod by a power of two on int64, 4 lanes per step: x & mask (valid byte 1 only, like modulusWords). */
function modMask64(src: usize, valid: usize, n: i32, mask: i64, dst: usize): void {
  const mk = i64x2.splat(mask);
  for (let i = 0; i < n; i += 4) {
    const o = <usize>i << 3;
    let vm = i32x4.splat(-1);
    if (valid) vm = i32x4.eq(i32x4.extend_low_i16x8_u(i16x8.extend_low_i8x16_u(v128.load32_zero(valid + <usize>i))), i32x4.splat(1));
    v128.store(dst + o, v128.and(v128.and(v128.load(src + o), mk), i64x2.extend_low_i32x4_s(vm)));
    v128.store(dst + o, v128.and(v128.and(v128.load(src + o, 16), mk), i64x2.extend_high_i32x4_s(vm)), 16);
  }
}
