/**
 * hex2int straight from UTF-8 bytes: 1 to 16 hex digits (either case) → int64 words; null or
 * empty → null. One 16-byte SIMD load per string: classify and convert every byte, right-align
 * the digits with a swizzle, pack nibble pairs into bytes and reverse them into a u64.
 */

let nulls: i32 = 0;

/** Null rows (null or empty strings) seen by the last hex2int call. */
export function hexNulls(): i32 {
  return nulls;
}

/**
 * Parses n strings: string i is data[offsets[i] - base .. offsets[i + 1] - base). 16 bytes must
 * be readable from each string start (callers pad `data`). Writes the value to `out` (i64, 0 for
 * nulls) and 1 / 0 to `outValid`. Returns -1, or the first row that is not valid hex (the caller
 * re-runs the reference kernel for its exact error).
 */
export function hex2int(offsets: usize, base: i32, data: usize, valid: usize, n: i32, out: usize, outValid: usize): i32 {
  const iota = i8x16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  let nullCount = 0;
  let start = load<i32>(offsets);
  for (let i = 0; i < n; i++) {
    const end = load<i32>(offsets + (<usize>(i + 1) << 2));
    const len = end - start;
    const o = out + (<usize>i << 3);
    if (len == 0 || (valid != 0 && load<u8>(valid + <usize>i) == 0)) {
      store<i64>(o, 0);
      store<u8>(outValid + <usize>i, 0);
      nullCount++;
      start = end;
      continue;
    }
    if (<u32>len > 16) {
      nulls = nullCount;
      return i;
    }
    const b = v128.load(data + <usize>(start - base));
    const d = i8x16.sub(b, i8x16.splat(0x30)); // '0'..'9' → 0..9
    const l = i8x16.sub(v128.or(b, i8x16.splat(0x20)), i8x16.splat(0x61)); // 'a'..'f', 'A'..'F' → 0..5
    const isDigit = i8x16.lt_u(d, i8x16.splat(10));
    const isAlpha = i8x16.lt_u(l, i8x16.splat(6));
    const ok = i8x16.bitmask(v128.or(isDigit, isAlpha));
    const need = <i32>((<u32>1 << len) - 1); // the low len bits of the byte mask
    if ((ok & need) != need) {
      nulls = nullCount;
      return i;
    }
    const nib = v128.bitselect(d, i8x16.add(l, i8x16.splat(10)), isDigit);
    // Right-align: lane j takes digit j - (16 - len); negative indices (as bytes >= 0x80) give 0.
    const digits = i8x16.swizzle(nib, i8x16.add(iota, i8x16.splat(<i8>(len - 16))));
    // i16 lane k holds digits 2k (low byte) and 2k + 1: byte value 16 * d[2k] + d[2k + 1].
    const pairs = v128.or(i16x8.shl(digits, 4), i16x8.shr_u(digits, 8));
    // Bytes 0..7 of the u64 are pair 7..0 (pair 0 is the most significant).
    const le = i8x16.shuffle(pairs, pairs, 14, 12, 10, 8, 6, 4, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    v128.store64_lane(o, le, 0);
    store<u8>(outValid + <usize>i, 1);
    start = end;
  }
  nulls = nullCount;
  return -1;
}
