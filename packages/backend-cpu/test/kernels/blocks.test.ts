import { utf8FromStrings } from '@sluice/core/internal';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { tuning } from '../../src/kernels/shared.js';
import { NUMERIC, Rand, checkOp, describeFast, listOf, numeric } from './helpers.js';

beforeAll(() => {
  tuning.minElements = 0;
  tuning.minElementsCheap = 0;
  // Blocks of 10: not a multiple of the kernels' groups of 4, so every block has a ragged tail.
  tuning.block = 10;
  // Outputs are not zeroed memory (shared.ts, uninit): make any element a kernel skips visible.
  tuning.poison = true;
});
afterAll(() => {
  tuning.block = 16384;
  tuning.poison = false;
});

describeFast('fast kernels with tiny ragged blocks', () => {
  it('every op and numeric type', () => {
    const r = new Rand(41);
    for (const type of NUMERIC) {
      for (const n of [1, 9, 10, 11, 23, 1001]) {
        const c = numeric(type, n, 0.2, r);
        expect(checkOp('neg2zero', c, {})).toBe(true);
        expect(checkOp('fillNull', c, { value: 7 })).toBe(true);
        expect(checkOp('clamp', c, { min: -5, max: 100 })).toBe(true);
        expect(checkOp('log', c, { offset: 1 })).toBe(true);
        expect(checkOp('log', c, { offset: 3 })).toBe(true);
        expect(checkOp('bucketize', c, { borders: [-3, 0, 0, 1.5, 7, 1000], right: n % 2 === 0 })).toBe(true);
        if (type === 'int32' || type === 'int64') {
          expect(checkOp('modulus', c, { m: 7 })).toBe(true);
          expect(checkOp('modulus', c, { m: 64 })).toBe(true);
          expect(checkOp('sigridHash', c, { salt: 5, max: 1000 })).toBe(true);
        }
      }
      expect(checkOp('log', listOf(numeric(type, 5000, 0.1, r), r), { offset: 1 })).toBe(true);
    }
    const hex = utf8FromStrings(
      Array.from({ length: 1001 }, (_, i) => (i % 7 === 0 ? null : i % 11 === 0 ? '' : (i * 2654435761).toString(16).slice(0, 1 + (i % 16)))),
    );
    expect(checkOp('hex2int', hex, {})).toBe(true);
  });
});
