// `backend: "auto"` chooses among candidate placements by measuring them on the real pipeline path
// (placement/calibration.ts) and caching the measurements per plan and machine. These tests inject the
// measurements (no timing assertion anywhere) and check the choice, what metrics().placement
// reports, and that every placement gives batches bit-identical to a single backend.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import '@sluice/backend-cpu';
import {
  candidatePlacements,
  chooseMeasured,
  measureCandidates,
  PROBE_HOPELESS,
  predictRun,
  readMeasurements,
  writeMeasurements,
  calibrationCachePath,
  type Candidate,
  type Measurement,
  type Placement,
} from '@sluice/core/internal';
import { generateDataset, getPreset } from '@sluice/core/gen';
import { pipeline, type Batch, type BackendSpec, type PlanSpec, type TypedPlan } from '@sluice/core';
import { tempDir } from '../packages/core/test/helpers.js';
import { expectSameBatches } from './batches.js';

const dir = tempDir('sluice-auto-');
const files = new Map<string, string>();
const rm5 = getPreset('rm5').defaultPlan();
const plans: Record<string, PlanSpec> = {
  rm1: { ...getPreset('rm1').defaultPlan(), batchSize: 256 },
  // RM5 with its id lists hashed as bigrams: ngram is not a per-value op, so the reader cannot
  // compute those 42 features (RM5's own firstX → sigridHash it can), and a "+pushdown"
  // candidate places features differently from the backend alone.
  rm5: {
    ...rm5,
    batchSize: 64,
    features: rm5.features.map((f) =>
      f.ops?.some((o) => o.op === 'firstX')
        ? {
            ...f,
            ops: [
              { op: 'firstX', x: 32 },
              { op: 'ngram', n: 2 },
              { op: 'modulus', m: 500000 },
            ],
          }
        : f,
    ),
  },
};
// cpu and the in-process reference kernels: both start everywhere, so the tests need no GPU.
const AUTO: BackendSpec = { name: 'auto', backends: ['cpu', 'reference'], workers: 1 };

async function collect(
  plan: PlanSpec,
  backend: BackendSpec,
): Promise<{ batches: Batch[]; placement: ReturnType<ReturnType<typeof pipeline>['metrics']>['placement'] }> {
  const p = pipeline({ ...plan, backend }, { input: files.get(plan === plans.rm1 ? 'rm1' : 'rm5')! });
  const batches: Batch[] = [];
  for await (const b of p) batches.push(b);
  return { batches, placement: p.metrics().placement };
}

const typed = async (name: 'rm1' | 'rm5'): Promise<TypedPlan> => (await pipeline(plans[name]!, { input: files.get(name)! }).info()).plan;
const m = (fixedMs: number, perBatchMs: number): Measurement => ({ fixedMs, perBatchMs });
const cpuAlone = new Map<string, Batch[]>();

beforeAll(async () => {
  // Measurements and the op cost model go to a cache of this test's own.
  process.env.SLUICE_CACHE_DIR = join(dir, 'cache');
  for (const [name, rows, group] of [
    ['rm1', 1200, 300],
    ['rm5', 160, 40],
  ] as const) {
    const f = join(dir, `${name}.parquet`);
    await generateDataset({ preset: name, rows, out: f, seed: 3, rowGroupSize: group });
    files.set(name, f);
    cpuAlone.set(name, (await collect(plans[name]!, { name: 'cpu', workers: 1 })).batches);
  }
}, 300_000);

