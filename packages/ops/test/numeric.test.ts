import { describe, expect, it } from 'vitest';
import type { Column, PrimitiveColumn, PrimitiveType } from '../src/column.js';
import { OpDataError } from '../src/ops/types.js';
import { type Scalar, col, list, randLists, randScalars, rawValues, rng, rows, run } from './helpers.js';

type Num = number | bigint;
const NUMERIC: readonly PrimitiveType[] = ['int32', 'int64', 'float32', 'float64'];

/**
 * Runs `op` on random scalar and list inputs of each type and compares with `ref` element by
 * element. `ref` gets the value and the input element type; it returns the expected element, or
 * null for a null. Nulls in → nulls out unless `nullTo` is given; null output slots must hold 0.
 */
function checkElementwise(
  op: string,
  params: Record<string, unknown>,
  types: readonly PrimitiveType[],
  ref: (x: Num, t: PrimitiveType) => Num | null,
  nullTo?: (t: PrimitiveType) => Num,
) {
  for (const [seed, t] of types.entries()) {
    const r = rng(100 + seed);
    for (let rep = 0; rep < 20; rep++) {
      const xs = randScalars(r, t, 50);
      const exp = (x: Scalar): Num | null => (x === null ? (nullTo ? nullTo(t) : null) : ref(x as Num, t));
      const input = col(t, xs);
      const out = run(op, params, input);
      expect(rows(out), `${op} ${t}`).toEqual(xs.map(exp));
      // An op may hand back its input unchanged (cast to the same type); otherwise nulls hold 0.
      if (out !== input) expectZeroNulls(out);
      const ls = randLists(r, t, 30);
      const inL = list(t, ls);
      const outL = run(op, params, inL);
      expect(rows(outL), `${op} list<${t}>`).toEqual(ls.map((l) => (l === null ? null : l.map(exp))));
      if (outL.type === 'list' && outL.child !== inL.child) expectZeroNulls(outL.child);
    }
  }
}

function expectZeroNulls(c: Column): void {
  if (c.type === 'list' || c.type === 'fixed' || c.valid === null) return;
  const raw = rawValues(c as PrimitiveColumn);
  c.valid.forEach((v, i) => {
    if (v === 0) expect(Number(raw[i])).toBe(0);
  });
}

/** The value an element type stores for a JS number (float32 rounds, int64 is a bigint). */
const store = (x: number, t: PrimitiveType): Num => (t === 'int64' ? BigInt(x) : t === 'float32' ? Math.fround(x) : x);
const num = (x: Num): number => Number(x);
const f32 = Math.fround;

describe('fillNull', () => {
  it('golden: 42 on [null,2,3,4]', () => {
    expect(rows(run('fillNull', { value: 42 }, col('int64', [null, 2, 3, 4])))).toEqual([42n, 2n, 3n, 4n]);
  });
  it('fills scalars (valid becomes null) and list elements, keeping null lists', () => {
    const out = run('fillNull', { value: -1 }, col('float32', [null, 1.5]));
    expect(out.valid).toBeNull();
    expect(rows(run('fillNull', { value: 7 }, list('int32', [[1, null], null, []])))).toEqual([[1, 7], null, []]);
  });
  it('int64 fill beyond 2^53 as a decimal string', () => {
    expect(rows(run('fillNull', { value: '-9223372036854775808' }, col('int64', [null, 1])))).toEqual([-(2n ** 63n), 1n]);
  });
  it('matches the obvious implementation', () => {
    checkElementwise(
      'fillNull',
      { value: 3 },
      NUMERIC,
      (x) => x,
      (t) => store(3, t),
    );
    checkElementwise(
      'fillNull',
      { value: 0.25 },
      ['float32', 'float64'],
      (x) => x,
      () => 0.25,
    );
  });
});

