/**
 * Shared test plumbing for the fast kernels: seeded column generators with the edge values each
 * type has, a bit-exact column comparison, and the fast-vs-reference check.
 */

import { type Column, type ListColumn, type NumericType, type OpContext, type PrimitiveColumn, OPS, OpDataError } from '@sluice/core/internal';
import { describe, expect } from 'vitest';
import { FAST_OPS, fastKernelsAvailable, fastKernelsError } from '../../src/kernels/index.js';

export const CTX: OpContext = { features: new Map(), featureTypes: new Map(), column: 'x' };

/** describe() that skips, with the reason printed, when build/kernels.wasm is not built (fails under CI=true, whose install builds it). */
export function describeFast(name: string, fn: () => void): void {
  if (!fastKernelsAvailable() && process.env.CI === 'true')
    throw new Error(`[kernels] "${name}" must run under CI=true: wasm kernels unavailable (${fastKernelsError()})`);
  if (!fastKernelsAvailable()) {
    console.warn(`[kernels] skipping "${name}": wasm kernels unavailable (${fastKernelsError()}); run \`npm run build:wasm\` in packages/backend-cpu`);
  }
  describe.skipIf(!fastKernelsAvailable())(name, fn);
}

/** A small seeded PRNG (mulberry32). */
export class Rand {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  u32(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }
  next(): number {
    return this.u32() / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
}

const I32_EDGES = [0, 1, -1, 2, -2, 0x7fffffff, -0x80000000, 0x7ffffffe, -0x7fffffff, 65535, 65536, 65519, 65520, -16, -17, 100, 1000];
const F_EDGES = [
  0,
  -0,
  1,
  -1,
  2,
  -2,
  0.5,
  -0.5,
  NaN,
  Infinity,
  -Infinity,
  1e-300,
  -1e-300,
  5e-324,
  1e-40,
  -1e-40,
  1.4e-45,
  3.4028234663852886e38,
  1.7976931348623157e308,
  -1.7976931348623157e308,
  2 ** 53,
  2 ** 53 + 2,
  2 ** 63,
  -(2 ** 63),
  1e-9,
  -1e-9,
  2 ** -29,
  2 ** -54,
  65519,
  65520,
  -0.999999,
  -1.000001,
  0.1,
  3.5,
];
const I64_EDGES = [
  0n,
  1n,
  -1n,
  2n,
  -2n,
  (1n << 63n) - 1n,
  -(1n << 63n),
  (1n << 31n) - 1n,
  -(1n << 31n),
  1n << 32n,
  (1n << 32n) - 1n,
  -(1n << 32n),
  1n << 53n,
  (1n << 53n) + 1n,
  -(1n << 53n) - 1n,
  123456789012345n,
];

/** Values of one type: mostly random in several ranges, with the type's edge values mixed in. */
export function values(type: NumericType, n: number, r: Rand): Int32Array | Float32Array | Float64Array | BigInt64Array {
  switch (type) {
    case 'int32': {
      const a = new Int32Array(n);
      for (let i = 0; i < n; i++) {
        const k = r.int(6);
        a[i] =
          k === 0 ? r.pick(I32_EDGES) : k === 1 ? r.u32() | 0 : k === 2 ? r.int(200) - 20 : k === 3 ? Math.floor(Math.exp(r.next() * 12)) : r.int(70000) - 16;
      }
      return a;
    }
    case 'float32':
    case 'float64': {
      const a = type === 'float32' ? new Float32Array(n) : new Float64Array(n);
      for (let i = 0; i < n; i++) {
        const k = r.int(7);
        a[i] =
          k === 0
            ? r.pick(F_EDGES)
            : k === 1
              ? (r.next() - 0.5) * Math.exp((r.next() - 0.5) * 200)
              : k === 2
                ? r.int(70000) - 16
                : k === 3
                  ? (r.next() * 2 - 1) * 1e-8
                  : k === 4
                    ? r.next() * 2 - 1
                    : (r.next() - 0.1) * 1e6;
      }
      return a;
    }
    case 'int64': {
      const a = new BigInt64Array(n);
      for (let i = 0; i < n; i++) {
        const k = r.int(5);
        a[i] =
          k === 0
            ? r.pick(I64_EDGES)
            : k === 1
              ? BigInt.asIntN(64, (BigInt(r.u32()) << 32n) | BigInt(r.u32()))
              : k === 2
                ? BigInt(r.int(200) - 20)
                : k === 3
                  ? BigInt(r.u32() | 0)
                  : BigInt.asIntN(64, BigInt(r.u32()) << BigInt(r.int(33)));
      }
      return a;
    }
  }
}

/** A validity mask with the given null rate (null when the rate is 0). */
export function validity(n: number, nullRate: number, r: Rand): Uint8Array | null {
  if (nullRate === 0) return null;
  const v = new Uint8Array(n);
  for (let i = 0; i < n; i++) v[i] = r.next() < nullRate ? 0 : 1;
  return v;
}

export function numeric(type: NumericType, n: number, nullRate: number, r: Rand): PrimitiveColumn {
  return { type, values: values(type, n, r), valid: validity(n, nullRate, r) } as PrimitiveColumn;
}

/** A list column over `child`'s elements: random lengths (some empty, some long), some null lists. */
export function listOf(child: PrimitiveColumn, r: Rand, nullListRate = 0.05): ListColumn {
  const total = child.type === 'utf8' ? child.offsets.length - 1 : child.values.length;
  const offsets: number[] = [0];
  const valid: number[] = [];
  let at = 0;
  while (at < total) {
    const isNull = r.next() < nullListRate;
    const len = isNull ? 0 : Math.min(total - at, r.next() < 0.05 ? r.int(3000) : r.int(8));
    at += len;
    offsets.push(at);
    valid.push(isNull ? 0 : 1);
  }
  offsets.push(at);
  valid.push(1);
  return { type: 'list', offsets: Int32Array.from(offsets), child, valid: valid.includes(0) ? Uint8Array.from(valid) : null };
}

const bytes = (a: ArrayBufferView): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/** Where two columns differ (type, lengths, value bits, validity), or undefined when bit-identical. */
export function columnDiff(a: Column, b: Column, path = 'column'): string | undefined {
  if (a.type !== b.type) return `${path}: type ${a.type} vs ${b.type}`;
  if ((a.valid === null) !== (b.valid === null)) return `${path}: valid ${a.valid === null ? 'null' : 'mask'} vs ${b.valid === null ? 'null' : 'mask'}`;
  if (a.valid && b.valid) {
    if (a.valid.length !== b.valid.length) return `${path}: valid length ${a.valid.length} vs ${b.valid.length}`;
    for (let i = 0; i < a.valid.length; i++) if (a.valid[i] !== b.valid[i]) return `${path}: valid[${i}] ${a.valid[i]} vs ${b.valid[i]}`;
  }
  if (a.type === 'list' && b.type === 'list') {
    if (a.offsets.length !== b.offsets.length || a.offsets.some((o, i) => o !== b.offsets[i])) return `${path}: list offsets differ`;
    return columnDiff(a.child, b.child, `${path}.child`);
  }
  if (a.type === 'list' || b.type === 'list' || a.type === 'utf8' || b.type === 'utf8' || a.type === 'fixed' || b.type === 'fixed')
    return `${path}: unexpected type ${a.type}`;
  const va = a.values;
  const vb = b.values;
  if (va.constructor !== vb.constructor) return `${path}: array ${va.constructor.name} vs ${vb.constructor.name}`;
  if (va.length !== vb.length) return `${path}: length ${va.length} vs ${vb.length}`;
  const x = bytes(va);
  const y = bytes(vb);
  const es = va.BYTES_PER_ELEMENT;
  for (let i = 0; i < x.length; i++) {
    if (x[i] !== y[i]) {
      const e = Math.floor(i / es);
      return `${path}: value[${e}] ${String(va[e])} vs ${String(vb[e])} (bits differ)`;
    }
  }
  return undefined;
}

/**
 * Runs the fast kernel and the reference on the same input and params, expecting the same column
 * bit for bit. Returns whether the fast kernel handled the input (false: it returned undefined).
 */
export function checkOp(op: string, input: Column, rawParams: Record<string, unknown>): boolean {
  const def = OPS.get(op)!;
  const params = def.validate(rawParams);
  const fast = FAST_OPS.get(op);
  expect(fast, `FAST_OPS has ${op}`).toBeDefined();
  const got = fast!(input, params, CTX);
  const want = def.apply(input, params, CTX);
  if (got === undefined) return false;
  const diff = columnDiff(got, want);
  expect(diff, `${op} ${JSON.stringify(rawParams)}`).toBeUndefined();
  return true;
}

/** The OpDataError the reference throws, and the one the fast kernel throws, for the same input. */
export function errorsOf(op: string, input: Column, rawParams: Record<string, unknown> = {}): [unknown, unknown] {
  const def = OPS.get(op)!;
  const params = def.validate(rawParams);
  const catchIt = (f: () => unknown): unknown => {
    try {
      f();
    } catch (e) {
      return e;
    }
    return undefined;
  };
  const want = catchIt(() => def.apply(input, params, CTX));
  const got = catchIt(() => FAST_OPS.get(op)!(input, params, CTX) ?? def.apply(input, params, CTX));
  return [got, want];
}

export { OpDataError };

export const NUMERIC: readonly NumericType[] = ['int32', 'float32', 'float64', 'int64'];
/** Lengths around the group (4) and block (16384) boundaries. */
export const LENGTHS: readonly number[] = [0, 1, 3, 4, 5, 63, 64, 65, 1000, 16383, 16384, 16385, 40001];
