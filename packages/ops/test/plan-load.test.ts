import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ColumnType } from '../src/column.js';
import { PlanError, SluiceError } from '../src/errors.js';
import { DEFAULT_BATCH_SIZE, DEFAULT_PREFETCH, loadPlan, typeCheckPlan, type Plan } from '../src/plan/load.js';
import type { FeatureSpec, OpSpec, PlanSpec } from '../src/plan/types.js';
import { tempDir } from '../../core/test/helpers.js';

/** The example plan of /work/shared/OPS.md, verbatim. */
const OPS_MD_EXAMPLE = `{
  "batchSize": 8192,
  "backend": { "name": "cpu", "workers": 2 },
  "label": "label",
  "features": [
    { "name": "I1", "input": "I1", "kind": "dense",
      "ops": [ {"op": "fillNull", "value": 0}, {"op": "neg2zero"}, {"op": "log", "offset": 1} ] },
    { "name": "I1_bucket", "input": "I1", "kind": "sparse",
      "ops": [ {"op": "fillNull", "value": 0}, {"op": "bucketize", "borders": [0, 1, 10, 100]} ] },
    { "name": "C1", "input": "C1", "kind": "sparse",
      "ops": [ {"op": "hex2int"}, {"op": "sigridHash", "salt": 0, "max": 500000} ] }
  ]
}`;

