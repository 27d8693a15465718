/**
 * modulus {m}: ((x mod m) + m) mod m (core ops/modulus.ts). int32: in f64 SIMD with a
 * reciprocal and one correction each way; int64: a magic multiplier (no division).
 */

import type { Column, Int32Column, Int64Column, PrimitiveColumn } from '@sluice/core/internal';
import { bigOf, magicFor, mapBlocks, mapFast, modMode, tuning, uninit } from './shared.js';
import type { Wasm } from './wasm.js';

export interface ModulusParams {
  readonly m: number | string;
}

const INT64_MAX = (1n << 63n) - 1n;

function modColumn(w: Wasm, c: Int32Column | Int64Column, m: bigint): PrimitiveColumn | undefined {
  const n = c.values.length;
  if (n < (c.type === 'int64' ? tuning.minElements : tuning.minElementsCheap)) return undefined;
  if (c.type === 'int32') {
    // The type rule keeps m <= 2^31 for int32 input; beyond it the reference's result differs.
    if (m > 1n << 31n) return undefined;
    const out = uninit(Int32Array, n);
    const mf = Number(m);
    mapBlocks(w, c.values, c.valid, out, (pSrc, pValid, len, pDst) => w.k.modulusI32(pSrc, pValid, len, mf, pDst));
    return { type: 'int32', values: out, valid: c.valid };
  }
  const out = uninit(BigInt64Array, n);
  const g = magicFor(m);
  const mode = modMode(w, m);
  mapBlocks(w, c.values, c.valid, out, (pSrc, pValid, len, pDst) => w.k.modI64(pSrc, pValid, len, mode, g.m, g.magic, g.sh1, g.sh2, g.c64, pDst));
  return { type: 'int64', values: out, valid: c.valid };
}

/** The fast modulus kernel. */
export function fastModulus(w: Wasm, input: Column, params: ModulusParams): Column | undefined {
  const m = bigOf(params.m);
  if (m === undefined || m < 1n || m > INT64_MAX) return undefined;
  return mapFast(input, (c) => (c.type === 'int32' || c.type === 'int64' ? modColumn(w, c, m) : undefined));
}
