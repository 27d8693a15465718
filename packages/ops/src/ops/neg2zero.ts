import type { Column, ColumnType } from '../column.js';
import { type NumberArray, asNumeric, mapElements, mapSameType } from './elementwise.js';
import { checkKeys, numericElement } from './params.js';
import type { OpDef } from './types.js';

/** out[i] = max(src[i], 0); -0 and NaN stay as they are (they are not < 0); null slots get 0. */
export function neg2zeroValues(src: NumberArray, valid: Uint8Array | null, out: NumberArray): void {
  for (let i = 0; i < src.length; i++) {
    const x = src[i]!;
    out[i] = x < 0 || (valid !== null && valid[i] === 0) ? 0 : x;
  }
}

/** neg2zero on int64 words: a set sign bit means negative. */
export function neg2zeroWords(src: Uint32Array, valid: Uint8Array | null, out: Uint32Array): void {
  for (let i = 0; i < src.length >>> 1; i++) {
    if (src[2 * i + 1]! >>> 31 === 0 && (valid === null || valid[i] === 1)) {
      out[2 * i] = src[2 * i]!;
      out[2 * i + 1] = src[2 * i + 1]!;
    }
  }
}

/** neg2zero (PIPER): x < 0 becomes 0. Numeric scalar or list, same type out; nulls stay null. */
export const neg2zeroOp: OpDef<Record<string, never>> = {
  name: 'neg2zero',
  input: 'numeric scalar or list',
  stateful: false,
  validate(params) {
    checkKeys(params, []);
    return {};
  },
  outputType(t: ColumnType) {
    numericElement(t);
    return t;
  },
  apply(input: Column) {
    return mapElements('neg2zero', input, (col) => {
      const c = asNumeric('neg2zero', col);
      return mapSameType(
        c,
        c.valid,
        (src, out) => neg2zeroValues(src, c.valid, out),
        (src, out) => neg2zeroWords(src, c.valid, out),
      );
    });
  },
};
