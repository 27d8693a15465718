/**
 * hex2int fused with PLAIN decoding: a PLAIN BYTE_ARRAY page's strings (a 4-byte little-endian
 * length, then the bytes, per value) parsed straight into int64 words, without first copying them
 * out as a string column. Exactly @sluice/ops' hex2int (packages/ops/src/ops/hex2int.ts): 1 to 16
 * hex digits, either case, no prefix or whitespace; 16 digits wrap to a negative int64; an empty
 * string is null. Anything else is not parsed here: `parsePlainHex` reports where it stopped, and
 * the caller leaves the column to the pipeline, whose hex2int reports it with its row.
 */
import { HEX_DIGITS as HEX } from '@sluice/ops';

/**
 * The byte value of two hex digits, indexed by the two bytes (first << 8 | second), -1 when either
 * is not a digit: half the loop iterations of a table per byte (bench/README.md, 'PLAIN pages').
 */
const PAIR = new Int16Array(65536).fill(-1);
for (let a = 0; a < 256; a++) for (let b = 0; b < 256; b++) if (HEX[a]! >= 0 && HEX[b]! >= 0) PAIR[(a << 8) | b] = (HEX[a]! << 4) | HEX[b]!;

/** Where parsing stopped: the page ran out (`damaged`) or a value is not 1 to 16 hex digits (`invalid`); ok otherwise. */
export type HexParse = 'ok' | 'invalid' | 'damaged';

/**
 * Parses `present` PLAIN strings from byte `p` of `page` into int64 words (`words[2k]` low,
 * `words[2k + 1]` high) and validity (`valid[k]`, 0 for an empty string) at slots `from`,
 * `from + 1`, …
 */
export function parsePlainHex(page: Uint8Array, p: number, present: number, words: Int32Array, valid: Uint8Array, from: number): HexParse {
  const end = page.length;
  for (let k = from, last = from + present; k < last; k++) {
    if (p + 4 > end) return 'damaged';
    const len = (page[p]! | (page[p + 1]! << 8) | (page[p + 2]! << 16) | (page[p + 3]! << 24)) >>> 0;
    p += 4;
    if (p + len > end) return 'damaged';
    if (len === 0) {
      words[2 * k] = 0;
      words[2 * k + 1] = 0;
      valid[k] = 0;
      continue;
    }
    if (len > 16) return 'invalid';
    let lo = 0;
    let hi = 0;
    // OR of the digits' values: negative once any byte is not a hex digit (checked once per value).
    let bad = 0;
    let j = p;
    const e = p + len;
    if ((len & 1) === 1) {
      const d = HEX[page[j++]!]!;
      bad = d;
      lo = d & 15;
    }
    for (; j < e; j += 2) {
      const d = PAIR[(page[j]! << 8) | page[j + 1]!]!;
      bad |= d;
      // (hi, lo) <<= 8, then add the byte; at most 16 digits, so nothing is shifted out.
      hi = (hi << 8) | (lo >>> 24);
      lo = (lo << 8) | (d & 255);
    }
    if (bad < 0) return 'invalid';
    words[2 * k] = lo;
    words[2 * k + 1] = hi;
    valid[k] = 1;
    p += len;
  }
  return 'ok';
}
