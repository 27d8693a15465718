/**
 * fillNull {value}: null slots ← value, no nulls out; a column without nulls is returned as is
 * (core ops/fillNull.ts).
 */

import type { Column, NumericColumn, PrimitiveColumn } from '@sluice/core/internal';
import { bigOf, mapBlocks, mapFast, tuning, uninit } from './shared.js';
import type { Wasm } from './wasm.js';

export interface FillNullParams {
  readonly value: number | string;
}

const f32 = new Float32Array(1);
const i32 = new Int32Array(f32.buffer);
const f64 = new Float64Array(1);
const i64 = new BigInt64Array(f64.buffer);

function fillColumn(w: Wasm, c: NumericColumn, value: number | string): PrimitiveColumn | undefined {
  const valid = c.valid;
  if (valid === null) return c;
  const n = c.values.length;
  if (n < tuning.minElementsCheap) return undefined;
  const k = w.k;
  switch (c.type) {
    case 'int32': {
      // The same conversion as the reference's Int32Array store of Number(value).
      i32[0] = Number(value);
      const fill = i32[0]!;
      const out = uninit(Int32Array, n);
      mapBlocks(w, c.values, valid, out, (s, v, len, d) => k.fillNull32(s, v, len, fill, d));
      return { type: 'int32', values: out, valid: null };
    }
    case 'float32': {
      f32[0] = Number(value);
      const fill = i32[0]!;
      const out = uninit(Float32Array, n);
      mapBlocks(w, c.values, valid, out, (s, v, len, d) => k.fillNull32(s, v, len, fill, d));
      return { type: 'float32', values: out, valid: null };
    }
    case 'float64': {
      f64[0] = Number(value);
      const fill = i64[0]!;
      const out = uninit(Float64Array, n);
      mapBlocks(w, c.values, valid, out, (s, v, len, d) => k.fillNull64(s, v, len, fill, d));
      return { type: 'float64', values: out, valid: null };
    }
    case 'int64': {
      const b = bigOf(value);
      if (b === undefined) return undefined; // the reference throws on BigInt(1.5)
      const fill = BigInt.asIntN(64, b);
      const out = uninit(BigInt64Array, n);
      mapBlocks(w, c.values, valid, out, (s, v, len, d) => k.fillNull64(s, v, len, fill, d));
      return { type: 'int64', values: out, valid: null };
    }
  }
}

/** The fast fillNull kernel. */
export function fastFillNull(w: Wasm, input: Column, params: FillNullParams): Column | undefined {
  const { value } = params;
  return mapFast(input, (c) => (c.type === 'utf8' ? undefined : fillColumn(w, c, value)));
}
