/**
 * Placement: which ops of each feature run on the GPU. Each feature's chain splits into a CPU
 * prefix (string and stateful ops, list restructuring: hex2int, firstX, vocab, mapId, …), one
 * fused GPU segment of element-wise numeric ops, and a CPU suffix — RECom's CPU/GPU co-running
 * (RECom §5), where string work stays on the host.
 *
 * Float transcendental ops (log, logit, boxCox) stay on the CPU on purpose: the reference
 * computes them in float64 and rounds once to float32; WGSL has no f64, and llvmpipe's f32 log
 * measured 1 ulp off for 353,141 of the first 2^20 integers. That is inside the 1-ulp float
 * allowance, but then `--backend webgpu` could not write the same output file as `--backend cpu`,
 * so exactness wins here.
 */
import { elementType, type ColumnType, type TypedFeature } from '@sluice/core/internal';
import type { ElemType, GpuStep } from './wgsl.js';

/** A feature's split: ops [0, start) on the CPU, [start, end) fused on the GPU, [end, n) on the CPU. */
export interface FeaturePlacement {
  readonly feature: TypedFeature;
  /** null when the whole feature runs on the CPU. */
  readonly gpu: {
    readonly start: number;
    readonly end: number;
    readonly from: ElemType;
    readonly to: ElemType;
    readonly steps: readonly GpuStep[];
    readonly makesNulls: boolean;
  } | null;
}

const f32 = new Float32Array(1);
const f32Bits = new Uint32Array(f32.buffer);

/** The bit pattern of a number rounded to float32. */
export function floatBits(x: number): number {
  f32[0] = x;
  return f32Bits[0]!;
}

/** The float32 next to `bits` toward -Infinity (bits of a non-NaN, non -Infinity value). */
function nextDown(bits: number): number {
  if ((bits & 0x7fffffff) === 0) return 0x80000001; // ±0 → the smallest negative subnormal
  return bits >>> 31 ? bits + 1 : bits - 1;
}
const nextUp = (bits: number): number => ((bits & 0x7fffffff) === 0 ? 1 : bits >>> 31 ? bits - 1 : bits + 1);
const bitsValue = (bits: number): number => {
  f32Bits[0] = bits;
  return f32[0]!;
};

/** Largest float32 <= b (b finite). */
export function floorF32(b: number): number {
  const bits = floatBits(b);
  return bitsValue(bits) > b ? nextDown(bits) : bits;
}
/** Smallest float32 >= b (b finite). */
export function ceilF32(b: number): number {
  const bits = floatBits(b);
  return bitsValue(bits) < b ? nextUp(bits) : bits;
}

/** [lo, hi] u32 words of an int64 given as a number or decimal string. */
export function words64(v: number | string): [number, number] {
  const u = BigInt.asUintN(64, BigInt(v));
  return [Number(u & 0xffffffffn), Number(u >> 32n)];
}

/** The element words of a scalar parameter for an element type: int as sign-extended words, float32 as bits. */
function valueWords(v: number | string, t: ElemType): [number, number] {
  if (t === 'float32') return [floatBits(Number(v)), 0];
  return words64(v);
}

/**
 * Bucketize thresholds for int32 input: with x an integer, b < x ⟺ x ≥ floor(b) + 1 and b ≤ x ⟺
 * x ≥ ceil(b). Thresholds below the int32 range always count (clamped to -2^31); those above it
 * never do and are dropped (borders are non-decreasing, so they are the tail).
 */
export function intThresholds(borders: readonly number[], right: boolean): number[] {
  const out: number[] = [];
  for (const b of borders) {
    const t = right ? Math.ceil(b) : Math.floor(b) + 1;
    if (t > 0x7fffffff) break;
    out.push(Math.max(t, -0x80000000) >>> 0);
  }
  return out;
}

/**
 * Bucketize thresholds for float32 input: b < x ⟺ floorF32(b) < x, and b ≤ x ⟺ ceilF32(b) ≤ x,
 * because no float32 lies strictly between floorF32(b) and ceilF32(b).
 */
export const floatThresholds = (borders: readonly number[], right: boolean): number[] => borders.map((b) => (right ? ceilF32(b) : floorF32(b)));

type Params = Record<string, unknown>;

