import { int64Words, type Column, type ColumnType, type NumericColumn } from '../column.js';
import { type NumberArray, asNumeric, compactValid, int64FromWords, mapElements, zeroNulls } from './elementwise.js';
import { int64WordsToFloat64 } from './int64.js';
import { checkKeys, numericElement, withElement } from './params.js';
import { type OpDef, OpPlanError } from './types.js';
import { show } from '../util/show.js';

const TWO32 = 4294967296;
const TWO63 = 9223372036854775808;
const TARGETS = ['float32', 'int32', 'int64'] as const;
export type CastTarget = (typeof TARGETS)[number];

export interface CastParams {
  readonly to: CastTarget;
}

/** Any numeric values to float32 (Float32Array stores round to nearest); null slots get 0. */
export function castToFloat32(src: NumberArray, valid: Uint8Array | null, out: Float32Array): void {
  out.set(src);
  zeroNulls(out, valid);
}

/**
 * Floats to int32, truncating toward zero. NaN, ±Infinity and values outside int32 become null:
 * outValid[i] = 0 (it must start as a copy of the input validity, or all ones).
 */
export function castFloatToInt32(src: Float32Array | Float64Array, out: Int32Array, outValid: Uint8Array): void {
  for (let i = 0; i < src.length; i++) {
    const t = Math.trunc(src[i]!);
    // NaN fails both comparisons, so it lands here too.
    if (outValid[i] === 1 && t >= -2147483648 && t <= 2147483647) out[i] = t;
    else outValid[i] = 0;
  }
}

/** Floats to int64 words, truncating toward zero; NaN, ±Infinity and values outside int64 become null. */
export function castFloatToInt64(src: Float32Array | Float64Array, out: Uint32Array, outValid: Uint8Array): void {
  for (let i = 0; i < src.length; i++) {
    const t = Math.trunc(src[i]!);
    if (outValid[i] === 1 && t >= -TWO63 && t < TWO63) {
      // t is an integer-valued double: both halves are exact (floor of an exact power-of-2 quotient).
      const hi = Math.floor(t / TWO32);
      out[2 * i] = t - hi * TWO32;
      out[2 * i + 1] = hi;
    } else {
      outValid[i] = 0;
    }
  }
}

/** int64 words to int32 by keeping the low 32 bits (two's-complement wrap, like C). */
export function castInt64ToInt32(words: Uint32Array, valid: Uint8Array | null, out: Int32Array): void {
  for (let i = 0; i < out.length; i++) out[i] = words[2 * i]!;
  zeroNulls(out, valid);
}

/** int32 to int64 words, sign-extended. */
export function castInt32ToInt64(src: Int32Array, valid: Uint8Array | null, out: Uint32Array): void {
  for (let i = 0; i < src.length; i++) {
    const v = valid === null || valid[i] === 1 ? src[i]! : 0;
    out[2 * i] = v;
    out[2 * i + 1] = v >> 31;
  }
}

function castColumn(c: NumericColumn, to: CastTarget): NumericColumn {
  if (c.type === to) return c;
  const n = c.values.length;
  if (to === 'float32') {
    const out = new Float32Array(n);
    castToFloat32(c.type === 'int64' ? int64WordsToFloat64(int64Words(c.values)) : c.values, c.valid, out);
    return { type: 'float32', values: out, valid: c.valid };
  }
  if (c.type === 'int32') {
    const out = new Uint32Array(2 * n);
    castInt32ToInt64(c.values, c.valid, out);
    return int64FromWords(out, c.valid);
  }
  if (c.type === 'int64') {
    const out = new Int32Array(n);
    castInt64ToInt32(int64Words(c.values), c.valid, out);
    return { type: 'int32', values: out, valid: c.valid };
  }
  const outValid = c.valid === null ? new Uint8Array(n).fill(1) : c.valid.slice();
  if (to === 'int32') {
    const out = new Int32Array(n);
    castFloatToInt32(c.values, out, outValid);
    return { type: 'int32', values: out, valid: compactValid(outValid) };
  }
  const out = new Uint32Array(2 * n);
  castFloatToInt64(c.values, out, outValid);
  return int64FromWords(out, compactValid(outValid));
}

/**
 * cast {to: float32|int32|int64}: numeric scalar or list. Float to integer truncates toward zero;
 * NaN, ±Infinity and out-of-range values become null. int64 to int32 wraps (keeps the low 32 bits);
 * int64 to float32 rounds through float64. Casting to the input's own type returns the input.
 */
export const castOp: OpDef<CastParams> = {
  name: 'cast',
  input: 'numeric scalar or list',
  stateful: false,
  validate(params) {
    checkKeys(params, ['to']);
    const to = params.to;
    if (!TARGETS.includes(to as CastTarget)) throw new OpPlanError(`"to" must be one of ${TARGETS.join(', ')}, got ${show(to)}`);
    return { to: to as CastTarget };
  },
  outputType(t: ColumnType, { to }) {
    numericElement(t);
    return withElement(t, to);
  },
  apply(input: Column, { to }) {
    return mapElements('cast', input, (c) => castColumn(asNumeric('cast', c), to));
  },
};
