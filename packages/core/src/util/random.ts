/**
 * Deterministic randomness for shuffling. The same (seed, epoch, window) always gives the same
 * permutation, whatever the worker count or where a run resumes.
 */

/** Mixes integers into one 32-bit seed (murmur3 finalizer over each word). */
export function mixSeed(...parts: number[]): number {
  let h = 0x9e3779b9;
  for (const p of parts) {
    let k = Math.imul(p | 0, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    h ^= Math.imul(k, 0x1b873593);
    h = ((h << 13) | (h >>> 19)) * 5 + 0xe6546b64;
    // Fold in the high part of seeds above 2^32 too.
    h ^= Math.floor(p / 4294967296) | 0;
  }
  h ^= h >>> 16; h = Math.imul(h, 0x85ebca6b); h ^= h >>> 13; h = Math.imul(h, 0xc2b2ae35); h ^= h >>> 16;
  return h >>> 0;
}

/** mulberry32: small, fast, good enough for shuffles. Returns uniform u32 values. */
export function rng32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** Uniform integer in [0, n) without modulo bias (rejects the uneven top of the u32 range). */
export function below(next: () => number, n: number): number {
  if (n <= 1) return 0;
  const limit = 4294967296 - (4294967296 % n);
  for (;;) {
    const x = next();
    if (x < limit) return x % n;
  }
}

/** A seeded Fisher–Yates permutation of 0..n-1. */
export function permutation(n: number, seed: number): Int32Array {
  const p = new Int32Array(n);
  for (let i = 0; i < n; i++) p[i] = i;
  const next = rng32(seed);
  for (let i = n - 1; i > 0; i--) {
    const j = below(next, i + 1);
    const t = p[i]!; p[i] = p[j]!; p[j] = t;
  }
  return p;
}
