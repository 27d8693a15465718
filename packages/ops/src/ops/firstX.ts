import { gatherColumn, typeName, type Column, type ColumnType } from '../column.js';
import { asList } from './elementwise.js';
import { checkKeys, numberParam } from './params.js';
import { type OpDef, OpPlanError } from './types.js';

export interface FirstXParams {
  readonly x: number;
}

/**
 * Offsets of each list truncated to its first x elements, and the child indices to keep (in order).
 * `offsets` start at 0.
 */
export function firstXOffsets(offsets: Int32Array, x: number): { offsets: Int32Array; index: Int32Array } {
  const rows = offsets.length - 1;
  const out = new Int32Array(rows + 1);
  for (let i = 0; i < rows; i++) out[i + 1] = out[i]! + Math.min(x, offsets[i + 1]! - offsets[i]!);
  const index = new Int32Array(out[rows]!);
  for (let i = 0, k = 0; i < rows; i++) {
    for (let j = offsets[i]!, end = j + out[i + 1]! - out[i]!; j < end; j++) index[k++] = j;
  }
  return { offsets: out, index };
}

/**
 * firstX {x >= 1}: keeps the first x elements of each list (any element type, element nulls kept).
 * A scalar input is first made a list of one (a null scalar becomes a null, empty list).
 */
export const firstXOp: OpDef<FirstXParams> = {
  name: 'firstX',
  input: 'list or scalar',
  stateful: false,
  validate(params) {
    checkKeys(params, ['x']);
    return { x: numberParam(params, 'x', { integer: true, min: 1, max: 0x7fffffff }) };
  },
  outputType(t: ColumnType) {
    if (t.kind === 'fixed') throw new OpPlanError(`needs a list or scalar input, got ${typeName(t)}`);
    return t.kind === 'list' ? t : { kind: 'list', child: t.kind };
  },
  apply(input: Column, { x }) {
    const list = asList('firstX', input);
    const { offsets, index } = firstXOffsets(list.offsets, x);
    // Nothing to cut: keep the child as is rather than copying it.
    if (index.length === list.offsets[list.offsets.length - 1]) return list;
    return { type: 'list', offsets, child: gatherColumn(list.child, index) as typeof list.child, valid: list.valid };
  },
};
