/**
 * Test helpers for the op kernels: a seeded PRNG, column builders and readers, random inputs with
 * extremes, and slow obvious reference implementations (BigInt for all int64 maths).
 */
import {
  columnType,
  int64Column,
  listColumn,
  utf8FromStrings,
  type Column,
  type ColumnType,
  type ListColumn,
  type PrimitiveColumn,
  type PrimitiveType,
} from '../src/column.js';
import { OPS } from '../src/ops/index.js';
import { Rng as SeededRng } from '../../core/src/util/rng.js';
import type { OpContext, OpDef } from '../src/ops/types.js';

// ---- PRNG ---------------------------------------------------------------------------------------

/** A seeded PRNG returning floats in [0, 1) (the project's xoshiro128**). */
export function mulberry32(seed: number): () => number {
  const rng = new SeededRng(seed);
  return () => rng.next();
}

export interface Rng {
  float(): number;
  /** Integer in [0, n). */
  int(n: number): number;
  pick<T>(xs: readonly T[]): T;
  chance(p: number): boolean;
  /** Uniform random int64. */
  big64(): bigint;
}

export function rng(seed: number): Rng {
  const f = mulberry32(seed);
  const u32 = (): bigint => BigInt(Math.floor(f() * 4294967296));
  return {
    float: f,
    int: (n) => Math.floor(f() * n),
    pick: (xs) => xs[Math.floor(f() * xs.length)]!,
    chance: (p) => f() < p,
    big64: () => BigInt.asIntN(64, (u32() << 32n) | u32()),
  };
}

// ---- extremes -----------------------------------------------------------------------------------

export const INT64_MIN = -(1n << 63n);
export const INT64_MAX = (1n << 63n) - 1n;
export const INT32_MIN = -2147483648;
export const INT32_MAX = 2147483647;
export const P53 = 2 ** 53;

export const EXTREME_I64: readonly bigint[] = [
  0n,
  1n,
  -1n,
  2n,
  -2n,
  INT64_MIN,
  INT64_MAX,
  INT64_MIN + 1n,
  INT64_MAX - 1n,
  BigInt(INT32_MIN),
  BigInt(INT32_MAX),
  (1n << 32n) - 1n,
  1n << 32n,
  -(1n << 32n),
  BigInt(P53) - 1n,
  BigInt(P53),
  BigInt(P53) + 1n,
  -BigInt(P53) - 1n,
  -BigInt(P53) + 1n,
];
export const EXTREME_I32: readonly number[] = [0, 1, -1, 2, -2, INT32_MIN, INT32_MAX, INT32_MIN + 1, INT32_MAX - 1, 65535, -65536];
export const EXTREME_F: readonly number[] = [
  0,
  -0,
  1,
  -1,
  0.5,
  -0.5,
  1e-7,
  -1e-7,
  NaN,
  Infinity,
  -Infinity,
  INT32_MAX,
  INT32_MIN,
  INT32_MAX + 0.5,
  INT32_MIN - 0.5,
  2 ** 31,
  -(2 ** 31) - 1,
  P53 - 1,
  P53,
  P53 + 2,
  -P53,
  2 ** 63,
  -(2 ** 63),
  2 ** 64,
  3.4e38,
  -3.4e38,
  1e-45,
  123.456,
  -987.25,
];

/** A random value of a primitive type, extremes included ~1/4 of the time. */
export function randValue(r: Rng, t: PrimitiveType): number | bigint | string {
  switch (t) {
    case 'int64':
      return r.chance(0.25) ? r.pick(EXTREME_I64) : r.chance(0.5) ? BigInt(r.int(2001) - 1000) : r.big64();
    case 'int32':
      return r.chance(0.25) ? r.pick(EXTREME_I32) : r.chance(0.5) ? r.int(2001) - 1000 : r.int(4294967296) | 0;
    case 'float32':
      return Math.fround(r.chance(0.25) ? r.pick(EXTREME_F) : (r.float() - 0.5) * 10 ** r.int(8));
    case 'float64':
      return r.chance(0.25) ? r.pick(EXTREME_F) : (r.float() - 0.5) * 10 ** r.int(12);
    case 'utf8':
      return randHex(r);
  }
}

function randHex(r: Rng): string {
  const len = r.int(17);
  let s = '';
  for (let i = 0; i < len; i++) s += r.pick([...'0123456789abcdefABCDEF']);
  return s;
}

export type Scalar = number | bigint | string | null;
export type Row = Scalar | Scalar[] | null;

/** Random scalar rows (nulls ~15%). */
export function randScalars(r: Rng, t: PrimitiveType, n: number): Scalar[] {
  return Array.from({ length: n }, () => (r.chance(0.15) ? null : randValue(r, t)));
}

/** Random list rows: null lists, empty lists, null elements. */
export function randLists(r: Rng, t: PrimitiveType, n: number, maxLen = 6): Array<Scalar[] | null> {
  return Array.from({ length: n }, () => {
    if (r.chance(0.1)) return null;
    const len = r.chance(0.15) ? 0 : r.int(maxLen + 1);
    return Array.from({ length: len }, () => (r.chance(0.1) ? null : randValue(r, t)));
  });
}

// ---- builders -----------------------------------------------------------------------------------

const mask = (xs: readonly unknown[]): Uint8Array | null => (xs.some((x) => x === null) ? Uint8Array.from(xs, (x) => (x === null ? 0 : 1)) : null);

