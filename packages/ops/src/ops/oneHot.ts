import { typeName, type Column, type ColumnType } from '../column.js';
import { wordsOf } from './elementwise.js';
import { badColumn, checkKeys, numberParam } from './params.js';
import { type OpDef, OpPlanError } from './types.js';

/** Cap on numClasses: a dense vector wider than this is a sparse id in disguise (use sigridHash). */
export const MAX_ONE_HOT_CLASSES = 1 << 20;

export interface OneHotParams {
  readonly numClasses: number;
}

/**
 * Row i of `out` (numClasses float32 each, zero-filled by the caller) gets a 1 at index x[i] when
 * 0 <= x[i] < numClasses; nulls and out-of-range ids leave the row all zeros.
 */
export function oneHotWords(words: Uint32Array, valid: Uint8Array | null, numClasses: number, out: Float32Array): void {
  for (let i = 0; i < words.length >>> 1; i++) {
    const lo = words[2 * i]!;
    // hi === 0 means 0 <= x < 2^32; negatives have the sign bit set.
    if (words[2 * i + 1] === 0 && lo < numClasses && (valid === null || valid[i] === 1)) out[i * numClasses + lo] = 1;
  }
}

/**
 * oneHot {numClasses: integer in [1, 2^20]}: integer scalar → float32[numClasses]. Null or out of
 * range → all zeros, so the output has no nulls. Lists are rejected (a multi-hot is not defined).
 */
export const oneHotOp: OpDef<OneHotParams> = {
  name: 'oneHot',
  input: 'integer scalar',
  stateful: false,
  validate(params) {
    checkKeys(params, ['numClasses']);
    return { numClasses: numberParam(params, 'numClasses', { integer: true, min: 1, max: MAX_ONE_HOT_CLASSES }) };
  },
  outputType(t: ColumnType, { numClasses }) {
    if (t.kind !== 'int32' && t.kind !== 'int64') {
      const fix = t.kind === 'float32' || t.kind === 'float64' ? '; add {"op":"cast","to":"int64"} first' : '';
      throw new OpPlanError(`needs an integer scalar input, got ${typeName(t)}${fix}`);
    }
    return { kind: 'fixed', size: numClasses };
  },
  apply(input: Column, { numClasses }) {
    if (input.type !== 'int32' && input.type !== 'int64') throw badColumn('oneHot', input.type);
    const out = new Float32Array(input.values.length * numClasses);
    oneHotWords(wordsOf(input), input.valid, numClasses, out);
    return { type: 'fixed', size: numClasses, values: out, valid: null };
  },
};
