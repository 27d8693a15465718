import { typeName, type Column, type ColumnType } from '../column.js';
import { compactValid, int64FromWords, mapElements } from './elementwise.js';
import { badColumn, checkKeys } from './params.js';
import { type OpDef, OpDataError, OpPlanError } from './types.js';

/**
 * Hex digit value per byte, -1 for every other byte: what hex2int accepts as a digit. The reader's
 * fused PLAIN-page parse (core's reader/parquet/plain-hex.ts) reads this table, so both agree.
 *
 * @example
 * HEX_DIGITS['f'.charCodeAt(0)]; // 15
 */
export const HEX_DIGITS: Int8Array = new Int8Array(256).fill(-1);
for (let c = 0; c < 10; c++) HEX_DIGITS[48 + c] = c;
for (let c = 0; c < 6; c++) HEX_DIGITS[65 + c] = HEX_DIGITS[97 + c] = 10 + c;

function invalid(data: Uint8Array, start: number, end: number, row: number): OpDataError {
  const text = new TextDecoder().decode(data.subarray(start, Math.min(end, start + 64)));
  const shown = end - start > 64 ? `${text}…` : text;
  return new OpDataError(`invalid hex "${shown}" (hex2int takes 1 to 16 hex digits, either case, no 0x prefix)`, row);
}

/**
 * Parses UTF-8 hex strings straight from their bytes into int64 words: 16 digits wrap from u64 to
 * int64 (two's complement). Null and empty strings become null (outValid[i] = 0, which the caller
 * initializes to 1); any other byte, or more than 16 digits, throws OpDataError for that row.
 */
export function hex2intUtf8(offsets: Int32Array, data: Uint8Array, valid: Uint8Array | null, out: Uint32Array, outValid: Uint8Array): void {
  for (let i = 0; i < offsets.length - 1; i++) {
    const start = offsets[i]!;
    const end = offsets[i + 1]!;
    if ((valid !== null && valid[i] === 0) || end === start) {
      outValid[i] = 0;
      continue;
    }
    if (end - start > 16) throw invalid(data, start, end, i);
    let lo = 0;
    let hi = 0;
    for (let j = start; j < end; j++) {
      const d = HEX_DIGITS[data[j]!]!;
      if (d < 0) throw invalid(data, start, end, i);
      // (hi, lo) <<= 4, then add the digit; at most 16 digits, so nothing is shifted out.
      hi = (hi << 4) | (lo >>> 28);
      lo = (lo << 4) | d;
    }
    out[2 * i] = lo;
    out[2 * i + 1] = hi;
  }
}

/**
 * hex2int (PIPER Hex2Int): utf8 scalar or list<utf8> → int64. 1 to 16 hex digits, either case, no
 * prefix or whitespace; 16 digits wrap to negative int64 above 7fffffffffffffff. Empty or null →
 * null. Anything else is a data error naming the row (for a list, the list's row).
 */
export const hex2intOp: OpDef<Record<string, never>> = {
  name: 'hex2int',
  input: 'utf8 scalar or list',
  stateful: false,
  validate(params) {
    checkKeys(params, []);
    return {};
  },
  outputType(t: ColumnType) {
    const el = t.kind === 'list' ? t.child : t.kind;
    if (el !== 'utf8') throw new OpPlanError(`needs a utf8 scalar or list input, got ${typeName(t)}`);
    return t.kind === 'list' ? { kind: 'list', child: 'int64' } : { kind: 'int64' };
  },
  apply(input: Column) {
    return mapElements('hex2int', input, (c) => {
      if (c.type !== 'utf8') throw badColumn('hex2int', c.type);
      const n = c.offsets.length - 1;
      const out = new Uint32Array(2 * n);
      const outValid = new Uint8Array(n).fill(1);
      hex2intUtf8(c.offsets, c.data, c.valid, out, outValid);
      return int64FromWords(out, compactValid(outValid));
    });
  },
};
