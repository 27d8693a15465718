import { describe, expect, it } from 'vitest';
import { executePlan, loadPlan, typeCheckPlan, type Column, type ColumnType, type OpSpec, type PlanSpec } from '@sluice/ops';
import { generateBatches, presetArrowSchema } from '../../src/gen/generate.js';
import { CRITEO_KAGGLE_CARDINALITIES, CRITEO_TERABYTE_CARDINALITIES, getPreset, PRESETS, presetNames, type Preset } from '../../src/gen/presets.js';
import { arrowColumnType, columnFromVector } from '../../src/reader/arrow.js';

/** Every op of OPS.md. */
const OPS_MD = new Set([
  'fillNull',
  'cast',
  'neg2zero',
  'clamp',
  'log',
  'logit',
  'boxCox',
  'oneHot',
  'bucketize',
  'sigridHash',
  'firstX',
  'ngram',
  'cross',
  'mapId',
  'hex2int',
  'modulus',
  'vocab',
]);
/** RAP Table 1 (Logit, BoxCox, Onehot, SigridHash, FirstX, Clamp, Bucketize, Ngram, Mapid, FillNull, Cast) plus what hex inputs and TorchArrow's log(x+3) need. */
const RAP_TABLE_1 = new Set([
  'logit',
  'boxCox',
  'oneHot',
  'sigridHash',
  'firstX',
  'clamp',
  'bucketize',
  'ngram',
  'mapId',
  'fillNull',
  'cast',
  'hex2int',
  'log',
]);

const NAMES = ['rm1', 'rm2', 'rm3', 'rm4', 'rm5', 'piper-d1', 'rap-plan0', 'rap-plan1', 'rap-plan2', 'rap-plan3'];

function allPlans(p: Preset): Array<[string, PlanSpec]> {
  return [['default', p.defaultPlan()], ...Object.entries(p.variants ?? {}).map(([k, f]): [string, PlanSpec] => [k, f()])];
}

const totalOps = (plan: PlanSpec): number => plan.features.reduce((a, f) => a + (f.ops?.length ?? 0), 0);
const isInt = (x: unknown): x is number => Number.isSafeInteger(x);

/** OPS.md parameter rules, checked independently of the plan loader. */
function checkParams(o: OpSpec): void {
  const num = (k: string): number => {
    const v = o[k];
    expect(typeof v === 'number' && Number.isFinite(v), `${o.op}.${k} = ${JSON.stringify(v)}`).toBe(true);
    return v as number;
  };
  switch (o.op) {
    case 'fillNull':
      num('value');
      break;
    case 'cast':
      expect(['float32', 'int32', 'int64']).toContain(o.to);
      break;
    case 'clamp':
      expect(num('min')).toBeLessThanOrEqual(num('max'));
      break;
    case 'log':
      num('offset');
      break;
    case 'logit':
      expect(num('eps')).toBeGreaterThan(0);
      break;
    case 'boxCox':
      num('lambda');
      break;
    case 'oneHot':
      expect(isInt(o.numClasses) && (o.numClasses as number) > 0).toBe(true);
      break;
    case 'bucketize': {
      const b = o.borders as number[];
      expect(Array.isArray(b) && b.length > 0).toBe(true);
      expect(
        b.every((x, i) => typeof x === 'number' && Number.isFinite(x) && (i === 0 || x >= b[i - 1]!)),
        'borders non-decreasing',
      ).toBe(true);
      break;
    }
    case 'sigridHash':
      expect(isInt(o.salt)).toBe(true);
      expect(isInt(o.max) && (o.max as number) > 0).toBe(true);
      break;
    case 'firstX':
      expect(isInt(o.x) && (o.x as number) >= 1).toBe(true);
      break;
    case 'ngram':
      expect(isInt(o.n) && (o.n as number) >= 1).toBe(true);
      break;
    case 'modulus':
      expect(isInt(o.m) && (o.m as number) > 0).toBe(true);
      break;
    case 'mapId':
      expect(typeof o.mapping === 'object' && o.mapping !== null).toBe(true);
      break;
    default:
      break;
  }
}

function schemaTypes(p: Preset): Map<string, ColumnType> {
  return new Map(presetArrowSchema(p).fields.map((f) => [f.name, arrowColumnType(f.type)!]));
}

