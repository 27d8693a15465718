/**
 * bucketize {borders, right}: number of borders < x (right: <= x), compared in f64 (core
 * ops/bucketize.ts). The wasm kernel runs a branch-free fixed-depth binary search over the borders
 * padded with +Inf to a power of two, eight values interleaved. For int32 input (Criteo counts:
 * mostly small integers), once a thread has bucketized enough values with one borders array, the
 * buckets of the integers [-16, 65520) come from a table computed with the reference kernel.
 */

import { type Column, type NumericColumn, type OpContext, type PrimitiveColumn, OPS } from '@sluice/ops';
import { bytesOf, mapBlocks, mapFast, tuning, uninit } from './shared.js';
import type { Wasm } from './wasm.js';

export interface BucketizeParams {
  readonly borders: readonly number[];
  readonly right: boolean;
}

interface Prepared {
  readonly padded: Float64Array;
  readonly levels: number;
  /** int32 values seen, and the lookup tables once built (0: none yet), for left and right. */
  seen: number;
  tables: [number, number];
}

/** int32 values a thread bucketizes with one borders array before it builds that array's table (~2 ms). */
const TABLE_AFTER = 1 << 18;
/** At most this many tables (256 KiB each) per thread. */
const MAX_TABLES = 64;
const tableCount = new WeakMap<Wasm, number>();
const NO_CTX: OpContext = { features: new Map(), featureTypes: new Map(), column: '' };

/** The lookup table for these borders (0 while there is none). */
function tableFor(w: Wasm, p: Prepared, borders: readonly number[], right: boolean, n: number): number {
  const k = right ? 1 : 0;
  if (p.tables[k] !== 0) return p.tables[k];
  p.seen += n;
  const count = tableCount.get(w) ?? 0;
  if (p.seen < TABLE_AFTER || count >= MAX_TABLES) return 0;
  const min = w.k.bucketTableMin();
  const size = w.k.bucketTableSize();
  const iota = new Int32Array(size);
  for (let j = 0; j < size; j++) iota[j] = j + min;
  const out = OPS.get('bucketize')!.apply({ type: 'int32', values: iota, valid: null }, { borders, right }, NO_CTX) as { values: Int32Array };
  const ptr = w.persistent(4 * size);
  w.heap.set(bytesOf(out.values), ptr);
  tableCount.set(w, count + 1);
  p.tables[k] = ptr;
  return ptr;
}

const prepared = new WeakMap<readonly number[], Prepared>();

/** The borders padded with +Inf to 2^levels entries (cached per borders array). */
function prepare(borders: readonly number[]): Prepared {
  let p = prepared.get(borders);
  if (p === undefined) {
    let levels = 0;
    while (1 << levels < borders.length) levels++;
    const padded = new Float64Array(1 << levels).fill(Infinity);
    padded.set(borders);
    p = { padded, levels, seen: 0, tables: [0, 0] };
    prepared.set(borders, p);
  }
  return p;
}

function bucketizeColumn(w: Wasm, c: NumericColumn, p: Prepared, borders: readonly number[], right: boolean): PrimitiveColumn | undefined {
  const n = c.values.length;
  if (n < tuning.minElements) return undefined;
  const out = uninit(Int32Array, n);
  const k = w.k;
  const nb = borders.length;
  const table = c.type === 'int32' ? tableFor(w, p, borders, right, n) : 0;
  const fn = c.type === 'int32' ? k.bucketizeI32 : c.type === 'float32' ? k.bucketizeF32 : c.type === 'float64' ? k.bucketizeF64 : k.bucketizeI64;
  const r = right ? 1 : 0;
  mapBlocks(
    w,
    c.values,
    c.valid,
    out,
    table !== 0
      ? (pSrc, pValid, len, pDst, _start, ext) => k.bucketizeTableI32(pSrc, pValid, len, ext[0]!, p.levels, nb, r, pDst, table)
      : (pSrc, pValid, len, pDst, _start, ext) => fn(pSrc, pValid, len, ext[0]!, p.levels, nb, r, pDst),
    [p.padded.byteLength],
    (ext) => new Float64Array(w.buffer, ext[0]!, p.padded.length).set(p.padded),
  );
  return { type: 'int32', values: out, valid: c.valid };
}

/** The fast bucketize kernel. */
export function fastBucketize(w: Wasm, input: Column, params: BucketizeParams): Column | undefined {
  const { borders, right } = params;
  if (!Array.isArray(borders) || borders.length === 0 || borders.length > 1 << 24) return undefined;
  const p = prepare(borders);
  return mapFast(input, (c) => (c.type === 'utf8' ? undefined : bucketizeColumn(w, c, p, borders, right === true)));
}
