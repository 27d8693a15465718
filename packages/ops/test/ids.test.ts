import { describe, expect, it } from 'vitest';
import type { Column, ColumnType, PrimitiveType } from '../src/column.js';
import { OpDataError } from '../src/ops/types.js';
import {
  EXTREME_I64,
  INT64_MAX,
  type Row,
  type Scalar,
  col,
  ctx,
  list,
  randLists,
  randScalars,
  refFloorMod,
  refFold,
  refSigrid,
  rng,
  rows,
  run,
  typeOf,
} from './helpers.js';

const INTS: readonly PrimitiveType[] = ['int32', 'int64'];
const big = (x: Scalar): bigint => BigInt(x as number | bigint);
const mapRows = (rs: Row[], f: (x: Scalar) => Scalar): Row[] =>
  rs.map((r) => (r === null ? null : Array.isArray(r) ? r.map((x) => (x === null ? null : f(x))) : f(r)));

/** Random integer inputs, scalar and list, of both integer types. */
function* intInputs(seed: number, reps = 15): Generator<[PrimitiveType, Column, Row[]]> {
  const r = rng(seed);
  for (const t of INTS) {
    for (let k = 0; k < reps; k++) {
      const xs = randScalars(r, t, 40);
      yield [t, col(t, xs), xs];
      const ls = randLists(r, t, 25);
      yield [t, list(t, ls), ls];
    }
  }
}

describe('sigridHash op', () => {
  it('golden lists (TorchArrow)', () => {
    const out = run(
      'sigridHash',
      { salt: 0, max: 100 },
      list('int64', [
        [0, 1, 2, 3],
        [4, 5, 6],
        [7, 8, 9],
      ]),
    );
    expect(rows(out)).toEqual([
      [6n, 60n, 54n, 54n],
      [9n, 4n, 91n],
      [11n, 67n, 79n],
    ]);
    expect(
      rows(
        run(
          'sigridHash',
          { max: 100 },
          col(
            'int32',
            Array.from({ length: 16 }, (_, i) => i),
          ),
        ),
      )
        .map(Number)
        .join(' '),
    ).toBe('6 60 54 54 9 4 91 11 67 79 2 25 92 98 83 66');
  });
  it('matches BigInt for random salts and maxes (int32 sign-extended)', () => {
    const r = rng(20);
    for (const [, c, xs] of intInputs(21)) {
      const salt = r.chance(0.3) ? r.pick(EXTREME_I64) : r.big64();
      const max = r.pick([1n, 7n, 100n, 1n << 40n, INT64_MAX, 4294967297n]);
      const out = run('sigridHash', { salt: salt.toString(), max: max.toString() }, c);
      expect(rows(out)).toEqual(mapRows(xs, (x) => refSigrid(big(x), salt, max)));
    }
  });
});

describe('modulus', () => {
  it('matches BigInt floor-mod', () => {
    const r = rng(22);
    for (const [t, c, xs] of intInputs(23)) {
      const m =
        t === 'int32' ? r.pick([1n, 2n, 7n, 1000n, 1n << 31n, (1n << 31n) - 1n]) : r.pick([1n, 7n, 1000n, 1n << 21n, (1n << 32n) + 3n, 1n << 53n, INT64_MAX]);
      const out = run('modulus', { m: m.toString() }, c);
      expect(rows(out)).toEqual(mapRows(xs, (x) => (t === 'int32' ? Number(refFloorMod(big(x), m)) : refFloorMod(big(x), m))));
    }
  });
  it('examples', () => {
    expect(rows(run('modulus', { m: 10 }, col('int32', [-1, 15, -2147483648, null])))).toEqual([9, 5, 2, null]);
    expect(rows(run('modulus', { m: 10 }, col('int64', [-(2n ** 63n)])))).toEqual([2n]);
  });
});

