/**
 * 64-bit integer helpers on little-endian u32 word pairs (see `int64Words`). Kernels never index a
 * BigInt64Array in a loop; BigInt appears only here, once per call, to turn a parameter into words.
 */

export const TWO32 = 4294967296;
export const INT64_MIN = -(1n << 63n);
export const INT64_MAX = (1n << 63n) - 1n;
const SAFE_MIN = BigInt(Number.MIN_SAFE_INTEGER);
const SAFE_MAX = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * An int64 as it appears in JSON params: a safe-integer number, or a decimal string beyond that.
 * Normalized params hold a number whenever the value is safe, so they stay JSON-serializable.
 */
export type Int64Value = number | string;

/** The bigint of a JSON value that is a safe integer or a decimal integer string in int64 range. */
export function parseInt64(v: unknown): bigint | undefined {
  let b: bigint;
  if (typeof v === 'number') {
    // Unsafe numbers are rejected: 9007199254740993 has already been rounded by JSON.parse.
    if (!Number.isSafeInteger(v)) return undefined;
    b = BigInt(v);
  } else if (typeof v === 'string' && /^[+-]?\d{1,20}$/.test(v)) {
    b = BigInt(v);
  } else {
    return undefined;
  }
  return b >= INT64_MIN && b <= INT64_MAX ? b : undefined;
}

/** The normalized form of an int64: a number when it is safe, its decimal string otherwise. */
export const int64Value = (b: bigint): Int64Value => (b >= SAFE_MIN && b <= SAFE_MAX ? Number(b) : b.toString());

/** The [lo, hi] u32 words of an int64 bigint (two's complement). */
export function bigToWords(v: bigint): [number, number] {
  const u = BigInt.asUintN(64, v);
  return [Number(u & 0xffffffffn), Number(u >> 32n)];
}

/** The int64 bigint of two u32 words (for tests, messages and state files, not hot loops). */
export const wordsToBig = (lo: number, hi: number): bigint => BigInt.asIntN(64, (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0));

/** Sign-extends int32 values into int64 words. */
export function widenInt32(values: Int32Array): Uint32Array {
  const out = new Uint32Array(values.length * 2);
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    out[2 * i] = v;
    out[2 * i + 1] = v >> 31;
  }
  return out;
}

/** Signed compare of two int64 word pairs: negative, 0 or positive. */
export function cmp64(aLo: number, aHi: number, bLo: number, bHi: number): number {
  const ah = aHi | 0;
  const bh = bHi | 0;
  if (ah !== bh) return ah < bh ? -1 : 1;
  return (aLo >>> 0) - (bLo >>> 0);
}

/**
 * floorMod by a constant m in [1, 2^63), exact over the whole int64 range without BigInt. The
 * result is in [0, m). Work is on |x| as u64 (|INT64_MIN| = 2^63 still fits) then mirrored.
 */
export class FloorMod64 {
  private readonly m: number;
  private readonly mLo: number;
  private readonly mHi: number;
  /** 0: m <= 2^21 (two float mods); 1: m <= 2^32 (three, on 21-bit limbs); 2: long division. */
  private readonly mode: 0 | 1 | 2;

  constructor(m: bigint) {
    if (m < 1n || m > INT64_MAX) throw new RangeError(`modulus ${m} out of range [1, 2^63)`);
    [this.mLo, this.mHi] = bigToWords(m);
    this.m = Number(m);
    this.mode = m <= 1n << 21n ? 0 : m <= 1n << 32n ? 1 : 2;
  }

  /** Writes floorMod(int64(lo, hi), m) as int64 words to out[k], out[k + 1]. */
  apply(lo: number, hi: number, out: Uint32Array, k: number): void {
    const neg = hi >>> 31 === 1;
    if (neg) {
      // Two's-complement negation gives |x| as an unsigned 64-bit value.
      lo = -lo >>> 0;
      hi = (~hi + (lo === 0 ? 1 : 0)) >>> 0;
    }
    if (this.mode === 2) {
      this.longDivide(lo, hi, neg, out, k);
      return;
    }
    const m = this.m;
    let r: number;
    if (this.mode === 0) {
      // (hi mod m) * 2^32 + lo < 2^53 because hi mod m < 2^21: the float mod is exact.
      r = ((hi % m) * TWO32 + lo) % m;
    } else {
      // 22 + 21 + 21 bit limbs: r < 2^32, so r * 2^21 + limb stays below 2^53.
      r = (hi >>> 10) % m;
      r = (r * 2097152 + (((hi & 0x3ff) << 11) | (lo >>> 21))) % m;
      r = (r * 2097152 + (lo & 0x1fffff)) % m;
    }
    out[k] = neg && r !== 0 ? m - r : r;
    out[k + 1] = 0;
  }

  /** Bit-serial remainder for m > 2^32 (rare: only huge `max`/`m` params take this path). */
  private longDivide(lo: number, hi: number, neg: boolean, out: Uint32Array, k: number): void {
    const mLo = this.mLo;
    const mHi = this.mHi;
    // hi < 2^32 < m, so the first 32 bits are their own remainder.
    let rLo = hi;
    let rHi = 0;
    for (let b = 31; b >= 0; b--) {
      rHi = ((rHi << 1) | (rLo >>> 31)) >>> 0;
      rLo = ((rLo << 1) | ((lo >>> b) & 1)) >>> 0;
      if (rHi > mHi || (rHi === mHi && rLo >= mLo)) {
        const borrow = rLo < mLo ? 1 : 0;
        rLo = (rLo - mLo) >>> 0;
        rHi = (rHi - mHi - borrow) >>> 0;
      }
    }
    if (neg && (rLo !== 0 || rHi !== 0)) {
      const borrow = mLo < rLo ? 1 : 0;
      rLo = (mLo - rLo) >>> 0;
      rHi = (mHi - rHi - borrow) >>> 0;
    }
    out[k] = rLo;
    out[k + 1] = rHi;
  }
}

/** Float64 values of int64 words (exact below 2^53 in magnitude, rounded beyond). */
export function int64WordsToFloat64(words: Uint32Array): Float64Array {
  const out = new Float64Array(words.length >>> 1);
  for (let i = 0; i < out.length; i++) out[i] = (words[2 * i + 1]! | 0) * TWO32 + words[2 * i]!;
  return out;
}
