/**
 * The RLE / bit-packed hybrid encoding in JS: dictionary indices (`rleHybridJs`) and repetition
 * and definition levels (`levelsJs`). The reader calls them through rle-wasm.ts, which runs the
 * wasm kernel where it loads and these where it does not, for short inputs, and for any input the
 * kernel declines (errors included): these define the results and the error messages.
 */

/** The largest value (unsigned) the last `rleHybridJs` call decoded, for dictionary bounds checks. */
export let rleMaxJs = 0;

/**
 * Decodes `n` values of the RLE / bit-packed hybrid encoding from bytes [pos, end) into
 * out[at ..]. Throws when the runs end before `n` values (a truncated or corrupt page).
 */
export function rleHybridJs(b: Uint8Array, pos: number, end: number, width: number, out: Int32Array, at: number, n: number): number {
  let seen = 0;
  let max = 0;
  const mask = width >= 32 ? -1 : (1 << width) - 1;
  const bw = (width + 7) >> 3;
  let dv: DataView | undefined;
  while (seen < n) {
    if (pos >= end) throw new Error(`RLE data ends after ${seen} of ${n} values`);
    let h = 0;
    let sh = 0;
    let byte: number;
    // A ULEB128 run header; `mul` (2 ** sh) by multiplication, since `2 ** sh` calls into C++.
    let mul = 1;
    do {
      byte = b[pos++]!;
      h += (byte & 0x7f) * mul;
      mul *= 128;
      sh += 7;
    } while (byte & 0x80 && sh < 35);
    if (h % 2 === 1) {
      const groups = Math.floor(h / 2);
      const stop = Math.min(n, seen + groups * 8);
      const next = pos + groups * width;
      if (width === 0) {
        out.fill(0, at + seen, at + stop);
        seen = stop;
        pos = next;
        continue;
      }
      if (pos + Math.ceil(((stop - seen) * width) / 8) > end) throw new Error('bit-packed run past the end of its data');
      if (width <= 25) {
        // Value k of the run starts at bit k * width; a little-endian 32-bit read at its byte
        // holds all of it (bit offset <= 7, width <= 25). Values whose 4-byte window would pass the
        // end of the buffer take the byte-at-a-time loop below.
        const count = stop - seen;
        const lim = b.length - 4 - pos;
        const fast = lim < 0 ? 0 : Math.min(count, Math.floor(((lim + 1) * 8 - 1) / width) + 1);
        if (fast > 0) {
          dv ??= new DataView(b.buffer, b.byteOffset, b.byteLength);
          for (let i = at + seen, e = i + fast, bit = 0; i < e; i++, bit += width) {
            const x = (dv.getUint32(pos + (bit >>> 3), true) >>> (bit & 7)) & mask;
            out[i] = x;
            if (x > max) max = x;
          }
        }
        const bit0 = fast * width;
        let p = pos + (bit0 >>> 3);
        let acc = 0;
        let have = 0;
        if (fast < count && (bit0 & 7) !== 0) {
          acc = b[p++]! >>> (bit0 & 7);
          have = 8 - (bit0 & 7);
        }
        for (let i = at + seen + fast, e = at + stop; i < e; i++) {
          while (have < width) {
            acc |= b[p++]! << have;
            have += 8;
          }
          const x = acc & mask;
          out[i] = x;
          if (x > max) max = x;
          acc >>>= width;
          have -= width;
        }
      } else {
        // Wide indices: read each value bit by bit through a float accumulator (rare).
        let bit = pos * 8;
        for (let i = at + seen, e = at + stop; i < e; i++) {
          let v = 0;
          for (let k = 0; k < width; k++, bit++) if (b[bit >> 3]! & (1 << (bit & 7))) v += 2 ** k;
          out[i] = v | 0;
          if (v > max) max = v;
        }
      }
      pos = next;
      seen = stop;
    } else {
      const runLen = Math.floor(h / 2);
      if (pos + bw > end) throw new Error('RLE run value past the end of its data');
      let v = 0;
      for (let k = 0, mul = 1; k < bw; k++, mul *= 256) v += b[pos++]! * mul;
      const stop = Math.min(n, seen + runLen);
      if (runLen === 0) throw new Error('empty RLE run');
      // TypedArray#fill is a call into C++ whatever the length; most runs are short, and a
      // loop writes up to 16 values in less.
      if (stop - seen <= 16) for (let i = at + seen, e = at + stop, x = v | 0; i < e; i++) out[i] = x;
      else out.fill(v | 0, at + seen, at + stop);
      if (v > max) max = v;
      seen = stop;
    }
  }
  rleMaxJs = max;
  return pos;
}

