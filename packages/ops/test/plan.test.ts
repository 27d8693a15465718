import { describe, expect, it } from 'vitest';
import type { ColumnType } from '../src/column.js';
import { OPS } from '../src/ops/index.js';
import { OpPlanError } from '../src/ops/types.js';
import { typeOf } from './helpers.js';

const I32: ColumnType = { kind: 'int32' };
const I64: ColumnType = { kind: 'int64' };
const F32: ColumnType = { kind: 'float32' };
const F64: ColumnType = { kind: 'float64' };
const STR: ColumnType = { kind: 'utf8' };
const L = (child: 'int32' | 'int64' | 'float32' | 'float64' | 'utf8'): ColumnType => ({ kind: 'list', child });
const FIX: ColumnType = { kind: 'fixed', size: 3 };

/** The OpPlanError reason of validating `params` for `op`. */
function paramError(op: string, params: Record<string, unknown>): string {
  try {
    OPS.get(op)!.validate(params);
  } catch (e) {
    expect(e).toBeInstanceOf(OpPlanError);
    return (e as Error).message;
  }
  throw new Error(`${op} accepted ${JSON.stringify(params)}`);
}

function typeError(op: string, params: Record<string, unknown>, t: ColumnType): string {
  try {
    typeOf(op, params, t);
  } catch (e) {
    expect(e).toBeInstanceOf(OpPlanError);
    return (e as Error).message;
  }
  throw new Error(`${op} accepted ${JSON.stringify(t)}`);
}

const MIN_PARAMS: Record<string, Record<string, unknown>> = {
  fillNull: { value: 0 },
  cast: { to: 'int64' },
  neg2zero: {},
  clamp: { min: 0, max: 1 },
  log: {},
  logit: {},
  boxCox: { lambda: 0 },
  oneHot: { numClasses: 4 },
  bucketize: { borders: [0] },
  sigridHash: { max: 10 },
  firstX: { x: 1 },
  ngram: { n: 2 },
  cross: { inputs: ['a'], max: 10 },
  mapId: { mapping: {} },
  hex2int: {},
  modulus: { m: 3 },
  vocab: {},
};

describe('registry', () => {
  it('has every op of OPS.md, keyed by name', () => {
    expect([...OPS.keys()].sort()).toEqual(Object.keys(MIN_PARAMS).sort());
    for (const [name, def] of OPS) expect(def.name).toBe(name);
  });
  it('every op rejects unknown params, naming them, and tolerates a stray "op"', () => {
    for (const [name, params] of Object.entries(MIN_PARAMS)) {
      expect(paramError(name, { ...params, bogus: 1 })).toMatch(/^unknown param "bogus"/);
      expect(() => OPS.get(name)!.validate({ op: name, ...params })).not.toThrow();
    }
  });
  it('normalized params survive JSON', () => {
    for (const [name, params] of Object.entries(MIN_PARAMS)) {
      const p = OPS.get(name)!.validate(params);
      expect(JSON.parse(JSON.stringify(p))).toEqual(p);
    }
    expect(OPS.get('sigridHash')!.validate({ salt: '-5', max: '9223372036854775807' })).toEqual({ salt: -5, max: '9223372036854775807' });
  });
});

