/**
 * The RLE / bit-packed hybrid decoder of the direct Parquet reader (src/reader/parquet/rle.ts is
 * the JS original and the reference; src/reader/parquet/rle-wasm.ts calls this).
 *
 * Why wasm: the JS decoder reads each bit-packed value through an unaligned DataView.getUint32
 * and pays a branchy loop per run; here a value is one unaligned 64-bit load, shift and mask, and
 * a whole page's stream (hundreds of short runs for levels) is one call. See bench/README.md,
 * 'rle.ts'.
 *
 * The caller copies the stream bytes [pos, end) to `src`, and leaves 64 spare bytes after the
 * stream and after the `n` values at `dst`: loads read up to 8 bytes at a value's first byte (past
 * the last byte a run needs, whose bits the mask drops), a run's last group is unpacked whole, and
 * an RLE run is written in whole 16-byte stores; what passes a run's end, the next run overwrites,
 * and the caller copies out only `n` values. Anything the JS
 * decoder would throw on, and a run header that reads past `end` (JS reads the bytes after it),
 * returns FALLBACK with nothing promised about `dst`: the caller runs the JS decoder, which
 * throws (or decodes) exactly as before. The module allocates nothing.
 */

/** Decoded: lastPos() and lastMax() describe the call. */
const OK: i32 = 0;
/** Not decoded here: run the JS decoder on the same input. */
const FALLBACK: i32 = 1;

/** Byte offset after the last run read, relative to `src` (a run cut short by `n` may end past `len`). */
let endPos: f64 = 0;
/** The largest value decoded (unsigned), as rleHybrid's rleMax. */
let maxValue: u32 = 0;

export function heapBase(): usize {
  return __heap_base;
}
export function lastPos(): f64 {
  return endPos;
}
export function lastMax(): u32 {
  return maxValue;
}

/** The ULEB128 run header at src + p (as JS: at most 5 bytes), or -1 when it reads at or past `len`. Sets `hdrEnd`. */
let hdrEnd: i64 = 0;
// @ts-ignore: decorator
@inline function header(src: usize, p: i64, len: i64): i64 {
  let h: i64 = 0;
  let sh: i64 = 0;
  let byte: i64;
  do {
    if (p >= len) return -1;
    byte = <i64>load<u8>(src + <usize>p);
    p++;
    h |= (byte & 0x7f) << sh;
    sh += 7;
  } while ((byte & 0x80) != 0 && sh < 35);
  hdrEnd = p;
  return h;
}


/** A run of `len` values cut to the `room` values still wanted. */
// @ts-ignore: decorator
@inline function upTo(len: i64, room: i32): i32 {
  return <i32>(len < <i64>room ? len : <i64>room);
}

/** Eight values of constant width `w` from the `w` bytes at `g` into the int32s at `o`: constant shifts once inlined. */
// @ts-ignore: decorator
@inline function group8(g: usize, o: usize, w: i32): void {
  const mask: u64 = w >= 32 ? 0xffffffff : (<u64>1 << <u64>w) - 1;
  store<u32>(o, <u32>((load<u64>(g) >> 0) & mask));
  store<u32>(o, <u32>((load<u64>(g + ((w * 1) >> 3)) >> <u64>((w * 1) & 7)) & mask), 4);
  store<u32>(o, <u32>((load<u64>(g + ((w * 2) >> 3)) >> <u64>((w * 2) & 7)) & mask), 8);
  store<u32>(o, <u32>((load<u64>(g + ((w * 3) >> 3)) >> <u64>((w * 3) & 7)) & mask), 12);
  store<u32>(o, <u32>((load<u64>(g + ((w * 4) >> 3)) >> <u64>((w * 4) & 7)) & mask), 16);
  store<u32>(o, <u32>((load<u64>(g + ((w * 5) >> 3)) >> <u64>((w * 5) & 7)) & mask), 20);
  store<u32>(o, <u32>((load<u64>(g + ((w * 6) >> 3)) >> <u64>((w * 6) & 7)) & mask), 24);
  store<u32>(o, <u32>((load<u64>(g + ((w * 7) >> 3)) >> <u64>((w * 7) & 7)) & mask), 28);
}

// @ts-ignore: decorator
@inline function groups(g: usize, o: usize, count: i32, w: i32): void {
  for (let k = 0; k < count; k++) {
    group8(g, o, w);
    g += <usize>w;
    o += 32;
  }
}

