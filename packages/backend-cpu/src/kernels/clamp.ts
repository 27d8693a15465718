/** clamp {min, max}: x < lo ? lo : x > hi ? hi : x, same type out, nulls 0 (core ops/clamp.ts). */

import type { Column, NumericColumn, PrimitiveColumn } from '@sluice/core/internal';
import { bigOf, mapBlocks, mapFast, tuning, uninit } from './shared.js';
import type { Wasm } from './wasm.js';

export interface ClampParams {
  readonly min: number | string;
  readonly max: number | string;
}

const isInt32 = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= -0x80000000 && v <= 0x7fffffff;

function clampColumn(w: Wasm, c: NumericColumn, min: number | string, max: number | string): PrimitiveColumn | undefined {
  const n = c.values.length;
  if (n < (c.type === 'int64' ? tuning.minElements : tuning.minElementsCheap)) return undefined;
  const k = w.k;
  switch (c.type) {
    case 'int32': {
      // Integer bounds inside int32 (the type rule's requirement) make it min(max(x, lo), hi).
      if (!isInt32(min) || !isInt32(max) || min > max) return undefined;
      const out = uninit(Int32Array, n);
      mapBlocks(w, c.values, c.valid, out, (s, v, len, d) => k.clampI32(s, v, len, min, max, d));
      return { type: 'int32', values: out, valid: c.valid };
    }
    case 'float32': {
      const lo = Math.fround(Number(min));
      const hi = Math.fround(Number(max));
      const out = uninit(Float32Array, n);
      mapBlocks(w, c.values, c.valid, out, (s, v, len, d) => k.clampF32(s, v, len, lo, hi, d));
      return { type: 'float32', values: out, valid: c.valid };
    }
    case 'float64': {
      const lo = Number(min);
      const hi = Number(max);
      const out = uninit(Float64Array, n);
      mapBlocks(w, c.values, c.valid, out, (s, v, len, d) => k.clampF64(s, v, len, lo, hi, d));
      return { type: 'float64', values: out, valid: c.valid };
    }
    case 'int64': {
      const lo = bigOf(min);
      const hi = bigOf(max);
      if (lo === undefined || hi === undefined) return undefined; // the reference throws on BigInt(1.5)
      const out = uninit(BigInt64Array, n);
      mapBlocks(w, c.values, c.valid, out, (s, v, len, d) => k.clampI64(s, v, len, BigInt.asIntN(64, lo), BigInt.asIntN(64, hi), d));
      return { type: 'int64', values: out, valid: c.valid };
    }
  }
}

/** The fast clamp kernel. */
export function fastClamp(w: Wasm, input: Column, params: ClampParams): Column | undefined {
  const { min, max } = params;
  return mapFast(input, (c) => (c.type === 'utf8' ? undefined : clampColumn(w, c, min, max)));
}
