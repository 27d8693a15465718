/**
 * folly's twang_mix64 and hash_128_to_64 (the TorchArrow sigrid_hash building blocks, OPS.md) on
 * u32 word pairs. Exact for every 64-bit input without BigInt: additions carry explicitly and the
 * 64x64 multiply takes its high word from a float product corrected by the exact Math.imul low word.
 * Results go to out[k], out[k + 1] so hot loops allocate nothing.
 */

import { FloorMod64, bigToWords } from './int64.js';

// Local constants, not imports: an imported binding in a hot loop can cost a getter call under
// module runners that rewrite imports to property reads (vitest).
const TWO32 = 4294967296;
const K_LO = 0xeb382d69; // kMul = 0x9ddfea08eb382d69
const K_HI = 0x9ddfea08;

/**
 * High 32 bits of the 64-bit product of two u32 values, given its exact low word.
 * a * b as a float is within 2^11 of the true product and the subtraction adds at most 2^10 more,
 * so dividing by 2^32 lands within 2^-21 of the integer high word and rounding recovers it.
 */
const mulHi32 = (a: number, b: number, lo: number): number => Math.round((a * b - lo) / TWO32);

/** folly twang_mix64 of the 64-bit value (lo, hi), written to out[k], out[k + 1]. */
export function twangMix64(lo: number, hi: number, out: Uint32Array, k: number): void {
  // k = ~k + (k << 21)
  let aLo = ~lo >>> 0;
  let s = aLo + ((lo << 21) >>> 0);
  hi = (~hi + ((hi << 21) | (lo >>> 11)) + (s >= TWO32 ? 1 : 0)) >>> 0;
  lo = s >>> 0;
  // k ^= k >> 24
  lo = (lo ^ ((lo >>> 24) | (hi << 8))) >>> 0;
  hi = (hi ^ (hi >>> 24)) >>> 0;
  // k = k + (k << 3) + (k << 8), i.e. k * 265; lo * 265 < 2^41 is exact
  s = lo * 265;
  hi = (Math.imul(hi, 265) + Math.floor(s / TWO32)) >>> 0;
  lo = s >>> 0;
  // k ^= k >> 14
  lo = (lo ^ ((lo >>> 14) | (hi << 18))) >>> 0;
  hi = (hi ^ (hi >>> 14)) >>> 0;
  // k = k + (k << 2) + (k << 4), i.e. k * 21
  s = lo * 21;
  hi = (Math.imul(hi, 21) + Math.floor(s / TWO32)) >>> 0;
  lo = s >>> 0;
  // k ^= k >> 28
  lo = (lo ^ ((lo >>> 28) | (hi << 4))) >>> 0;
  hi = (hi ^ (hi >>> 28)) >>> 0;
  // k = k + (k << 31)
  aLo = (lo << 31) >>> 0;
  s = lo + aLo;
  out[k + 1] = hi + ((hi << 31) | (lo >>> 1)) + (s >= TWO32 ? 1 : 0);
  out[k] = s;
}

/** folly hash_128_to_64(upper, lower) of two 64-bit values, written to out[k], out[k + 1]. */
export function hash128To64(uLo: number, uHi: number, lLo: number, lHi: number, out: Uint32Array, k: number): void {
  // a = (l ^ u) * kMul; a ^= a >> 47
  let x = (lLo ^ uLo) >>> 0;
  let y = (lHi ^ uHi) >>> 0;
  let lo = Math.imul(x, K_LO) >>> 0;
  let hi = (mulHi32(x, K_LO, lo) + Math.imul(x, K_HI) + Math.imul(y, K_LO)) >>> 0;
  lo = (lo ^ (hi >>> 15)) >>> 0;
  // b = (u ^ a) * kMul; b ^= b >> 47
  x = (uLo ^ lo) >>> 0;
  y = (uHi ^ hi) >>> 0;
  lo = Math.imul(x, K_LO) >>> 0;
  hi = (mulHi32(x, K_LO, lo) + Math.imul(x, K_HI) + Math.imul(y, K_LO)) >>> 0;
  lo = (lo ^ (hi >>> 15)) >>> 0;
  // b *= kMul
  const rLo = Math.imul(lo, K_LO) >>> 0;
  out[k + 1] = mulHi32(lo, K_LO, rLo) + Math.imul(lo, K_HI) + Math.imul(hi, K_LO);
  out[k] = rLo;
}

/**
 * sigridHash of every int64 in `words` (OPS.md): floorMod(int64(hash_128_to_64(salt,
 * twang_mix64(x))), max). Null slots (valid[i] = 0) give 0. `out` receives int64 words.
 */
export function sigridHashWords(words: Uint32Array, valid: Uint8Array | null, salt: bigint, max: bigint, out: Uint32Array): void {
  const n = words.length >>> 1;
  if (max === 1n) {
    out.fill(0, 0, 2 * n);
    return;
  }
  const [sLo, sHi] = bigToWords(salt);
  const mod = new FloorMod64(max);
  for (let i = 0; i < n; i++) {
    const k = 2 * i;
    if (valid !== null && valid[i] === 0) {
      out[k] = 0;
      out[k + 1] = 0;
      continue;
    }
    twangMix64(words[k]!, words[k + 1]!, out, k);
    hash128To64(sLo, sHi, out[k]!, out[k + 1]!, out, k);
    mod.apply(out[k]!, out[k + 1]!, out, k);
  }
}

/** sigridHash of one value, for scalars and tests (allocates; not for loops). */
export function sigridHash(x: bigint, salt: bigint, max: bigint): bigint {
  const w = new Uint32Array(bigToWords(x));
  const out = new Uint32Array(2);
  sigridHashWords(w, null, salt, max, out);
  return BigInt.asIntN(64, (BigInt(out[1]!) << 32n) | BigInt(out[0]!));
}

/**
 * twang_mix64 of every element of integer lists, null elements dropped: the per-element half of the
 * combine chain, computed once per element (ngram windows and cross tuples reuse it).
 * `offsets` start at 0; `words` are the child's int64 words. Returns compacted offsets and mixes.
 */
export function mixLists(offsets: Int32Array, words: Uint32Array, elemValid: Uint8Array | null): { offsets: Int32Array; mixed: Uint32Array } {
  const rows = offsets.length - 1;
  const total = offsets[rows]!;
  if (elemValid === null) {
    const mixed = new Uint32Array(2 * total);
    for (let j = 0; j < total; j++) twangMix64(words[2 * j]!, words[2 * j + 1]!, mixed, 2 * j);
    return { offsets, mixed };
  }
  const out = new Int32Array(rows + 1);
  let k = 0;
  const mixed = new Uint32Array(2 * total);
  for (let i = 0; i < rows; i++) {
    for (let j = offsets[i]!; j < offsets[i + 1]!; j++) {
      if (elemValid[j] === 0) continue;
      twangMix64(words[2 * j]!, words[2 * j + 1]!, mixed, 2 * k);
      k++;
    }
    out[i + 1] = k;
  }
  return { offsets: out, mixed: mixed.subarray(0, 2 * k) };
}