describe('mapId', () => {
  it('object and pair forms, decimal strings and default', () => {
    const big = '9223372036854775807';
    expect(rows(run('mapId', { mapping: { '1': 10, '-2': big } }, col('int32', [1, -2, 3, null])))).toEqual([10n, 2n ** 63n - 1n, 0n, null]);
    expect(
      rows(
        run(
          'mapId',
          {
            mapping: [
              [big, 1],
              [0, '-5'],
            ],
            default: -1,
          },
          list('int64', [[2n ** 63n - 1n, 0n, 5n], null]),
        ),
      ),
    ).toEqual([[1n, -5n, -1n], null]);
  });
  it('matches a Map over random mappings', () => {
    const r = rng(24);
    for (const [, c, xs] of intInputs(25, 5)) {
      const m = new Map<bigint, bigint>();
      for (const x of xs.flat()) if (x !== null && r.chance(0.5)) m.set(big(x), r.big64());
      for (let k = 0; k < 50; k++) m.set(r.big64(), r.big64());
      const mapping = [...m].map(([k, v]) => [k.toString(), v.toString()]);
      const out = run('mapId', { mapping, default: 42 }, c);
      expect(rows(out)).toEqual(mapRows(xs, (x) => m.get(big(x)) ?? 42n));
    }
  });
});

describe('hex2int', () => {
  it('matches BigInt("0x" + s) wrapped to int64; empty and null → null', () => {
    const r = rng(26);
    for (let k = 0; k < 20; k++) {
      const xs = randScalars(r, 'utf8', 60);
      const exp = xs.map((s) => (s === null || s === '' ? null : BigInt.asIntN(64, BigInt(`0x${s}`))));
      expect(rows(run('hex2int', {}, col('utf8', xs)))).toEqual(exp);
      const ls = randLists(r, 'utf8', 20);
      const expL = ls.map((l) => (l === null ? null : l.map((s) => (s === null || s === '' ? null : BigInt.asIntN(64, BigInt(`0x${s}`))))));
      expect(rows(run('hex2int', {}, list('utf8', ls)))).toEqual(expL);
    }
    expect(rows(run('hex2int', {}, col('utf8', ['ffffffffffffffff', '8000000000000000', '7FFFFFFFFFFFFFFF', '0000000000000001', 'a'])))).toEqual([
      -1n,
      -(2n ** 63n),
      2n ** 63n - 1n,
      1n,
      10n,
    ]);
  });
  it('rejects other bytes and > 16 digits, naming the row and the value', () => {
    const err = (c: Column): OpDataError => {
      try {
        run('hex2int', {}, c);
      } catch (e) {
        return e as OpDataError;
      }
      throw new Error('no error');
    };
    for (const bad of ['0x1f', ' 1f', '1f ', 'g', '-1', '12345678901234567', 'é', '+1']) {
      const e = err(col('utf8', ['00', null, '', bad]));
      expect(e).toBeInstanceOf(OpDataError);
      expect(e.row).toBe(3);
      expect(e.message).toContain(`invalid hex "${bad}"`);
    }
    expect(err(list('utf8', [['a'], null, [], ['b', 'zz']])).row).toBe(3);
  });
  it('reads a sliced utf8 column (offsets not starting at 0)', () => {
    const c = col('utf8', ['ff', 'x', '10']);
    if (c.type !== 'utf8') throw new Error();
    const sliced = { ...c, offsets: c.offsets.subarray(2), valid: null };
    expect(rows(run('hex2int', {}, sliced))).toEqual([16n]);
  });
});

describe('firstX', () => {
  it('golden: x=2', () => {
    expect(
      rows(
        run(
          'firstX',
          { x: 2 },
          list('int64', [
            [0, 1, 2, 3],
            [4, 5, 6],
            [7, 8, 9],
          ]),
        ),
      ),
    ).toEqual([
      [0n, 1n],
      [4n, 5n],
      [7n, 8n],
    ]);
  });
  it('matches slice on random lists of every type, and promotes scalars', () => {
    const r = rng(27);
    for (const t of ['int32', 'int64', 'float32', 'float64', 'utf8'] as const) {
      for (let k = 0; k < 10; k++) {
        const x = 1 + r.int(4);
        const ls = randLists(r, t, 30);
        expect(rows(run('firstX', { x }, list(t, ls)))).toEqual(
          ls.map((l) => (l === null ? null : l.slice(0, x).map((v) => (t === 'int64' && v !== null ? big(v) : v)))),
        );
        const xs = randScalars(r, t, 30);
        expect(rows(run('firstX', { x }, col(t, xs)))).toEqual(xs.map((v) => (v === null ? null : [t === 'int64' ? big(v) : v])));
      }
    }
  });
});