/** `count` groups of width `width` (1 to 32) from `g` into the int32s at `o`; one loop per width, so each has constant shifts. */
function unpack(g: usize, o: usize, count: i32, width: i32): void {
  switch (width) {
    case 1: groups(g, o, count, 1); break;
    case 2: groups(g, o, count, 2); break;
    case 3: groups(g, o, count, 3); break;
    case 4: groups(g, o, count, 4); break;
    case 5: groups(g, o, count, 5); break;
    case 6: groups(g, o, count, 6); break;
    case 7: groups(g, o, count, 7); break;
    case 8: groups(g, o, count, 8); break;
    case 9: groups(g, o, count, 9); break;
    case 10: groups(g, o, count, 10); break;
    case 11: groups(g, o, count, 11); break;
    case 12: groups(g, o, count, 12); break;
    case 13: groups(g, o, count, 13); break;
    case 14: groups(g, o, count, 14); break;
    case 15: groups(g, o, count, 15); break;
    case 16: groups(g, o, count, 16); break;
    case 17: groups(g, o, count, 17); break;
    case 18: groups(g, o, count, 18); break;
    case 19: groups(g, o, count, 19); break;
    case 20: groups(g, o, count, 20); break;
    case 21: groups(g, o, count, 21); break;
    case 22: groups(g, o, count, 22); break;
    case 23: groups(g, o, count, 23); break;
    case 24: groups(g, o, count, 24); break;
    case 25: groups(g, o, count, 25); break;
    case 26: groups(g, o, count, 26); break;
    case 27: groups(g, o, count, 27); break;
    case 28: groups(g, o, count, 28); break;
    case 29: groups(g, o, count, 29); break;
    case 30: groups(g, o, count, 30); break;
    case 31: groups(g, o, count, 31); break;
    default: groups(g, o, count, 32); break;
  }
}

/** The largest of `max` and the `n` unsigned int32s at `o`, four at a time. */
function maxU32(o: usize, n: i32, max: u32): u32 {
  let m = i32x4.splat(<i32>max);
  const e = o + (<usize>n << 2);
  let q = o;
  while (q + 16 <= e) {
    m = i32x4.max_u(m, v128.load(q));
    q += 16;
  }
  m = i32x4.max_u(m, i32x4.shuffle(m, m, 2, 3, 0, 1));
  m = i32x4.max_u(m, i32x4.shuffle(m, m, 1, 0, 3, 2));
  let r = <u32>i32x4.extract_lane(m, 0);
  while (q < e) {
    const x = load<u32>(q);
    r = x > r ? x : r;
    q += 4;
  }
  return r;
}

/**
 * `n` values of bit width `width` (0 to 32) from the `len` stream bytes at `src` into the int32s
 * at `dst`. OK or FALLBACK.
 */
export function rleHybrid(src: usize, len: i32, width: i32, dst: usize, n: i32): i32 {
  const L = <i64>len;
  const bw = (width + 7) >> 3;
  let p: i64 = 0;
  let seen: i32 = 0;
  let max: u32 = 0;
  while (seen < n) {
    const h = header(src, p, L);
    if (h < 0) return FALLBACK;
    p = hdrEnd;
    if ((h & 1) != 0) {
      const groups = h >> 1;
      const cnt = upTo(groups * 8, n - seen);
      if (width == 0) {
        memory.fill(dst + (<usize>seen << 2), 0, <usize>cnt << 2);
        seen += cnt;
        continue;
      }
      if (p + ((<i64>cnt * width + 7) >> 3) > L) return FALLBACK;
      // Whole groups (the last may run past `cnt`: the caller's output has room, and copies `cnt`).
      unpack(src + <usize>p, dst + (<usize>seen << 2), (cnt + 7) >> 3, width);
      max = maxU32(dst + (<usize>seen << 2), cnt, max);
      p += groups * width;
      seen += cnt;
    } else {
      const runLen = h >> 1;
      if (p + bw > L) return FALLBACK;
      let v: u32 = 0;
      for (let k = 0; k < bw; k++) v |= <u32>load<u8>(src + <usize>p + k) << (<u32>k << 3);
      p += bw;
      if (runLen == 0) return FALLBACK;
      const cnt = upTo(runLen, n - seen);
      // Whole 16-byte stores: the next run overwrites what passes this one's end.
      let o = dst + (<usize>seen << 2);
      const e = o + (<usize>cnt << 2);
      const s = i32x4.splat(<i32>v);
      do {
        v128.store(o, s);
        o += 16;
      } while (o < e);
      max = v > max ? v : max;
      seen += cnt;
    }
  }
  endPos = <f64>p;
  maxValue = max;
  return OK;
}

