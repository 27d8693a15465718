/**
 * The wasm RLE / bit-packed hybrid decoders (reader/parquet/rle-wasm.ts) against the JS ones
 * (rle.ts), the reference: random streams of every width, run kind, offset and length, whole and
 * damaged, must give the same output array, return value, maximum and error message.
 */
import { describe, expect, it, vi } from 'vitest';
import { MIN_WASM_INDICES, MIN_WASM_LEVELS, levels, rleHybrid, rleKernel, rleMax } from '../../src/reader/parquet/rle-wasm.js';
import { levelsJs, rleHybridJs, rleMaxJs } from '../../src/reader/parquet/rle.js';
import { indices, type Dict } from '../../src/reader/parquet/values.js';
import { Rng } from '../../src/util/rng.js';

/** A seeded generator (util/rng.ts), so a failure reproduces. */
function rng(seed: number): () => number {
  const r = new Rng(seed);
  return () => r.next();
}

/** A run header: ULEB128 of `h`, sometimes padded with redundant continuation bytes (up to 5 in all). */
function header(h: number, r: () => number, bytes: number[]): void {
  const out: number[] = [];
  do {
    out.push(h % 128);
    h = Math.floor(h / 128);
  } while (h > 0);
  while (out.length < 5 && r() < 0.1) out.push(0);
  for (let i = 0; i < out.length - 1; i++) out[i]! |= 0x80;
  bytes.push(...out);
}

/**
 * A stream of roughly `n` values at `width`: bit-packed runs of random bits and RLE runs (values
 * of `width` bits, or any bytes when `wild`), short and long alike.
 */
function stream(r: () => number, width: number, n: number, wild: boolean, maxValue = 2 ** width - 1): number[] {
  const bytes: number[] = [];
  const bw = (width + 7) >> 3;
  let seen = 0;
  while (seen < n) {
    if (r() < 0.5) {
      const groups = 1 + Math.floor(r() * (r() < 0.8 ? 4 : 80));
      header(groups * 2 + 1, r, bytes);
      for (let k = 0; k < groups * width; k++) bytes.push(Math.floor(r() * 256));
      seen += groups * 8;
    } else {
      const len = 1 + Math.floor(r() * (r() < 0.8 ? 40 : 3000));
      header(len * 2, r, bytes);
      let v = wild ? Math.floor(r() * 2 ** (8 * bw)) : Math.floor(r() * (maxValue + 1));
      if (r() < 0.2) v = maxValue;
      for (let k = 0; k < bw; k++) bytes.push(Math.floor(v / 2 ** (8 * k)) % 256);
      seen += len;
    }
  }
  return bytes;
}

/** `f`'s result, or its error as `{ error: name: message }`. */
function outcome<T>(f: () => T): T | { error: string } {
  try {
    return f();
  } catch (e) {
    return { error: `${(e as Error).name}: ${(e as Error).message}` };
  }
}

/** One random call, damaged or not: `bytes` is the stream between `pre` and `post` filler bytes. */
function damage(r: () => number, body: number[]): { b: Uint8Array; pos: number; end: number } {
  const s = body.slice();
  const kind = r();
  if (kind < 0.1 && s.length > 1)
    s.length = Math.floor(r() * s.length); // truncated
  else if (kind < 0.2)
    for (let k = 0; k < 3; k++) s[Math.floor(r() * s.length)] = Math.floor(r() * 256); // flipped bytes
  else if (kind < 0.25)
    s.splice(Math.floor(r() * s.length), 0, 0, 0); // an empty RLE run (header 0)
  else if (kind < 0.3) s.push(0xff, 0xff); // a header that runs off the end
  const pre = Math.floor(r() * 5);
  // Often none after: a 4- or 8-byte read at the last value would pass the end of the buffer.
  const post = r() < 0.5 ? 0 : Math.floor(r() * 9);
  const b = new Uint8Array(pre + s.length + post);
  for (let i = 0; i < b.length; i++) b[i] = Math.floor(r() * 256);
  b.set(s, pre);
  // Sometimes `end` stops short of the data, or the data continues past `end`.
  const end = r() < 0.1 ? pre + Math.floor(r() * s.length) : pre + s.length;
  return { b, pos: pre, end };
}