describe('param validation', () => {
  it.each([
    ['fillNull', {}, 'missing required param "value"'],
    ['fillNull', { value: 'abc' }, '"value" must be a finite number or an int64 decimal string'],
    ['fillNull', { value: NaN }, '"value" must be a finite number'],
    ['cast', { to: 'float64' }, '"to" must be one of float32, int32, int64, got "float64"'],
    ['clamp', { min: 5, max: 1 }, '"min" (5) must be <= "max" (1)'],
    ['clamp', { min: 0 }, 'missing required param "max"'],
    ['clamp', { min: '1', max: [] }, '"max" must be a finite number'],
    ['clamp', { min: '9223372036854775807', max: '9223372036854775806' }, 'must be <= "max"'],
    ['log', { offset: '1' }, '"offset" must be a finite number, got "1"'],
    ['log', { offset: Infinity }, '"offset" must be a finite number'],
    ['logit', { eps: 0 }, '"eps" must be > 0'],
    ['logit', { eps: 0.5 }, '"eps" must be < 0.5'],
    ['boxCox', {}, 'missing required param "lambda"'],
    ['oneHot', { numClasses: 0 }, '"numClasses" must be >= 1'],
    ['oneHot', { numClasses: 2.5 }, '"numClasses" must be an integer'],
    ['oneHot', { numClasses: 2 ** 21 }, '"numClasses" must be <= 1048576'],
    ['bucketize', { borders: [] }, '"borders" must be a non-empty list'],
    ['bucketize', { borders: [1, 0] }, '"borders" must be non-decreasing'],
    ['bucketize', { borders: [0, NaN] }, '"borders"[1] must be a finite number'],
    ['bucketize', { borders: [0], right: 1 }, '"right" must be true or false'],
    ['sigridHash', {}, 'missing required param "max"'],
    ['sigridHash', { max: 0 }, '"max" must be >= 1'],
    ['sigridHash', { max: 2 ** 60 }, '"max" must be an int64: a safe integer or a decimal string'],
    ['sigridHash', { max: 10, salt: 1.5 }, '"salt" must be an int64'],
    ['sigridHash', { max: '9223372036854775808' }, '"max" must be an int64'],
    ['firstX', { x: 0 }, '"x" must be >= 1'],
    ['ngram', { n: '2' }, '"n" must be an integer, got "2"'],
    ['cross', { max: 10 }, 'missing required param "inputs"'],
    ['cross', { inputs: [], max: 10 }, '"inputs" must be a non-empty list of feature names'],
    ['cross', { inputs: ['a', 3], max: 10 }, '"inputs" must be a non-empty list'],
    ['cross', { inputs: ['a'], max: -1 }, '"max" must be >= 1'],
    ['mapId', {}, 'missing required param "mapping"'],
    ['mapId', { mapping: 5 }, '"mapping" must be an object'],
    ['mapId', { mapping: [[1, 2, 3]] }, '"mapping"[0] must be a [from, to] pair'],
    ['mapId', { mapping: { x: 1 } }, '"mapping" key must be an int64'],
    [
      'mapId',
      {
        mapping: [
          [1, 2],
          ['1', 3],
        ],
      },
      '"mapping" maps 1 more than once',
    ],
    ['mapId', { mapping: {}, default: 'no' }, '"default" must be an int64'],
    ['modulus', { m: 0 }, '"m" must be >= 1'],
    ['vocab', { minCount: 0 }, '"minCount" must be >= 1'],
    ['vocab', { oov: 0.5 }, '"oov" must be an int64'],
  ])('%s %j → %s', (op, params, reason) => {
    expect(paramError(op, params)).toContain(reason);
  });
});

