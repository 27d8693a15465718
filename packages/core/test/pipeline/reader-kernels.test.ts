// A backend's reader kernels (BackendRegistration.readerKernels): the decode workers run the
// pushed-down ops with the module the backend names, fall back to core's kernels per call where it
// returns undefined, and to core's kernels altogether when the module does not load. Its own
// file, so that the registrations stay out of other tests.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createBackend, readerKernels } from '@sluice/core/internal';
import { pipeline, registerBackend, type Batch, type PlanSpec } from '@sluice/core';
import { tempDir, writeSmall } from '../helpers.js';

const dir = tempDir();
const file = writeSmall(join(dir, 'small.parquet'), 500, 100);

// Test kernels: neg2zero gives 7 for every entry (not what core computes, so its use shows);
// log declines every call (undefined), so core's log runs.
const kernels = join(dir, 'kernels.mjs');
writeFileSync(
  kernels,
  `export const FAST_OPS = new Map([
  ['neg2zero', (input) => ({ type: 'float32', values: new Float32Array(input.values.length).fill(7), valid: null })],
  ['log', () => undefined],
]);\n`,
);
const broken = join(dir, 'broken.mjs');
writeFileSync(broken, 'export const NOT_FAST_OPS = 1;\n');

const plan: PlanSpec = {
  batchSize: 100,
  label: 'label',
  features: [
    { name: 'n', input: 'I1', kind: 'dense', ops: [{ op: 'fillNull', value: 0 }, { op: 'neg2zero' }] },
    { name: 'l', input: 'I1', kind: 'dense', ops: [{ op: 'fillNull', value: 0 }, { op: 'neg2zero' }, { op: 'log' }] },
  ],
};

/** A backend that never runs (every feature is pushed into the reader) and names `url` as its reader kernels. */
function register(name: string, url: string | null): void {
  registerBackend(name, (p, _spec, state) => createBackend(p, { name: 'reference' }, state), { readerKernels: () => url });
}

async function dense(backend: PlanSpec['backend']): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  const run = pipeline({ ...plan, backend }, { input: file, decoders: 1 });
  for await (const b of run as AsyncIterable<Batch>) out.push(b.dense.data.slice());
  expect(run.metrics().pushdown).toMatchObject({ derived: 2, computedInReader: 10 });
  return out;
}

describe('reader kernels', () => {
  it("the decoders run the ops with the kernels a backend names, and core's where a kernel declines", async () => {
    register('rk-test', pathToFileURL(kernels).href);
    const want = await dense({ name: 'reference', pushdown: true });
    const got = await dense({ name: 'rk-test', pushdown: true });
    expect(got).toHaveLength(5);
    for (let b = 0; b < got.length; b++) {
      for (let r = 0; r < 100; r++) {
        // n: the test kernel's 7 for every row; l: log(1 + 7), core's log on the test neg2zero.
        expect(got[b]![2 * r]).toBe(7);
        expect(got[b]![2 * r + 1]).toBe(Math.fround(Math.log1p(7)));
      }
      // Core's kernels give other values (I1 holds mostly values other than 7).
      expect(want[b]).not.toEqual(got[b]);
    }
  });

  it("a kernels module that does not load leaves core's kernels, with the same results", async () => {
    register('rk-broken', pathToFileURL(broken).href);
    register('rk-missing', pathToFileURL(join(dir, 'no-such-module.mjs')).href);
    register('rk-none', null);
    const want = await dense({ name: 'reference', pushdown: true });
    expect(await dense({ name: 'rk-broken', pushdown: true })).toEqual(want);
    expect(await dense({ name: 'rk-missing', pushdown: true })).toEqual(want);
    expect(await dense({ name: 'rk-none', pushdown: true })).toEqual(want);
  });

  it('readerKernels gives null for backends without them and lists of backends', async () => {
    register('rk-a', 'file:///a.mjs');
    expect(await readerKernels({ name: 'rk-a' })).toBe('file:///a.mjs');
    expect(await readerKernels({ name: 'reference' })).toBeNull();
    expect(await readerKernels({ name: 'rk-a,reference' })).toBeNull();
  });
});
