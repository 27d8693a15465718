// Pipeline metrics in a registry of the user's: after a run, each scraped value equals the run's
// own counter (and the rows equal the file's), stage times are the run's, a second loader needs
// a prefix, the unregister function takes them out; a slow consumer shows as consumer wait.
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { beforeAll, describe, expect, it } from 'vitest';
import { pipeline, registerPipelineMetrics, type PlanSpec } from '@sluice/core';
import { generateDataset, getPreset } from '@sluice/core/gen';
import { tempDir } from '../helpers.js';

const dir = tempDir('sluice-prom-test-');
const data = join(dir, 'rm1.parquet');
const plan: PlanSpec = { ...getPreset('rm1').defaultPlan(), batchSize: 128, backend: { name: 'reference' } };

beforeAll(async () => {
  await generateDataset({ preset: 'rm1', rows: 1000, out: data, seed: 3, rowGroupSize: 300 });
});

/** The scraped value of `name` with `labels`, from the registry's JSON. */
async function value(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  const v = m?.values.find((x) => Object.entries(labels).every(([k, l]) => x.labels[k] === l));
  return v?.value;
}

describe('registerPipelineMetrics', () => {
  it("exposes a run's counters under documented names, read afresh at each scrape", async () => {
    const registry = new Registry();
    const p = pipeline(plan, { input: data });
    await registerPipelineMetrics(p, registry);
    expect(await value(registry, 'sluice_pipeline_rows_total')).toBe(0);
    let batches = 0;
    for await (const b of p) {
      batches++;
      void b;
    }
    const m = p.metrics();
    expect(await value(registry, 'sluice_pipeline_rows_total')).toBe(1000);
    expect(await value(registry, 'sluice_pipeline_batches_total')).toBe(batches);
    expect(batches).toBe(8);
    for (const [stage, field] of [
      ['decode', 'sourceWaitMs'],
      ['preprocess', 'preprocessMs'],
      ['batch', 'batchMs'],
    ] as const) {
      expect(await value(registry, 'sluice_pipeline_stage_seconds_total', { stage })).toBeCloseTo(m[field] / 1000, 9);
    }
    expect(await value(registry, 'sluice_pipeline_backend_bytes_total', { direction: 'in' })).toBe(m.bytesIn);
    expect(await value(registry, 'sluice_pipeline_prefetch_max_buffered')).toBe(m.maxBuffered);
    const text = await registry.metrics();
    expect(text).toMatch(/^# TYPE sluice_pipeline_rows_total counter$/m);
    expect(text).toMatch(/^sluice_pipeline_rows_total 1000$/m);
  });

  it('refuses a name already registered, takes a prefix for a second loader, and unregisters', async () => {
    const registry = new Registry();
    const a = pipeline(plan, { input: data });
    const b = pipeline(plan, { input: data });
    const unregister = await registerPipelineMetrics(a, registry);
    await expect(registerPipelineMetrics(b, registry)).rejects.toThrow(
      'metric sluice_pipeline_rows_total is already registered in this registry (give registerPipelineMetrics a prefix)',
    );
    await registerPipelineMetrics(b, registry, { prefix: 'eval_loader_' });
    for await (const x of b) void x;
    expect(await value(registry, 'eval_loader_rows_total')).toBe(1000);
    unregister();
    expect(registry.getSingleMetric('sluice_pipeline_rows_total')).toBeUndefined();
    await expect(registerPipelineMetrics(a, registry, { prefix: '9bad' })).rejects.toThrow('metric prefix must be');
  });

  it('counts the time the source waited for a slow consumer, and the batches buffered', async () => {
    const p = pipeline(plan, { input: data, prefetch: 1 });
    let most = 0;
    for await (const b of p) {
      void b;
      most = Math.max(most, p.metrics().buffered);
      await new Promise((r) => setTimeout(r, 40));
    }
    const m = p.metrics();
    // 8 batches, 40 ms each at the consumer, one batch of prefetch: the source sat waiting most of that.
    expect(m.consumerWaitMs).toBeGreaterThan(100);
    expect(most).toBeLessThanOrEqual(1);
    expect(m.maxBuffered).toBeLessThanOrEqual(1);
  });
});
