// One conformance suite for every backend: the batches it produces must be bit-identical to the
// `reference` backend (core's kernels, in-process) for every preset's plan and for a plan that
// uses every op, including stateful vocab (fitted first) and cross features.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fit, type Batch, type PlanSpec } from '@sluice/core';
import { getPreset } from '@sluice/core/gen';
import { type PlanState } from '@sluice/core/internal';
import { i32, i64, listI64, str, tempDir, vec, writeParquet } from '../../packages/core/test/helpers.js';
import { SMALL_PRESETS, writePresetFile } from '../../packages/core/test/presets.js';
import { Float64 } from 'apache-arrow';
import { BACKENDS } from './backends.js';
import { collect, expectSameBatches } from '../batches.js';

const dir = tempDir('sluice-conformance-');
const files = new Map<string, string>();

function allOpsFile(): string {
  const n = 1500;
  const ids = Array.from({ length: n }, (_, i) => i);
  return writeParquet(
    join(dir, 'allops.parquet'),
    {
      label: i32(ids.map((i) => i % 2)),
      I1: i32(ids.map((i) => (i % 9 === 0 ? null : ((i * 7919) % 4000) - 300))),
      F1: vec(
        new Float64(),
        ids.map((i) => (i % 13 === 0 ? null : Math.sin(i) * 50)),
      ),
      P1: vec(
        new Float64(),
        ids.map((i) => ((i * 31) % 1001) / 1000),
      ),
      B1: i64(ids.map((i) => (i % 17 === 0 ? null : BigInt(i * 104729 - 500000) * 1234567n))),
      C1: str(ids.map((i) => (i % 11 === 0 ? null : (((i % 97) * 2654435761) % 4294967296).toString(16).padStart(8, '0')))),
      L1: listI64(ids.map((i) => (i % 23 === 0 ? null : Array.from({ length: i % 7 }, (_, j) => BigInt(((i * 37 + j * 1009) % 2500) - 100))))),
    },
    400,
  );
}

const allOpsPlan: PlanSpec = {
  batchSize: 256,
  label: 'label',
  features: [
    { name: 'd_log', input: 'I1', kind: 'dense', ops: [{ op: 'fillNull', value: 0 }, { op: 'neg2zero' }, { op: 'log', offset: 1 }] },
    {
      name: 'd_log3',
      input: 'I1',
      kind: 'dense',
      ops: [
        { op: 'fillNull', value: 1 },
        { op: 'clamp', min: 0, max: 3000 },
        { op: 'log', offset: 3 },
      ],
    },
    {
      name: 'd_box',
      input: 'I1',
      kind: 'dense',
      ops: [
        { op: 'fillNull', value: 1 },
        { op: 'clamp', min: 1, max: 1000 },
        { op: 'boxCox', lambda: 0.5 },
      ],
    },
    { name: 'd_logit', input: 'P1', kind: 'dense', ops: [{ op: 'logit', eps: 1e-4 }] },
    {
      name: 'd_cast',
      input: 'F1',
      kind: 'dense',
      ops: [
        { op: 'fillNull', value: -0.5 },
        { op: 'cast', to: 'int32' },
      ],
    },
    { name: 'd_clampf', input: 'F1', kind: 'dense', ops: [{ op: 'clamp', min: -10, max: 10 }] },
    {
      name: 'd_onehot',
      input: 'I1',
      kind: 'dense',
      ops: [
        { op: 'fillNull', value: 0 },
        { op: 'modulus', m: 5 },
        { op: 'oneHot', numClasses: 5 },
      ],
    },
    {
      name: 's_bucket',
      input: 'I1',
      kind: 'sparse',
      ops: [
        { op: 'fillNull', value: 0 },
        { op: 'bucketize', borders: [-100, 0, 1, 10, 100, 1000, 3000] },
      ],
    },
    {
      name: 's_bucket_r',
      input: 'F1',
      kind: 'sparse',
      ops: [
        { op: 'fillNull', value: 0 },
        { op: 'bucketize', borders: [-40, -1, 0, 1, 40], right: true },
      ],
    },
    { name: 's_hex', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'sigridHash', salt: 7, max: 100000 }] },
    { name: 's_mod64', input: 'B1', kind: 'sparse', ops: [{ op: 'modulus', m: 1000003 }] },
    {
      name: 's_sig64',
      input: 'B1',
      kind: 'sparse',
      ops: [
        { op: 'fillNull', value: 5 },
        { op: 'sigridHash', salt: '-123456789012345', max: 999999937 },
      ],
    },
    {
      name: 's_map',
      input: 'I1',
      kind: 'sparse',
      ops: [
        { op: 'fillNull', value: 0 },
        { op: 'modulus', m: 4 },
        { op: 'mapId', mapping: { '0': 10, '1': 11, '2': 12 }, default: 99 },
      ],
    },
    { name: 's_vocab', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'vocab', oov: 0, minCount: 2 }] },
    {
      name: 's_list',
      input: 'L1',
      kind: 'sparse',
      ops: [
        { op: 'firstX', x: 4 },
        { op: 'clamp', min: 0, max: 2000 },
        { op: 'sigridHash', salt: 0, max: 5000 },
      ],
    },
    { name: 's_ngram', input: 'L1', kind: 'sparse', ops: [{ op: 'ngram', n: 2 }] },
    { name: 's_cross', input: 's_bucket', kind: 'sparse', ops: [] },
    {
      name: 's_crossed',
      input: 'I1',
      kind: 'sparse',
      ops: [
        { op: 'fillNull', value: 0 },
        { op: 'modulus', m: 3 },
        { op: 'cross', inputs: ['s_hex', 's_list'], max: 65536 },
      ],
    },
  ],
};
// s_cross reads the raw column "s_bucket", which does not exist: drop it (features cross by name).
allOpsPlan.features = allOpsPlan.features.filter((f) => f.name !== 's_cross');