describe('cast', () => {
  const TO = ['float32', 'int32', 'int64'] as const;
  const ref =
    (to: (typeof TO)[number]) =>
    (x: Num, t: PrimitiveType): Num | null => {
      if (t === to) return x;
      if (to === 'float32') return f32(num(x));
      if (typeof x === 'bigint') return to === 'int32' ? Number(BigInt.asIntN(32, x)) : x;
      if (t === 'int32') return to === 'int64' ? BigInt(x) : x;
      const tr = Math.trunc(x) + 0; // + 0 turns -0 into 0, as integer storage does
      if (to === 'int32') return Number.isFinite(tr) && tr >= -(2 ** 31) && tr < 2 ** 31 ? tr : null;
      return Number.isFinite(tr) && tr >= -(2 ** 63) && tr < 2 ** 63 ? BigInt(tr) : null;
    };
  for (const to of TO) it(`to ${to} matches the obvious implementation`, () => checkElementwise('cast', { to }, NUMERIC, ref(to)));
  it('returns the input itself for the same type', () => {
    const c = col('int32', [1, null]);
    expect(run('cast', { to: 'int32' }, c)).toBe(c);
  });
  it('edge cases', () => {
    expect(rows(run('cast', { to: 'int32' }, col('float64', [2.9, -2.9, NaN, Infinity, 2 ** 31, -(2 ** 31), null])))).toEqual([
      2,
      -2,
      null,
      null,
      null,
      -(2 ** 31),
      null,
    ]);
    expect(rows(run('cast', { to: 'int64' }, col('float64', [2 ** 63, -(2 ** 63), 2 ** 62 + 2 ** 40, -1.5])))).toEqual([
      null,
      -(2n ** 63n),
      2n ** 62n + 2n ** 40n,
      -1n,
    ]);
    expect(rows(run('cast', { to: 'int32' }, col('int64', [2n ** 32n + 5n, -1n, 2n ** 31n])))).toEqual([5, -1, -(2 ** 31)]);
    expect(rows(run('cast', { to: 'float32' }, col('int64', [2n ** 53n + 1n])))).toEqual([f32(2 ** 53)]);
  });
});

describe('neg2zero', () => {
  it('matches the obvious implementation', () => {
    checkElementwise('neg2zero', {}, NUMERIC, (x) => (typeof x === 'bigint' ? (x < 0n ? 0n : x) : x < 0 ? 0 : x));
  });
});

describe('clamp', () => {
  it('golden: 0..20 on lists', () => {
    const out = run(
      'clamp',
      { min: 0, max: 20 },
      list('int64', [
        [0, 1, 2, 3],
        [-100, 100, 10],
        [0, -1, -2, -3],
      ]),
    );
    expect(rows(out)).toEqual([
      [0n, 1n, 2n, 3n],
      [0n, 20n, 10n],
      [0n, 0n, 0n, 0n],
    ]);
  });
  const refClamp =
    (min: number | string, max: number | string) =>
    (x: Num, t: PrimitiveType): Num => {
      if (typeof x === 'bigint') return x < BigInt(min) ? BigInt(min) : x > BigInt(max) ? BigInt(max) : x;
      const lo = t === 'float32' ? f32(Number(min)) : Number(min);
      const hi = t === 'float32' ? f32(Number(max)) : Number(max);
      return x < lo ? lo : x > hi ? hi : x;
    };
  it('matches the obvious implementation', () => {
    checkElementwise('clamp', { min: -5, max: 100 }, NUMERIC, refClamp(-5, 100));
    checkElementwise('clamp', { min: -0.1, max: 0.3 }, ['float32', 'float64'], refClamp(-0.1, 0.3));
    checkElementwise('clamp', { min: '-9223372036854775807', max: '9007199254740993' }, ['int64'], refClamp('-9223372036854775807', '9007199254740993'));
  });
});

