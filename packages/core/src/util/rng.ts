/**
 * Seeded random numbers for the synthetic data generator: xoshiro128** on 32-bit integer maths
 * (Math.imul), seeded through a splitmix32-style hash, plus the samplers the generator needs.
 *
 * Everything here is deterministic: the same seed and stream give the same sequence on every
 * platform (no Math.random, no float-dependent branching beyond IEEE double arithmetic).
 */

const TWO_POW_M32 = 2.3283064365386963e-10; // 2^-32
const TWO_POW_M53 = 1.1102230246251565e-16; // 2^-53

/** murmur3's 32-bit finalizer: a bijection on u32 with full avalanche. */
export function mix32(x: number): number {
  let h = x | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Hashes a list of integers (each taken modulo 2^32, plus the high word of larger ones) to a u32. */
export function hash32(...keys: number[]): number {
  let h = 0x243f6a88;
  for (const k of keys) {
    const lo = k >>> 0;
    const hi = Math.floor(k / 4294967296) >>> 0;
    h = mix32((h ^ lo) + 0x9e3779b9);
    h = mix32((h ^ hi) + 0x7f4a7c15);
  }
  return h;
}

/** xoshiro128** (Blackman & Vigna): 128-bit state, 32-bit outputs, period 2^128 − 1. */
export class Rng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;
  private spare = 0;
  private hasSpare = false;

  /** `seed` is any integer in the safe range; `stream` picks an independent sequence for the same seed. */
  constructor(seed: number, stream = 0) {
    let x = hash32(seed, stream);
    const next = (): number => {
      x = (x + 0x9e3779b9) >>> 0;
      return mix32(x);
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** An independent generator derived from this one's current state and `key` (does not advance this one). */
  fork(key: number): Rng {
    return new Rng(hash32(this.s0, this.s1, this.s2, this.s3), key);
  }

  /** Next raw output as an unsigned 32-bit integer. */
  nextU32(): number {
    const s1 = this.s1;
    const r = Math.imul(rotl(Math.imul(s1, 5), 7), 9);
    const t = s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return r >>> 0;
  }

  /** Uniform double in [0, 1) with 32 random bits. */
  next(): number {
    return this.nextU32() * TWO_POW_M32;
  }

  /** Uniform double in [0, 1) with 53 random bits (two draws). */
  next53(): number {
    const hi = this.nextU32() >>> 5; // 27 bits
    const lo = this.nextU32() >>> 6; // 26 bits
    return (hi * 67108864 + lo) * TWO_POW_M53;
  }

  /** Uniform double in [lo, hi). */
  uniform(lo = 0, hi = 1): number {
    return lo + (hi - lo) * this.next();
  }

  /** Uniform integer in [0, n) for 1 <= n <= 2^53 (a 53-bit draw when n > 2^32). */
  int(n: number): number {
    if (n <= 4294967296) return Math.floor(this.nextU32() * TWO_POW_M32 * n);
    return Math.floor(this.next53() * n);
  }

  /** Uniform integer in [lo, hi], both inclusive. */
  intRange(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  /** true with probability p. */
  bernoulli(p: number): boolean {
    return this.next() < p;
  }

  /** Normal deviate (Marsaglia's polar method; every second call is served from the cached spare). */
  normal(mean = 0, sd = 1): number {
    if (this.hasSpare) {
      this.hasSpare = false;
      return mean + sd * this.spare;
    }
    let u: number, v: number, s: number;
    do {
      u = this.next() * 2 - 1;
      v = this.next() * 2 - 1;
      s = u * u + v * v;
    } while (s >= 1 || s === 0);
    const f = Math.sqrt((-2 * Math.log(s)) / s);
    this.spare = v * f;
    this.hasSpare = true;
    return mean + sd * u * f;
  }

  /** Exponential deviate with the given mean. */
  exponential(mean: number): number {
    return -Math.log(1 - this.next()) * mean;
  }

  /** A random element of a non-empty array. */
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

const EXP_TABLE_SIZE = 2048;
const QUANTILE_NODES = 4096;

/**
 * exp(t·L) for t in [0, 1] without Math.exp: a 2048-entry table of exp(L·k/2048) times a 4th-order
 * Taylor series of the remainder (relative error < 1e-12 for L <= 25), cheaper than Math.exp in
 * the generator's per-value loops.
 */
class ExpTable {
  private readonly table: Float64Array;
  private readonly step: number;
  constructor(readonly L: number) {
    this.table = new Float64Array(EXP_TABLE_SIZE + 2);
    for (let k = 0; k < this.table.length; k++) this.table[k] = Math.exp((L * k) / EXP_TABLE_SIZE);
    this.step = L / EXP_TABLE_SIZE;
  }
  at(t: number): number {
    const y = t * EXP_TABLE_SIZE;
    const k = y | 0;
    const f = (y - k) * this.step;
    return (this.table[k] as number) * (1 + f * (1 + f * (0.5 + f * (1 / 6 + f / 24))));
  }
}
/**
 * BAGPIPE's access skew as a two-tier Zipf(1) over ranks [0, n): the hot tier (the first
 * ceil(hotFraction·n) ranks) receives exactly `hotMass` of the draws, the cold tier the rest, and
 * inside each tier the density falls as 1/(rank+1) (continuous inversion: O(1) per draw, one small
 * table, no per-id state). The density is non-increasing across the tier boundary for the default
 * parameters. BAGPIPE §2.3 / Fig. 3: "almost 90% of embedding accesses come from just 0.1% of the
 * embeddings".
 */
export class SkewedIdSampler {
  readonly hot: number;
  private readonly lnHot: number;
  private readonly lnCold: number;
  private readonly expHot: ExpTable;
  private readonly expCold: ExpTable;

  constructor(
    readonly n: number,
    readonly hotFraction = 0.001,
    readonly hotMass = 0.9,
  ) {
    if (!(n >= 1) || !Number.isInteger(n)) throw new Error(`SkewedIdSampler: n must be a positive integer, got ${n}`);
    if (!(hotMass > 0 && hotMass <= 1)) throw new Error(`SkewedIdSampler: hotMass must be in (0, 1], got ${hotMass}`);
    if (!(hotFraction > 0 && hotFraction <= 1)) throw new Error(`SkewedIdSampler: hotFraction must be in (0, 1], got ${hotFraction}`);
    this.hot = Math.min(n, Math.max(1, Math.ceil(n * hotFraction)));
    this.lnHot = Math.log(this.hot + 1);
    this.lnCold = Math.log((n + 1) / (this.hot + 1));
    this.expHot = new ExpTable(this.lnHot);
    this.expCold = new ExpTable(this.lnCold);
  }

  /** A rank in [0, n); rank 0 is the most frequent. */
  sample(rng: Rng): number {
    return this.fromUniform(rng.next53());
  }

  /** The rank for a uniform u in [0, 1) (inverse CDF), so callers can reuse one draw. */
  fromUniform(u: number): number {
    const hot = this.hot;
    if (hot === this.n) {
      const r = Math.floor(this.expHot.at(u)) - 1;
      return r < 0 ? 0 : r < hot ? r : hot - 1;
    }
    if (u < this.hotMass) {
      const r = Math.floor(this.expHot.at(u / this.hotMass)) - 1;
      return r < 0 ? 0 : r < hot ? r : hot - 1;
    }
    const r = Math.floor((hot + 1) * this.expCold.at((u - this.hotMass) / (1 - this.hotMass))) - 1;
    return r < hot ? hot : r < this.n ? r : this.n - 1;
  }

  /** Exact probability that a draw falls among the `k` most frequent ranks (for tests and docs). */
  massOfTop(k: number): number {
    if (k <= 0) return 0;
    if (k >= this.n) return 1;
    if (this.hot === this.n) return Math.log(k + 1) / this.lnHot;
    if (k <= this.hot) return (this.hotMass * Math.log(k + 1)) / this.lnHot;
    return this.hotMass + ((1 - this.hotMass) * Math.log((k + 1) / (this.hot + 1))) / this.lnCold;
  }
}

let zNodes: Float64Array | null = null;
/** Φ⁻¹(k / QUANTILE_NODES) for k = 1 .. QUANTILE_NODES − 1, computed once. */
function standardNormalNodes(): Float64Array {
  if (zNodes === null) {
    zNodes = new Float64Array(QUANTILE_NODES + 1);
    for (let k = 1; k < QUANTILE_NODES; k++) zNodes[k] = normalQuantile(k / QUANTILE_NODES);
  }
  return zNodes;
}

/**
 * Samples floor(exp(mu + sigma·Z)), Z standard normal, from one uniform: a 4096-node table of the
 * log-normal quantile function with linear interpolation in the body and the exact quantile in the
 * two outer cells (so the heavy tail is kept).
 */
export class LogNormalTable {
  private readonly q: Float64Array;
  constructor(
    readonly mu: number,
    readonly sigma: number,
  ) {
    const z = standardNormalNodes();
    this.q = new Float64Array(QUANTILE_NODES + 1);
    for (let k = 1; k < QUANTILE_NODES; k++) this.q[k] = Math.exp(mu + sigma * (z[k] as number));
  }
  /** The value at probability p in [0, 1). */
  at(p: number): number {
    const y = p * QUANTILE_NODES;
    const k = y | 0;
    if (k === 0 || k >= QUANTILE_NODES - 1) return p > 0 ? Math.exp(this.mu + this.sigma * normalQuantile(p)) : 0;
    const a = this.q[k] as number;
    return a + ((this.q[k + 1] as number) - a) * (y - k);
  }
}
/**
 * Exact Zipf(s) over ranks [0, n) by rejection-inversion (Hörmann & Derflinger 1996): O(1)
 * expected time, no tables, any n and any s > 0. P(rank = k) ∝ (k+1)^-s.
 */
export class ZipfSampler {
  private readonly hX1: number;
  private readonly hN: number;
  private readonly sq: number;

  constructor(
    readonly n: number,
    readonly s: number,
  ) {
    if (!(n >= 1) || !Number.isInteger(n)) throw new Error(`ZipfSampler: n must be a positive integer, got ${n}`);
    if (!(s > 0)) throw new Error(`ZipfSampler: exponent must be > 0, got ${s}`);
    this.hX1 = this.hIntegral(1.5) - 1;
    this.hN = this.hIntegral(n + 0.5);
    this.sq = 2 - this.hIntegralInverse(this.hIntegral(2.5) - this.h(2));
  }

  /** A rank in [0, n); rank 0 is the most frequent. */
  sample(rng: Rng): number {
    for (;;) {
      const u = this.hN + rng.next53() * (this.hX1 - this.hN);
      const x = this.hIntegralInverse(u);
      let k = Math.floor(x + 0.5);
      if (k < 1) k = 1;
      else if (k > this.n) k = this.n;
      if (k - x <= this.sq || u >= this.hIntegral(k + 0.5) - this.h(k)) return k - 1;
    }
  }

  private h(x: number): number {
    return Math.exp(-this.s * Math.log(x));
  }

  private hIntegral(x: number): number {
    const lx = Math.log(x);
    return expm1OverX((1 - this.s) * lx) * lx;
  }

  private hIntegralInverse(x: number): number {
    let t = x * (1 - this.s);
    if (t < -1) t = -1;
    return Math.exp(log1pOverX(t) * x);
  }
}

function expm1OverX(x: number): number {
  return Math.abs(x) > 1e-8 ? Math.expm1(x) / x : 1 + (x / 2) * (1 + (x / 3) * (1 + x / 4));
}

function log1pOverX(x: number): number {
  return Math.abs(x) > 1e-8 ? Math.log1p(x) / x : 1 - x * (0.5 - x * (1 / 3 - x / 4));
}

const QA = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
const QB = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
const QC = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
const QD = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];

/** Inverse of the standard normal CDF (Acklam's rational approximation, relative error < 1.2e-9). */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) {
    if (p === 0) return -Infinity;
    if (p === 1) return Infinity;
    return NaN;
  }
  const [a0, a1, a2, a3, a4, a5] = QA as [number, number, number, number, number, number];
  const [b0, b1, b2, b3, b4] = QB as [number, number, number, number, number];
  const [c0, c1, c2, c3, c4, c5] = QC as [number, number, number, number, number, number];
  const [d0, d1, d2, d3] = QD as [number, number, number, number];
  const plow = 0.02425;
  if (p < plow) {
    const q = Math.sqrt(-2 * Math.log(p));
    return (((((c0 * q + c1) * q + c2) * q + c3) * q + c4) * q + c5) / ((((d0 * q + d1) * q + d2) * q + d3) * q + 1);
  }
  if (p > 1 - plow) {
    const q = Math.sqrt(-2 * Math.log(1 - p));
    return -(((((c0 * q + c1) * q + c2) * q + c3) * q + c4) * q + c5) / ((((d0 * q + d1) * q + d2) * q + d3) * q + 1);
  }
  const q = p - 0.5;
  const r = q * q;
  return ((((((a0 * r + a1) * r + a2) * r + a3) * r + a4) * r + a5) * q) / (((((b0 * r + b1) * r + b2) * r + b3) * r + b4) * r + 1);
}

/**
 * A seeded Fisher–Yates permutation of 0..n-1. The same seed parts (e.g. seed, epoch, window)
 * always give the same order, whatever the worker count or where a run resumes.
 */
export function permutation(n: number, ...seed: number[]): Int32Array {
  const p = new Int32Array(n);
  for (let i = 0; i < n; i++) p[i] = i;
  const rng = new Rng(hash32(...seed));
  for (let i = n - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    const t = p[i]!;
    p[i] = p[j]!;
    p[j] = t;
  }
  return p;
}