describe('choosing from measurements', () => {
  const cands: Candidate[] = [
    { label: 'cpu', spec: { name: 'cpu' } },
    { label: 'webgpu', spec: { name: 'webgpu' } },
    { label: 'webgpu+pushdown', spec: { name: 'webgpu', pushdown: true } },
  ];

  it('picks the least predicted run time, fixed part paid once', () => {
    // RM5-like: the cpu path is slower per batch than the GPU with the reader's pushdown.
    expect(chooseMeasured(cands, { cpu: m(300, 2500), webgpu: m(600, 2600), 'webgpu+pushdown': m(600, 1900) }, 1)!.label).toBe('webgpu+pushdown');
    // A cheaper start wins short runs, a cheaper batch long ones.
    const measured = { cpu: m(100, 50), webgpu: m(1500, 20) };
    expect(chooseMeasured(cands, measured, 10)!.label).toBe('cpu');
    expect(chooseMeasured(cands, measured, 100)!.label).toBe('webgpu');
    expect(predictRun(m(100, 50), 10)).toBe(600);
  });

  it('returns null without measurements, ignores measurements of other candidates, and breaks ties by order', () => {
    expect(chooseMeasured(cands, {}, 5)).toBeNull();
    expect(chooseMeasured(cands, { mixed: m(0, 1) }, 5)).toBeNull();
    expect(chooseMeasured(cands, { webgpu: m(10, 10), cpu: m(10, 10) }, 5)!.label).toBe('cpu');
  });

  it("lists each backend alone, non-cpu backends with pushdown when it leaves them work, and the model's mix", () => {
    const single: Placement = {
      byFeature: new Map([
        ['a', 'cpu'],
        ['b', 'cpu'],
      ]),
      predictedMs: {},
      makespanMs: 0,
      singleMs: {},
    };
    const mixed: Placement = {
      ...single,
      byFeature: new Map([
        ['a', 'cpu'],
        ['b', 'webgpu'],
      ]),
    };
    const labels = (p: Placement, pd: { possible: boolean; leavesWork: boolean }, names = ['cpu', 'webgpu']): string[] =>
      candidatePlacements(names, p, pd).map((c) => c.label);
    expect(labels(single, { possible: true, leavesWork: true })).toEqual(['cpu', 'webgpu', 'webgpu+pushdown']);
    // Pushing everything down leaves webgpu nothing: that is the cpu path already.
    expect(labels(single, { possible: true, leavesWork: false })).toEqual(['cpu', 'webgpu']);
    expect(labels(single, { possible: true, leavesWork: false }, ['webgpu'])).toEqual(['webgpu', 'webgpu+pushdown']);
    expect(labels(single, { possible: false, leavesWork: false })).toEqual(['cpu', 'webgpu']);
    expect(labels(mixed, { possible: false, leavesWork: false })).toEqual(['cpu', 'webgpu', 'mixed']);
    const c = candidatePlacements(['cpu', 'webgpu'], mixed, { possible: true, leavesWork: true }, { workers: 3 });
    expect(c.find((x) => x.label === 'cpu')!.spec).toEqual({ name: 'cpu', workers: 3 });
    expect(c.find((x) => x.label === 'webgpu+pushdown')!.spec).toEqual({ name: 'webgpu', pushdown: true });
    expect(c.find((x) => x.label === 'mixed')!.spec).toEqual({ name: 'auto', placement: { a: 'cpu', b: 'webgpu' }, workers: 3 });
  });

  it('measures round-robin: twice each, more rounds for close calls, none past the budget; best of two, median of more; drops failures', async () => {
    const script: Record<string, Measurement[]> = {
      cpu: [m(100, 12), m(90, 10), m(95, 11), m(200, 20)],
      webgpu: [m(100, 40), m(100, 30)],
      close: [m(100, 10.5), m(80, 10.25), m(80, 10.125), m(80, 10)],
    };
    const calls: string[] = [];
    const fake = [...Object.keys(script), 'broken'].map((label): Candidate => ({ label, spec: { name: label } }));
    const probe = async (c: Candidate): Promise<Measurement> => {
      calls.push(c.label);
      if (c.label === 'broken') throw new Error('cannot start');
      return script[c.label]![calls.filter((x) => x === c.label).length - 1]!;
    };
    const got = await measureCandidates(fake, 10, probe, Infinity);
    // Round 3 drops webgpu (400 ms vs 182.5, best of two); rounds 4 and 5 run the two within
    // 15%, and after round 5 cpu (median 212.5 ms) is out of it.
    expect(calls).toEqual(['cpu', 'webgpu', 'close', 'broken', 'cpu', 'webgpu', 'close', 'cpu', 'close', 'cpu', 'close']);
    expect(got).toEqual({ cpu: m(97.5, 11.5), webgpu: m(100, 30), close: m(80, 10.1875) });
    // Out of time budget: one round only.
    calls.length = 0;
    expect(await measureCandidates(fake, 10, probe, -1)).toEqual({ cpu: m(100, 12), webgpu: m(100, 40), close: m(100, 10.5) });
    expect(calls).toEqual(['cpu', 'webgpu', 'close', 'broken']);
  });

  it('probes a candidate that loses on every batch by PROBE_HOPELESS once; a slow start alone does not drop it', async () => {
    // 10 batches. cpu: 100 + 10 × 10 = 200 ms. gpu: steady part 10 × 61 = 610 > 3 × 200, out
    // after one probe. slowStart: a 5 s first run (device, shader compiles) but 15 ms per batch:
    // 150 ≤ 600, so it runs again, and its second run shows the start was a one-off.
    const script: Record<string, Measurement[]> = {
      cpu: Array.from({ length: 5 }, () => m(100, 10)),
      gpu: Array.from({ length: 5 }, () => m(100, 61)),
      slowStart: [m(5000, 15), ...Array.from({ length: 4 }, () => m(50, 9))],
    };
    const calls: string[] = [];
    const fake = Object.keys(script).map((label): Candidate => ({ label, spec: { name: label } }));
    const probe = async (c: Candidate): Promise<Measurement> => {
      calls.push(c.label);
      return script[c.label]![calls.filter((x) => x === c.label).length - 1]!;
    };
    const got = await measureCandidates(fake, 10, probe, Infinity);
    expect(PROBE_HOPELESS).toBe(3);
    expect(calls.filter((x) => x === 'gpu')).toHaveLength(1);
    expect(calls.slice(0, 5)).toEqual(['cpu', 'gpu', 'slowStart', 'cpu', 'slowStart']);
    expect(got.gpu).toEqual(m(100, 61));
    expect(got.slowStart).toEqual(m(50, 9));
  });
});

