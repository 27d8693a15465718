// The optimizer (core plan/optimize.ts, plan/graph.ts) must never change an output: every preset's
// plan, optimized (redundant ops removed with the files' statistics, shared sub-chains, fused
// stages), gives batches bit-identical to the unoptimized reference run — on the reference
// kernels running the staged graph, on the cpu worker pool, and on webgpu where Dawn finds an
// adapter (skipped with the reason otherwise).
import { join } from 'node:path';
import { Float64 } from 'apache-arrow';
import { beforeAll, describe, expect, it } from 'vitest';
import '@sluice/backend-cpu';
import { webgpuUnavailable } from '@sluice/backend-webgpu';
import {
  buildGraph,
  eliminateRedundant,
  executeGraph,
  executePlan,
  explainPlan,
  readColumnStats,
  scheduleStages,
  type Column,
  type ColumnType,
} from '@sluice/core/internal';
import { fit, loadPlan, typeCheckPlan, type Batch, type BackendSpec, type PlanSpec } from '@sluice/core';
import { generateDataset, getPreset, presetNames, typedForExplain } from '@sluice/core/gen';
import { i32, i64, listI64, str, tempDir, vec, writeParquet } from '../packages/core/test/helpers.js';
import { collect, expectSameBatches } from './batches.js';

const dir = tempDir('sluice-optimizer-');
const ROWS: Record<string, number> = {
  rm1: 1500,
  rm2: 200,
  rm3: 200,
  rm4: 200,
  rm5: 200,
  'piper-d1': 1500,
  'rap-plan0': 1000,
  'rap-plan1': 1000,
  'rap-plan2': 600,
  'rap-plan3': 400,
};
const presets = presetNames().filter((p) => p in ROWS);
const files = new Map<string, string>();
const reference = new Map<string, Batch[]>();

beforeAll(async () => {
  for (const p of presets) {
    const f = join(dir, `${p}.parquet`);
    await generateDataset({ preset: p, rows: ROWS[p]!, out: f, seed: 5, rowGroupSize: ROWS[p]! > 800 ? 500 : 150 });
    files.set(p, f);
    reference.set(p, await collect({ ...getPreset(p).defaultPlan(), batchSize: 256 }, f, { name: 'reference' }));
  }
}, 300_000);

describe('optimized plans give identical outputs on every preset', () => {
  it.for(presets)('%s: reference kernels running the optimized, staged graph', async (p) => {
    const plan = { ...getPreset(p).defaultPlan(), batchSize: 256 };
    expectSameBatches(await collect(plan, files.get(p)!, { name: 'reference', graph: true, optimize: true }), reference.get(p)!);
  });
  it.for(presets)('%s: cpu worker pool on the rewritten plan', async (p) => {
    const plan = { ...getPreset(p).defaultPlan(), batchSize: 256 };
    expectSameBatches(await collect(plan, files.get(p)!, { name: 'cpu', workers: 1, optimize: true }), reference.get(p)!);
  });
  // llvmpipe compiles RAP Plan 3's fused kernel (hundreds of chains) slowly.
  it.for(presets)('%s: webgpu running the optimized stages', { timeout: 300_000 }, async (p, ctx) => {
    const why = await webgpuUnavailable();
    if (why) {
      console.warn(`optimizer: skipping webgpu: ${why}`);
      ctx.skip();
    }
    const plan = { ...getPreset(p).defaultPlan(), batchSize: 256 };
    expectSameBatches(await collect(plan, files.get(p)!, { name: 'webgpu', optimize: true }), reference.get(p)!);
  });
});

