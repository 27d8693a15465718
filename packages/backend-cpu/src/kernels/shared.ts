/**
 * Plumbing shared by the fast kernels: the FastKernel type, list handling like core's mapElements,
 * and the blocked copy-in / kernel / copy-out loop.
 */

import type { Column, OpContext, PrimitiveColumn, ValidMask } from '@sluice/core/internal';
import type { Wasm } from './wasm.js';

/**
 * A fast kernel: the same result as the op's reference `apply` (bit for bit), or undefined when it
 * does not handle this input type or these params (the caller then runs the reference kernel).
 */
export type FastKernel = (input: Column, params: unknown, ctx: OpContext) => Column | undefined;

/**
 * Elements per block. A block's input, validity and output (at most ~300 KiB for int64) stay in
 * L2 between the copy in, the kernel and the copy out, so the copies cost little beyond the one
 * read of the input and one write of the output that any kernel pays.
 */
export const BLOCK = 16384;

/**
 * Tunables. minElements: below this many elements the reference kernel runs instead (a wasm call
 * costs ~1 µs of fixed work: views, copies' setup, BigInt params); measured crossovers are ~64 for
 * the compute-heavy kernels (log, bucketize, sigridHash, hex2int, int64 modulus and clamp) and
 * ~256–512 for the memory-bound ones (fillNull, neg2zero, clamp, int32 modulus), which use
 * minElementsCheap. Tests set both to 0 to drive the wasm kernels with tiny inputs. modMode forces
 * the floorMod method for moduli that are not powers of two (tests cover both) instead of the
 * calibrated one. block: elements per block (see BLOCK). poison: `uninit` fills its arrays with
 * 0xA5 bytes, so that a test sees any element a kernel leaves unwritten (malloc's memory is often
 * zero, which would pass for a null slot's 0).
 */
export const tuning: { minElements: number; minElementsCheap: number; modMode: number | undefined; block: number; poison: boolean } = {
  minElements: 64,
  minElementsCheap: 512,
  modMode: undefined,
  block: BLOCK,
  poison: false,
};

type Typed = Int32Array | Float32Array | Float64Array | BigInt64Array | Uint32Array | Uint8Array;

type TypedCtor<T> = { new (buffer: ArrayBuffer, byteOffset: number, length: number): T; readonly BYTES_PER_ELEMENT: number };

/**
 * A typed array of n elements in memory that is not zeroed, for an output the kernel writes in
 * full (every element of every block: `mapBlocks` copies each block's results out whole). A
 * `new Int32Array(n)` is zeroed memory: calloc, which for a large array maps fresh pages that
 * fault in one by one when first written, and on a VM a fault is dear (2M int32s: 6.3 ms to
 * allocate and fill against 0.7 ms through this, bench/README.md). `Buffer.allocUnsafeSlow` takes
 * malloc'd memory, reused from earlier frees, in an ArrayBuffer of its own (never a pooled slice),
 * so the array is standalone and transferable like one made by `new`. NumPy's outputs are
 * `np.empty` memory for the same reason.
 */
export function uninit<T>(C: TypedCtor<T>, n: number): T {
  const mem = Buffer.allocUnsafeSlow(n * C.BYTES_PER_ELEMENT);
  if (tuning.poison) mem.fill(0xa5);
  return new C(mem.buffer as ArrayBuffer, 0, n);
}

/** The bytes of a typed array. */
export const bytesOf = (a: Typed): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

export const roundUp4 = (n: number): number => (n + 3) & ~3;

/**
 * Applies a primitive fast kernel to a scalar column, or to a list's child keeping the list's
 * offsets and validity (core's mapElements). Undefined from the kernel, or a fixed column, means
 * "use the reference".
 */
export function mapFast(input: Column, fn: (c: PrimitiveColumn) => PrimitiveColumn | undefined): Column | undefined {
  if (input.type === 'fixed') return undefined;
  if (input.type !== 'list') return fn(input);
  const child = fn(input.child);
  return child === undefined ? undefined : { type: 'list', offsets: input.offsets, child, valid: input.valid };
}

/**
 * Runs `kernel` over `src` block by block: each block of `src` (and of `valid`) is copied into
 * scratch, the kernel writes `len` results at pDst, and they are copied to `out` at `start`.
 * `extra` reserves further scratch regions for the whole call (filled by `setup` before the first
 * block), passed to the kernel as `ext`.
 */
