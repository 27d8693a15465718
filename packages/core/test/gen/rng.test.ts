import { describe, expect, it } from 'vitest';
import { LogNormalTable, mix32, normalQuantile, permutation, Rng, SkewedIdSampler, ZipfSampler } from '../../src/util/rng.js';

describe('Rng (xoshiro128**)', () => {
  it('is deterministic per (seed, stream) and differs across seeds and streams', () => {
    const seq = (seed: number, stream = 0): number[] => {
      const r = new Rng(seed, stream);
      return Array.from({ length: 8 }, () => r.nextU32());
    };
    expect(seq(42)).toEqual(seq(42));
    expect(seq(42)).not.toEqual(seq(43));
    expect(seq(42, 1)).not.toEqual(seq(42, 2));
    expect(seq(2 ** 40 + 5)).not.toEqual(seq(5)); // high words of the seed count
    for (const x of seq(7)) expect(Number.isInteger(x) && x >= 0 && x < 2 ** 32).toBe(true);
  });

  it('fork gives an independent stream without advancing the parent', () => {
    const a = new Rng(1);
    const b = new Rng(1);
    const child = a.fork(3);
    expect(a.nextU32()).toBe(b.nextU32());
    expect(child.nextU32()).not.toBe(new Rng(1).fork(4).nextU32());
  });

  it('uniform, int, bernoulli and normal have the right moments', () => {
    const r = new Rng(123);
    const N = 200_000;
    let sum = 0;
    let sumInt = 0;
    let hits = 0;
    let s1 = 0;
    let s2 = 0;
    let inRange = true;
    for (let i = 0; i < N; i++) {
      const u = r.next();
      inRange &&= u >= 0 && u < 1;
      sum += u;
      const k = r.int(10);
      inRange &&= k >= 0 && k < 10 && Number.isInteger(k);
      sumInt += k;
      if (r.bernoulli(0.25)) hits++;
      const z = r.normal();
      s1 += z;
      s2 += z * z;
    }
    expect(inRange).toBe(true);
    expect(sum / N).toBeCloseTo(0.5, 2);
    expect(sumInt / N).toBeCloseTo(4.5, 1);
    expect(hits / N).toBeCloseTo(0.25, 2);
    expect(s1 / N).toBeCloseTo(0, 1);
    expect(s2 / N).toBeCloseTo(1, 1);
    const big = r.int(2 ** 40);
    expect(big >= 0 && big < 2 ** 40).toBe(true);
    expect(r.intRange(5, 5)).toBe(5);
  });

  it('mix32 is a bijection on a sample of u32 values', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 100_000; i++) seen.add(mix32(i * 40503));
    expect(seen.size).toBe(100_000);
  });
});

describe('normalQuantile (Acklam)', () => {
  it('matches known quantiles', () => {
    expect(normalQuantile(0.5)).toBeCloseTo(0, 9);
    expect(normalQuantile(0.975)).toBeCloseTo(1.959964, 5);
    expect(normalQuantile(0.01)).toBeCloseTo(-2.326348, 5);
    expect(normalQuantile(1e-6)).toBeCloseTo(-4.753424, 4);
    expect(normalQuantile(0)).toBe(-Infinity);
    expect(normalQuantile(1)).toBe(Infinity);
  });
});

describe('SkewedIdSampler (BAGPIPE: ~90% of accesses on 0.1% of ids)', () => {
  it('puts hotMass of the draws on the top hotFraction of ranks, matching massOfTop', () => {
    const n = 1_000_000;
    const s = new SkewedIdSampler(n);
    expect(s.hot).toBe(1000);
    expect(s.massOfTop(s.hot)).toBeCloseTo(0.9, 12);
    const r = new Rng(9);
    const N = 300_000;
    let inHot = 0;
    let inTop10 = 0;
    let inTop100k = 0;
    let inRange = true;
    for (let i = 0; i < N; i++) {
      const k = s.sample(r);
      inRange &&= k >= 0 && k < n && Number.isInteger(k);
      if (k < 1000) inHot++;
      if (k < 10) inTop10++;
      if (k < 100_000) inTop100k++;
    }
    expect(inRange).toBe(true);
    expect(inHot / N).toBeCloseTo(0.9, 2);
    expect(inTop10 / N).toBeCloseTo(s.massOfTop(10), 2);
    expect(inTop100k / N).toBeCloseTo(s.massOfTop(100_000), 2);
  });

  it('is non-increasing across the hot/cold boundary and handles tiny vocabularies', () => {
    const s = new SkewedIdSampler(10_000_000);
    const p = (k: number): number => s.massOfTop(k + 1) - s.massOfTop(k);
    expect(p(s.hot - 1)).toBeGreaterThan(p(s.hot));
    const tiny = new SkewedIdSampler(3);
    const r = new Rng(1);
    const counts = [0, 0, 0];
    for (let i = 0; i < 10_000; i++) counts[tiny.sample(r)]!++;
    expect(counts[0]! / 10_000).toBeCloseTo(0.9, 1);
    expect(counts[1]! + counts[2]!).toBeGreaterThan(0);
    const one = new SkewedIdSampler(1);
    expect(one.sample(r)).toBe(0);
    expect(() => new SkewedIdSampler(0)).toThrow(/positive integer/);
  });

  it('draws millions of ids per second', () => {
    const s = new SkewedIdSampler(48_937_457);
    const r = new Rng(5);
    const N = 2_000_000;
    let acc = 0;
    const t0 = performance.now();
    for (let i = 0; i < N; i++) acc += s.sample(r);
    const perSec = N / ((performance.now() - t0) / 1000);
    expect(acc).toBeGreaterThan(0);
    expect(perSec).toBeGreaterThan(2_000_000); // ~30–50M/s unloaded; loose for shared machines
  });
});

describe('ZipfSampler (rejection-inversion)', () => {
  it('matches the Zipf pmf for the first ranks', () => {
    const n = 1000;
    const sExp = 1.2;
    const z = new ZipfSampler(n, sExp);
    let h = 0;
    for (let k = 1; k <= n; k++) h += k ** -sExp;
    const r = new Rng(3);
    const N = 200_000;
    const counts = new Array<number>(3).fill(0);
    let inRange = true;
    for (let i = 0; i < N; i++) {
      const k = z.sample(r);
      inRange &&= k >= 0 && k < n;
      if (k < 3) counts[k]!++;
    }
    expect(inRange).toBe(true);
    for (let k = 0; k < 3; k++) expect(counts[k]! / N).toBeCloseTo((k + 1) ** -sExp / h, 2);
  });
});

describe('LogNormalTable', () => {
  it('has the log-normal median and keeps a heavy tail', () => {
    const t = new LogNormalTable(2, 1.5);
    expect(t.at(0.5)).toBeCloseTo(Math.exp(2), 1);
    expect(t.at(0.99999)).toBeCloseTo(Math.exp(2 + 1.5 * normalQuantile(0.99999)), 6);
    expect(t.at(0.3)).toBeLessThan(t.at(0.3001));
  });
});

describe('permutation', () => {
  it('is a seeded permutation: every index once, same seed same order, other seed other order', () => {
    const a = permutation(1000, 7, 0, 3);
    expect([...a].sort((x, y) => x - y)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(permutation(1000, 7, 0, 3)).toEqual(a);
    expect(permutation(1000, 7, 1, 3)).not.toEqual(a);
    expect(permutation(0, 1).length).toBe(0);
  });
});
