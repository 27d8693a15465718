import type { Column, ColumnType } from '../column.js';
import { type NumberArray, asNumeric, mapElements, numbersOf } from './elementwise.js';
import { checkKeys, numberParam, numericElement, withElement } from './params.js';
import { type OpDef, OpDataError } from './types.js';

export interface BoxCoxParams {
  readonly lambda: number;
}

/**
 * out[i] = (x^λ − 1) / λ, or ln x when λ = 0, in float64, stored as float32. Throws OpDataError for
 * the first valid x that is not > 0 (NaN included: it is not in the domain either); nulls get 0.
 */
export function boxCoxValues(src: NumberArray, valid: Uint8Array | null, lambda: number, out: Float32Array): void {
  for (let i = 0; i < src.length; i++) {
    if (valid !== null && valid[i] === 0) continue;
    const x = src[i]!;
    if (!(x > 0)) throw new OpDataError(`boxCox needs x > 0, got ${x}`, i);
    out[i] = lambda === 0 ? Math.log(x) : (Math.pow(x, lambda) - 1) / lambda;
  }
}

/** boxCox {lambda}: (x^λ − 1)/λ, ln x when λ = 0, as float32; x <= 0 (or NaN) is a data error naming the row. Numeric scalar or list. */
export const boxCoxOp: OpDef<BoxCoxParams> = {
  name: 'boxCox',
  input: 'numeric scalar or list',
  stateful: false,
  validate(params) {
    checkKeys(params, ['lambda']);
    return { lambda: numberParam(params, 'lambda') };
  },
  outputType(t: ColumnType) {
    numericElement(t);
    return withElement(t, 'float32');
  },
  apply(input: Column, { lambda }) {
    return mapElements('boxCox', input, (col) => {
      const c = asNumeric('boxCox', col);
      const out = new Float32Array(c.values.length);
      boxCoxValues(numbersOf(c), c.valid, lambda, out);
      return { type: 'float32', values: out, valid: c.valid };
    });
  },
};