describe('rewrite pass', () => {
  const n = 1200;
  const ids = Array.from({ length: n }, (_, i) => i);
  let file = '';
  beforeAll(() => {
    file = writeParquet(
      join(dir, 'rewrite.parquet'),
      {
        full: i32(ids.map((i) => (i % 500) - 20)), // no nulls, range [-20, 479]
        holes: i32(ids.map((i) => (i % 7 === 0 ? null : i))),
        big: i64(ids.map((i) => BigInt(i) * 3n)),
        hex: str(ids.map((i) => (i % 9 === 0 ? '' : ((i * 2654435761) % 4294967296).toString(16)))),
        list: listI64(ids.map((i) => (i % 5 === 0 ? null : [BigInt(i), BigInt(i + 1)]))),
      },
      400,
    );
  });
  const spec: PlanSpec = {
    batchSize: 300,
    features: [
      // fillNull on a column without nulls, a clamp its range satisfies: both go.
      {
        name: 'a',
        input: 'full',
        kind: 'dense',
        ops: [{ op: 'fillNull', value: 0 }, { op: 'clamp', min: -100, max: 1000 }, { op: 'neg2zero' }, { op: 'log' }],
      },
      // fillNull on a column with nulls stays; the clamp after bucketize's [0, 3] range goes.
      {
        name: 'b',
        input: 'holes',
        kind: 'sparse',
        ops: [
          { op: 'fillNull', value: 0 },
          { op: 'bucketize', borders: [10, 100, 1000] },
          { op: 'clamp', min: 0, max: 3 },
        ],
      },
      // modulus whose input is already in [0, m) goes (statistics say big is in [0, 3597]); m = 10 stays.
      {
        name: 'c',
        input: 'big',
        kind: 'sparse',
        ops: [
          { op: 'modulus', m: 4000 },
          { op: 'modulus', m: 4000 },
          { op: 'modulus', m: 10 },
        ],
      },
      // int32 → int64 → int32: both casts go (the second becomes a same-type cast).
      {
        name: 'd',
        input: 'holes',
        kind: 'sparse',
        ops: [
          { op: 'cast', to: 'int64' },
          { op: 'cast', to: 'int32' },
          { op: 'fillNull', value: 1 },
        ],
      },
      // hex2int can make nulls, so the fillNull after it stays.
      { name: 'e', input: 'hex', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'fillNull', value: 0 }, { op: 'sigridHash', salt: 1, max: 1000 }] },
      // Shares fillNull + bucketize with b (computed once).
      {
        name: 'f',
        input: 'holes',
        kind: 'sparse',
        ops: [
          { op: 'fillNull', value: 0 },
          { op: 'bucketize', borders: [10, 100, 1000] },
          { op: 'sigridHash', salt: 0, max: 50 },
        ],
      },
      {
        name: 'g',
        input: 'list',
        kind: 'sparse',
        ops: [
          { op: 'fillNull', value: 0 },
          { op: 'firstX', x: 1 },
        ],
      },
    ],
  };

  it('removes exactly the redundant steps, keeping positions as written, with identical outputs', async () => {
    const schema = new Map<string, ColumnType>([
      ['full', { kind: 'int32' }],
      ['holes', { kind: 'int32' }],
      ['big', { kind: 'int64' }],
      ['hex', { kind: 'utf8' }],
      ['list', { kind: 'list', child: 'int64' }],
    ]);
    const typed = typeCheckPlan(loadPlan(spec), schema);
    const stats = await readColumnStats([file], typed.columns);
    expect(stats.get('full')).toEqual({ nulls: 0, min: -20, max: 479 });
    expect(stats.get('holes')!.nulls).toBe(Math.ceil(n / 7));
    const { plan, removed } = eliminateRedundant(typed, stats);
    expect(removed.map((r) => `${r.feature}:${r.op}#${r.index + 1}`).sort()).toEqual(
      ['a:clamp#2', 'a:fillNull#1', 'b:clamp#3', 'c:modulus#1', 'c:modulus#2', 'd:cast#1', 'd:cast#2'].sort(),
    );
    expect(plan.features.find((f) => f.name === 'a')!.ops.map((o) => o.index)).toEqual([2, 3]);
    // Without statistics only what the ops themselves imply goes.
    expect(
      eliminateRedundant(typed)
        .removed.map((r) => `${r.feature}:${r.op}`)
        .sort(),
    ).toEqual(['b:clamp', 'c:modulus', 'd:cast', 'd:cast'].sort());
    const want = await collect(spec, file, { name: 'reference' });
    expectSameBatches(await collect(spec, file, { name: 'reference', graph: true, optimize: true }), want);
    expectSameBatches(await collect(spec, file, { name: 'cpu', workers: 1, optimize: true }), want);
  });

  it('computes a shared input + op prefix once and names ops as written in errors', async () => {
    const schema = new Map<string, ColumnType>([
      ['holes', { kind: 'int32' }],
      ['hex', { kind: 'utf8' }],
    ]);
    const typed = typeCheckPlan(loadPlan({ features: spec.features.filter((f) => f.name === 'b' || f.name === 'f') }), schema);
    const g = buildGraph(typed);
    // fillNull + bucketize once, then clamp for b and sigridHash for f.
    expect(g.opsExecuted).toBe(4);
    expect(g.nodes.map((x) => x.to - x.from)).toEqual([2, 1, 1]);
    // fillNull (#1) goes (no nulls); boxCox of 0 fails and must still be named #2.
    const bad = writeParquet(join(dir, 'bad.parquet'), { v: i32([1, 0, 3]) }, 10);
    const badPlan: PlanSpec = {
      features: [
        {
          name: 'bx',
          input: 'v',
          kind: 'dense',
          ops: [
            { op: 'fillNull', value: 1 },
            { op: 'boxCox', lambda: 0.5 },
          ],
        },
      ],
    };
    const msg = (b: BackendSpec) =>
      collect(badPlan, bad, b).then(
        () => 'no error',
        (e: Error) => e.message,
      );
    const want = await msg({ name: 'reference' });
    expect(want).toMatch(/row 1, column v, feature bx, op boxCox \(#2\)/);
    expect(await msg({ name: 'reference', graph: true, optimize: true })).toBe(await msg({ name: 'reference' }));
  });
});