describe('log, logit, boxCox', () => {
  it('log matches the obvious implementation', () => {
    checkElementwise('log', {}, NUMERIC, (x) => f32(Math.log1p(num(x))));
    checkElementwise('log', { offset: 3 }, NUMERIC, (x) => f32(Math.log(num(x) + 3)));
  });
  it('log gives IEEE results at and below the pole', () => {
    expect(rows(run('log', {}, col('float64', [-1, -2, 0, 1e-10])))).toEqual([-Infinity, NaN, 0, f32(Math.log1p(1e-10))]);
  });
  it('logit matches the obvious implementation', () => {
    const lg =
      (eps: number) =>
      (x: Num): number => {
        const p = Math.min(Math.max(num(x), eps), 1 - eps);
        return f32(Math.log(p / (1 - p)));
      };
    checkElementwise('logit', {}, NUMERIC, (x) => (Number.isNaN(num(x)) ? NaN : lg(1e-6)(x)));
    checkElementwise('logit', { eps: 0.1 }, NUMERIC, (x) => (Number.isNaN(num(x)) ? NaN : lg(0.1)(x)));
    expect(rows(run('logit', {}, col('float32', [0.5, 0, 1])))).toEqual([0, f32(Math.log(1e-6 / (1 - 1e-6))), f32(Math.log((1 - 1e-6) / 1e-6))]);
  });
  it('boxCox matches the obvious implementation on positive values', () => {
    for (const lambda of [0, 0.5, 2, -1]) {
      const r = rng(7);
      const xs = Array.from({ length: 200 }, () => (r.chance(0.1) ? null : r.float() * 1000 + 1e-3));
      const exp = xs.map((x) => (x === null ? null : f32(lambda === 0 ? Math.log(x) : (x ** lambda - 1) / lambda)));
      expect(rows(run('boxCox', { lambda }, col('float64', xs)))).toEqual(exp);
    }
  });
  it('boxCox: x <= 0 and NaN are data errors naming the row; nulls are skipped', () => {
    const err = (c: Column): OpDataError => {
      try {
        run('boxCox', { lambda: 1 }, c);
      } catch (e) {
        return e as OpDataError;
      }
      throw new Error('no error');
    };
    const e1 = err(col('float64', [1, null, 2, 0, -1]));
    expect(e1).toBeInstanceOf(OpDataError);
    expect([e1.row, e1.message]).toEqual([3, 'boxCox needs x > 0, got 0']);
    expect(err(col('float32', [NaN])).row).toBe(0);
    // In a list the row is the list's row, not the element's position.
    expect(err(list('int32', [[1, 2], [], null, [3, -4]])).row).toBe(3);
    expect(rows(run('boxCox', { lambda: 1 }, col('int32', [null, 3])))).toEqual([null, 2]);
  });
});

describe('bucketize', () => {
  it('golden: borders [2,5,10]', () => {
    expect(rows(run('bucketize', { borders: [2, 5, 10] }, col('int32', [1, 2, 3, 5, 8, 10, 11])))).toEqual([0, 0, 1, 1, 2, 2, 3]);
    expect(rows(run('bucketize', { borders: [2, 5, 10], right: true }, col('int32', [1, 2, 3, 5, 8, 10, 11])))).toEqual([0, 1, 1, 2, 2, 3, 3]);
  });
  it('matches a linear count, with repeated borders', () => {
    const r = rng(8);
    for (let rep = 0; rep < 10; rep++) {
      const borders = Array.from({ length: 1 + r.int(12) }, () => r.pick([0, 1, -1, 2 ** 31, 1e10, -1e10, 0.5, 100])).sort((a, b) => a - b);
      for (const right of [false, true]) {
        const count = (x: Num): number => borders.filter((b) => (right ? b <= num(x) : b < num(x))).length;
        checkElementwise('bucketize', { borders, right }, NUMERIC, count);
      }
    }
  });
});

describe('oneHot', () => {
  it('integer scalars → float32 vectors; null and out of range → zeros', () => {
    const out = run('oneHot', { numClasses: 3 }, col('int64', [0, 2, 3, -1, null, 2n ** 32n + 1n, 1]));
    expect(out.type).toBe('fixed');
    expect(out.valid).toBeNull();
    expect(rows(out)).toEqual([
      [1, 0, 0],
      [0, 0, 1],
      [0, 0, 0],
      [0, 0, 0],
      [0, 0, 0],
      [0, 0, 0],
      [0, 1, 0],
    ]);
    expect(rows(run('oneHot', { numClasses: 2 }, col('int32', [1, -2147483648, null])))).toEqual([
      [0, 1],
      [0, 0],
      [0, 0],
    ]);
  });
});