export function mapBlocks(
  w: Wasm,
  src: Typed,
  valid: ValidMask,
  out: Typed,
  kernel: (pSrc: number, pValid: number, len: number, pDst: number, start: number, ext: readonly number[]) => void,
  extra: readonly number[] = [],
  setup?: (ext: readonly number[]) => void,
): void {
  const n = src.length;
  const es = src.BYTES_PER_ELEMENT;
  const eo = out.BYTES_PER_ELEMENT;
  const B = tuning.block;
  const block = roundUp4(Math.min(n, B));
  const ptrs = w.reserve([block * es, valid ? block : 0, block * eo, ...extra]);
  const pSrc = ptrs[0]!;
  const pValid = ptrs[1]!;
  const pDst = ptrs[2]!;
  const ext = ptrs.slice(3);
  if (setup) setup(ext);
  const heap = w.heap;
  const srcBytes = bytesOf(src);
  const outBytes = bytesOf(out);
  for (let start = 0; start < n; start += B) {
    const len = Math.min(B, n - start);
    heap.set(srcBytes.subarray(start * es, (start + len) * es), pSrc);
    if (valid) heap.set(valid.subarray(start, start + len), pValid);
    kernel(pSrc, pValid, len, pDst, start, ext);
    outBytes.set(heap.subarray(pDst, pDst + len * eo), start * eo);
  }
}

/** The number value of an int64 param (number or decimal string) as a bigint, or undefined if it is not an integer. */
export function bigOf(v: unknown): bigint | undefined {
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : undefined;
  if (typeof v === 'string' && /^[+-]?\d+$/.test(v)) return BigInt(v);
  return undefined;
}

const TWO64 = 1n << 64n;

/** floorMod64's constants for a modulus m in [1, 2^63) (assembly/common.ts). */
export interface Magic {
  readonly m: bigint;
  readonly magic: bigint;
  readonly sh1: bigint;
  readonly sh2: bigint;
  readonly c64: bigint;
}

const magicCache = new Map<bigint, Magic>();

/** floorMod methods of the wasm kernels (assembly/hash.ts). */
export const MOD_REM = 0;
export const MOD_MAGIC = 1;
export const MOD_MASK = 2;

const calibrated = new WeakMap<Wasm, number>();
const TRIAL = 16384;

/** Runs modI64 over TRIAL random int64s in `md` mode; returns milliseconds. */
function trial(w: Wasm, md: number): number {
  const [src, dst] = w.reserve([8 * TRIAL, 8 * TRIAL]) as [number, number];
  // Hash-like numerators: uniform 64-bit words (xorshift32).
  const words = new Uint32Array(w.buffer, src, 2 * TRIAL);
  let s = 0x9e3779b9;
  for (let i = 0; i < 2 * TRIAL; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    words[i] = s;
  }
  const g = magicFor(500009n);
  const t = performance.now();
  w.k.modI64(src, 0, TRIAL, md, g.m, g.magic, g.sh1, g.sh2, g.c64, dst);
  return performance.now() - t;
}

/**
 * Runs the floorMod kernel in both modes a few times so that V8 starts optimizing it (WebAssembly
 * starts in a baseline tier and is recompiled in the background once warm); called at load, so
 * that modMode's trial, later, times optimized code.
 */
export function warmUpModulus(w: Wasm): void {
  for (let r = 0; r < 4; r++) {
    trial(w, MOD_REM);
    trial(w, MOD_MAGIC);
  }
}

/**
 * The floorMod method for modulus m on this CPU: a mask for powers of two; otherwise i64.rem_s or
 * the magic multiplier, whichever ran faster in a one-time trial in this thread (~1 ms, at first
 * use). 64-bit division takes ~10–20 cycles on AMD Zen 2+ and Intel Ice Lake+ (rem_s wins there),
 * 40–90 on older Intel (the magic multiplier wins).
 */
export function modMode(w: Wasm, m: bigint): number {
  if ((m & (m - 1n)) === 0n) return MOD_MASK;
  if (tuning.modMode !== undefined) return tuning.modMode;
  let mode = calibrated.get(w);
  if (mode === undefined) {
    let rem = Infinity;
    let magic = Infinity;
    for (let r = 0; r < 6; r++) {
      rem = Math.min(rem, trial(w, MOD_REM));
      magic = Math.min(magic, trial(w, MOD_MAGIC));
    }
    mode = magic < rem * 0.9 ? MOD_MAGIC : MOD_REM;
    calibrated.set(w, mode);
  }
  return mode;
}

/**
 * Granlund–Montgomery round-up constants for unsigned division by m (any u64 numerator):
 * l = ceil(log2 m), magic = floor(2^64 (2^l - m) / m) + 1, sh1 = min(l, 1), sh2 = max(l - 1, 0);
 * c64 = 2^64 mod m corrects negative numerators.
 */
export function magicFor(m: bigint): Magic {
  let g = magicCache.get(m);
  if (g === undefined) {
    const l = m === 1n ? 0n : BigInt((m - 1n).toString(2).length);
    const magic = ((TWO64 * ((1n << l) - m)) / m + 1n) % TWO64;
    g = { m, magic, sh1: l < 1n ? l : 1n, sh2: l > 1n ? l - 1n : 0n, c64: TWO64 % m };
    if (magicCache.size > 64) magicCache.clear();
    magicCache.set(m, g);
  }
  return g;
}