/** A primitive column from JS values (null = null). Null slots hold garbage to catch kernels that read them. */
export function col(t: PrimitiveType, xs: readonly Scalar[]): PrimitiveColumn {
  const valid = mask(xs);
  switch (t) {
    case 'int32':
      return { type: t, values: Int32Array.from(xs, (x) => (x === null ? -7 : Number(x))), valid };
    case 'float32':
      return { type: t, values: Float32Array.from(xs, (x) => (x === null ? -7.5 : Number(x))), valid };
    case 'float64':
      return { type: t, values: Float64Array.from(xs, (x) => (x === null ? -7.5 : Number(x))), valid };
    case 'int64':
      return int64Column(
        BigInt64Array.from(xs, (x) => (x === null ? -7n : BigInt(x))),
        valid,
      );
    case 'utf8':
      return { ...utf8FromStrings(xs.map((x) => (x === null ? null : String(x)))), valid };
  }
}

/** A list column from JS rows (null = null list). */
export function list(t: PrimitiveType, rows: ReadonlyArray<readonly Scalar[] | null>): ListColumn {
  const offsets = new Int32Array(rows.length + 1);
  rows.forEach((r, i) => (offsets[i + 1] = offsets[i]! + (r?.length ?? 0)));
  const flat = rows.flatMap((r) => r ?? []);
  return listColumn(offsets, col(t, flat), mask(rows));
}

/** JS values of a column: int64 as bigint, lists as arrays, null slots as null. */
export function rows(c: Column): Row[] {
  const ok = (i: number): boolean => c.valid === null || c.valid[i] === 1;
  switch (c.type) {
    case 'list': {
      const child = rows(c.child) as Scalar[];
      return Array.from({ length: c.offsets.length - 1 }, (_, i) => (ok(i) ? child.slice(c.offsets[i], c.offsets[i + 1]) : null));
    }
    case 'fixed':
      return Array.from({ length: c.values.length / c.size }, (_, i) => (ok(i) ? Array.from(c.values.subarray(i * c.size, (i + 1) * c.size)) : null));
    case 'utf8': {
      const dec = new TextDecoder();
      return Array.from({ length: c.offsets.length - 1 }, (_, i) => (ok(i) ? dec.decode(c.data.subarray(c.offsets[i], c.offsets[i + 1])) : null));
    }
    default:
      return Array.from(c.values as ArrayLike<number | bigint>, (v, i) => (ok(i) ? v : null));
  }
}

/** The raw values of every slot (nulls included), to check that null slots are written as 0. */
export function rawValues(c: PrimitiveColumn): Array<number | bigint> {
  return c.type === 'utf8' ? [] : Array.from(c.values as ArrayLike<number | bigint>);
}

// ---- running ops --------------------------------------------------------------------------------

export const ctx = (extra: Partial<OpContext> = {}): OpContext => ({ features: new Map(), featureTypes: new Map(), column: 'x', ...extra });

/** Validates params, type-checks against the input's type, applies, and checks the result type and purity. */
export function run(op: string, params: Record<string, unknown>, input: Column, c: OpContext = ctx()): Column {
  const def = OPS.get(op) as OpDef;
  const p = def.validate(params);
  const t = def.outputType(columnType(input), p, c);
  const before = snapshot(input);
  const out = def.apply(input, p, c);
  if (snapshot(input) !== before) throw new Error(`${op} mutated its input`);
  if (JSON.stringify(columnType(out)) !== JSON.stringify(t))
    throw new Error(`${op}: output ${JSON.stringify(columnType(out))} but outputType said ${JSON.stringify(t)}`);
  return out;
}

/** The type an op declares for an input type (throws the OpPlanError on rejection). */
export function typeOf(op: string, params: Record<string, unknown>, t: ColumnType, featureTypes = new Map<string, ColumnType>()): ColumnType {
  const def = OPS.get(op) as OpDef;
  return def.outputType(t, def.validate(params), { featureTypes });
}

/** A string fingerprint of every byte a column holds. */
function snapshot(c: Column): string {
  const parts: string[] = [c.type];
  const add = (a: ArrayBufferView | null): void => {
    parts.push(a === null ? '-' : Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('base64'));
  };
  add(c.valid);
  if (c.type === 'list') {
    add(c.offsets);
    parts.push(snapshot(c.child));
  } else if (c.type === 'utf8') {
    add(c.offsets);
    add(c.data);
  } else {
    add(c.values);
  }
  return parts.join('|');
}

// ---- BigInt references --------------------------------------------------------------------------

const M64 = (1n << 64n) - 1n;

export function refMix(x: bigint): bigint {
  let k = x & M64;
  k = ((~k & M64) + (k << 21n)) & M64;
  k ^= k >> 24n;
  k = (k + (k << 3n) + (k << 8n)) & M64;
  k ^= k >> 14n;
  k = (k + (k << 2n) + (k << 4n)) & M64;
  k ^= k >> 28n;
  k = (k + (k << 31n)) & M64;
  return k;
}

export function refHash128(u: bigint, l: bigint): bigint {
  const K = 0x9ddfea08eb382d69n;
  u &= M64;
  l &= M64;
  let a = ((l ^ u) * K) & M64;
  a ^= a >> 47n;
  let b = ((u ^ a) * K) & M64;
  b ^= b >> 47n;
  return (b * K) & M64;
}

export const refFloorMod = (x: bigint, m: bigint): bigint => ((x % m) + m) % m;

export function refSigrid(x: bigint, salt: bigint, max: bigint): bigint {
  if (max === 1n) return 0n;
  return refFloorMod(BigInt.asIntN(64, refHash128(salt, refMix(x))), max);
}

/** The combine-chain fold over ids, from h = 0, as a signed int64. */
export function refFold(ids: readonly bigint[]): bigint {
  let h = 0n;
  for (const id of ids) h = refHash128(h, refMix(id));
  return BigInt.asIntN(64, h);
}