describe('ngram', () => {
  it('matches the BigInt fold; null elements are dropped; scalars promoted', () => {
    for (const [, c, xs] of intInputs(29, 8)) {
      for (const n of [1, 2, 3]) {
        const out = run('ngram', { n }, c);
        expect(rows(out)).toEqual(
          xs.map((row) => {
            if (row === null) return null;
            const ids = (Array.isArray(row) ? row : [row]).filter((x) => x !== null).map(big);
            return Array.from({ length: Math.max(0, ids.length - n + 1) }, (_, s) => refFold(ids.slice(s, s + n)));
          }),
        );
      }
    }
  });
  it('n=1 equals sigridHash with salt 0 before the modulo', () => {
    const ids = [0n, 1n, -1n, INT64_MAX, 123456789n];
    const out = rows(run('ngram', { n: 1 }, list('int64', [ids]))) as bigint[][];
    const hashed = rows(run('sigridHash', { max: 1000003 }, list('int64', [ids]))) as bigint[][];
    expect(out[0]!.map((h) => refFloorMod(h, 1000003n))).toEqual(hashed[0]);
    expect(rows(run('ngram', { n: 2 }, list('int32', [[1, 2, 3], [4], []])))).toEqual([[refFold([1n, 2n]), refFold([2n, 3n])], [], []]);
  });
});

describe('cross', () => {
  const fTypes = (m: Record<string, ColumnType>) => new Map(Object.entries(m));
  function refCross(operands: Row[][], max: bigint): Row[] {
    return operands[0]!.map((_, i) => {
      const lists = operands.map((o) => {
        const v = o[i];
        return (v === null ? [] : Array.isArray(v) ? v : [v]).filter((x) => x !== null).map(big);
      });
      let tuples: bigint[][] = [[]];
      for (const l of lists) tuples = tuples.flatMap((t) => l.map((x) => [...t, x]));
      return tuples.map((t) => refFloorMod(refFold(t), max));
    });
  }
  it('matches the Cartesian product hashed by the combine chain', () => {
    const r = rng(30);
    for (let k = 0; k < 30; k++) {
      const n = 20;
      const ops = Array.from({ length: 1 + r.int(3) }, () => {
        const t = r.pick(INTS);
        const data = r.chance(0.5) ? randLists(r, t, n, 4) : randScalars(r, t, n);
        const c =
          Array.isArray(data.find((x) => x !== null)) || data.every((x) => x === null) ? list(t, data as Array<Scalar[] | null>) : col(t, data as Scalar[]);
        return { c, data: data as Row[] };
      });
      const [first, ...rest] = ops;
      const names = rest.map((_, j) => `f${j}`);
      const features = new Map(rest.map((o, j) => [names[j]!, o.c]));
      const featureTypes = new Map(
        rest.map((o, j): [string, ColumnType] => [
          names[j]!,
          o.c.type === 'list' ? { kind: 'list', child: o.c.child.type } : { kind: o.c.type as PrimitiveType },
        ]),
      );
      const max = r.pick([1n, 97n, 1n << 40n, INT64_MAX]);
      if (names.length === 0) continue;
      const out = run('cross', { inputs: names, max: max.toString() }, first!.c, ctx({ features, featureTypes }));
      expect(rows(out)).toEqual(refCross([first!.data, ...rest.map((o) => o.data)], max));
    }
  });
  it('row-major order, first operand slowest', () => {
    const a = list('int64', [[1, 2]]);
    const b = list('int32', [[3, 4, 5]]);
    const out = run(
      'cross',
      { inputs: ['b'], max: '9223372036854775807' },
      a,
      ctx({ features: new Map([['b', b]]), featureTypes: fTypes({ b: { kind: 'list', child: 'int32' } }) }),
    );
    const h = (x: bigint, y: bigint) => refFloorMod(refFold([x, y]), INT64_MAX);
    expect(rows(out)).toEqual([[h(1n, 3n), h(1n, 4n), h(1n, 5n), h(2n, 3n), h(2n, 4n), h(2n, 5n)]]);
  });
  it('rejects unknown and non-integer features at plan time', () => {
    expect(() => typeOf('cross', { inputs: ['nope'], max: 10 }, { kind: 'int64' })).toThrow(
      '"inputs" names "nope", which is not a feature defined before this one',
    );
    expect(() => typeOf('cross', { inputs: ['d'], max: 10 }, { kind: 'int64' }, fTypes({ d: { kind: 'float32' } }))).toThrow(
      '"inputs" feature "d" needs an integer scalar or list input, got float32',
    );
    expect(typeOf('cross', { inputs: ['d'], max: 10 }, { kind: 'int32' }, fTypes({ d: { kind: 'list', child: 'int64' } }))).toEqual({
      kind: 'list',
      child: 'int64',
    });
  });
});
