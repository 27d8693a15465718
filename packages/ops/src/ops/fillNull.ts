import { typeName, type Column, type ColumnType } from '../column.js';
import { type NumberArray, asNumeric, mapElements, mapSameType } from './elementwise.js';
import { type Int64Value, bigToWords, int64Value, parseInt64 } from './int64.js';
import { checkKeys, numericElement } from './params.js';
import { type OpDef, OpPlanError } from './types.js';
import { show } from '../util/show.js';

export interface FillNullParams {
  /** A finite number, or (int64 columns only) a decimal string beyond 2^53. */
  readonly value: number | Int64Value;
}

/** Copies `src` to `out` with every null slot set to `fill`. */
export function fillNullValues(src: NumberArray, valid: Uint8Array, fill: number, out: NumberArray): void {
  out.set(src);
  for (let i = 0; i < valid.length; i++) if (valid[i] === 0) out[i] = fill;
}

/** Copies int64 words `src` to `out` with every null slot set to (lo, hi). */
export function fillNullWords(src: Uint32Array, valid: Uint8Array, lo: number, hi: number, out: Uint32Array): void {
  out.set(src);
  for (let i = 0; i < valid.length; i++) {
    if (valid[i] === 0) {
      out[2 * i] = lo;
      out[2 * i + 1] = hi;
    }
  }
}

/**
 * fillNull {value}: null scalars, and null elements of lists, become `value`; a null list stays null
 * (its length is 0, there is nothing to fill). Any numeric scalar or list; same type out, with no
 * nulls for scalars. Integer columns need an integer value in their range; int64 also takes a
 * decimal string. A column without nulls is returned as is.
 */
export const fillNullOp: OpDef<FillNullParams> = {
  name: 'fillNull',
  input: 'numeric scalar or list',
  stateful: false,
  validate(params) {
    checkKeys(params, ['value']);
    const v = params.value;
    if (v === undefined) throw new OpPlanError('missing required param "value"');
    if (typeof v === 'number' && Number.isFinite(v)) return { value: v };
    const b = typeof v === 'string' ? parseInt64(v) : undefined;
    if (b === undefined) throw new OpPlanError(`"value" must be a finite number or an int64 decimal string, got ${show(v)}`);
    return { value: int64Value(b) };
  },
  outputType(t: ColumnType, { value }) {
    const el = numericElement(t);
    const fits =
      el === 'int32'
        ? Number.isInteger(value) && (value as number) >= -0x80000000 && (value as number) <= 0x7fffffff
        : el === 'int64'
          ? typeof value === 'string' || Number.isSafeInteger(value)
          : typeof value === 'number';
    if (!fits) throw new OpPlanError(`"value" ${JSON.stringify(value)} does not fit the ${el} input (${typeName(t)})`);
    return t;
  },
  apply(input: Column, { value }) {
    return mapElements('fillNull', input, (col) => {
      const c = asNumeric('fillNull', col);
      const valid = c.valid;
      if (valid === null) return c;
      const [lo, hi] = c.type === 'int64' ? bigToWords(BigInt(value)) : [0, 0];
      return mapSameType(
        c,
        null,
        (src, out) => fillNullValues(src, valid, Number(value), out),
        (src, out) => fillNullWords(src, valid, lo, hi, out),
      );
    });
  },
};
