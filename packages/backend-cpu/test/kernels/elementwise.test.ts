import { afterEach, beforeAll, expect, it } from 'vitest';
import { MOD_MAGIC, MOD_REM, tuning } from '../../src/kernels/shared.js';
import { LENGTHS, NUMERIC, Rand, checkOp, describeFast, listOf, numeric } from './helpers.js';

beforeAll(() => {
  tuning.minElements = 0;
  tuning.minElementsCheap = 0;
});
afterEach(() => {
  tuning.modMode = undefined;
});

describeFast('fast fillNull / neg2zero / clamp / modulus match the reference bit for bit', () => {
  it('neg2zero on every numeric type, with and without nulls, scalars and lists', () => {
    const r = new Rand(1);
    for (const type of NUMERIC) {
      for (const n of LENGTHS) {
        for (const nullRate of [0, 0.1]) {
          expect(checkOp('neg2zero', numeric(type, n, nullRate, r), {})).toBe(true);
        }
      }
      expect(checkOp('neg2zero', listOf(numeric(type, 20000, 0.1, r), r), {})).toBe(true);
    }
  });

  it('neg2zero keeps -0 and NaN payloads like the reference (float32 NaNs come back quiet)', () => {
    const f32 = new Float32Array(new Uint32Array([0x80000000, 0x7f800001, 0xffc12345, 0x7fa00000, 0xbf800000, 0x3f800000, 0xff800000, 0x7f800000]).buffer);
    expect(checkOp('neg2zero', { type: 'float32', values: f32, valid: null }, {})).toBe(true);
    const w = new Uint32Array([0, 0x80000000, 1, 0x7ff00000, 5, 0xfff40000, 0, 0xbff00000]);
    expect(checkOp('neg2zero', { type: 'float64', values: new Float64Array(w.buffer), valid: null }, {})).toBe(true);
  });

  it('fillNull on every numeric type: nulls filled, no-null columns returned as they are', () => {
    const r = new Rand(2);
    const fills: Record<string, unknown[]> = {
      int32: [0, -1, 0x7fffffff, -0x80000000, 42],
      float32: [0, -1.5, 0.1, 1e30, -0],
      float64: [0, -1.5, 0.1, 1e300, -0],
      int64: [0, -1, '9223372036854775807', '-9223372036854775808', 42],
    };
    for (const type of NUMERIC) {
      for (const value of fills[type]!) {
        for (const n of [0, 5, 64, 16385, 40001]) {
          const c = numeric(type, n, 0.2, r);
          expect(checkOp('fillNull', c, { value })).toBe(true);
        }
        expect(checkOp('fillNull', listOf(numeric(type, 20000, 0.2, r), r), { value })).toBe(true);
      }
      const noNulls = numeric(type, 1000, 0, r);
      expect(checkOp('fillNull', noNulls, { value: 1 })).toBe(true);
    }
  });

  it('clamp on every numeric type with integer, fractional and int64-string bounds', () => {
    const r = new Rand(3);
    const bounds: Record<string, [unknown, unknown][]> = {
      int32: [
        [0, 20],
        [-100, 100],
        [5, 5],
        [-0x80000000, 0x7fffffff],
        [-1, 0],
      ],
      float32: [
        [0, 20],
        [0.1, 0.7],
        [-1e-40, 1e-40],
        [-3.5, 1e30],
        [-0, 0],
      ],
      float64: [
        [0, 20],
        [0.1, 0.7],
        [-1e-300, 1e-300],
        [-3.5, 1e300],
        [0, 0],
      ],
      int64: [
        [0, 20],
        ['-9223372036854775808', '9223372036854775807'],
        ['-9007199254740993', '9007199254740993'],
        [-1, -1],
        [-100, 4294967296],
      ],
    };
    for (const type of NUMERIC) {
      for (const [min, max] of bounds[type]!) {
        for (const n of [0, 3, 64, 1000, 16385]) {
          for (const nullRate of [0, 0.1]) expect(checkOp('clamp', numeric(type, n, nullRate, r), { min, max })).toBe(true);
        }
        expect(checkOp('clamp', listOf(numeric(type, 20000, 0.1, r), r), { min, max })).toBe(true);
      }
    }
  });

  it('clamp golden vector (OPS.md)', () => {
    const child = { type: 'int32' as const, values: Int32Array.from([0, 1, 2, 3, -100, 100, 10, 0, -1, -2, -3]), valid: null };
    const list = { type: 'list' as const, offsets: Int32Array.from([0, 4, 7, 11]), child, valid: null };
    expect(checkOp('clamp', list, { min: 0, max: 20 })).toBe(true);
  });

  it('modulus on int32 for m from 1 to 2^31', () => {
    const r = new Rand(4);
    for (const m of [1, 2, 3, 7, 10, 1000, 8192, 524288, 1000003, 0x7fffffff, 0x80000000]) {
      for (const n of LENGTHS) {
        for (const nullRate of [0, 0.1]) expect(checkOp('modulus', numeric('int32', n, nullRate, r), { m })).toBe(true);
      }
      expect(checkOp('modulus', listOf(numeric('int32', 20000, 0.1, r), r), { m })).toBe(true);
    }
  });

  it.each([MOD_REM, MOD_MAGIC])('modulus on int64 for m from 1 to 2^63 - 1 (floorMod method %i)', (mode) => {
    tuning.modMode = mode;
    const r = new Rand(5);
    const ms = [
      1,
      2,
      3,
      7,
      1000,
      524288,
      2 ** 21,
      2 ** 21 + 1,
      2 ** 32 - 1,
      2 ** 32,
      2 ** 32 + 1,
      2 ** 53 - 1,
      '9007199254740993',
      '4611686018427387904',
      '4611686018427387905',
      '9223372036854775807',
      '9223372036854775806',
    ];
    for (const m of ms) {
      for (const n of [0, 5, 64, 1000, 16385]) {
        for (const nullRate of [0, 0.1]) expect(checkOp('modulus', numeric('int64', n, nullRate, r), { m })).toBe(true);
      }
      expect(checkOp('modulus', listOf(numeric('int64', 20000, 0.1, r), r), { m })).toBe(true);
    }
  });

  it.each([MOD_REM, MOD_MAGIC])('modulus with random m against many random int64 values (floorMod method %i)', (mode) => {
    tuning.modMode = mode;
    const r = new Rand(6);
    for (let t = 0; t < 200; t++) {
      const bits = 1 + r.int(63);
      let m = ((BigInt(r.u32()) << 32n) | BigInt(r.u32())) & ((1n << BigInt(bits)) - 1n);
      if (m === 0n) m = 1n;
      expect(checkOp('modulus', numeric('int64', 2000, 0.05, r), { m: m.toString() })).toBe(true);
    }
  });
});