/**
 * Repetition or definition levels: `n` values of the RLE / bit-packed hybrid at the bit width of
 * `max` (1 to 8 bits), one byte each, into out[at ..]. A flat OPTIONAL column's definition levels
 * (max 1) are its validity bytes. Throws when the runs end early or a level exceeds `max` (a
 * corrupt page). Its own function rather than `rleHybridJs` with a byte output, which would make
 * that hot loop polymorphic.
 */
export function levelsJs(b: Uint8Array, pos: number, end: number, max: number, out: Uint8Array, n: number, at = 0): void {
  if (!Number.isInteger(max) || max < 1 || max > 255) throw new RangeError(`level maximum ${max} is not 1 to 255`);
  const width = 32 - Math.clz32(max);
  const mask = (1 << width) - 1;
  let seen = 0;
  while (seen < n) {
    if (pos >= end) throw new Error(`levels end after ${seen} of ${n} values`);
    let h = 0;
    let sh = 0;
    let byte: number;
    // A ULEB128 run header; `mul` (2 ** sh) by multiplication, since `2 ** sh` calls into C++.
    let mul = 1;
    do {
      byte = b[pos++]!;
      h += (byte & 0x7f) * mul;
      mul *= 128;
      sh += 7;
    } while (byte & 0x80 && sh < 35);
    if (h % 2 === 1) {
      // Bit-packed groups of 8 values in `width` bytes, least significant bit first.
      const groups = Math.floor(h / 2);
      const stop = Math.min(n, seen + groups * 8);
      if (pos + Math.ceil(((stop - seen) * width) / 8) > end) throw new Error('bit-packed levels past the end of their data');
      let i = at + seen;
      const e = at + stop;
      let q = pos;
      if (width === 1) {
        for (; i + 8 <= e; i += 8) {
          const v = b[q++]!;
          out[i] = v & 1;
          out[i + 1] = (v >> 1) & 1;
          out[i + 2] = (v >> 2) & 1;
          out[i + 3] = (v >> 3) & 1;
          out[i + 4] = (v >> 4) & 1;
          out[i + 5] = (v >> 5) & 1;
          out[i + 6] = (v >> 6) & 1;
          out[i + 7] = v >> 7;
        }
      } else if (width === 2) {
        for (; i + 4 <= e; i += 4) {
          const v = b[q++]!;
          out[i] = v & 3;
          out[i + 1] = (v >> 2) & 3;
          out[i + 2] = (v >> 4) & 3;
          out[i + 3] = v >> 6;
        }
      }
      // The rest (and every width above 2) through a bit accumulator.
      let acc = 0;
      let have = 0;
      for (; i < e; i++) {
        if (have < width) {
          acc |= b[q++]! << have;
          have += 8;
        }
        out[i] = acc & mask;
        acc >>>= width;
        have -= width;
      }
      if (mask > max) for (let k = at + seen; k < e; k++) if (out[k]! > max) throw new Error(`level ${out[k]} above the column's maximum ${max}`);
      pos += groups * width;
      seen = stop;
    } else {
      const runLen = Math.floor(h / 2);
      if (runLen === 0) throw new Error('empty RLE run');
      if (pos >= end) throw new Error('RLE run value past the end of its data');
      const v = b[pos++]!;
      if (v > max) throw new Error(`level ${v} above the column's maximum ${max}`);
      const stop = Math.min(n, seen + runLen);
      // As in rleHybridJs: a loop for short runs, fill's memset for long ones.
      if (stop - seen <= 16) for (let i = at + seen, e = at + stop; i < e; i++) out[i] = v;
      else out.fill(v, at + seen, at + stop);
      seen = stop;
    }
  }
}