const dir = tempDir('sluice-load-test-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const I32: ColumnType = { kind: 'int32' };
const I64: ColumnType = { kind: 'int64' };
const F32: ColumnType = { kind: 'float32' };
const STR: ColumnType = { kind: 'utf8' };
const LIST_I64: ColumnType = { kind: 'list', child: 'int64' };

/** The schema of a Criteo-like file the example plan reads. */
const SCHEMA: ReadonlyMap<string, ColumnType> = new Map<string, ColumnType>([
  ['label', F32],
  ['I1', I32],
  ['I2', F32],
  ['C1', STR],
  ['ids', LIST_I64],
  ['n64', I64],
]);

const feature = (name: string, input: string, kind: 'dense' | 'sparse', ...ops: OpSpec[]): FeatureSpec => ({ name, input, kind, ops });
const plan = (...features: FeatureSpec[]): PlanSpec => ({ features });

/** The message of the PlanError that loading (and, with a schema, type-checking) `spec` throws. */
function planError(spec: unknown, schema?: ReadonlyMap<string, ColumnType>): PlanError {
  try {
    const p = loadPlan(spec);
    if (schema) typeCheckPlan(p, schema);
  } catch (e) {
    expect(e).toBeInstanceOf(PlanError);
    expect(e).toBeInstanceOf(SluiceError);
    return e as PlanError;
  }
  throw new Error(`accepted ${JSON.stringify(spec)}`);
}
const loadError = (spec: unknown): string => planError(spec).message;
const typeError = (spec: PlanSpec, schema: ReadonlyMap<string, ColumnType> = SCHEMA): string => {
  const p = loadPlan(spec); // loads fine: the problem is only visible against the data
  expect(p.features.length).toBe(spec.features.length);
  return planError(spec, schema).message;
};

describe('loadPlan', () => {
  it('accepts the OPS.md example plan as JSON text, as a file path and as an object', () => {
    const path = join(dir, 'plan.json');
    writeFileSync(path, OPS_MD_EXAMPLE);
    const fromText = loadPlan(OPS_MD_EXAMPLE);
    const fromFile = loadPlan(path);
    const fromObject = loadPlan(JSON.parse(OPS_MD_EXAMPLE));
    for (const p of [fromText, fromFile, fromObject]) {
      expect(p.batchSize).toBe(8192);
      expect(p.backend).toEqual({ name: 'cpu', workers: 2 });
      expect(p.label).toBe('label');
      expect(p.features.map((f) => [f.name, f.input, f.kind])).toEqual([
        ['I1', 'I1', 'dense'],
        ['I1_bucket', 'I1', 'sparse'],
        ['C1', 'C1', 'sparse'],
      ]);
      expect(p.features.map((f) => f.ops.map((o) => o.op))).toEqual([
        ['fillNull', 'neg2zero', 'log'],
        ['fillNull', 'bucketize'],
        ['hex2int', 'sigridHash'],
      ]);
      expect(p.features.flatMap((f) => f.ops.map((o) => o.index))).toEqual([0, 1, 2, 0, 1, 0, 1]);
      for (const f of p.features) for (const o of f.ops) expect(o.def.name).toBe(o.op);
      expect(p.spec).toEqual(JSON.parse(OPS_MD_EXAMPLE));
    }
    // Params are the op's normalized params, without the "op" key.
    const log = fromText.features[0]!.ops[2]!;
    expect(log.params).not.toHaveProperty('op');
    expect(fromText.features[1]!.ops[1]!.params).toMatchObject({ borders: [0, 1, 10, 100] });
  });

  it('accepts JSON text with leading whitespace', () => {
    expect(loadPlan(`\n  ${OPS_MD_EXAMPLE}`).features.length).toBe(3);
  });

  it('fills defaults: batchSize 8192, prefetch 4, backend cpu, dropLast false, epochs 1', () => {
    const p = loadPlan(plan(feature('I1', 'I1', 'dense')));
    expect(DEFAULT_BATCH_SIZE).toBe(8192);
    expect(DEFAULT_PREFETCH).toBe(4);
    expect(p.batchSize).toBe(8192);
    expect(p.prefetch).toBe(4);
    expect(p.backend).toEqual({ name: 'cpu' });
    expect(p.dropLast).toBe(false);
    expect(p.epochs).toBe(1);
    expect(p.label).toBeNull();
    expect(p.input).toBeNull();
    expect(p.shuffle).toBeNull();
    expect(p.shard).toEqual({ rank: 0, worldSize: 1 });
  });

  it('fills defaults per feature and per sub-object', () => {
    const p = loadPlan({
      backend: 'cpu',
      input: 'data/*.parquet',
      shuffle: { seed: 3 },
      features: [{ name: 'I1', input: 'I1', kind: 'dense' }],
    });
    expect(p.backend).toEqual({ name: 'cpu' });
    expect(p.input).toEqual(['data/*.parquet']);
    expect(p.shuffle).toEqual({ seed: 3, bufferRows: 100_000 });
    expect(p.features[0]!.ops).toEqual([]);
    expect(loadPlan({ shuffle: false, features: [feature('I1', 'I1', 'dense')] }).shuffle).toBeNull();
  });

  it('keeps values that are given', () => {
    const p = loadPlan({
      batchSize: 10,
      prefetch: 2,
      dropLast: true,
      epochs: 3,
      label: 'y',
      input: ['a.parquet', 'b.parquet'],
      shard: { rank: 1, worldSize: 4 },
      shuffle: { seed: 0, bufferRows: 0 },
      features: [feature('I1', 'I1', 'dense')],
    });
    expect([p.batchSize, p.prefetch, p.dropLast, p.epochs, p.label]).toEqual([10, 2, true, 3, 'y']);
    expect(p.input).toEqual(['a.parquet', 'b.parquet']);
    expect(p.shard).toEqual({ rank: 1, worldSize: 4 });
    expect(p.shuffle).toEqual({ seed: 0, bufferRows: 0 });
  });

  describe('rejects a bad op, naming feature and op as `feature F, op NAME (#k): reason`', () => {
    it.each<[string, FeatureSpec, RegExp]>([
      [
        'an unknown op',
        feature('I1', 'I1', 'dense', { op: 'fillNull', value: 0 }, { op: 'log2' }),
        /^feature I1, op log2 \(#2\): unknown op \(known: .*\bfillNull\b.*\bvocab\b/,
      ],
      [
        'bucketize with decreasing borders',
        feature('I1_bucket', 'I1', 'sparse', { op: 'bucketize', borders: [0, 10, 5] }),
        /^feature I1_bucket, op bucketize \(#1\): "borders" must be non-decreasing/,
      ],
      [
        'bucketize with no borders',
        feature('B', 'I1', 'sparse', { op: 'bucketize', borders: [] }),
        /^feature B, op bucketize \(#1\): "borders" must be a non-empty list/,
      ],
      [
        'clamp with min > max',
        feature('X', 'I1', 'dense', { op: 'fillNull', value: 0 }, { op: 'neg2zero' }, { op: 'clamp', min: 5, max: 1 }),
        /^feature X, op clamp \(#3\): "min" \(5\) must be <= "max" \(1\)/,
      ],
      [
        'sigridHash with max 0',
        feature('C1', 'C1', 'sparse', { op: 'hex2int' }, { op: 'sigridHash', salt: 0, max: 0 }),
        /^feature C1, op sigridHash \(#2\): "max" must be >= 1/,
      ],
      [
        'sigridHash without max',
        feature('C1', 'C1', 'sparse', { op: 'hex2int' }, { op: 'sigridHash' }),
        /^feature C1, op sigridHash \(#2\): missing required param "max"/,
      ],
      ['an unknown param', feature('I1', 'I1', 'dense', { op: 'log', ofset: 1 }), /^feature I1, op log \(#1\): unknown param "ofset"/],
      ['a bad param type', feature('I1', 'I1', 'dense', { op: 'oneHot', numClasses: 'ten' }), /^feature I1, op oneHot \(#1\): "numClasses" must be/],
    ])('%s', (_what, f, re) => {
      const e = planError(plan(feature('ok', 'I1', 'dense'), f));
      expect(e.message).toMatch(re);
      expect(e.where.feature).toBe(f.name);
      expect(e.where.op).toMatch(/^\w+ \(#\d+\)$/);
    });

    it('an op entry without "op"', () => {
      expect(loadError(plan(feature('I1', 'I1', 'dense', { value: 0 } as unknown as OpSpec)))).toBe('feature I1: ops[0] must be an object with an "op"');
    });
  });

  describe('rejects a bad plan or feature', () => {
    it.each<[string, unknown, string | RegExp]>([
      ['an unknown plan field', { features: [feature('I1', 'I1', 'dense')], batchsize: 10 }, /^unknown plan field "batchsize" \(expected one of .*batchSize/],
      ['an unknown feature field', plan({ ...feature('I1', 'I1', 'dense'), op: [] } as FeatureSpec), /^feature I1: unknown field "op"/],
      ['duplicate feature names', plan(feature('I1', 'I1', 'dense'), feature('I1', 'I2', 'dense')), 'feature I1: duplicate feature name'],
      ['a missing input', plan({ name: 'I1', kind: 'dense' } as FeatureSpec), 'feature I1: needs an "input" column name'],
      ['an empty input', plan(feature('I1', '', 'dense')), 'feature I1: needs an "input" column name'],
      [
        'a bad kind',
        plan({ name: 'I1', input: 'I1', kind: 'categorical' } as unknown as FeatureSpec),
        'feature I1: kind must be "dense" or "sparse", got "categorical"',
      ],
      ['a missing kind', plan({ name: 'I1', input: 'I1' } as FeatureSpec), 'feature I1: kind must be "dense" or "sparse", got undefined'],
      ['a feature without a name', plan({ input: 'I1', kind: 'dense' } as FeatureSpec), 'features[0] needs a "name"'],
      ['a feature that is not an object', { features: ['I1'] }, 'features[0] must be an object'],
      [
        'ops that are not a list',
        plan({ name: 'I1', input: 'I1', kind: 'dense', ops: { op: 'log' } } as unknown as FeatureSpec),
        'feature I1: ops must be a list',
      ],
      ['no features', { features: [] }, 'features must be a non-empty list'],
      ['features missing', { label: 'label' }, 'features must be a non-empty list'],
      ['a plan that is not an object', [feature('I1', 'I1', 'dense')], 'plan must be a JSON object'],
      ['a null plan', null, 'plan must be a JSON object'],
      ['batchSize 0', { batchSize: 0, features: [feature('I1', 'I1', 'dense')] }, 'batchSize must be a positive integer, got 0'],
      ['a fractional batchSize', { batchSize: 1.5, features: [feature('I1', 'I1', 'dense')] }, 'batchSize must be a positive integer, got 1.5'],
      ['prefetch 0', { prefetch: 0, features: [feature('I1', 'I1', 'dense')] }, 'prefetch must be a positive integer, got 0'],
      ['epochs 0', { epochs: 0, features: [feature('I1', 'I1', 'dense')] }, 'epochs must be a positive integer, got 0'],
      ['a non-boolean dropLast', { dropLast: 'yes', features: [feature('I1', 'I1', 'dense')] }, 'dropLast must be true or false'],
      ['a backend without a name', { backend: { workers: 2 }, features: [feature('I1', 'I1', 'dense')] }, /^backend must be a name or an object/],
      ['an empty label', { label: '', features: [feature('I1', 'I1', 'dense')] }, 'label must be a column name'],
      ['a shard rank out of range', { shard: { rank: 2, worldSize: 2 }, features: [feature('I1', 'I1', 'dense')] }, /^shard must be/],
      ['a shuffle without a seed', { shuffle: { bufferRows: 10 }, features: [feature('I1', 'I1', 'dense')] }, /^shuffle must be false or/],
      ['an empty input list', { input: [], features: [feature('I1', 'I1', 'dense')] }, /^input must be a path/],
      // Values JSON would misreport (as null, or 0) are quoted as they are.
      ['an infinite batchSize', { batchSize: Infinity, features: [feature('I1', 'I1', 'dense')] }, 'batchSize must be a positive integer, got Infinity'],
      [
        'a fillNull value of Infinity',
        plan(feature('I1', 'I1', 'dense', { op: 'fillNull', value: Infinity })),
        'feature I1, op fillNull (#1): "value" must be a finite number or an int64 decimal string, got Infinity',
      ],
      [
        'a clamp bound of NaN',
        plan(feature('I1', 'I1', 'dense', { op: 'clamp', min: Number.NaN, max: 1 })),
        'feature I1, op clamp (#1): "min" must be a finite number or an int64 decimal string, got NaN',
      ],
      ['a bigint batchSize', { batchSize: 10n, features: [feature('I1', 'I1', 'dense')] }, 'batchSize must be a positive integer, got 10'],
    ])('%s', (_what, spec, expected) => {
      const msg = loadError(spec);
      if (typeof expected === 'string') expect(msg).toBe(expected);
      else expect(msg).toMatch(expected);
    });

    it('invalid JSON text: the line and column of the first mistake, and what was expected there', () => {
      expect(loadError('{"features": [')).toBe("plan is not valid JSON at line 1, column 15: the text ends early (expected ']')");
      expect(loadError('{ features: [] }')).toBe('plan is not valid JSON at line 1, column 3: unexpected text "features"');
      expect(loadError('{\n  "batchSize": 8,\n}')).toBe(
        'plan is not valid JSON at line 3, column 1: expected a property name in double quotes (a trailing comma?)',
      );
      expect(loadError('{"batchSize": 8} // the plan')).toBe('plan is not valid JSON at line 1, column 18: a comment (JSON has none)');
      expect(loadError('{"batchSize": tru}')).toBe('plan is not valid JSON at line 1, column 15: unexpected text "tru"');
    });

    it('a plan saved with a byte-order mark is read as if it had none', () => {
      const path = join(dir, 'bom.json');
      const spec = { features: [feature('I1', 'I1', 'dense')] };
      writeFileSync(path, '\uFEFF' + JSON.stringify(spec));
      expect(loadPlan(path).features.map((f) => f.name)).toEqual(['I1']);
      expect(loadPlan('\uFEFF' + JSON.stringify(spec)).features.map((f) => f.name)).toEqual(['I1']);
    });

    it('a plan file with invalid JSON, naming the file and the place', () => {
      const path = join(dir, 'bad.json');
      writeFileSync(path, '{"features": [\n  {"name": "I1",}\n]}');
      expect(loadError(path)).toBe(`plan file ${path} is not valid JSON at line 2, column 17: expected a property name in double quotes (a trailing comma?)`);
      writeFileSync(path, '');
      expect(loadError(path)).toBe(`plan file ${path} is empty`);
      // A data file named as the plan: said so, not JSON.parse's quote of its bytes.
      writeFileSync(path, Buffer.from('PAR1\u0015\u0004\u0000\u0000garbage'));
      expect(loadError(path)).toBe(`plan file ${path} is a Parquet file, not JSON`);
      writeFileSync(path, Buffer.from([0x7b, 0x00, 0x01, 0x7d]));
      expect(loadError(path)).toBe(`plan file ${path} is binary, not JSON`);
    });

    it('an unreadable plan path, naming it and the reason in words', () => {
      const missing = join(dir, 'no-such-plan.json');
      expect(loadError(missing)).toBe(`cannot read plan file ${missing}: no such file`);
      // A directory is not a plan file either.
      const sub = join(dir, 'plans.d');
      mkdirSync(sub, { recursive: true });
      expect(loadError(sub)).toBe(`cannot read plan file ${sub}: it is a directory`);
    });
  });
});

describe('typeCheckPlan', () => {
  const example = (): Plan => loadPlan(OPS_MD_EXAMPLE);

  it('types the OPS.md example plan: per-op types, widths, columns in first-use order, label type', () => {
    const t = typeCheckPlan(example(), SCHEMA);
    const [i1, bucket, c1] = t.features;
    expect(i1!.inputType).toEqual(I32);
    expect(i1!.types).toEqual([I32, I32, F32]);
    expect(i1!.outputType).toEqual(F32);
    expect(i1!.width).toBe(1);
    expect(bucket!.outputType.kind === 'int32' || bucket!.outputType.kind === 'int64').toBe(true);
    expect(bucket!.width).toBe(0);
    expect(c1!.inputType).toEqual(STR);
    expect(c1!.types).toEqual([I64, I64]);
    expect(c1!.width).toBe(0);
    expect(t.columns).toEqual(['I1', 'C1', 'label']);
    expect(t.labelType).toBe('float32');
    // Plan fields carry over.
    expect(t.batchSize).toBe(8192);
    expect(t.backend).toEqual({ name: 'cpu', workers: 2 });
  });

  it('gives a oneHot dense feature the width numClasses; no label means no label column', () => {
    const t = typeCheckPlan(loadPlan(plan(feature('oh', 'I1', 'dense', { op: 'fillNull', value: 0 }, { op: 'oneHot', numClasses: 5 }))), SCHEMA);
    expect(t.features[0]!.outputType).toEqual({ kind: 'fixed', size: 5 });
    expect(t.features[0]!.width).toBe(5);
    expect(t.labelType).toBeNull();
    expect(t.columns).toEqual(['I1']);
  });

  it('accepts int64 list and int scalar inputs for sparse features without ops, and an int label', () => {
    const t = typeCheckPlan(loadPlan({ label: 'I1', features: [feature('ids', 'ids', 'sparse'), feature('n', 'n64', 'sparse')] }), SCHEMA);
    expect(t.features.map((f) => f.outputType)).toEqual([LIST_I64, I64]);
    expect(t.labelType).toBe('int32');
    expect(t.columns).toEqual(['ids', 'n64', 'I1']);
  });

  it('rejects a missing column, naming the feature, the column and where it looked', () => {
    const e = planError(plan(feature('I9', 'I9_raw', 'dense')), SCHEMA);
    expect(e.message).toMatch(/^feature I9: input column "I9_raw" is not in the input \(columns: label, I1, I2, C1, ids, n64\)$/);
    expect(e.where.feature).toBe('I9');
    expect(() => typeCheckPlan(loadPlan(plan(feature('I9', 'I9_raw', 'dense'))), SCHEMA, 'day_0.parquet')).toThrow(
      /^feature I9: input column "I9_raw" is not in day_0\.parquet/,
    );
  });

  it('lists at most 20 columns of a wide schema', () => {
    const wide = new Map<string, ColumnType>(Array.from({ length: 30 }, (_, i) => [`c${i}`, I32] as const));
    const msg = typeError(plan(feature('x', 'nope', 'dense')), wide);
    expect(msg).toContain('c19, …)');
    expect(msg).not.toContain('c20');
  });

  it('rejects an op given the wrong input type (hex2int on int32)', () => {
    const e = planError(plan(feature('C1', 'I1', 'sparse', { op: 'hex2int' }, { op: 'sigridHash', max: 10 })), SCHEMA);
    expect(e.message).toBe('feature C1, op hex2int (#1): needs a utf8 scalar or list input, got int32');
    expect(e.where).toEqual({ feature: 'C1', op: 'hex2int (#1)' });
  });

  it('names the op position of a type error further down the chain', () => {
    expect(
      typeError(plan(feature('C1', 'C1', 'sparse', { op: 'hex2int' }, { op: 'sigridHash', max: 10 }, { op: 'log' }, { op: 'oneHot', numClasses: 3 }))),
    ).toMatch(/^feature C1, op oneHot \(#4\): needs an integer scalar input, got float32/);
  });

  it('rejects a dense feature that ends as a list or a string', () => {
    expect(typeError(plan(feature('L', 'ids', 'dense')))).toBe('feature L: a dense feature must end as a numeric scalar, got list<int64>');
    expect(typeError(plan(feature('L', 'ids', 'dense', { op: 'firstX', x: 1 })))).toMatch(
      /^feature L: a dense feature must end as a numeric scalar, got list</,
    );
    expect(typeError(plan(feature('S', 'C1', 'dense')))).toBe('feature S: a dense feature must end as a numeric scalar, got utf8');
  });

  it('rejects a sparse feature that ends as floats, a string or a dense vector', () => {
    expect(typeError(plan(feature('F', 'I1', 'sparse', { op: 'log' })))).toMatch(
      /^feature F: a sparse feature must end as integer ids \(scalar or list\), got float32; add hex2int/,
    );
    expect(typeError(plan(feature('F', 'I2', 'sparse')))).toMatch(/^feature F: a sparse feature must end as integer ids .*got float32/);
    expect(typeError(plan(feature('S', 'C1', 'sparse')))).toMatch(/^feature S: a sparse feature must end as integer ids .*got utf8/);
    expect(typeError(plan(feature('O', 'I1', 'sparse', { op: 'fillNull', value: 0 }, { op: 'oneHot', numClasses: 3 })))).toMatch(
      /^feature O: a sparse feature must end as integer ids .*got float32\[3\]/,
    );
  });

  it('rejects a missing label column', () => {
    const e = planError({ label: 'click', features: [feature('I1', 'I1', 'dense')] }, SCHEMA);
    expect(e.message).toBe('label column "click" is not in the input');
  });

  it('rejects a non-numeric label', () => {
    expect(typeError({ label: 'C1', features: [feature('I1', 'I1', 'dense')] })).toBe('label column "C1" must be numeric, got utf8');
    expect(typeError({ label: 'ids', features: [feature('I1', 'I1', 'dense')] })).toBe('label column "ids" must be numeric, got list<int64>');
  });

  describe('cross', () => {
    const c1 = feature('C1', 'C1', 'sparse', { op: 'hex2int' }, { op: 'sigridHash', max: 100 });
    const crossOf = (...inputs: string[]): FeatureSpec => feature('X', 'ids', 'sparse', { op: 'cross', inputs, max: 1000 });

    it('accepts a cross of features defined before it', () => {
      const t = typeCheckPlan(
        loadPlan(plan(c1, feature('B', 'I1', 'sparse', { op: 'fillNull', value: 0 }, { op: 'bucketize', borders: [1, 10] }), crossOf('C1', 'B'))),
        SCHEMA,
      );
      expect(t.features[2]!.outputType).toEqual(LIST_I64);
    });

    it('rejects a cross of a feature defined after it', () => {
      const e = planError(plan(crossOf('C1'), c1), SCHEMA);
      expect(e.message).toBe('feature X, op cross (#1): "inputs" names "C1", which is not a feature defined before this one');
      expect(e.where).toEqual({ feature: 'X', op: 'cross (#1)' });
    });

    it('rejects a cross of an unknown feature, or of itself', () => {
      expect(typeError(plan(c1, crossOf('C1', 'C2')))).toBe('feature X, op cross (#1): "inputs" names "C2", which is not a feature defined before this one');
      expect(typeError(plan(c1, crossOf('X')))).toMatch(/^feature X, op cross \(#1\): "inputs" names "X", which is not/);
    });

    it('rejects a cross of a dense float feature', () => {
      expect(typeError(plan(feature('I1', 'I1', 'dense', { op: 'log' }), crossOf('I1')))).toMatch(
        /^feature X, op cross \(#1\): "inputs" feature "I1" needs an integer/,
      );
    });
  });
});