describe('auto in a pipeline', () => {
  it('caches measurements per plan and machine, in a file of its own', async () => {
    const plan = await typed('rm1');
    writeMeasurements(plan, { cpu: m(1, 2) });
    writeMeasurements(plan, { reference: m(3, 4) });
    expect(readMeasurements(plan)).toEqual({ cpu: m(1, 2), reference: m(3, 4) });
    expect(calibrationCachePath(plan)).not.toBe(calibrationCachePath(await typed('rm5')));
    expect(existsSync(calibrationCachePath(plan))).toBe(true);
  });

  it("follows injected measurements, reports them, and gives the single backends' batches", async () => {
    const plan = await typed('rm5');
    // The bigram lists are not pushed down: "reference+pushdown" (the other features in the reader) is a candidate.
    for (const [fast, features] of [
      ['reference', { reference: 42 + 504 + 42 }],
      ['cpu', { reader: 504 + 42, cpu: 42 }],
      ['reference+pushdown', { reader: 504 + 42, reference: 42 }],
    ] as const) {
      const all = { cpu: m(50, 50), reference: m(50, 50), 'reference+pushdown': m(50, 50) };
      writeMeasurements(plan, { ...all, [fast]: m(10, 10) });
      const { batches, placement } = await collect(plans.rm5!, AUTO);
      expect(placement!.chosen).toBe(fast);
      expect(placement!.basis).toBe('measured');
      expect(placement!.features).toEqual(features);
      expect(placement!.measured[fast]).toEqual({ fixedMs: 10, perBatchMs: 10, runMs: 10 + 10 * (160 / 64) });
      expect(Object.keys(placement!.singleMs).sort()).toEqual(['cpu', 'reference']);
      expectSameBatches(batches, cpuAlone.get('rm5')!);
    }
  });

  it('with calibrate: false follows the cost model alone', async () => {
    const { batches, placement } = await collect(plans.rm1!, { ...AUTO, calibrate: false });
    expect(placement!.basis).toBe('model');
    expect(placement!.measured).toEqual({});
    expectSameBatches(batches, cpuAlone.get('rm1')!);
  });

  it('runs a placement written in the plan as written', async () => {
    const spec = plans.rm1!;
    const given = Object.fromEntries(spec.features.map((f, i) => [f.name, i % 2 === 0 ? 'cpu' : 'reference']));
    const { batches, placement } = await collect(spec, { name: 'auto', placement: given, workers: 1 });
    expect(placement!.chosen).toBe('given');
    expect(placement!.features).toEqual({ cpu: Math.ceil(spec.features.length / 2), reference: Math.floor(spec.features.length / 2) });
    expectSameBatches(batches, cpuAlone.get('rm1')!);
  });

  it('measures what the cache lacks on the data itself, then caches it', async () => {
    const plan = await typed('rm1');
    writeMeasurements(plan, {});
    const before = JSON.parse(readFileSync(calibrationCachePath(plan), 'utf8')) as Record<string, unknown>;
    expect(Object.keys(before).sort()).toEqual(['cpu', 'reference']);
    // A fresh cache directory: nothing measured yet.
    process.env.SLUICE_CACHE_DIR = join(dir, 'cache2');
    try {
      const { batches, placement } = await collect(plans.rm1!, AUTO);
      expect(placement!.basis).toBe('measured');
      // The probes took time, and the run says how much (sluice bench leaves it out of its timing).
      expect(placement!.choosingMs).toBeGreaterThan(0);
      // rm1 pushes everything down on the cpu path, so "reference+pushdown" would be the same run.
      expect(Object.keys(placement!.measured).sort()).toEqual(['cpu', 'reference']);
      expect(Object.keys(readMeasurements(plan)).sort()).toEqual(['cpu', 'reference']);
      expectSameBatches(batches, cpuAlone.get('rm1')!);
    } finally {
      process.env.SLUICE_CACHE_DIR = join(dir, 'cache');
    }
  });
});