describe('preset registry', () => {
  it('has the ten presets and a clear error for unknown names', () => {
    expect(presetNames()).toEqual(NAMES);
    expect(Object.keys(PRESETS)).toEqual(NAMES);
    for (const n of NAMES) expect(getPreset(n).name).toBe(n);
    expect(() => getPreset('rm9')).toThrow(
      /unknown preset "rm9"; valid presets: rm1, rm2, rm3, rm4, rm5, piper-d1, rap-plan0, rap-plan1, rap-plan2, rap-plan3/,
    );
    expect(() => getPreset('toString')).toThrow(/unknown preset/);
  });

  it('has the paper shapes (PreSto Table I, PIPER §4.1.1, RAP Table 3)', () => {
    const count = (p: Preset, kind: string): number => p.columns.filter((c) => c.kind === kind).length;
    const rm1 = getPreset('rm1');
    expect([count(rm1, 'label'), count(rm1, 'dense'), count(rm1, 'hex')]).toEqual([1, 13, 26]);
    expect(rm1.columns.filter((c) => c.kind === 'hex').map((c) => c.kind === 'hex' && c.vocab)).toEqual(CRITEO_KAGGLE_CARDINALITIES);
    for (const n of ['rm2', 'rm3', 'rm4', 'rm5']) {
      const p = getPreset(n);
      expect([count(p, 'dense'), count(p, 'idList')]).toEqual([504, 42]);
      for (const c of p.columns) if (c.kind === 'idList') expect(c.meanLength).toBe(20);
    }
    const piper = getPreset('piper-d1');
    expect(piper.columns.filter((c) => c.kind === 'dense').every((c) => c.kind === 'dense' && c.type === 'float32')).toBe(true);
    expect(count(piper, 'hex')).toBe(26);
    const rap: Record<string, [number, number]> = { 'rap-plan0': [13, 26], 'rap-plan1': [13, 26], 'rap-plan2': [26, 52], 'rap-plan3': [52, 104] };
    for (const [n, [d, s]] of Object.entries(rap)) expect([count(getPreset(n), 'dense'), count(getPreset(n), 'hex')]).toEqual([d, s]);
    expect(CRITEO_KAGGLE_CARDINALITIES.reduce((a, b) => a + b, 0)).toBe(33_762_577); // RAP Table 2: 33.7M
    expect(CRITEO_TERABYTE_CARDINALITIES.reduce((a, b) => a + b, 0)).toBe(177_944_275); // RAP Table 2: 177.9M
    for (const p of Object.values(PRESETS)) {
      for (const c of p.columns) {
        if (c.kind === 'dense') expect(c.nullRate).toBe(0.1);
        if (c.kind === 'hex') expect(c.nullRate > 0 && c.nullRate <= 0.05).toBe(true);
      }
    }
  });
});

