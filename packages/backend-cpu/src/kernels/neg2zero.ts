/** neg2zero: x < 0 → 0 (-0 and NaN stay), same type out, nulls 0 (core ops/neg2zero.ts). */

import type { Column, NumericColumn, PrimitiveColumn } from '@sluice/core/internal';
import { mapBlocks, mapFast, tuning, uninit } from './shared.js';
import type { Wasm } from './wasm.js';

function neg2zeroColumn(w: Wasm, c: NumericColumn): PrimitiveColumn | undefined {
  const n = c.values.length;
  if (n < tuning.minElementsCheap) return undefined;
  const k = w.k;
  switch (c.type) {
    case 'int32': {
      const out = uninit(Int32Array, n);
      mapBlocks(w, c.values, c.valid, out, k.neg2zeroI32);
      return { type: 'int32', values: out, valid: c.valid };
    }
    case 'float32': {
      const out = uninit(Float32Array, n);
      mapBlocks(w, c.values, c.valid, out, k.neg2zeroF32);
      return { type: 'float32', values: out, valid: c.valid };
    }
    case 'float64': {
      const out = uninit(Float64Array, n);
      mapBlocks(w, c.values, c.valid, out, k.neg2zeroF64);
      return { type: 'float64', values: out, valid: c.valid };
    }
    case 'int64': {
      const out = uninit(BigInt64Array, n);
      mapBlocks(w, c.values, c.valid, out, k.neg2zeroI64);
      return { type: 'int64', values: out, valid: c.valid };
    }
  }
}

/** The fast neg2zero kernel. */
export function fastNeg2zero(w: Wasm, input: Column): Column | undefined {
  return mapFast(input, (c) => (c.type === 'utf8' ? undefined : neg2zeroColumn(w, c)));
}
