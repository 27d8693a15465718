// `sluice bench` with `backend: "auto"`, through the built bin (`npm run build` first). The table
// and the JSON name the backend auto chose. The time auto spends choosing (op calibration, then
// probes of the candidates: seconds on a first run) is reported apart and left out of the timed
// figures. No timing thresholds: the checks are the fields, and that the timed seconds and the
// choosing time do not overlap. Both fit inside the process's wall time, which they overran
// while seconds still counted the choosing.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateDataset, getPreset } from '@sluice/core/gen';
import { tempDir } from '../packages/core/test/helpers.js';

const BIN = join(import.meta.dirname, '..', 'packages', 'core', 'bin', 'sluice.js');
const dir = tempDir('sluice-bench-auto-');
const data = join(dir, 'rm1.parquet');
const plan = join(dir, 'plan.json');
// cpu and the in-process reference kernels start everywhere, so no GPU is needed; a cache of
// this test's own, empty at first, makes the first run probe both.
const env = { ...process.env, SLUICE_CACHE_DIR: join(dir, 'cache') };

const sluice = (args: string[]) =>
  new Promise<{ code: number; out: string; err: string }>((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env, timeout: 120_000 }, (e, out, err) =>
      resolve({ code: e ? ((e as { code?: number }).code ?? 1) : 0, out, err }),
    );
  });

interface BenchJson {
  backend: string;
  rows: number;
  seconds: number;
  rowsPerSecond: number;
  placement: { chosen: string; basis: string; measured: Record<string, unknown>; choosingMs: number } | null;
}

beforeAll(async () => {
  await generateDataset({ preset: 'rm1', rows: 3000, out: data, seed: 7, rowGroupSize: 1000 });
  writeFileSync(
    plan,
    JSON.stringify({ ...getPreset('rm1').defaultPlan(), batchSize: 256, backend: { name: 'auto', backends: ['cpu', 'reference'], workers: 1 } }),
  );
}, 60_000);

describe('sluice bench --backend auto', () => {
  it('JSON: names the chosen candidate and leaves the time spent choosing out of seconds', async () => {
    const t0 = performance.now();
    const r = await sluice(['bench', '--plan', plan, '--input', data, '--json']);
    const wallMs = performance.now() - t0;
    expect(r.code, r.err).toBe(0);
    const j = JSON.parse(r.out) as BenchJson;
    expect(j.backend).toBe('auto');
    expect(j.placement).not.toBeNull();
    const p = j.placement!;
    // The first run measured both candidates and ran the one it chose.
    expect(p.basis).toBe('measured');
    expect(Object.keys(p.measured).sort()).toEqual(['cpu', 'reference']);
    expect(['cpu', 'reference']).toContain(p.chosen);
    expect(p.choosingMs).toBeGreaterThan(0);
    // Two disjoint stretches of one process: the choosing, then the timed run.
    expect(j.seconds * 1000 + p.choosingMs).toBeLessThan(wallMs);
    expect(j.rowsPerSecond).toBeCloseTo(j.rows / j.seconds, 6);
  }, 120_000);

  it('table: says what auto chose, how, and how long choosing took; a named backend has no such rows', async () => {
    // The measurements are cached now: this run only reads them.
    const r = await sluice(['bench', '--plan', plan, '--input', data]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^backend\s+auto$/m);
    expect(r.out).toMatch(/^chosen by auto\s+(cpu|reference) \(fastest measured\)$/m);
    expect(r.out).toMatch(/^choosing s \(outside the timed run\)\s+\d+\.\d\d$/m);
    const cpu = await sluice(['bench', '--plan', plan, '--input', data, '--backend', 'cpu', '--json']);
    expect(cpu.code, cpu.err).toBe(0);
    expect((JSON.parse(cpu.out) as BenchJson).placement).toBeNull();
  }, 120_000);
});