/** The GPU step for op `op` on element type `t`, or null when it stays on the CPU. */
export function gpuStep(op: string, params: unknown, t: ElemType): GpuStep | null {
  const p = params as Params;
  const step = (to: ElemType, code: string, ps: number[] = [], makesNulls = false): GpuStep => ({ op, from: t, to, code, params: ps, makesNulls });
  switch (op) {
    case 'fillNull':
      return step(t, '    if (!v) { x = vec2u(P[q], P[q + 1u]); v = true; }', valueWords(p.value as number | string, t));
    case 'neg2zero':
      if (t === 'float32') return step(t, '    let a = x.x & 0x7fffffffu;\n    if ((x.x >> 31u) == 1u && a != 0u && a <= 0x7f800000u) { x = vec2u(0u, 0u); }');
      return step(t, '    if ((x.y >> 31u) == 1u) { x = vec2u(0u, 0u); }');
    case 'clamp': {
      const ps = [...valueWords(p.min as number | string, t), ...valueWords(p.max as number | string, t)];
      if (t === 'float32') return step(t, '    if (flt(x.x, P[q])) { x.x = P[q]; } else if (flt(P[q + 2u], x.x)) { x.x = P[q + 2u]; }', ps);
      return step(
        t,
        '    let lo = vec2u(P[q], P[q + 1u]);\n    let hi = vec2u(P[q + 2u], P[q + 3u]);\n    if (lt64s(x, lo)) { x = lo; } else if (lt64s(hi, x)) { x = hi; }',
        ps,
      );
    }
    case 'cast': {
      const to = p.to as ElemType;
      if (to === t) return step(t, '');
      if (to === 'float32') return t === 'int32' ? step(to, '    x = vec2u(i32ToF32(x.x), 0u);') : null; // int64 → float32 rounds twice (via float64): CPU
      if (t === 'float32') return step(to, `    let c = f32ToInt(x.x, ${to === 'int64'});\n    x = c.xy;\n    v = v && c.z == 1u;`, [], true);
      return step(to, '    x = sx(x.x);'); // int64 → int32 keeps the low word; int32 → int64 is already sign-extended
    }
    case 'bucketize': {
      const borders = p.borders as number[];
      const right = p.right as boolean;
      if (t === 'int64') return null; // compared through float64 rounding: CPU
      const th = t === 'int32' ? intThresholds(borders, right) : floatThresholds(borders, right);
      const pred = t === 'int32' ? 'bitcast<i32>(P[q + 1u + mid]) <= bitcast<i32>(x.x)' : right ? 'fle(P[q + 1u + mid], x.x)' : 'flt(P[q + 1u + mid], x.x)';
      return step(
        'int32',
        `    var lo = 0u;\n    var hi = P[q];\n    while (lo < hi) { let mid = (lo + hi) >> 1u; if (${pred}) { lo = mid + 1u; } else { hi = mid; } }\n    x = vec2u(lo, 0u);`,
        [th.length, ...th],
      );
    }
    case 'sigridHash':
      if (t === 'float32') return null;
      return step('int64', '    x = sigrid(x, vec2u(P[q], P[q + 1u]), vec2u(P[q + 2u], P[q + 3u]));', [
        ...words64(p.salt as number | string),
        ...words64(p.max as number | string),
      ]);
    case 'modulus':
      if (t === 'float32') return null;
      return step(t, '    x = floorMod64(x, vec2u(P[q], P[q + 1u]));', words64(p.m as number | string));
    default:
      return null;
  }
}

const gpuElem = (t: ColumnType): ElemType | null => {
  const e = elementType(t);
  return e === 'int32' || e === 'int64' || e === 'float32' ? e : null;
};

/**
 * Splits a feature: its GPU segment is the first maximal run of ops that have GPU steps. A feature
 * with a `cross` before that run reads other features' outputs, so it runs wholly on the CPU.
 */
export function placeFeature(f: TypedFeature): FeaturePlacement {
  const typeBefore = (k: number): ColumnType => (k === 0 ? f.inputType : f.types[k - 1]!);
  let start = -1;
  const steps: GpuStep[] = [];
  for (let k = 0; k < f.ops.length; k++) {
    const o = f.ops[k]!;
    const t = gpuElem(typeBefore(k));
    const s = t !== null && typeBefore(k).kind !== 'fixed' ? gpuStep(o.op, o.params, t) : null;
    if (s === null) {
      if (start >= 0) break;
      if (o.op === 'cross') return { feature: f, gpu: null };
      continue;
    }
    if (start < 0) start = k;
    steps.push(s);
  }
  if (start < 0) return { feature: f, gpu: null };
  return {
    feature: f,
    gpu: { start, end: start + steps.length, from: steps[0]!.from, to: steps[steps.length - 1]!.to, steps, makesNulls: steps.some((s) => s.makesNulls) },
  };
}
