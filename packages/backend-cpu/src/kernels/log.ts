/**
 * log {offset}: f32(log1p(x)) for offset 1, f32(ln(x + offset)) otherwise (core ops/log.ts).
 *
 * The wasm kernel computes ln in f64 (fdlibm's polynomial, two lanes per vector) and rounds to
 * f32; the few lanes it cannot round with certainty (within 256 f64 ulps of an f32 midpoint, about
 * 1 in 2^20) and every special input (NaN, ±Inf, x + offset <= 0) come back as a list, recomputed
 * here with the reference expression. Integers in [0, 65536) (int32 input, or integral float32)
 * are read from a table this side fills with the reference expression too, once a thread has seen
 * enough values with that offset to pay for it.
 */

import type { Column, NumericColumn, PrimitiveColumn } from '@sluice/core/internal';
import { bytesOf, mapBlocks, mapFast, roundUp4, tuning, uninit } from './shared.js';
import type { Wasm } from './wasm.js';

export interface LogParams {
  readonly offset: number;
}

/** Values a thread processes with one offset before it builds that offset's table (~1 ms). */
const TABLE_AFTER = 1 << 18;
const MAX_TABLES = 8;

interface TableState {
  seen: number;
  ptr: number;
}

const tables = new WeakMap<Wasm, Map<number, TableState>>();

/** The table pointer for `offset` (0 while there is none yet). */
function tableFor(w: Wasm, offset: number, n: number): number {
  let byOffset = tables.get(w);
  if (byOffset === undefined) tables.set(w, (byOffset = new Map()));
  let st = byOffset.get(offset);
  if (st === undefined) {
    if (byOffset.size >= MAX_TABLES) return 0;
    byOffset.set(offset, (st = { seen: 0, ptr: 0 }));
  }
  if (st.ptr !== 0) return st.ptr;
  st.seen += n;
  if (st.seen < TABLE_AFTER) return 0;
  const min = w.k.logTableMin();
  const size = w.k.logTableSize();
  const t = new Float32Array(size);
  if (offset === 1) for (let j = 0; j < size; j++) t[j] = Math.log1p(j + min);
  else for (let j = 0; j < size; j++) t[j] = Math.log(j + min + offset);
  st.ptr = w.persistent(size * 4);
  w.heap.set(bytesOf(t), st.ptr);
  return st.ptr;
}

function logColumn(w: Wasm, c: NumericColumn, offset: number): PrimitiveColumn | undefined {
  const n = c.values.length;
  if (n < tuning.minElements) return undefined;
  const out = uninit(Float32Array, n);
  const k = w.k;
  const log1p = offset === 1;
  const table = c.type === 'int32' || c.type === 'float32' ? tableFor(w, offset, n) : 0;
  // The reference's input as numbers, for the lanes handed back (int64 through its words).
  let valueAt: (i: number) => number;
  if (c.type === 'int64') {
    const words = new Uint32Array(c.values.buffer, c.values.byteOffset, 2 * n);
    valueAt = (i) => (words[2 * i + 1]! | 0) * 4294967296 + words[2 * i]!;
  } else {
    const v = c.values;
    valueAt = (i) => v[i]!;
  }
  mapBlocks(
    w,
    c.values,
    c.valid,
    out,
    (pSrc, pValid, len, pDst, start, ext) => {
      const list = ext[0]!;
      let count: number;
      switch (c.type) {
        case 'int32':
          count = log1p ? k.log1pI32(pSrc, pValid, len, pDst, list, table) : k.logI32(pSrc, pValid, len, offset, pDst, list, table);
          break;
        case 'float32':
          count = log1p ? k.log1pF32(pSrc, pValid, len, pDst, list, table) : k.logF32(pSrc, pValid, len, offset, pDst, list, table);
          break;
        case 'float64':
          count = log1p ? k.log1pF64(pSrc, pValid, len, pDst, list) : k.logF64(pSrc, pValid, len, offset, pDst, list);
          break;
        case 'int64':
          count = log1p ? k.log1pI64(pSrc, pValid, len, pDst, list) : k.logI64(pSrc, pValid, len, offset, pDst, list);
          break;
      }
      if (count === 0) return;
      // Recompute the handed-back lanes in place before the block is copied out.
      const idx = new Int32Array(w.buffer, list, count);
      const res = new Float32Array(w.buffer, pDst, len);
      if (log1p) for (let j = 0; j < count; j++) res[idx[j]!] = Math.log1p(valueAt(start + idx[j]!));
      else for (let j = 0; j < count; j++) res[idx[j]!] = Math.log(valueAt(start + idx[j]!) + offset);
    },
    // Hand-back list (n indices) and the kernel's queue of groups for the polynomial.
    [8 * roundUp4(Math.min(n, tuning.block)) + 32],
  );
  return { type: 'float32', values: out, valid: c.valid };
}

/** The fast log kernel (see the file comment). */
export function fastLog(w: Wasm, input: Column, params: LogParams): Column | undefined {
  const { offset } = params;
  if (typeof offset !== 'number') return undefined;
  return mapFast(input, (c) => (c.type === 'utf8' ? undefined : logColumn(w, c, offset)));
}
