import { int64Words, type Column, type ColumnType } from '../column.js';
import { asInteger, int64FromWords, mapElements } from './elementwise.js';
import { FloorMod64, type Int64Value, int64Value } from './int64.js';
import { checkKeys, int64Param, integerElement } from './params.js';
import { type OpDef, OpPlanError } from './types.js';

export interface ModulusParams {
  readonly m: Int64Value;
}

/** out[i] = ((x mod m) + m) mod m for int32 x and 1 <= m <= 2^31 (exact in float64); nulls get 0. */
export function modulusInt32(src: Int32Array, valid: Uint8Array | null, m: number, out: Int32Array): void {
  for (let i = 0; i < src.length; i++) {
    const r = src[i]! % m;
    out[i] = valid !== null && valid[i] === 0 ? 0 : r < 0 ? r + m : r;
  }
}

/** The same on int64 words for any m in [1, 2^63), exact without BigInt (see FloorMod64). */
export function modulusWords(src: Uint32Array, valid: Uint8Array | null, m: bigint, out: Uint32Array): void {
  const mod = new FloorMod64(m);
  for (let i = 0; i < src.length >>> 1; i++) {
    if (valid === null || valid[i] === 1) mod.apply(src[2 * i]!, src[2 * i + 1]!, out, 2 * i);
  }
}

/**
 * modulus {m >= 1} (PIPER Modulus): ((x mod m) + m) mod m, so the result is in [0, m). Integer
 * scalar or list, same type out; on int32 input m must be <= 2^31 so the result fits.
 */
export const modulusOp: OpDef<ModulusParams> = {
  name: 'modulus',
  input: 'integer scalar or list',
  stateful: false,
  validate(params) {
    checkKeys(params, ['m']);
    return { m: int64Value(int64Param(params, 'm', { min: 1n })) };
  },
  outputType(t: ColumnType, { m }) {
    const el = integerElement(t);
    if (el === 'int32' && BigInt(m) > 1n << 31n)
      throw new OpPlanError(`"m" ${m} is larger than 2^31, too large for the int32 input; add {"op":"cast","to":"int64"} first`);
    return t;
  },
  apply(input: Column, { m }) {
    return mapElements('modulus', input, (col) => {
      const c = asInteger('modulus', col);
      if (c.type === 'int32') {
        const out = new Int32Array(c.values.length);
        modulusInt32(c.values, c.valid, Number(m), out);
        return { type: 'int32', values: out, valid: c.valid };
      }
      const out = new Uint32Array(c.values.length * 2);
      modulusWords(int64Words(c.values), c.valid, BigInt(m), out);
      return int64FromWords(out, c.valid);
    });
  },
};