async function fitState(plan: PlanSpec, input: string): Promise<PlanState> {
  return (await fit(plan, { input })).state;
}

const presets = SMALL_PRESETS;
const reference = new Map<string, Batch[]>();
let allOpsFit: PlanState;

beforeAll(async () => {
  for (const p of presets) {
    const f = await writePresetFile(dir, p);
    files.set(p, f);
    reference.set(p, await collect(getPreset(p).defaultPlan(), f, 'reference'));
  }
  files.set('allops', allOpsFile());
  allOpsFit = await fitState(allOpsPlan, files.get('allops')!);
  reference.set('allops', await collect(allOpsPlan, files.get('allops')!, 'reference', allOpsFit));
}, 300_000);

afterAll(() => undefined);

describe.each(BACKENDS)('conformance: $label', (backend) => {
  let skip: string | null = null;
  beforeAll(async () => {
    skip = await backend.unavailable();
    if (skip) console.warn(`conformance: skipping ${backend.label}: ${skip}`);
  });

  it('runs a plan with every op (incl. fitted vocab and cross) bit-identically to the reference kernels', async (ctx) => {
    if (skip) ctx.skip();
    const want = reference.get('allops')!;
    expect(want.length).toBeGreaterThan(3);
    expectSameBatches(await collect(allOpsPlan, files.get('allops')!, backend.spec, allOpsFit), want);
  });

  it.for(presets)('runs the %s preset plan bit-identically to the reference kernels', async (preset, ctx) => {
    if (skip) ctx.skip();
    expectSameBatches(await collect(getPreset(preset).defaultPlan(), files.get(preset)!, backend.spec), reference.get(preset)!);
  });

  it('reports invalid hex with the same file, row, feature and op as the reference', async (ctx) => {
    if (skip) ctx.skip();
    const f = writeParquet(
      join(dir, `badhex-${backend.label.replace(/\W+/g, '-')}.parquet`),
      { C1: str(Array.from({ length: 900 }, (_, i) => (i === 777 ? 'xyz' : 'ab'))) },
      300,
    );
    const plan: PlanSpec = { batchSize: 100, features: [{ name: 'C1', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }] }] };
    const err = (p: PlanSpec['backend']) =>
      collect(plan, f, p).then(
        () => 'no error',
        (e: Error) => e.message,
      );
    const want = await err('reference');
    expect(want).toMatch(/row group 2, row 777, column C1, feature C1, op hex2int \(#1\)/);
    expect(await err(backend.spec)).toBe(want);
  });
});