describe('params equal as values', () => {
  it('ops whose params differ only in the sign of zero are not shared, in the graph or in the reader', async () => {
    const spec: PlanSpec = {
      batchSize: 64,
      features: [
        { name: 'pos', input: 'f', kind: 'dense', ops: [{ op: 'fillNull', value: 0 }] },
        { name: 'neg', input: 'f', kind: 'dense', ops: [{ op: 'fillNull', value: -0 }] },
        { name: 'pos2', input: 'f', kind: 'dense', ops: [{ op: 'fillNull', value: 0 }] },
      ],
    };
    const g = buildGraph(typeCheckPlan(loadPlan(spec), new Map<string, ColumnType>([['f', { kind: 'float64' }]])));
    expect(g.opsExecuted, 'pos and pos2 share their fillNull; neg has its own').toBe(2);
    const file = writeParquet(
      join(dir, 'signed-zero.parquet'),
      {
        f: vec(
          new Float64(),
          Array.from({ length: 300 }, (_, i) => (i % 3 === 0 ? null : i / 7)),
        ),
      },
      100,
    );
    const want = await collect(spec, file, { name: 'reference' });
    // A null row: pos holds +0 and neg -0 (dense rows are [pos, neg, pos2]).
    expect(Object.is(want[0]!.dense.data[1], -0) && Object.is(want[0]!.dense.data[0], 0)).toBe(true);
    for (const b of [
      { name: 'cpu', workers: 1 },
      { name: 'cpu', workers: 2, pushdown: false },
      { name: 'reference', graph: true, optimize: true },
    ] as const) {
      expectSameBatches(await collect(spec, file, b), want);
    }
  });
});

