import type { Column, ColumnType } from '../column.js';
import { type NumberArray, asNumeric, mapElements, mapSameType } from './elementwise.js';
import { type Int64Value, bigToWords, cmp64, int64Value, parseInt64 } from './int64.js';
import { checkKeys, numericElement } from './params.js';
import { type OpDef, OpPlanError } from './types.js';
import { show } from '../util/show.js';

export interface ClampParams {
  /** Finite numbers; integers beyond 2^53 as decimal strings (int64 columns). */
  readonly min: number | Int64Value;
  readonly max: number | Int64Value;
}

/** out[i] = src[i] clamped to [lo, hi]; NaN stays NaN; null slots get 0. */
export function clampValues(src: NumberArray, valid: Uint8Array | null, lo: number, hi: number, out: NumberArray): void {
  for (let i = 0; i < src.length; i++) {
    const x = src[i]!;
    out[i] = valid !== null && valid[i] === 0 ? 0 : x < lo ? lo : x > hi ? hi : x;
  }
}

/** clamp on int64 words with bounds (minLo, minHi) <= (maxLo, maxHi), compared signed. */
export function clampWords(src: Uint32Array, valid: Uint8Array | null, minLo: number, minHi: number, maxLo: number, maxHi: number, out: Uint32Array): void {
  for (let i = 0; i < src.length >>> 1; i++) {
    if (valid !== null && valid[i] === 0) continue;
    let lo = src[2 * i]!;
    let hi = src[2 * i + 1]!;
    if (cmp64(lo, hi, minLo, minHi) < 0) {
      lo = minLo;
      hi = minHi;
    } else if (cmp64(lo, hi, maxLo, maxHi) > 0) {
      lo = maxLo;
      hi = maxHi;
    }
    out[2 * i] = lo;
    out[2 * i + 1] = hi;
  }
}

function bound(params: Record<string, unknown>, name: string): number | Int64Value {
  const v = params[name];
  if (v === undefined) throw new OpPlanError(`missing required param "${name}"`);
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  const b = typeof v === 'string' ? parseInt64(v) : undefined;
  if (b === undefined) throw new OpPlanError(`"${name}" must be a finite number or an int64 decimal string, got ${show(v)}`);
  return int64Value(b);
}

const isInt = (v: number | string): boolean => typeof v === 'string' || Number.isInteger(v);

/**
 * clamp {min, max} (TorchArrow clamp_list): element-wise clamp of a numeric scalar or list, same type
 * out; both bounds are required and min > max is rejected. Integer inputs need integer bounds
 * (int32: inside the int32 range); float32 compares against the bounds rounded to float32.
 */
export const clampOp: OpDef<ClampParams> = {
  name: 'clamp',
  input: 'numeric scalar or list',
  stateful: false,
  validate(params) {
    checkKeys(params, ['min', 'max']);
    const min = bound(params, 'min');
    const max = bound(params, 'max');
    const bad = isInt(min) && isInt(max) ? BigInt(min) > BigInt(max) : Number(min) > Number(max);
    if (bad) throw new OpPlanError(`"min" (${min}) must be <= "max" (${max})`);
    return { min, max };
  },
  outputType(t: ColumnType, { min, max }) {
    const el = numericElement(t);
    if (el === 'int32' || el === 'int64') {
      for (const [name, v] of [
        ['min', min],
        ['max', max],
      ] as const) {
        if (!isInt(v)) throw new OpPlanError(`"${name}" must be an integer for the ${el} input, got ${v}`);
        if (el === 'int32' && (typeof v === 'string' || v < -0x80000000 || v > 0x7fffffff)) {
          throw new OpPlanError(`"${name}" ${v} is outside the int32 range of the input; add {"op":"cast","to":"int64"} first`);
        }
      }
    }
    return t;
  },
  apply(input: Column, { min, max }) {
    return mapElements('clamp', input, (col) => {
      const c = asNumeric('clamp', col);
      const [minLo, minHi] = c.type === 'int64' ? bigToWords(BigInt(min)) : [0, 0];
      const [maxLo, maxHi] = c.type === 'int64' ? bigToWords(BigInt(max)) : [0, 0];
      // float32 values are compared with float32 bounds, so a clamped value equals its bound.
      const round = c.type === 'float32' ? Math.fround : Number;
      const lo = round(Number(min));
      const hi = round(Number(max));
      return mapSameType(
        c,
        c.valid,
        (src, out) => clampValues(src, c.valid, lo, hi, out),
        (src, out) => clampWords(src, c.valid, minLo, minHi, maxLo, maxHi, out),
      );
    });
  },
};
