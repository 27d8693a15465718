// `sluice explain` end to end (the built bin): JSON shape and figures for a preset plan, and clear
// errors for bad input (unknown backend in a list, bad flags, a plan without known input types),
// and auto's candidates with the measurements cached for them.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { getPreset, typedForExplain } from '@sluice/core/gen';
import { loadPlan } from '@sluice/core';
import { writeMeasurements } from '@sluice/core/internal';
import { tempDir } from '../packages/core/test/helpers.js';

const BIN = join(import.meta.dirname, '..', 'packages', 'core', 'bin', 'sluice.js');
const dir = tempDir('sluice-explain-cli-');
const sluice = (args: string[]) =>
  new Promise<{ code: number; out: string; err: string }>((resolve) => {
    execFile('node', [BIN, ...args], { timeout: 120_000 }, (e, out, err) => resolve({ code: e ? ((e as { code?: number }).code ?? 1) : 0, out, err }));
  });

describe('sluice explain', () => {
  const plan = join(dir, 'rap2.json');
  writeFileSync(plan, JSON.stringify({ ...getPreset('rap-plan2').defaultPlan(), backend: 'reference' }));

  it('prints {ops, opTypes, kernelsPerBatch, stages} for a preset plan', async () => {
    const r = await sluice(['explain', '--plan', plan, '--json']);
    expect(r.code, r.err).toBe(0);
    const e = JSON.parse(r.out) as {
      ops: number;
      opTypes: number;
      kernelsPerBatch: number;
      stages: Array<{ kernels: number; ops: number }>;
      opsAfterRewrite: number;
    };
    expect(e.ops).toBe(384);
    expect(e.opTypes).toBe(13);
    expect(e.opsAfterRewrite).toBeLessThan(e.ops);
    expect(e.kernelsPerBatch).toBe(e.stages.reduce((a, s) => a + s.kernels, 0));
    expect(e.stages.reduce((a, s) => a + s.ops, 0)).toBeLessThanOrEqual(e.opsAfterRewrite);
    expect(e.kernelsPerBatch * 10).toBeLessThanOrEqual(e.ops);
    const text = await sluice(['explain', '--plan', plan]);
    expect(text.out).toMatch(/kernels per batch/);
  });

  it('rejects an unknown backend in a list, a bad --target-rows-per-sec and a plan of unknown columns', async () => {
    const bad = await sluice(['explain', '--plan', plan, '--backend', 'reference,nosuch']);
    // A malformed option (docs/cli.md's exit codes): refused before anything is read, exit 2.
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/^sluice explain: --backend "nosuch" \(in "reference,nosuch"\) is not a backend here \(available: /);
    const flag = await sluice(['explain', '--plan', plan, '--target-rows-per-sec', 'fast']);
    expect(flag.code).toBe(2);
    expect(flag.err).toMatch(/--target-rows-per-sec must be a positive number/);
    const other = join(dir, 'other.json');
    writeFileSync(other, JSON.stringify({ features: [{ name: 'x', input: 'nope', kind: 'dense', ops: [{ op: 'log' }] }] }));
    const noTypes = await sluice(['explain', '--plan', other]);
    expect(noTypes.code).toBe(1);
    expect(noTypes.err).toMatch(/explain needs the input types: pass --input/);
  });

  it('provisions units for a target throughput', async () => {
    const r = await sluice(['explain', '--plan', plan, '--backend', 'reference', '--target-rows-per-sec', '1000000', '--json']);
    expect(r.code, r.err).toBe(0);
    const e = JSON.parse(r.out) as { provisioning: { units: Array<{ backend: string; units: number; rowsPerSecPerUnit: number }> } };
    const u = e.provisioning.units[0]!;
    expect(u.backend).toBe('reference');
    expect(u.rowsPerSecPerUnit).toBeGreaterThan(0);
    expect(u.units).toBe(Math.ceil(1_000_000 / u.rowsPerSecPerUnit));
  });

  it("shows auto's candidates, their cached measurements, and the choice they imply", async () => {
    process.env.SLUICE_CACHE_DIR = join(dir, 'cache');
    const spec = {
      features: ['I1', 'I2'].map((c) => ({
        name: c,
        input: c,
        kind: 'dense' as const,
        ops: [{ op: 'fillNull', value: 0 }, { op: 'neg2zero' }, { op: 'log', offset: 1 }],
      })),
    };
    const small = join(dir, 'small.json');
    writeFileSync(small, JSON.stringify(spec));
    type P = {
      placement: { chosen: string; basis: string; batches: number; measured: Record<string, { fixedMs: number; perBatchMs: number; runMs: number } | null> };
    };
    const before = await sluice(['explain', '--plan', small, '--backend', 'reference,cpu', '--json']);
    expect(before.code, before.err).toBe(0);
    const b = (JSON.parse(before.out) as P).placement;
    // Everything pushes down, so "reference+pushdown" would be the cpu path: not a candidate of its own.
    expect(b.measured).toEqual({ reference: null, cpu: null });
    expect(b.basis).toBe('model');
    writeMeasurements(typedForExplain(loadPlan(spec)), { reference: { fixedMs: 5, perBatchMs: 9 }, cpu: { fixedMs: 50, perBatchMs: 2 } });
    const after = await sluice(['explain', '--plan', small, '--backend', 'reference,cpu', '--json']);
    const a = (JSON.parse(after.out) as P).placement;
    expect(a.batches).toBe(100);
    expect(a).toMatchObject({ chosen: 'cpu', basis: 'measured', measured: { cpu: { fixedMs: 50, perBatchMs: 2, runMs: 250 }, reference: { runMs: 905 } } });
    const text = await sluice(['explain', '--plan', small, '--backend', 'reference,cpu']);
    expect(text.out).toMatch(/cpu: 250 ms \(50\.00 fixed \+ 2\.00 per batch\)/);
    expect(text.out).toMatch(/chosen: cpu \(fastest measured\)/);
  });
});
