import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Column, OPS } from '@sluice/core/internal';
import { describe, expect, it } from 'vitest';
import { FAST_OPS, fastKernelsAvailable } from '../../src/kernels/index.js';
import { CTX, Rand, describeFast, numeric } from './helpers.js';

const run = (op: string, input: Column, raw: Record<string, unknown>): Column | undefined => FAST_OPS.get(op)!(input, OPS.get(op)!.validate(raw), CTX);

describeFast('fast kernel contract', () => {
  it('covers the stateless element-wise ops', () => {
    expect(fastKernelsAvailable()).toBe(true);
    expect([...FAST_OPS.keys()].sort()).toEqual(['bucketize', 'clamp', 'fillNull', 'hex2int', 'log', 'modulus', 'neg2zero', 'sigridHash']);
  });

  it('returns undefined (use the reference) for short columns and inputs it does not take', () => {
    const r = new Rand(51);
    const short = numeric('int32', 10, 0.2, r);
    for (const [op, raw] of [
      ['log', { offset: 1 }],
      ['neg2zero', {}],
      ['fillNull', { value: 0 }],
      ['bucketize', { borders: [1] }],
      ['sigridHash', { max: 10 }],
    ] as const) {
      expect(run(op, short, raw)).toBeUndefined();
    }
    const fixed: Column = { type: 'fixed', size: 2, values: new Float32Array(4000), valid: null };
    expect(run('neg2zero', fixed, {})).toBeUndefined();
    const longF64 = numeric('float64', 5000, 0, r);
    expect(run('modulus', longF64, { m: 3 })).toBeUndefined();
    expect(run('sigridHash', longF64, { max: 3 })).toBeUndefined();
    // int32 clamp with bounds its type rule would reject, int64 fillNull with a fraction: the reference decides.
    expect(run('clamp', numeric('int32', 5000, 0, r), { min: 0.5, max: 3 })).toBeUndefined();
    expect(run('fillNull', numeric('int64', 5000, 0.1, r), { value: 1.5 })).toBeUndefined();
  });

  it('fillNull hands back a column without nulls as it is, like the reference', () => {
    const c = numeric('float64', 5000, 0, new Rand(52));
    expect(run('fillNull', c, { value: 1 })).toBe(c);
  });
});

// The child process resolves @sluice/core to its build (packages/core/dist), as a worker does.
const coreBuilt = existsSync(fileURLToPath(new URL('../../../core/dist/index.js', import.meta.url)));
if (!coreBuilt && process.env.CI === 'true')
  throw new Error('[kernels] the no-wasm import test must run under CI=true: @sluice/core is not built (npm run build)');
if (!coreBuilt) console.warn('[kernels] skipping the no-wasm import test: @sluice/core is not built (npm run build)');

describe('without the wasm module', () => {
  it.skipIf(!coreBuilt)('imports cleanly with an empty FAST_OPS (SLUICE_FAST_KERNELS=0 stands in for a missing build)', () => {
    const index = fileURLToPath(new URL('../../src/kernels/index.ts', import.meta.url));
    const code = `import(${JSON.stringify(index)}).then(async (m) => { await m.initFastKernels(); console.log(JSON.stringify([m.fastKernelsAvailable(), m.FAST_OPS.size, m.fastKernelsError()])); });`;
    const tsx = fileURLToPath(new URL('../../../../node_modules/tsx/dist/cli.mjs', import.meta.url));
    const res = spawnSync(process.execPath, [tsx, '--eval', code], { encoding: 'utf8', env: { ...process.env, SLUICE_FAST_KERNELS: '0' } });
    expect(res.stderr).toBe('');
    expect(JSON.parse(res.stdout.trim())).toEqual([false, 0, 'disabled by SLUICE_FAST_KERNELS=0']);
  });
});
