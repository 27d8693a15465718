/**
 * The RLE / bit-packed hybrid decoders the reader calls: dictionary indices (`rleHybrid`) and
 * repetition and definition levels (`levels`), same contracts as rle.ts's JS decoders, and
 * indices mode's decode with the null merge (`rleIndicesWithNulls`, for values.ts).
 *
 * Why: these were about a fifth of a decode thread's time (issue 31); the wasm kernel
 * (assembly/rle.ts, built into build/rle.wasm by `npm run build`) decodes a page's stream in one
 * call, several times faster than the JS (bench/README.md, 'rle.ts'). The stream is copied into
 * the kernel's memory and the values copied out, so a short input stays in JS, where the copies
 * and the call would cost more than they save.
 *
 * The JS decoders stay the reference: they run where the module does not load (not built, or
 * SLUICE_RLE_WASM=0), and again on any input the kernel declines (a truncated or corrupt stream
 * among them), so results and error messages are theirs.
 */
import { readFileSync } from 'node:fs';
import { levelsJs, rleHybridJs, rleMaxJs } from './rle.js';

/** The module's exports (assembly/rle.ts). Pointers are byte offsets into `memory`. */
interface RleExports {
  readonly memory: WebAssembly.Memory;
  heapBase(): number;
  lastPos(): number;
  lastMax(): number;
  rleHybrid(src: number, len: number, width: number, dst: number, n: number): number;
  levels(src: number, len: number, max: number, dst: number, n: number): number;
  mergeNulls(idx: number, valid: number, n: number, nul: number, dst: number): void;
}

/** The built module, the same from src/reader/parquet (vitest, tsx), dist/reader/parquet and the bundle (which pins this module's URL). */
export const RLE_WASM_URL = new URL('../../../build/rle.wasm', import.meta.url);

/**
 * Below these many values a call stays in JS: the copies and the call cost more (bench/rle.ts,
 * short pages: indices gain from about 32 values, levels, which JS decodes faster, from about 256).
 */
export const MIN_WASM_INDICES = 64;
export const MIN_WASM_LEVELS = 256;

/** The kernel's spare bytes after the stream and after the output (assembly/rle.ts: it reads and writes past a run's end). */
const SLACK = 64;

class Kernel {
  readonly x: RleExports;
  private readonly base: number;
  private heap: Uint8Array;
  private heap32: Int32Array;

  constructor(module: WebAssembly.Module) {
    this.x = new WebAssembly.Instance(module, {}).exports as unknown as RleExports;
    this.base = (this.x.heapBase() + 15) & ~15;
    this.heap = new Uint8Array(this.x.memory.buffer);
    this.heap32 = new Int32Array(this.x.memory.buffer);
  }

  /** Copies b[pos, end) in and makes room for `outBytes` after it; returns the output's offset, or -1 where the memory cannot grow that far (the JS then runs). */
  load(b: Uint8Array, pos: number, end: number, outBytes: number): number {
    const dst = Math.ceil((this.base + end - pos + SLACK) / 16) * 16;
    const need = dst + outBytes + SLACK;
    // Offsets stay below 2 GiB: the kernel's other regions are aligned in 32-bit arithmetic.
    if (need > 0x7fff_0000) return -1;
    const have = this.x.memory.buffer.byteLength;
    try {
      if (need > have) this.x.memory.grow(Math.ceil((need - have) / 65_536));
    } catch {
      return -1;
    }
    if (this.heap.buffer !== this.x.memory.buffer) {
      this.heap = new Uint8Array(this.x.memory.buffer);
      this.heap32 = new Int32Array(this.x.memory.buffer);
    }
    this.heap.set(b.subarray(pos, end), this.base);
    return dst;
  }

  indices(b: Uint8Array, pos: number, end: number, width: number, out: Int32Array, at: number, n: number): boolean {
    const dst = this.load(b, pos, end, n * 4);
    if (dst < 0 || this.x.rleHybrid(this.base, end - pos, width, dst, n) !== 0) return false;
    out.set(this.heap32.subarray(dst >> 2, (dst >> 2) + n), at);
    return true;
  }

  levels(b: Uint8Array, pos: number, end: number, max: number, out: Uint8Array, n: number, at: number): boolean {
    const dst = this.load(b, pos, end, n);
    if (dst < 0 || this.x.levels(this.base, end - pos, max, dst, n) !== 0) return false;
    out.set(this.heap.subarray(dst, dst + n), at);
    return true;
  }