/** The first index where `a` and `b` differ (lengths included), or -1: toEqual on arrays of thousands is slow. */
function firstDifference(a: Int32Array | Uint8Array, b: Int32Array | Uint8Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

describe('wasm RLE / bit-packed hybrid decoder', () => {
  it('loads from the build', () => {
    expect(rleKernel()).not.toBeNull();
  });

  it('decodes in JS where the kernel is off (SLUICE_RLE_WASM=0), as where it does not load', async () => {
    vi.resetModules();
    process.env.SLUICE_RLE_WASM = '0';
    try {
      const fresh = await import('../../src/reader/parquet/rle-wasm.js');
      expect(fresh.rleKernel()).toBeNull();
      const bytes = new Uint8Array([0x81, 0x01, ...Array<number>(64 * 3).fill(0xb6)]); // 64 groups of width 3
      const out = new Int32Array(512);
      expect(fresh.rleHybrid(bytes, 0, bytes.length, 3, out, 0, 512)).toBe(bytes.length);
      const want = new Int32Array(512);
      rleHybridJs(bytes, 0, bytes.length, 3, want, 0, 512);
      expect(firstDifference(out, want)).toBe(-1);
      expect(fresh.rleMax).toBe(rleMaxJs);
    } finally {
      delete process.env.SLUICE_RLE_WASM;
      vi.resetModules();
    }
  });

  it('decodes dictionary indices as the JS decoder does, whole and damaged, widths 0 to 32', () => {
    const kernel = rleKernel()!;
    const r = rng(31);
    let wasmCalls = 0;
    for (let t = 0; t < 4000; t++) {
      const width = t % 33;
      const total = Math.floor(r() * (r() < 0.7 ? 3000 : 200));
      const body = stream(r, width, total, r() < 0.3);
      const { b, pos, end } = damage(r, body);
      // n at, below or past what the stream holds; odd lengths and offsets.
      const n = r() < 0.8 ? Math.max(0, total - Math.floor(r() * 30)) : total + 1 + Math.floor(r() * 20);
      const at = Math.floor(r() * 7);
      const fill = Math.floor(r() * 2 ** 32) | 0;
      const want = new Int32Array(at + n + 3).fill(fill);
      const got = want.slice();
      const js = outcome(() => rleHybridJs(b, pos, end, width, want, at, n));
      const jsMax = rleMaxJs;
      const wasm = outcome(() => rleHybrid(b, pos, end, width, got, at, n));
      expect(wasm, `case ${t}`).toEqual(js);
      expect(firstDifference(got, want), `case ${t}`).toBe(-1);
      if (typeof js === 'number') expect(rleMax, `case ${t}`).toBe(jsMax);
      // Count the calls the kernel itself decodes rather than declines.
      if (typeof js === 'number' && n >= MIN_WASM_INDICES && kernel.indices(b, pos, end, width, got, at, n)) wasmCalls++;
    }
    expect(wasmCalls).toBeGreaterThan(1000);
  });

  it('decodes levels as the JS decoder does, whole and damaged, maxima 1 to 255', () => {
    const kernel = rleKernel()!;
    const r = rng(32);
    let wasmCalls = 0;
    for (let t = 0; t < 4000; t++) {
      const max = t % 4 === 0 ? 1 : t % 4 === 1 ? 1 + Math.floor(r() * 3) : 1 + Math.floor(r() * 255);
      const width = 32 - Math.clz32(max);
      const total = Math.floor(r() * (r() < 0.7 ? 3000 : 200));
      // Mostly levels within the maximum, sometimes above it (packed or RLE).
      const body = stream(r, width, total, r() < 0.1, r() < 0.9 ? max : 2 ** width - 1);
      const { b, pos, end } = damage(r, body);
      const n = r() < 0.8 ? Math.max(0, total - Math.floor(r() * 30)) : total + 1 + Math.floor(r() * 20);
      const at = Math.floor(r() * 7);
      const want = new Uint8Array(at + n + 3).fill(Math.floor(r() * 256));
      const got = want.slice();
      const js = outcome(() => levelsJs(b, pos, end, max, want, n, at));
      const wasm = outcome(() => levels(b, pos, end, max, got, n, at));
      expect(wasm, `case ${t}`).toEqual(js);
      expect(firstDifference(got, want), `case ${t}`).toBe(-1);
      if (js === undefined && n >= MIN_WASM_LEVELS && kernel.levels(b, pos, end, max, got, n, at)) wasmCalls++;
    }
    expect(wasmCalls).toBeGreaterThan(500);
  });

  it('merges indices with nulls (indices mode) as the JS does, whole and damaged', () => {
    const kernel = rleKernel()!;
    const r = rng(33);
    let wasmCalls = 0;
    for (let t = 0; t < 1500; t++) {
      const width = 1 + (t % 20);
      const n = Math.floor(r() * 3000);
      const valid = new Uint8Array(n + 6);
      const density = r();
      for (let i = 0; i < valid.length; i++) valid[i] = r() < density ? 1 : 0;
      const at = Math.floor(r() * 6);
      let present = 0;
      for (let i = at; i < at + n; i++) present += valid[i]!;
      const { b, pos, end } = damage(r, stream(r, width, present, r() < 0.1));
      // The page: the bit width byte, then the stream (to the end of the page, as the reader reads it).
      const page = new Uint8Array(1 + end - pos);
      page[0] = width;
      page.set(b.subarray(pos, end), 1);
      // Mostly a dictionary that holds every index, sometimes one too small.
      const size = r() < 0.8 ? 2 ** width : Math.max(1, Math.floor(r() * 2 ** width));
      const dict: Dict = { type: 'int32', values: null, starts: null, lens: null, data: null, size };
      const fill = Math.floor(r() * 1000);
      const want = new Int32Array(at + n + 3).fill(fill);
      const got = want.slice();
      const js = outcome(() => {
        const idx = new Int32Array(present + 1);
        rleHybridJs(page, 1, page.length, width, idx, 0, present);
        if (present > 0 && rleMaxJs >= size) throw new Error(`column c: dictionary index ${rleMaxJs} out of range (${size} entries)`);
        for (let i = 0, k = 0; i < n; i++) {
          const v = valid[at + i]!;
          want[at + i] = size ^ ((idx[k]! ^ size) & -v);
          k += v;
        }
      });
      const wasm = outcome(() => indices(page, 0, 'RLE_DICTIONARY', n, present, at, valid, got, dict, 'c'));
      expect(wasm, `case ${t}`).toEqual(js);
      expect(firstDifference(got, want), `case ${t}`).toBe(-1);
      if (js === undefined && present >= MIN_WASM_INDICES && kernel.indicesWithNulls(page, 1, page.length, width, valid, at, n, present, size, got))
        wasmCalls++;
    }
    expect(wasmCalls).toBeGreaterThan(300);
  });

  it('gives the JS errors for corrupt pages', () => {
    // Long enough for the kernel: 80 indices, 320 levels.
    const packed = [0x15, ...Array<number>(10).fill(0xff)]; // 10 groups of width 1: 80 ones
    const packed40 = (width: number): Uint8Array => new Uint8Array([0x51, ...Array<number>(40 * width).fill(0xff)]); // 40 groups: 320 values
    const cases: Array<[string, () => unknown]> = [
      ['data ends early', () => rleHybrid(new Uint8Array(packed), 0, packed.length, 1, new Int32Array(100), 0, 100)],
      ['a run past the end', () => rleHybrid(new Uint8Array(packed), 0, packed.length - 1, 1, new Int32Array(80), 0, 80)],
      ['an empty RLE run', () => rleHybrid(new Uint8Array([0, 1, ...packed]), 0, packed.length + 2, 1, new Int32Array(80), 0, 80)],
      ['an RLE value past the end', () => rleHybrid(new Uint8Array([160, 1]), 0, 2, 9, new Int32Array(80), 0, 80)],
      ['a level above the maximum', () => levels(packed40(2), 0, 81, 2, new Uint8Array(320), 320)],
      ['an RLE level above the maximum', () => levels(new Uint8Array([0x80, 5, 3]), 0, 3, 2, new Uint8Array(320), 320)],
      ['levels ending early', () => levels(packed40(1), 0, 41, 1, new Uint8Array(330), 330)],
    ];
    const messages = cases.map(([, f]) => outcome(f));
    expect(messages).toEqual([
      { error: 'Error: RLE data ends after 80 of 100 values' },
      { error: 'Error: bit-packed run past the end of its data' },
      { error: 'Error: empty RLE run' },
      { error: 'Error: RLE run value past the end of its data' },
      { error: "Error: level 3 above the column's maximum 2" },
      { error: "Error: level 3 above the column's maximum 2" },
      { error: 'Error: levels end after 320 of 330 values' },
    ]);
  });
});
