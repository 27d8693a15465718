/**
 * hex2int: UTF-8 hex strings → int64 (core ops/hex2int.ts), parsed by the wasm kernel straight from
 * the bytes, one 16-byte SIMD load per string. On the first invalid string the kernel stops and
 * reports the row; the caller's fallback (the reference kernel) then throws the exact OpDataError.
 */

import type { Column, Int64Column, PrimitiveColumn, Utf8Column } from '@sluice/core/internal';
import { bytesOf, mapFast, tuning, uninit } from './shared.js';
import type { Wasm } from './wasm.js';

/** Marks an invalid string: the whole op falls back to the reference, which throws. */
const INVALID = Symbol('invalid hex');

function hexColumn(w: Wasm, c: Utf8Column): Int64Column | undefined | typeof INVALID {
  const n = c.offsets.length - 1;
  if (n < tuning.minElements) return undefined;
  const out = uninit(BigInt64Array, n);
  const outBytes = bytesOf(out);
  const outValid = uninit(Uint8Array, n);
  const { offsets, data, valid } = c;
  let nulls = 0;
  for (let start = 0; start < n; start += tuning.block) {
    const len = Math.min(tuning.block, n - start);
    const base = offsets[start]!;
    const bytes = offsets[start + len]! - base;
    // More than 16 bytes a row means some non-null string is invalid (or nulls hide long strings):
    // the reference decides, and the scratch never has to hold a huge block.
    if (bytes > 16 * len) return INVALID;
    const [pOff, pData, pValid, pOut, pOutValid] = w.reserve([4 * (len + 1), bytes + 16, valid ? len : 0, 8 * len, len]) as [
      number,
      number,
      number,
      number,
      number,
    ];
    const heap = w.heap;
    heap.set(bytesOf(offsets.subarray(start, start + len + 1)), pOff);
    heap.set(data.subarray(base, base + bytes), pData);
    if (valid) heap.set(valid.subarray(start, start + len), pValid);
    const bad = w.k.hex2int(pOff, base, pData, pValid, len, pOut, pOutValid);
    if (bad >= 0) return INVALID;
    nulls += w.k.hexNulls();
    outBytes.set(heap.subarray(pOut, pOut + 8 * len), 8 * start);
    outValid.set(heap.subarray(pOutValid, pOutValid + len), start);
  }
  return { type: 'int64', values: out, valid: nulls === 0 ? null : outValid };
}

/**
 * The fast hex2int kernel. Invalid input: returns undefined so the reference runs and throws its
 * OpDataError (row and message exactly as core reports them).
 */
export function fastHex2int(w: Wasm, input: Column): Column | undefined {
  let invalid = false;
  const res = mapFast(input, (c): PrimitiveColumn | undefined => {
    if (c.type !== 'utf8') return undefined;
    const r = hexColumn(w, c);
    if (r === INVALID) {
      invalid = true;
      return undefined;
    }
    return r;
  });
  return invalid ? undefined : res;
}
