// A backend the user registers under a name that a Sluice package also uses is the one that runs:
// createBackend imports `@sluice/backend-NAME` only for names nobody has registered. (It used to
// import the package on first use, whose registration then replaced the user's.) Its own file, so
// that the registration stays out of other tests.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { backendNames, pipeline, registerBackend, type PlanSpec } from '@sluice/core';
import { createBackend } from '@sluice/core/internal';
import { tempDir, writeSmall } from '../helpers.js';

const file = writeSmall(join(tempDir(), 'small.parquet'), 500, 100);
const plan: PlanSpec = { batchSize: 100, label: 'label', features: [{ name: 'I1', input: 'I1', kind: 'dense', ops: [{ op: 'fillNull', value: 0 }] }] };

describe('backend registry', () => {
  it("keeps a backend the user registered under a package's name", async () => {
    let made = 0;
    // fpga-sim is a Sluice package (vitest resolves @sluice/backend-fpga-sim to its sources).
    registerBackend('fpga-sim', async (p, _spec, state) => {
      made++;
      const inner = await createBackend(p, { name: 'reference' }, state);
      return { ...inner, name: 'mine' };
    });
    let rows = 0;
    const run = pipeline({ ...plan, backend: { name: 'fpga-sim', pushdown: false } }, { input: file });
    for await (const b of run) rows += b.rows;
    expect(rows).toBe(500);
    expect(made).toBe(1);
    expect(backendNames()).toContain('fpga-sim');
  });

  it('an unknown backend is refused with every backend available here, installed packages included', async () => {
    const err = await (async () => {
      for await (const _ of pipeline({ ...plan, backend: { name: 'no-such' } }, { input: file })) {
        /* none */
      }
    })().catch((e: Error) => e);
    expect(String(err)).toMatch(/unknown backend "no-such" \(available here: .*\)/);
    // The workspace's backend packages are listed though none of them was imported by this test.
    for (const name of ['reference', 'cpu', 'auto', 'webgpu', 'fpga-sim', 'smartssd-sim']) expect(String(err)).toContain(name);
  });
});