  /** `present` indices, all below `nul`, merged with valid[at, at + n) into rowIdx[at ..]; false, with nothing written, where not. */
  indicesWithNulls(
    b: Uint8Array,
    pos: number,
    end: number,
    width: number,
    valid: Uint8Array,
    at: number,
    n: number,
    present: number,
    nul: number,
    rowIdx: Int32Array,
  ): boolean {
    const idx = this.load(b, pos, end, present * 4 + n * 5 + 3 * SLACK);
    if (idx < 0) return false;
    const v = (idx + present * 4 + SLACK + 15) & ~15;
    const dst = (v + n + SLACK + 15) & ~15;
    if (this.x.rleHybrid(this.base, end - pos, width, idx, present) !== 0 || this.x.lastMax() >>> 0 >= nul) return false;
    this.heap.set(valid.subarray(at, at + n), v);
    this.x.mergeNulls(idx, v, n, nul, dst);
    rowIdx.set(this.heap32.subarray(dst >> 2, (dst >> 2) + n), at);
    return true;
  }
}

let kernel: Kernel | null | undefined;

/** This thread's kernel, or null where the module is not built, does not instantiate or is disabled (SLUICE_RLE_WASM=0). Never throws. */
export function rleKernel(): Kernel | null {
  if (kernel !== undefined) return kernel;
  kernel = null;
  try {
    if (process.env.SLUICE_RLE_WASM !== '0') kernel = new Kernel(new WebAssembly.Module(readFileSync(RLE_WASM_URL)));
  } catch {
    kernel = null;
  }
  return kernel;
}

/** The largest value (unsigned) the last `rleHybrid` call decoded, for dictionary bounds checks. */
export let rleMax = 0;

/** Whether the kernel may take this call: the JS's own reads and writes stay inside `b` and `out` (else it runs, to behave as it does). */
function fits(b: Uint8Array, pos: number, end: number, outLength: number, at: number, n: number): boolean {
  return (
    Number.isInteger(pos) &&
    Number.isInteger(end) &&
    Number.isInteger(at) &&
    Number.isInteger(n) &&
    pos >= 0 &&
    pos < end &&
    end <= b.length &&
    at >= 0 &&
    at + n <= outLength
  );
}

/** A bit width the kernel decodes (0 to 32). */
const isWidth = (width: number): boolean => Number.isInteger(width) && width >= 0 && width <= 32;

/** As rleHybridJs (rle.ts): `n` values from bytes [pos, end) into out[at ..]; the byte after the last run read. */
export function rleHybrid(b: Uint8Array, pos: number, end: number, width: number, out: Int32Array, at: number, n: number): number {
  const k = n >= MIN_WASM_INDICES && fits(b, pos, end, out.length, at, n) && isWidth(width) ? rleKernel() : null;
  if (k !== null && k.indices(b, pos, end, width, out, at, n)) {
    rleMax = k.x.lastMax() >>> 0;
    return pos + k.x.lastPos();
  }
  const next = rleHybridJs(b, pos, end, width, out, at, n);
  rleMax = rleMaxJs;
  return next;
}

/**
 * Indices mode of a page with nulls (values.ts `indices`) in the kernel: `present` dictionary
 * indices from bytes [pos, end), and rowIdx[at + i] = the next of them where valid[at + i] is 1,
 * else `nul` (the dictionary's size), for i < n. `present` is the count of valid rows. False, with
 * nothing written, where the kernel does not take it (short, not loaded, a stream it declines, an
 * index of `nul` or more): the caller's JS path then decodes, or throws, as before.
 */
export function rleIndicesWithNulls(
  b: Uint8Array,
  pos: number,
  end: number,
  width: number,
  valid: Uint8Array,
  at: number,
  n: number,
  present: number,
  nul: number,
  rowIdx: Int32Array,
): boolean {
  if (present < MIN_WASM_INDICES || present > n || !fits(b, pos, end, rowIdx.length, at, n) || at + n > valid.length || !isWidth(width)) return false;
  const k = rleKernel();
  if (k === null || !k.indicesWithNulls(b, pos, end, width, valid, at, n, present, nul, rowIdx)) return false;
  rleMax = k.x.lastMax() >>> 0;
  return true;
}

/** As levelsJs (rle.ts): `n` levels of at most `max` from bytes [pos, end) into out[at ..]. */
export function levels(b: Uint8Array, pos: number, end: number, max: number, out: Uint8Array, n: number, at = 0): void {
  const k = n >= MIN_WASM_LEVELS && fits(b, pos, end, out.length, at, n) && Number.isInteger(max) && max >= 1 && max <= 255 ? rleKernel() : null;
  if (k !== null && k.levels(b, pos, end, max, out, n, at)) return;
  levelsJs(b, pos, end, max, out, n, at);
}
