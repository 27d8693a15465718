import { describe, expect, it } from 'vitest';
import { hash128To64, sigridHash, sigridHashWords, twangMix64 } from '../src/ops/hash.js';
import { FloorMod64, bigToWords, wordsToBig } from '../src/ops/int64.js';
import { Int64Index } from '../src/ops/int64map.js';
import { EXTREME_I64, INT64_MAX, refFloorMod, refHash128, refMix, refSigrid, rng } from './helpers.js';

const big = (o: Uint32Array, k = 0): bigint => wordsToBig(o[k]!, o[k + 1]!);

describe('hash primitives', () => {
  it('sigridHash golden vector (TorchArrow, salt 0, max 100)', () => {
    const got = Array.from({ length: 16 }, (_, i) => Number(sigridHash(BigInt(i), 0n, 100n)));
    expect(got.join(' ')).toBe('6 60 54 54 9 4 91 11 67 79 2 25 92 98 83 66');
  });

  it('twang_mix64 and hash_128_to_64 match BigInt over random and extreme words', () => {
    const r = rng(1);
    const out = new Uint32Array(2);
    for (let t = 0; t < 20000; t++) {
      const x = t < EXTREME_I64.length ? EXTREME_I64[t]! : r.big64();
      const y = r.chance(0.2) ? r.pick(EXTREME_I64) : r.big64();
      twangMix64(...bigToWords(x), out, 0);
      expect(BigInt.asUintN(64, big(out))).toBe(refMix(x));
      hash128To64(...bigToWords(x), ...bigToWords(y), out, 0);
      expect(BigInt.asUintN(64, big(out))).toBe(refHash128(x, y));
    }
  });

  it('sigridHash matches BigInt for any value, salt and max', () => {
    const r = rng(2);
    const maxes = [1n, 2n, 3n, 100n, 500000n, 1n << 21n, (1n << 21n) + 1n, 0xffffffffn, 1n << 32n, (1n << 32n) + 1n, 1000000007n, (1n << 53n) + 1n, INT64_MAX];
    for (let t = 0; t < 20000; t++) {
      const x = r.chance(0.3) ? r.pick(EXTREME_I64) : r.big64();
      const salt = r.chance(0.3) ? r.pick(EXTREME_I64) : r.big64();
      const max = r.chance(0.7) ? r.pick(maxes) : 1n + BigInt.asUintN(r.int(63), r.big64());
      expect(sigridHash(x, salt, max)).toBe(refSigrid(x, salt, max));
    }
  });

  it('FloorMod64 matches BigInt over the whole int64 range', () => {
    const r = rng(3);
    const out = new Uint32Array(2);
    for (let t = 0; t < 20000; t++) {
      const m = r.chance(0.3)
        ? r.pick([1n, 2n, 7n, 1n << 21n, (1n << 21n) + 1n, 1n << 32n, (1n << 32n) + 1n, INT64_MAX])
        : 1n + BigInt.asUintN(1 + r.int(62), r.big64());
      const x = r.chance(0.3) ? r.pick(EXTREME_I64) : r.big64();
      new FloorMod64(m).apply(...bigToWords(x), out, 0);
      expect(big(out)).toBe(refFloorMod(x, m));
    }
    expect(() => new FloorMod64(0n)).toThrow(RangeError);
  });

  it('null slots hash to 0', () => {
    const words = new Uint32Array([5, 0, 6, 0]);
    const out = new Uint32Array(4).fill(9);
    sigridHashWords(words, Uint8Array.of(0, 1), 0n, 100n, out);
    expect([big(out, 0), big(out, 2)]).toEqual([0n, 91n]);
  });

  it('Int64Index keeps insertion order and finds every key', () => {
    const r = rng(4);
    const ix = new Int64Index(2);
    const keys: bigint[] = [];
    const seen = new Map<bigint, number>();
    for (let t = 0; t < 5000; t++) {
      const k = r.chance(0.5) ? BigInt(r.int(300)) - 150n : r.chance(0.1) ? r.pick(EXTREME_I64) : r.big64();
      const id = ix.add(...bigToWords(k));
      if (!seen.has(k)) {
        seen.set(k, keys.length);
        keys.push(k);
      }
      expect(id).toBe(seen.get(k));
    }
    expect(ix.size).toBe(keys.length);
    keys.forEach((k, i) => expect(ix.get(...bigToWords(k))).toBe(i));
    expect(ix.get(...bigToWords(123456789123n))).toBe(seen.get(123456789123n) ?? -1);
    expect(Array.from({ length: ix.size }, (_, i) => big(ix.keys(), 2 * i))).toEqual(keys);
  });

  it('sigridHash throughput on 1M int64 values (prints the rate)', () => {
    const n = 1_000_000;
    const r = rng(5);
    const words = new Uint32Array(2 * n);
    for (let i = 0; i < words.length; i++) words[i] = r.int(4294967296);
    const out = new Uint32Array(2 * n);
    let best = Infinity;
    for (let rep = 0; rep < 5; rep++) {
      const t0 = performance.now();
      sigridHashWords(words, null, 0n, 100n, out);
      best = Math.min(best, performance.now() - t0);
    }
    const rate = n / (best / 1000);
    console.log(`sigridHash: ${(rate / 1e6).toFixed(1)}M values/s (best of 5, 1M int64, max 100)`);
    expect(rate).toBeGreaterThan(2e6);
    expect(big(out, 0)).toBe(refSigrid(big(words, 0), 0n, 100n));
  });
});
