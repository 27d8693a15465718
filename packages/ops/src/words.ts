/**
 * Word and byte copies shared by the gather (column.ts) and the scatter (scatter.ts). Numeric
 * values are copied as 32-bit words, never read as numbers: a float copied through a number may
 * have its NaN payload changed, and an int64 read through a BigInt64Array allocates a BigInt per
 * value.
 */

/** The numeric column types' arrays and names (column.ts's, spelled out: column.ts imports this file). */
type NumericArray = Int32Array | BigInt64Array | Float32Array | Float64Array;
type NumericType = 'int32' | 'int64' | 'float32' | 'float64';

/** A fresh zeroed array of a numeric type. */
export function newValues(type: NumericType, n: number): NumericArray {
  return type === 'int32' ? new Int32Array(n) : type === 'int64' ? new BigInt64Array(n) : type === 'float32' ? new Float32Array(n) : new Float64Array(n);
}

/** 32-bit words per value of a numeric type. */
export const wordWidth = (type: NumericType): number => (type === 'int64' || type === 'float64' ? 2 : 1);

/** The 32-bit words of a numeric array. */
export function wordsOf(values: NumericArray): Uint32Array {
  return new Uint32Array(values.buffer, values.byteOffset, values.byteLength >>> 2);
}

/**
 * Copies from[s, e) to `to` at `at`. Runs are short (a row's ids): a plain loop beats `set` on a
 * subarray, which allocates. Words and bytes have a function each: one function called with both
 * array types takes V8's slower polymorphic element access.
 */
export function copyWords(from: Uint32Array, s: number, e: number, to: Uint32Array, at: number): void {
  for (let j = s, k = at; j < e; j++, k++) to[k] = from[j]!;
}

/**
 * `copyWords` for bytes (string data, validity). Short runs (hex ids are 8 bytes) by hand: `set`
 * needs a subarray, a heap object per string, and for dictionaries of tens of thousands of ids
 * that garbage alone kept V8's major GC busy. A longer run is worth its subarray.
 */
export function copyBytes(from: Uint8Array, s: number, e: number, to: Uint8Array, at: number): void {
  if (e - s <= 16) for (let j = s, k = at; j < e; j++, k++) to[k] = from[j]!;
  else to.set(from.subarray(s, e), at);
}