describe('graph executor and stages', () => {
  const schema = new Map<string, ColumnType>([
    ['I', { kind: 'int32' }],
    ['C', { kind: 'utf8' }],
    ['L', { kind: 'list', child: 'int64' }],
  ]);
  const cols = (): Map<string, Column> => {
    const n = 500;
    const ids = Array.from({ length: n }, (_, i) => i);
    const offsets = Int32Array.from({ length: n + 1 }, (_, i) => 2 * i);
    return new Map<string, Column>([
      ['I', { type: 'int32', values: Int32Array.from(ids.map((i) => ((i * 37) % 300) - 50)), valid: Uint8Array.from(ids.map((i) => (i % 6 ? 1 : 0))) }],
      [
        'C',
        {
          type: 'utf8',
          offsets: Int32Array.from({ length: n + 1 }, (_, i) => 2 * i),
          data: new TextEncoder().encode(ids.map((i) => (i % 256).toString(16).padStart(2, '0')).join('')),
          valid: null,
        },
      ],
      [
        'L',
        {
          type: 'list',
          offsets,
          child: { type: 'int64', values: BigInt64Array.from({ length: 2 * n }, (_, i) => BigInt((i * 7) % 90)), valid: null },
          valid: null,
        },
      ],
    ]);
  };
  const spec: PlanSpec = {
    features: [
      { name: 'c', input: 'C', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'vocab' }] },
      {
        name: 'i',
        input: 'I',
        kind: 'sparse',
        ops: [
          { op: 'fillNull', value: 0 },
          { op: 'modulus', m: 7 },
        ],
      },
      {
        name: 'l',
        input: 'L',
        kind: 'sparse',
        ops: [
          { op: 'firstX', x: 1 },
          { op: 'sigridHash', salt: 0, max: 100 },
        ],
      },
      {
        name: 'x',
        input: 'I',
        kind: 'sparse',
        ops: [
          { op: 'fillNull', value: 0 },
          { op: 'modulus', m: 3 },
          { op: 'cross', inputs: ['i', 'l'], max: 1000 },
        ],
      },
      {
        name: 'y',
        input: 'L',
        kind: 'sparse',
        ops: [
          { op: 'ngram', n: 2 },
          { op: 'firstX', x: 3 },
          { op: 'sigridHash', salt: 2, max: 100 },
        ],
      },
    ],
  };

  it('runs vocab and cross features exactly as executePlan, in the fewest stages (exact search)', async () => {
    const typed = typeCheckPlan(loadPlan(spec), schema);
    const state = (
      await fit(spec, {
        input: writeParquet(
          join(dir, 'fitc.parquet'),
          {
            C: str(Array.from({ length: 300 }, (_, i) => (i % 200).toString(16))),
            I: i32([...Array(300).keys()]),
            L: listI64(Array.from({ length: 300 }, () => [1n])),
          },
          100,
        ),
      })
    ).state;
    const g = buildGraph(typed);
    const s = scheduleStages(g);
    expect(s.search).toBe('exact');
    // chain(hex2int), chain(fillNull) are one stage; vocab / firstX / ngram / cross depend on them.
    // Every schedule needs chain (fillNull) < chain (modulus) < cross, chain < vocab and ngram < firstX:
    // six stages at least, and the search finds six.
    expect(s.stages.map((x) => x.kind).sort()).toEqual(['chain', 'chain', 'cross', 'firstX', 'ngram', 'vocab']);
    const want = executePlan(typed, cols(), state);
    const got = executeGraph(g, s, cols(), state);
    for (const f of typed.features) expect(got.get(f.name), f.name).toEqual(want.get(f.name));
  });

  it('shards a stage over a backend limit, one kernel per shard', () => {
    const typed = typeCheckPlan(
      loadPlan({
        features: Array.from({ length: 10 }, (_, k) => ({ name: `f${k}`, input: 'I', kind: 'sparse' as const, ops: [{ op: 'modulus', m: k + 2 }] })),
      }),
      schema,
    );
    const g = buildGraph(typed);
    expect(scheduleStages(g).kernels).toBe(1);
    const s = scheduleStages(g, { limits: () => ({ maxNodes: 4 }) });
    expect(s.stages.length).toBe(1);
    expect(s.stages[0]!.shards.map((x) => x.length)).toEqual([4, 4, 2]);
    expect(s.kernels).toBe(3);
    expect(scheduleStages(g, { limits: () => ({ maxBytes: 2500 }), bytesOf: () => 1000 }).kernels).toBe(5);
  });

  it('RAP Plan 3 (1548 ops): kernels per batch at least 10x fewer than ops, at most 2 per op type', () => {
    const e = explainPlan(typedForExplain(loadPlan(getPreset('rap-plan3').defaultPlan())));
    expect(e.ops).toBe(1548);
    expect(e.kernelsPerBatch * 10).toBeLessThanOrEqual(e.ops);
    expect(e.kernelsPerBatch).toBeLessThanOrEqual(2 * e.opTypes);
    expect(e.kernelsPerBatch).toBeGreaterThanOrEqual(e.lowerBound);
  });
});
