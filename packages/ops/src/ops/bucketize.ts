import type { Column, ColumnType } from '../column.js';
import { type NumberArray, asNumeric, mapElements, numbersOf } from './elementwise.js';
import { boolParam, checkKeys, numericElement, withElement } from './params.js';
import { type OpDef, OpPlanError } from './types.js';
import { show } from '../util/show.js';

export interface BucketizeParams {
  readonly borders: readonly number[];
  readonly right: boolean;
}

/**
 * out[i] = number of borders < x (right: <= x), by binary search over the non-decreasing borders,
 * compared in float64. NaN compares false with every border, so it lands in bucket 0; nulls get 0.
 */
export function bucketizeValues(src: NumberArray, valid: Uint8Array | null, borders: Float64Array, right: boolean, out: Int32Array): void {
  const nb = borders.length;
  for (let i = 0; i < src.length; i++) {
    if (valid !== null && valid[i] === 0) continue;
    const x = src[i]!;
    let lo = 0;
    let hi = nb;
    // Invariant: borders[< lo] are counted, borders[>= hi] are not.
    if (right) {
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (borders[mid]! <= x) lo = mid + 1;
        else hi = mid;
      }
    } else {
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (borders[mid]! < x) lo = mid + 1;
        else hi = mid;
      }
    }
    out[i] = lo;
  }
}

/**
 * bucketize {borders, right = false}: numeric scalar or list → int32 bucket index = number of
 * borders < x (TorchArrow), or <= x with right (numpy digitize right=False, NVTabular). Borders:
 * non-empty, finite, non-decreasing. int64 values are compared as float64 (exact below 2^53).
 */
export const bucketizeOp: OpDef<BucketizeParams> = {
  name: 'bucketize',
  input: 'numeric scalar or list',
  stateful: false,
  validate(params) {
    checkKeys(params, ['borders', 'right']);
    const b = params.borders;
    if (b === undefined) throw new OpPlanError('missing required param "borders"');
    if (!Array.isArray(b) || b.length === 0) throw new OpPlanError('"borders" must be a non-empty list of numbers');
    b.forEach((x: unknown, i) => {
      if (typeof x !== 'number' || !Number.isFinite(x)) throw new OpPlanError(`"borders"[${i}] must be a finite number, got ${show(x)}`);
      if (i > 0 && x < (b[i - 1] as number)) throw new OpPlanError(`"borders" must be non-decreasing, but [${i - 1}] = ${b[i - 1]} > [${i}] = ${x}`);
    });
    return { borders: [...(b as number[])], right: boolParam(params, 'right', false) };
  },
  outputType(t: ColumnType) {
    numericElement(t);
    return withElement(t, 'int32');
  },
  apply(input: Column, { borders, right }) {
    const b = Float64Array.from(borders);
    return mapElements('bucketize', input, (col) => {
      const c = asNumeric('bucketize', col);
      const out = new Int32Array(c.values.length);
      bucketizeValues(numbersOf(c), c.valid, b, right, out);
      return { type: 'int32', values: out, valid: c.valid };
    });
  },
};
