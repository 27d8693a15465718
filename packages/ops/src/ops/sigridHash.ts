import type { Column, ColumnType } from '../column.js';
import { asInteger, int64FromWords, mapElements, wordsOf } from './elementwise.js';
import { sigridHashWords } from './hash.js';
import { type Int64Value, int64Value } from './int64.js';
import { checkKeys, int64Param, integerElement, withElement } from './params.js';
import type { OpDef } from './types.js';

/** The kernel lives with the hash primitives it inlines; re-exported here beside its op. */
export { sigridHashWords } from './hash.js';

export interface SigridHashParams {
  readonly salt: Int64Value;
  /** Exclusive upper bound of the output, >= 1. */
  readonly max: Int64Value;
}

/**
 * sigridHash {salt = 0, max} (TorchArrow sigrid_hash, exactly as OPS.md): integer scalar or list →
 * int64 in [0, max). int32 inputs are sign-extended first; salt and max are int64s given as numbers
 * or decimal strings; max = 1 gives 0. The kernel is {@link sigridHashWords}.
 */
export const sigridHashOp: OpDef<SigridHashParams> = {
  name: 'sigridHash',
  input: 'integer scalar or list',
  stateful: false,
  validate(params) {
    checkKeys(params, ['salt', 'max']);
    const salt = int64Param(params, 'salt', { default: 0n });
    const max = int64Param(params, 'max', { min: 1n });
    return { salt: int64Value(salt), max: int64Value(max) };
  },
  outputType(t: ColumnType) {
    integerElement(t);
    return withElement(t, 'int64');
  },
  apply(input: Column, { salt, max }) {
    const s = BigInt(salt);
    const m = BigInt(max);
    return mapElements('sigridHash', input, (col) => {
      const c = asInteger('sigridHash', col);
      const out = new Uint32Array(c.values.length * 2);
      sigridHashWords(wordsOf(c), c.valid, s, m, out);
      return int64FromWords(out, c.valid);
    });
  },
};
