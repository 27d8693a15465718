import type { Column, ColumnType } from '../column.js';
import { type NumberArray, asNumeric, mapElements, numbersOf } from './elementwise.js';
import { checkKeys, numberParam, numericElement, withElement } from './params.js';
import type { OpDef } from './types.js';

export interface LogitParams {
  readonly eps: number;
}

/** out[i] = ln(p / (1 - p)) with p = src[i] clamped to [eps, 1 - eps], in float64, stored as float32. NaN stays NaN. */
export function logitValues(src: NumberArray, valid: Uint8Array | null, eps: number, out: Float32Array): void {
  const top = 1 - eps;
  for (let i = 0; i < src.length; i++) {
    const x = src[i]!;
    const p = x < eps ? eps : x > top ? top : x;
    out[i] = valid !== null && valid[i] === 0 ? 0 : Math.log(p / (1 - p));
  }
}

/** logit {eps = 1e-6, 0 < eps < 0.5}: p clamped to [eps, 1 − eps], then ln(p / (1 − p)) as float32. Numeric scalar or list. */
export const logitOp: OpDef<LogitParams> = {
  name: 'logit',
  input: 'numeric scalar or list',
  stateful: false,
  validate(params) {
    checkKeys(params, ['eps']);
    return { eps: numberParam(params, 'eps', { default: 1e-6, above: 0, below: 0.5 }) };
  },
  outputType(t: ColumnType) {
    numericElement(t);
    return withElement(t, 'float32');
  },
  apply(input: Column, { eps }) {
    return mapElements('logit', input, (col) => {
      const c = asNumeric('logit', col);
      const out = new Float32Array(c.values.length);
      logitValues(numbersOf(c), c.valid, eps, out);
      return { type: 'float32', values: out, valid: c.valid };
    });
  },
};
