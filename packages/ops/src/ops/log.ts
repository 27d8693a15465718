import type { Column, ColumnType } from '../column.js';
import { type NumberArray, asNumeric, mapElements, numbersOf } from './elementwise.js';
import { checkKeys, numberParam, numericElement, withElement } from './params.js';
import type { OpDef } from './types.js';

export interface LogParams {
  readonly offset: number;
}

/**
 * out[i] = ln(src[i] + offset) in float64, stored as float32. offset 1 uses log1p, which stays
 * accurate for tiny x. x + offset <= 0 gives the IEEE results (-Infinity at 0, NaN below); nulls get 0.
 */
export function logValues(src: NumberArray, valid: Uint8Array | null, offset: number, out: Float32Array): void {
  if (offset === 1) for (let i = 0; i < src.length; i++) out[i] = Math.log1p(src[i]!);
  else for (let i = 0; i < src.length; i++) out[i] = Math.log(src[i]! + offset);
  if (valid !== null) for (let i = 0; i < src.length; i++) if (valid[i] === 0) out[i] = 0;
}

/** log {offset = 1}: ln(x + offset) as float32 (offset 1 = log1p, DLRM; 3 = TorchRec). Numeric scalar or list. */
export const logOp: OpDef<LogParams> = {
  name: 'log',
  input: 'numeric scalar or list',
  stateful: false,
  validate(params) {
    checkKeys(params, ['offset']);
    return { offset: numberParam(params, 'offset', { default: 1 }) };
  },
  outputType(t: ColumnType) {
    numericElement(t);
    return withElement(t, 'float32');
  },
  apply(input: Column, { offset }) {
    return mapElements('log', input, (col) => {
      const c = asNumeric('log', col);
      const out = new Float32Array(c.values.length);
      logValues(numbersOf(c), c.valid, offset, out);
      return { type: 'float32', values: out, valid: c.valid };
    });
  },
};