/**
 * `n` repetition or definition levels (maximum `maxLevel`, 1 to 255) from the `len` stream bytes
 * at `src` into the bytes at `dst`. OK or FALLBACK (a level above the maximum included).
 */
export function levels(src: usize, len: i32, maxLevel: i32, dst: usize, n: i32): i32 {
  const L = <i64>len;
  const width = 32 - clz<i32>(maxLevel);
  const mask: u64 = (<u64>1 << <u64>width) - 1;
  const check = <i32>mask > maxLevel;
  let p: i64 = 0;
  let seen: i32 = 0;
  while (seen < n) {
    const h = header(src, p, L);
    if (h < 0) return FALLBACK;
    p = hdrEnd;
    if ((h & 1) != 0) {
      const groups = h >> 1;
      const cnt = upTo(groups * 8, n - seen);
      if (p + ((<i64>cnt * width + 7) >> 3) > L) return FALLBACK;
      const base = src + <usize>p;
      let o = dst + <usize>seen;
      const e = o + <usize>cnt;
      if (width == 1) {
        // A byte holds a group: spread its 8 bits over 8 output bytes in one 64-bit store.
        let q = base;
        const e8 = o + ((<usize>cnt >> 3) << 3);
        while (o < e8) {
          const b = <u64>load<u8>(q);
          // Bit k of b to the low bit of byte k: b in every byte, byte k keeps bit k, and adding
          // 0x7f sets a byte's top bit exactly when that bit was set (no carry between bytes).
          const kept = (b * 0x0101010101010101) & 0x8040201008040201;
          store<u64>(o, ((kept + 0x7f7f7f7f7f7f7f7f) >> 7) & 0x0101010101010101);
          o += 8;
          q++;
        }
        let bit: u32 = 0;
        while (o < e) {
          store<u8>(o, <u8>((<u32>load<u8>(q) >> bit) & 1));
          bit++;
          o++;
        }
      } else {
        let bit: usize = 0;
        const w = <usize>width;
        let bad: u32 = 0;
        while (o < e) {
          const x = <u32>((load<u64>(base + (bit >> 3)) >> (<u64>bit & 7)) & mask);
          store<u8>(o, x);
          bad |= <u32>(x > <u32>maxLevel);
          bit += w;
          o++;
        }
        if (check && bad != 0) return FALLBACK;
      }
      p += groups * width;
      seen += cnt;
    } else {
      const runLen = h >> 1;
      if (runLen == 0) return FALLBACK;
      if (p >= L) return FALLBACK;
      const v = <i32>load<u8>(src + <usize>p);
      p++;
      if (v > maxLevel) return FALLBACK;
      const cnt = upTo(runLen, n - seen);
      // Short runs in whole 16-byte stores (the next run overwrites what passes the end), long
      // ones (list levels: thousands) by memory.fill.
      let o = dst + <usize>seen;
      const e = o + <usize>cnt;
      if (cnt >= 256) memory.fill(o, <u8>v, <usize>cnt);
      else {
        const s = i8x16.splat(<i8>v);
        do {
          v128.store(o, s);
          o += 16;
        } while (o < e);
      }
      seen += cnt;
    }
  }
  return OK;
}

/**
 * Indices mode's null merge (reader/parquet/values.ts `indices`): for i < n, the int32 at dst + 4i
 * is the next of the decoded indices at `idx` where the byte valid[i] is 1, `nul` where it is 0;
 * the same branch-free formula as the JS (it reads idx one past the last, and discards it).
 */
export function mergeNulls(idx: usize, valid: usize, n: i32, nul: i32, dst: usize): void {
  let k: usize = 0;
  for (let i = 0; i < n; i++) {
    const v = <i32>load<u8>(valid + <usize>i);
    store<i32>(dst + (<usize>i << 2), nul ^ ((load<i32>(idx + (k << 2)) ^ nul) & -v));
    k += <usize>v;
  }
}
