/**
 * sigridHash {salt, max} (core ops/sigridHash.ts, OPS.md): twang_mix64 and hash_128_to_64 on
 * native i64 in wasm, then floorMod by `max` through a precomputed magic multiplier.
 */

import type { Column, Int32Column, Int64Column, PrimitiveColumn } from '@sluice/core/internal';
import { bigOf, magicFor, mapBlocks, mapFast, modMode, tuning, uninit } from './shared.js';
import type { Wasm } from './wasm.js';

export interface SigridHashParams {
  readonly salt: number | string;
  readonly max: number | string;
}

const INT64_MAX = (1n << 63n) - 1n;

function sigridColumn(w: Wasm, c: Int32Column | Int64Column, salt: bigint, max: bigint): PrimitiveColumn | undefined {
  const n = c.values.length;
  if (n < tuning.minElements) return undefined;
  const out = uninit(BigInt64Array, n);
  const g = magicFor(max);
  const mode = modMode(w, max);
  const fn = c.type === 'int64' ? w.k.sigridI64 : w.k.sigridI32;
  mapBlocks(w, c.values, c.valid, out, (pSrc, pValid, len, pDst) => fn(pSrc, pValid, len, salt, mode, g.m, g.magic, g.sh1, g.sh2, g.c64, pDst));
  return { type: 'int64', values: out, valid: c.valid };
}

/** The fast sigridHash kernel. */
export function fastSigridHash(w: Wasm, input: Column, params: SigridHashParams): Column | undefined {
  const salt = bigOf(params.salt);
  const max = bigOf(params.max);
  if (salt === undefined || max === undefined || max < 1n || max > INT64_MAX || salt < -INT64_MAX - 1n || salt > INT64_MAX) return undefined;
  return mapFast(input, (c) => (c.type === 'int32' || c.type === 'int64' ? sigridColumn(w, c, salt, max) : undefined));
}
