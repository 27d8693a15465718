/** Helpers shared by the kernels. Every kernel handles whole groups of 4 elements (callers pad). */

/** 0 / all-ones i32 lanes from 4 validity bytes (nonzero = valid); all-ones when `valid` is 0. */
// @ts-ignore: decorator
@inline export function validMask4(valid: usize, i: i32): v128 {
  if (!valid) return i32x4.splat(-1);
  const b = v128.load32_zero(valid + <usize>i);
  const w = i32x4.extend_low_i16x8_u(i16x8.extend_low_i8x16_u(b));
  return i32x4.ne(w, i32x4.splat(0));
}

/**
 * The i32 lane masks of bytes [4q, 4q + 4) of a 16-byte mask `m` (0 or 0xFF bytes, as i8x16.eq or
 * ne give them), for a constant q in 0-3: the kernels that take 16 slots a step load their
 * validity bytes once and widen them here, where validMask4 loads 4 bytes for every 4 slots.
 */
// @ts-ignore: decorator
@inline export function quarterMask32(m: v128, q: i32): v128 {
  const h = q < 2 ? i16x8.extend_low_i8x16_s(m) : i16x8.extend_high_i8x16_s(m);
  return q & 1 ? i32x4.extend_high_i16x8_s(h) : i32x4.extend_low_i16x8_s(h);
}

/** The i64 lane masks of bytes [2q, 2q + 2) of a mask `m` whose low 8 bytes matter, for a constant q in 0-3 (8 slots a step). */
// @ts-ignore: decorator
@inline export function quarterMask64(m: v128, q: i32): v128 {
  const w = i16x8.extend_low_i8x16_s(m);
  const h = q < 2 ? i32x4.extend_low_i16x8_s(w) : i32x4.extend_high_i16x8_s(w);
  return q & 1 ? i64x2.extend_high_i32x4_s(h) : i64x2.extend_low_i32x4_s(h);
}

/** The 64-bit lane masks of validMask4's lanes 0-1. */
// @ts-ignore: decorator
@inline export function lowMask64(m: v128): v128 {
  return i64x2.extend_low_i32x4_s(m);
}

/** The 64-bit lane masks of validMask4's lanes 2-3. */
// @ts-ignore: decorator
@inline export function highMask64(m: v128): v128 {
  return i64x2.extend_high_i32x4_s(m);
}

/** High 64 bits of the unsigned 128-bit product a * b (wasm has no 64-bit mulhi). */
// @ts-ignore: decorator
@inline export function mulhiU64(a: u64, b: u64): u64 {
  const aLo = a & 0xffffffff;
  const aHi = a >> 32;
  const bLo = b & 0xffffffff;
  const bHi = b >> 32;
  const p0 = aLo * bLo;
  const p1 = aLo * bHi;
  const p2 = aHi * bLo;
  const p3 = aHi * bHi;
  const mid = (p0 >> 32) + (p1 & 0xffffffff) + (p2 & 0xffffffff);
  return p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32);
}

/**
 * floorMod(x, m) for a signed 64-bit x and a fixed m in [1, 2^63), division-free
 * (Granlund–Montgomery round-up method, valid for every u64 numerator): with l = ceil(log2 m),
 * magic = floor(2^64 (2^l - m) / m) + 1, sh1 = min(l, 1), sh2 = max(l - 1, 0), the unsigned
 * quotient of u is (t + ((u - t) >> sh1)) >> sh2 where t = mulhi(magic, u). A negative x is
 * u - 2^64, so its residue is (u mod m) - (2^64 mod m), brought back into [0, m) (`c64` = 2^64 mod m).
 */
// @ts-ignore: decorator
@inline export function floorMod64(x: i64, m: u64, magic: u64, sh1: u64, sh2: u64, c64: u64): i64 {
  const u = <u64>x;
  const t = mulhiU64(magic, u);
  const q = (t + ((u - t) >> sh1)) >> sh2;
  // Branch-free: the sign of a hash is a coin flip, a branch on it mispredicts half the time.
  let r = <i64>(u - q * m) - (<i64>c64 & (x >> 63));
  return r + ((r >> 63) & <i64>m);
}

/**
 * Looks up 4 int32 inputs at `src` in a 32-bit table covering [tableMin, tableMin + tableSize)
 * and stores the 4 results at `dst`. Returns false, storing nothing, when any input is outside
 * the table. Scalar loads beat lane extracts; one range check on the OR of the offsets suffices
 * when tableSize is a power of two.
 */
// @ts-ignore: decorator
@inline export function tableLookup4(src: usize, dst: usize, table: usize, tableMin: i32, tableSize: i32): bool {
  const a = load<i32>(src) - tableMin;
  const b = load<i32>(src, 4) - tableMin;
  const c = load<i32>(src, 8) - tableMin;
  const d = load<i32>(src, 12) - tableMin;
  if (<u32>(a | b | c | d) >= <u32>tableSize) return false;
  store<u32>(dst, load<u32>(table + (<usize>a << 2)));
  store<u32>(dst, load<u32>(table + (<usize>b << 2)), 4);
  store<u32>(dst, load<u32>(table + (<usize>c << 2)), 8);
  store<u32>(dst, load<u32>(table + (<usize>d << 2)), 12);
  return true;
}
