/**
 * Fast kernels for the CPU backend: WebAssembly SIMD versions of the stateless element-wise ops,
 * bit-identical to core's reference kernels. The executor looks an op up in FAST_OPS and falls
 * back to the reference `def.apply` when there is no entry or the kernel returns undefined (an
 * input type or parameter it does not accelerate, or a column too short to be worth a wasm call).
 *
 * Where the reference kernel is as fast (measured by bench/kernels.ts), there is no entry.
 *
 * @example
 * import { FAST_OPS } from './kernels/index.js';
 * const out = FAST_OPS.get(op.name)?.(input, op.params, ctx) ?? OPS.get(op.name)!.apply(input, op.params, ctx);
 */

import { OPS } from '@sluice/ops';
import type { BucketizeParams } from './bucketize.js';
import { fastBucketize } from './bucketize.js';
import type { ClampParams } from './clamp.js';
import { fastClamp } from './clamp.js';
import type { FillNullParams } from './fillNull.js';
import { fastFillNull } from './fillNull.js';
import { fastHex2int } from './hex2int.js';
import type { LogParams } from './log.js';
import { fastLog } from './log.js';
import type { ModulusParams } from './modulus.js';
import { fastModulus } from './modulus.js';
import { fastNeg2zero } from './neg2zero.js';
import { type FastKernel, warmUpModulus } from './shared.js';
import type { SigridHashParams } from './sigridHash.js';
import { fastSigridHash } from './sigridHash.js';
import { type Wasm, wasm, wasmLoadError } from './wasm.js';

export type { FastKernel } from './shared.js';

function build(w: Wasm): Map<string, FastKernel> {
  return new Map<string, FastKernel>([
    ['fillNull', (input, params) => fastFillNull(w, input, params as FillNullParams)],
    ['neg2zero', (input) => fastNeg2zero(w, input)],
    ['clamp', (input, params) => fastClamp(w, input, params as ClampParams)],
    ['log', (input, params) => fastLog(w, input, params as LogParams)],
    ['bucketize', (input, params) => fastBucketize(w, input, params as BucketizeParams)],
    ['sigridHash', (input, params) => fastSigridHash(w, input, params as SigridHashParams)],
    ['modulus', (input, params) => fastModulus(w, input, params as ModulusParams)],
    [
      'hex2int',
      (input, params, ctx) => {
        const out = fastHex2int(w, input);
        // Undefined here can mean invalid input: the reference then throws its exact OpDataError.
        return out ?? OPS.get('hex2int')!.apply(input, params, ctx);
      },
    ],
  ]);
}

const instance = wasm();
if (instance !== null) warmUpModulus(instance);

/** Fast kernels by op name; empty when the wasm module is not built or cannot be loaded. */
export const FAST_OPS: ReadonlyMap<string, FastKernel> = instance === null ? new Map() : build(instance);

/** Whether the wasm kernels loaded in this thread (false: build/kernels.wasm missing, see fastKernelsError). */
export function fastKernelsAvailable(): boolean {
  return instance !== null;
}

/** Why the kernels are unavailable, or undefined when they loaded. */
export function fastKernelsError(): string | undefined {
  return instance === null ? wasmLoadError() : undefined;
}

/**
 * Loads the kernels in this thread. The module is compiled synchronously at import, so this only
 * reports the outcome; it exists so a worker can await readiness uniformly.
 */
export async function initFastKernels(): Promise<void> {
  wasm();
}
