import { OPS } from '@sluice/core/internal';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { FAST_OPS } from '../../src/kernels/index.js';
import { MOD_MAGIC, MOD_REM, tuning } from '../../src/kernels/shared.js';
import { CTX, LENGTHS, Rand, checkOp, describeFast, listOf, numeric } from './helpers.js';

beforeAll(() => {
  tuning.minElements = 0;
  tuning.minElementsCheap = 0;
});
afterEach(() => {
  tuning.modMode = undefined;
});

describeFast('fast sigridHash matches the reference bit for bit', () => {
  it('golden vectors (TorchArrow, OPS.md)', () => {
    const params = OPS.get('sigridHash')!.validate({ salt: 0, max: 100 });
    const out = FAST_OPS.get('sigridHash')!(
      { type: 'int64', values: BigInt64Array.from(Array.from({ length: 16 }, (_, i) => BigInt(i))), valid: null },
      params,
      CTX,
    );
    expect(out?.type === 'int64' && Array.from(out.values, Number)).toEqual([6, 60, 54, 54, 9, 4, 91, 11, 67, 79, 2, 25, 92, 98, 83, 66]);
  });

  it.each([MOD_REM, MOD_MAGIC])('int64 and int32 input, salts and maxes across the whole range, nulls, lists (floorMod method %i)', (mode) => {
    tuning.modMode = mode;
    const r = new Rand(7);
    const salts = [0, 1, -1, 42, '9223372036854775807', '-9223372036854775808', 123456789];
    const maxes = [
      1,
      2,
      3,
      100,
      500000,
      524288,
      2 ** 31,
      2 ** 32,
      2 ** 32 + 1,
      '9007199254740992',
      '9223372036854775807',
      '4611686018427387904',
      '6000000000000000011',
    ];
    for (const salt of salts) {
      for (const max of maxes) {
        for (const type of ['int64', 'int32'] as const) {
          for (const n of [0, 1, 5, 100, 16385]) {
            for (const nullRate of [0, 0.1]) expect(checkOp('sigridHash', numeric(type, n, nullRate, r), { salt, max })).toBe(true);
          }
        }
      }
    }
    for (const n of LENGTHS) expect(checkOp('sigridHash', numeric('int64', n, 0.05, r), { max: 500000 })).toBe(true);
    expect(checkOp('sigridHash', listOf(numeric('int64', 30000, 0.05, r), r), { salt: 3, max: 500000 })).toBe(true);
    expect(checkOp('sigridHash', listOf(numeric('int32', 30000, 0, r), r), { max: 100 })).toBe(true);
  });

  it.each([MOD_REM, MOD_MAGIC])('random maxes against random values (floorMod method %i)', (mode) => {
    tuning.modMode = mode;
    const r = new Rand(8);
    for (let t = 0; t < 200; t++) {
      const bits = 1 + r.int(63);
      let max = ((BigInt(r.u32()) << 32n) | BigInt(r.u32())) & ((1n << BigInt(bits)) - 1n);
      if (max === 0n) max = 1n;
      expect(checkOp('sigridHash', numeric('int64', 1000, 0.05, r), { salt: r.u32() - 2 ** 31, max: max.toString() })).toBe(true);
    }
  });
});
