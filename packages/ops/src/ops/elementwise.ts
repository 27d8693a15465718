/**
 * Shared plumbing for element-wise ops: run a primitive kernel on a scalar column or on a list's
 * child, and views of numeric columns in the forms the kernels take.
 */

import {
  columnLength,
  gatherColumn,
  int64Words,
  nullCount,
  type Column,
  type Int32Column,
  type Int64Column,
  type ListColumn,
  type NumericColumn,
  type PrimitiveColumn,
} from '../column.js';
import { int64WordsToFloat64, widenInt32 } from './int64.js';
import { badColumn } from './params.js';
import { OpDataError } from './types.js';

/** Numbers a float kernel can read directly (int64 is converted first, see {@link numbersOf}). */
export type NumberArray = Int32Array | Float32Array | Float64Array;

/**
 * Applies `fn` to a scalar column, or to a list's child keeping the list's offsets and validity
 * (shared, not copied: columns are immutable). An OpDataError the kernel raises for child element j
 * is re-raised for the list row that holds j, so errors name rows, not elements.
 */
export function mapElements(op: string, input: Column, fn: (c: PrimitiveColumn) => PrimitiveColumn): Column {
  if (input.type === 'fixed') throw badColumn(op, 'fixed');
  if (input.type !== 'list') return fn(input);
  let child: PrimitiveColumn;
  try {
    child = fn(input.child);
  } catch (e) {
    if (e instanceof OpDataError) throw new OpDataError(e.message, listRowOf(input.offsets, e.row));
    throw e;
  }
  return { type: 'list', offsets: input.offsets, child, valid: input.valid };
}

/** The list row that holds child element j (binary search; empty lists never match). */
export function listRowOf(offsets: Int32Array, j: number): number {
  let lo = 0;
  let hi = offsets.length - 2;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (offsets[mid]! <= j) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The values of a numeric column as numbers; int64 becomes float64 (exact below 2^53). */
export function numbersOf(c: NumericColumn): NumberArray {
  return c.type === 'int64' ? int64WordsToFloat64(int64Words(c.values)) : c.values;
}

/** The int64 words of an integer column: a view for int64, a sign-extended copy for int32. */
export function wordsOf(c: Int32Column | Int64Column): Uint32Array {
  return c.type === 'int64' ? int64Words(c.values) : widenInt32(c.values);
}

/** Asserts a numeric column at run time (the type rule already checked it at plan time). */
export function asNumeric(op: string, c: PrimitiveColumn): NumericColumn {
  if (c.type === 'utf8') throw badColumn(op, c.type);
  return c;
}

/** Asserts an integer column at run time. */
export function asInteger(op: string, c: PrimitiveColumn): Int32Column | Int64Column {
  if (c.type !== 'int32' && c.type !== 'int64') throw badColumn(op, c.type);
  return c;
}

/** A null-free int64 column over `words` (the kernels' u32 output). */
export function int64FromWords(words: Uint32Array, valid: Uint8Array | null): Int64Column {
  return { type: 'int64', values: new BigInt64Array(words.buffer, words.byteOffset, words.length >>> 1), valid };
}

/**
 * A scalar column as a list column: each value becomes a list of one, a null becomes a null (empty)
 * list. Lists pass through unchanged.
 */
export function asList(op: string, c: Column): ListColumn {
  if (c.type === 'list') return c;
  if (c.type === 'fixed') throw badColumn(op, 'fixed');
  const rows = columnLength(c);
  const valid = c.valid;
  const offsets = new Int32Array(rows + 1);
  if (valid === null) {
    for (let i = 0; i < rows; i++) offsets[i + 1] = i + 1;
    return { type: 'list', offsets, child: c, valid: null };
  }
  const idx = new Int32Array(rows - nullCount(valid));
  for (let i = 0, k = 0; i < rows; i++) {
    if (valid[i] === 1) idx[k++] = i;
    offsets[i + 1] = k;
  }
  // Only valid rows are gathered, so the child has no nulls.
  const child = { ...gatherColumn(c, idx), valid: null } as PrimitiveColumn;
  return { type: 'list', offsets, child, valid };
}

/**
 * Runs a same-type kernel over a numeric column: `num` on int32/float32/float64 values, `words` on
 * int64 words. The output column has the input's type and the given validity.
 */
export function mapSameType(
  c: NumericColumn,
  valid: Uint8Array | null,
  num: (src: NumberArray, out: NumberArray) => void,
  words: (src: Uint32Array, out: Uint32Array) => void,
): NumericColumn {
  if (c.type === 'int64') {
    const out = new Uint32Array(c.values.length * 2);
    words(int64Words(c.values), out);
    return int64FromWords(out, valid);
  }
  const out = new (c.values.constructor as new (n: number) => NumberArray)(c.values.length);
  num(c.values, out);
  return { type: c.type, values: out, valid } as NumericColumn;
}

/** Sets the value of every null slot to 0 (kernels leave whatever the input had there). */
export function zeroNulls(out: NumberArray, valid: Uint8Array | null): void {
  if (valid === null) return;
  for (let i = 0; i < valid.length; i++) if (valid[i] === 0) out[i] = 0;
}

/** `valid` itself, or null when every slot is valid (the cheaper form downstream). */
export function compactValid(valid: Uint8Array): Uint8Array | null {
  return valid.indexOf(0) === -1 ? null : valid;
}
