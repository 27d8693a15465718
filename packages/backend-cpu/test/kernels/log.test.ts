import { beforeAll, expect, it } from 'vitest';
import { tuning } from '../../src/kernels/shared.js';
import { wasm } from '../../src/kernels/wasm.js';
import { LENGTHS, NUMERIC, Rand, checkOp, describeFast, listOf, numeric } from './helpers.js';

beforeAll(() => {
  tuning.minElements = 0;
  tuning.minElementsCheap = 0;
});

/** Distance in f64 ulps between two finite doubles of the same sign. */
function ulps(a: number, b: number): number {
  const f = new Float64Array([a, b]);
  const i = new BigInt64Array(f.buffer);
  const d = i[0]! - i[1]!;
  return Number(d < 0n ? -d : d);
}

describeFast('fast log matches the reference bit for bit', () => {
  it('every numeric type, offsets 1 (log1p) and others, nulls, lists', () => {
    const r = new Rand(11);
    for (const offset of [1, 3, 0, 0.5, -2, 1e-3, 2 ** 31]) {
      for (const type of NUMERIC) {
        for (const n of LENGTHS) {
          for (const nullRate of [0, 0.1]) expect(checkOp('log', numeric(type, n, nullRate, r), { offset })).toBe(true);
        }
        expect(checkOp('log', listOf(numeric(type, 20000, 0.1, r), r), { offset })).toBe(true);
      }
    }
  });

  it('special inputs: -0, NaN, ±Inf, x <= -1, subnormals, tiny x (log1p and ln)', () => {
    const xs = [
      0,
      -0,
      NaN,
      Infinity,
      -Infinity,
      -1,
      -2,
      -1.5,
      -0.9999999999,
      5e-324,
      -5e-324,
      1e-310,
      2 ** -1022,
      1e-40,
      1.4e-45,
      2 ** -29,
      -(2 ** -29),
      2 ** -30,
      2 ** -54,
      2 ** -55,
      1e-20,
      -1e-20,
      1.7976931348623157e308,
      2 ** 53,
      2 ** 53 + 1,
      0.5,
      1,
    ];
    const f64 = Float64Array.from({ length: 64 }, (_, i) => xs[i % xs.length]!);
    for (const offset of [1, 0, 3, -1]) {
      expect(checkOp('log', { type: 'float64', values: f64, valid: null }, { offset })).toBe(true);
      expect(checkOp('log', { type: 'float32', values: Float32Array.from(f64), valid: null }, { offset })).toBe(true);
    }
  });

  it('log1p of int32: every value in [-16, 70000) and a wide sample of the rest (table and polynomial paths)', () => {
    const dense = Int32Array.from({ length: 70016 }, (_, i) => i - 16);
    // Run twice: the second call has seen enough values to use the lookup table.
    for (let k = 0; k < 5; k++) expect(checkOp('log', { type: 'int32', values: dense, valid: null }, { offset: 1 })).toBe(true);
    const r = new Rand(12);
    const wide = Int32Array.from({ length: 1 << 21 }, (_, i) => (i & 1 ? r.u32() >>> 1 : Math.floor(Math.exp(r.next() * 21.5))));
    expect(checkOp('log', { type: 'int32', values: wide, valid: null }, { offset: 1 })).toBe(true);
    expect(checkOp('log', { type: 'float32', values: Float32Array.from(wide), valid: null }, { offset: 1 })).toBe(true);
    expect(checkOp('log', { type: 'int32', values: wide, valid: null }, { offset: 3 })).toBe(true);
  });

  it('the f64 polynomial is within 2 ulps of Math.log1p / Math.log (the hand-back window is 256)', () => {
    const w = wasm()!;
    const n = 1 << 16;
    const [src, dst] = w.reserve([8 * n, 8 * n]) as [number, number];
    const x = new Float64Array(w.buffer, src, n);
    const y = new Float64Array(w.buffer, dst, n);
    const r = new Rand(13);
    for (const gen of [
      () => r.u32() >>> 1,
      () => r.next() * 2 - 0.99999,
      () => Math.exp((r.next() - 0.5) * 100),
      () => (r.next() - 0.5) * 1e-7,
      () => Math.exp(r.next() * 700),
    ]) {
      for (let i = 0; i < n; i++) x[i] = gen();
      w.k.log1pRawF64(src, n, dst);
      let worst = 0;
      for (let i = 0; i < n; i++) worst = Math.max(worst, ulps(y[i]!, Math.log1p(x[i]!)));
      expect(worst).toBeLessThanOrEqual(2);
      for (let i = 0; i < n; i++) x[i] = Math.abs(x[i]!) + 1e-300;
      w.k.logRawF64(src, n, dst);
      worst = 0;
      for (let i = 0; i < n; i++) worst = Math.max(worst, ulps(y[i]!, Math.log(x[i]!)));
      expect(worst).toBeLessThanOrEqual(2);
    }
  });
});