describe('type rules', () => {
  it('output types', () => {
    expect(typeOf('fillNull', { value: 1 }, L('int32'))).toEqual(L('int32'));
    expect(typeOf('cast', { to: 'float32' }, L('int64'))).toEqual(L('float32'));
    expect(typeOf('cast', { to: 'int32' }, F64)).toEqual(I32);
    expect(typeOf('neg2zero', {}, F64)).toEqual(F64);
    expect(typeOf('clamp', { min: 0, max: 1 }, I64)).toEqual(I64);
    expect(typeOf('log', {}, I32)).toEqual(F32);
    expect(typeOf('logit', {}, L('float64'))).toEqual(L('float32'));
    expect(typeOf('boxCox', { lambda: 1 }, I64)).toEqual(F32);
    expect(typeOf('oneHot', { numClasses: 5 }, I32)).toEqual({ kind: 'fixed', size: 5 });
    expect(typeOf('bucketize', { borders: [1] }, F32)).toEqual(I32);
    expect(typeOf('bucketize', { borders: [1] }, L('int64'))).toEqual(L('int32'));
    expect(typeOf('sigridHash', { max: 3 }, I32)).toEqual(I64);
    expect(typeOf('sigridHash', { max: 3 }, L('int32'))).toEqual(L('int64'));
    expect(typeOf('firstX', { x: 3 }, STR)).toEqual(L('utf8'));
    expect(typeOf('firstX', { x: 3 }, L('float32'))).toEqual(L('float32'));
    expect(typeOf('ngram', { n: 2 }, I32)).toEqual(L('int64'));
    expect(typeOf('mapId', { mapping: {} }, L('int32'))).toEqual(L('int64'));
    expect(typeOf('hex2int', {}, STR)).toEqual(I64);
    expect(typeOf('hex2int', {}, L('utf8'))).toEqual(L('int64'));
    expect(typeOf('modulus', { m: 3 }, I32)).toEqual(I32);
    expect(typeOf('vocab', {}, L('int32'))).toEqual(L('int64'));
  });
  it('wrong input types name the expected and actual type, with a fix when there is one', () => {
    expect(typeError('sigridHash', { max: 3 }, F32)).toBe('needs an integer scalar or list input, got float32; add {"op":"cast","to":"int64"} first');
    expect(typeError('sigridHash', { max: 3 }, L('float64'))).toBe(
      'needs an integer scalar or list input, got list<float64>; add {"op":"cast","to":"int64"} first',
    );
    expect(typeError('modulus', { m: 3 }, STR)).toBe('needs an integer scalar or list input, got utf8; add {"op":"hex2int"} first');
    expect(typeError('log', {}, STR)).toBe('needs a numeric scalar or list input, got utf8; add {"op":"hex2int"} first');
    expect(typeError('log', {}, FIX)).toBe('needs a numeric scalar or list input, got float32[3]');
    expect(typeError('hex2int', {}, I64)).toBe('needs a utf8 scalar or list input, got int64');
    expect(typeError('oneHot', { numClasses: 2 }, L('int32'))).toBe('needs an integer scalar input, got list<int32>');
    expect(typeError('oneHot', { numClasses: 2 }, F64)).toContain('got float64; add {"op":"cast","to":"int64"} first');
    expect(typeError('firstX', { x: 1 }, FIX)).toBe('needs a list or scalar input, got float32[3]');
    for (const op of ['fillNull', 'cast', 'neg2zero', 'clamp', 'logit', 'boxCox', 'bucketize'])
      expect(typeError(op, MIN_PARAMS[op]!, STR)).toContain('got utf8');
    for (const op of ['ngram', 'mapId', 'vocab']) expect(typeError(op, MIN_PARAMS[op]!, F32)).toContain('got float32');
  });
  it('params that do not fit the input type', () => {
    expect(typeError('fillNull', { value: 1.5 }, I32)).toBe('"value" 1.5 does not fit the int32 input (int32)');
    expect(typeError('fillNull', { value: 2 ** 31 }, L('int32'))).toBe('"value" 2147483648 does not fit the int32 input (list<int32>)');
    expect(typeError('fillNull', { value: '9223372036854775807' }, F32)).toContain('does not fit the float32 input');
    expect(typeOf('fillNull', { value: '9223372036854775807' }, I64)).toEqual(I64);
    expect(typeError('clamp', { min: 0.5, max: 1 }, I64)).toBe('"min" must be an integer for the int64 input, got 0.5');
    expect(typeError('clamp', { min: 0, max: 2 ** 40 }, I32)).toContain('"max" 1099511627776 is outside the int32 range');
    expect(typeError('modulus', { m: 2 ** 31 + 1 }, I32)).toContain('too large for the int32 input');
    expect(typeOf('modulus', { m: 2 ** 31 }, I32)).toEqual(I32);
  });
});
