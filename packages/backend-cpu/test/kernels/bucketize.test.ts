import { OPS } from '@sluice/core/internal';
import { beforeAll, expect, it } from 'vitest';
import { FAST_OPS } from '../../src/kernels/index.js';
import { tuning } from '../../src/kernels/shared.js';
import { CTX, LENGTHS, NUMERIC, Rand, checkOp, columnDiff, describeFast, listOf, numeric } from './helpers.js';

beforeAll(() => {
  tuning.minElements = 0;
  tuning.minElementsCheap = 0;
});

/** Non-decreasing finite borders with duplicates, drawn from the ranges the values use. */
function borders(nb: number, r: Rand): number[] {
  const b: number[] = [];
  for (let i = 0; i < nb; i++) {
    const k = r.int(4);
    b.push(k === 0 ? r.int(200) - 20 : k === 1 ? Math.exp(r.next() * 12) : k === 2 ? (r.next() - 0.5) * 1e6 : r.next() * 2 - 1);
  }
  b.sort((x, y) => x - y);
  for (let i = 1; i < nb; i++) if (r.next() < 0.1) b[i] = b[i - 1]!;
  return b;
}

describeFast('fast bucketize matches the reference bit for bit', () => {
  it('golden vector (TorchArrow, OPS.md)', () => {
    expect(checkOp('bucketize', { type: 'int32', values: Int32Array.from([1, 2, 3, 5, 8, 10, 11]), valid: null }, { borders: [2, 5, 10] })).toBe(true);
  });

  it('every numeric type, left and right, border counts 1 to 4096, nulls, lists', () => {
    const r = new Rand(21);
    for (const nb of [1, 2, 3, 4, 5, 7, 8, 9, 100, 1000, 1024, 1025, 4096]) {
      const b = borders(nb, r);
      for (const right of [false, true]) {
        for (const type of NUMERIC) {
          for (const n of nb === 1024 ? LENGTHS : [0, 7, 1000, 16385]) {
            for (const nullRate of [0, 0.1]) expect(checkOp('bucketize', numeric(type, n, nullRate, r), { borders: b, right })).toBe(true);
          }
        }
        expect(checkOp('bucketize', listOf(numeric('float64', 20000, 0.1, r), r), { borders: b, right })).toBe(true);
      }
    }
  });

  it('values equal to borders, NaN, ±Inf, and borders that are all equal', () => {
    const b = [-1e300, -5, -0, 0, 0.1, 1, 1, 1, 2.5, 65536, 1e300];
    const xs = Float64Array.from([...b, ...b.map((x) => x * (1 + 1e-16)), NaN, Infinity, -Infinity, -0, 0, 5e-324, -5e-324, 0.1 + 1e-17]);
    const col = { type: 'float64' as const, values: Float64Array.from({ length: 256 }, (_, i) => xs[i % xs.length]!), valid: null };
    for (const right of [false, true]) {
      expect(checkOp('bucketize', col, { borders: b, right })).toBe(true);
      expect(checkOp('bucketize', col, { borders: [3, 3, 3, 3, 3], right })).toBe(true);
      expect(checkOp('bucketize', col, { borders: [0], right })).toBe(true);
    }
  });

  it('int32 through the lookup table (built once a thread has seen 2^18 values with the same borders)', () => {
    const r = new Rand(22);
    const def = OPS.get('bucketize')!;
    for (const nb of [1, 5, 1024, 4096]) {
      for (const right of [false, true]) {
        // Integer borders (ties with the values) and fractional ones.
        const b = borders(nb, r)
          .map((x, i) => (i % 3 === 0 ? Math.round(x) : x))
          .sort((x, y) => x - y);
        const params = def.validate({ borders: b, right });
        for (let call = 0; call < 3; call++) {
          const n = 300_000 + call;
          const values = Int32Array.from({ length: n }, () => (r.next() < 0.98 ? r.int(70000) - 20 : r.u32() | 0));
          const input = { type: 'int32' as const, values, valid: call === 1 ? null : Uint8Array.from({ length: n }, () => (r.next() < 0.1 ? 0 : 1)) };
          const got = FAST_OPS.get('bucketize')!(input, params, CTX);
          expect(got).toBeDefined();
          expect(columnDiff(got!, def.apply(input, params, CTX))).toBeUndefined();
        }
      }
    }
  });
});