describe('default plans', () => {
  it('use only OPS.md ops with valid params, on columns that exist', () => {
    for (const p of Object.values(PRESETS)) {
      const names = new Set(p.columns.map((c) => c.name));
      for (const [variant, plan] of allPlans(p)) {
        expect(plan.batchSize, p.name).toBe(8192);
        expect(plan.label).toBe('label');
        expect(plan.backend).toEqual({ name: 'cpu' });
        const outNames = new Set<string>();
        for (const f of plan.features) {
          expect(names.has(f.input), `${p.name}/${variant}: ${f.name} input ${f.input}`).toBe(true);
          expect(outNames.has(f.name), `${p.name}: duplicate feature ${f.name}`).toBe(false);
          outNames.add(f.name);
          for (const o of f.ops ?? []) {
            expect(OPS_MD.has(o.op), `${p.name}/${variant}: ${f.name} uses ${o.op}`).toBe(true);
            checkParams(o);
          }
        }
      }
    }
  });

  it('load and type-check against the generated schema', () => {
    for (const p of Object.values(PRESETS)) {
      const types = schemaTypes(p);
      for (const [variant, plan] of allPlans(p)) {
        expect(() => typeCheckPlan(loadPlan(plan), types), `${p.name}/${variant}`).not.toThrow();
      }
    }
  });

  it('run on generated data without errors, dense outputs finite', () => {
    for (const p of Object.values(PRESETS)) {
      const rows = p.columns.length > 100 ? 500 : 4000;
      const batch = [...generateBatches(p, rows, { seed: 7 })][0]!;
      const types = schemaTypes(p);
      const cols = new Map<string, Column>(batch.schema.fields.map((f) => [f.name, columnFromVector(batch.getChild(f.name)!, types.get(f.name)!)]));
      const typed = typeCheckPlan(loadPlan(p.defaultPlan()), types);
      const out = executePlan(typed, cols);
      for (const f of typed.features) {
        const c = out.get(f.name)!;
        if (f.kind !== 'dense') continue;
        const values =
          c.type === 'fixed' || c.type === 'float32' || c.type === 'int32' || c.type === 'float64' ? Array.from(c.values as ArrayLike<number>) : [];
        expect(values.every(Number.isFinite), `${p.name}: ${f.name} has non-finite values`).toBe(true);
      }
    }
  });

  it('are deterministic', () => {
    for (const p of Object.values(PRESETS)) expect(JSON.stringify(p.defaultPlan())).toBe(JSON.stringify(p.defaultPlan()));
  });

  it('follow BENCHMARKS.md for rm1..rm5', () => {
    const expected: Record<string, [number, number]> = { rm1: [13, 1024], rm2: [21, 1024], rm3: [42, 1024], rm4: [42, 2048], rm5: [42, 4096] };
    for (const [name, [generated, borders]] of Object.entries(expected)) {
      const plan = getPreset(name).defaultPlan();
      const dense = plan.features.filter((f) => f.kind === 'dense');
      const buckets = plan.features.filter((f) => /^B\d+$/.test(f.name));
      const sparse = plan.features.filter((f) => /^C\d+$/.test(f.name));
      expect(dense.length).toBe(name === 'rm1' ? 13 : 504);
      for (const f of dense) expect(f.ops).toEqual([{ op: 'fillNull', value: 0 }, { op: 'neg2zero' }, { op: 'log', offset: 1 }]);
      expect(buckets.map((f) => f.input)).toEqual(Array.from({ length: generated }, (_, i) => `I${i + 1}`));
      for (const f of buckets) {
        expect(f.kind).toBe('sparse');
        expect(f.ops![0]).toEqual({ op: 'fillNull', value: 0 });
        const b = f.ops![1]!.borders as number[];
        expect(f.ops![1]!.op).toBe('bucketize');
        expect(b.length).toBe(borders);
        expect(
          b.every((x, i) => i === 0 || x > b[i - 1]!),
          'borders strictly increasing',
        ).toBe(true);
        // Quantile borders of the column's log-normal: from its far-left tail to its far-right tail.
        const col = getPreset(name).columns.find((c) => c.name === f.input)!;
        if (col.kind !== 'dense') throw new Error('bucketize over a non-dense column');
        expect(b[0]!).toBeLessThan(Math.exp(col.mu - 3 * col.sigma));
        expect(b[b.length - 1]!).toBeGreaterThan(Math.exp(col.mu + 3 * col.sigma));
      }
      expect(sparse.length).toBe(name === 'rm1' ? 26 : 42);
      for (const f of sparse) {
        expect(f.ops!.at(-1)).toEqual({ op: 'sigridHash', salt: 0, max: 500000 });
        expect(f.ops![0]).toEqual(name === 'rm1' ? { op: 'hex2int' } : { op: 'firstX', x: 32 });
      }
    }
  });

  it('follow PIPER P-I / P-II / P-III for piper-d1', () => {
    const p = getPreset('piper-d1');
    const sparseOps = (plan: PlanSpec): unknown => plan.features.find((f) => f.name === 'C1')!.ops;
    expect(sparseOps(p.defaultPlan())).toEqual([{ op: 'hex2int' }, { op: 'modulus', m: 524288 }]);
    expect(sparseOps(p.variants!['P-I']!())).toEqual([{ op: 'hex2int' }, { op: 'modulus', m: 524288 }]);
    expect(sparseOps(p.variants!['P-II']!())).toEqual([{ op: 'hex2int' }, { op: 'modulus', m: 8192 }, { op: 'vocab' }]);
    expect(sparseOps(p.variants!['P-III']!())).toEqual([{ op: 'hex2int' }, { op: 'modulus', m: 524288 }, { op: 'vocab' }]);
    expect(p.defaultPlan().features.find((f) => f.name === 'I1')!.ops).toEqual([{ op: 'fillNull', value: 0 }, { op: 'neg2zero' }, { op: 'log', offset: 1 }]);
  });

  it('hit RAP Table 3 op counts exactly, with RAP Table 1 ops', () => {
    const expected: Record<string, [number, number]> = { 'rap-plan0': [104, 39], 'rap-plan1': [104, 39], 'rap-plan2': [384, 78], 'rap-plan3': [1548, 158] };
    const used = new Set<string>();
    for (const [name, [ops, features]] of Object.entries(expected)) {
      const plan = getPreset(name).defaultPlan();
      expect(totalOps(plan), name).toBe(ops);
      expect(plan.features.length, name).toBe(features);
      for (const f of plan.features) {
        for (const o of f.ops ?? []) {
          expect(RAP_TABLE_1.has(o.op), `${name}: ${o.op}`).toBe(true);
          used.add(o.op);
        }
        expect(f.ops![0]!.op === 'fillNull' || (f.ops![0]!.op === 'hex2int' && f.ops![1]!.op === 'fillNull'), `${name}: ${f.name} starts with fillNull`).toBe(
          true,
        );
      }
    }
    // Plans 0/1: TorchArrow's Criteo default (13·2 + 26·3 = 104); sigridHash onto the Table 2 hash sizes.
    const p0 = getPreset('rap-plan0').defaultPlan();
    expect(p0.features.find((f) => f.name === 'I1')!.ops).toEqual([
      { op: 'fillNull', value: 0 },
      { op: 'log', offset: 3 },
    ]);
    expect(p0.features.filter((f) => f.kind === 'sparse').reduce((a, f) => a + (f.ops!.at(-1)!.max as number), 0)).toBe(33_762_577);
    const p1 = getPreset('rap-plan1').defaultPlan();
    expect(p1.features.filter((f) => f.kind === 'sparse').reduce((a, f) => a + (f.ops!.at(-1)!.max as number), 0)).toBe(177_944_275);
    // Plans 2/3 compose most of Table 1.
    for (const op of ['logit', 'boxCox', 'oneHot', 'sigridHash', 'firstX', 'clamp', 'bucketize', 'ngram', 'mapId', 'fillNull', 'cast'])
      expect(used.has(op), op).toBe(true);
    expect(
      getPreset('rap-plan3')
        .defaultPlan()
        .features.filter((f) => /^B\d+$/.test(f.name)).length,
    ).toBe(2);
  });
});
