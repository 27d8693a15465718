/**
 * Loads the AssemblyScript kernels (build/kernels.wasm, built by `npm run build:wasm`) and manages
 * their memory: the module allocates nothing; this side copies inputs into a scratch region above
 * the module's static data, calls a kernel and copies the results out. One instance per thread
 * (each worker imports this module once).
 */

import { readFileSync } from 'node:fs';

/** The module's exports (see assembly/*.ts for each kernel's contract). Pointers are byte offsets. */
export interface KernelExports {
  readonly memory: WebAssembly.Memory;
  heapBase(): number;
  logTableMin(): number;
  logTableSize(): number;
  log1pI32(src: number, valid: number, n: number, dst: number, list: number, table: number): number;
  log1pF32(src: number, valid: number, n: number, dst: number, list: number, table: number): number;
  log1pI64(src: number, valid: number, n: number, dst: number, list: number): number;
  log1pF64(src: number, valid: number, n: number, dst: number, list: number): number;
  logI32(src: number, valid: number, n: number, offset: number, dst: number, list: number, table: number): number;
  logF32(src: number, valid: number, n: number, offset: number, dst: number, list: number, table: number): number;
  logI64(src: number, valid: number, n: number, offset: number, dst: number, list: number): number;
  logF64(src: number, valid: number, n: number, offset: number, dst: number, list: number): number;
  log1pRawF64(src: number, n: number, dst: number): void;
  logRawF64(src: number, n: number, dst: number): void;
  bucketizeI32(src: number, valid: number, n: number, borders: number, levels: number, nb: number, right: number, dst: number): void;
  bucketizeF32(src: number, valid: number, n: number, borders: number, levels: number, nb: number, right: number, dst: number): void;
  bucketizeF64(src: number, valid: number, n: number, borders: number, levels: number, nb: number, right: number, dst: number): void;
  bucketizeI64(src: number, valid: number, n: number, borders: number, levels: number, nb: number, right: number, dst: number): void;
  bucketTableMin(): number;
  bucketTableSize(): number;
  bucketizeTableI32(src: number, valid: number, n: number, borders: number, levels: number, nb: number, right: number, dst: number, table: number): void;
  hex2int(offsets: number, base: number, data: number, valid: number, n: number, out: number, outValid: number): number;
  hexNulls(): number;
  sigridI64(
    src: number,
    valid: number,
    n: number,
    salt: bigint,
    mode: number,
    m: bigint,
    magic: bigint,
    sh1: bigint,
    sh2: bigint,
    c64: bigint,
    dst: number,
  ): void;
  sigridI32(
    src: number,
    valid: number,
    n: number,
    salt: bigint,
    mode: number,
    m: bigint,
    magic: bigint,
    sh1: bigint,
    sh2: bigint,
    c64: bigint,
    dst: number,
  ): void;
  modI64(src: number, valid: number, n: number, mode: number, m: bigint, magic: bigint, sh1: bigint, sh2: bigint, c64: bigint, dst: number): void;
  modulusI32(src: number, valid: number, n: number, m: number, dst: number): void;
  neg2zeroI32(src: number, valid: number, n: number, dst: number): void;
  neg2zeroF32(src: number, valid: number, n: number, dst: number): void;
  neg2zeroF64(src: number, valid: number, n: number, dst: number): void;
  neg2zeroI64(src: number, valid: number, n: number, dst: number): void;
  clampI32(src: number, valid: number, n: number, lo: number, hi: number, dst: number): void;
  clampF32(src: number, valid: number, n: number, lo: number, hi: number, dst: number): void;
  clampF64(src: number, valid: number, n: number, lo: number, hi: number, dst: number): void;
  clampI64(src: number, valid: number, n: number, lo: bigint, hi: bigint, dst: number): void;
  fillNull32(src: number, valid: number, n: number, fill: number, dst: number): void;
  fillNull64(src: number, valid: number, n: number, fill: bigint, dst: number): void;
}

const PAGE = 65536;
/** Every region starts on a 64-byte boundary and has 64 spare bytes (kernels over-read and over-write in groups of 4). */
const ALIGN = 64;
const SLACK = 64;

/** The path of the built module, the same from src/kernels (tsx, vitest) and dist/kernels (built). */
export const WASM_URL = new URL('../../build/kernels.wasm', import.meta.url);

/**
 * The instance and its memory. `reserve` hands out scratch regions valid until the next call;
 * `persistent` hands out regions kept for the life of the instance (lookup tables).
 */
export class Wasm {
  readonly k: KernelExports;
  private readonly memory: WebAssembly.Memory;
  /** Start of the scratch region (persistent regions sit below it). */
  private scratch: number;
  private view: Uint8Array;

  constructor(module: WebAssembly.Module) {
    this.k = new WebAssembly.Instance(module, {}).exports as unknown as KernelExports;
    this.memory = this.k.memory;
    this.scratch = roundUp(this.k.heapBase(), ALIGN);
    this.view = new Uint8Array(this.memory.buffer);
  }

  /** The current memory as bytes (a fresh view after every growth). */
  get heap(): Uint8Array {
    if (this.view.buffer !== this.memory.buffer) this.view = new Uint8Array(this.memory.buffer);
    return this.view;
  }

  get buffer(): ArrayBuffer {
    return this.memory.buffer;
  }

  /** Scratch regions of the given byte sizes (0 gives pointer 0), replacing the previous ones. */
  reserve(sizes: readonly number[]): number[] {
    const ptrs: number[] = [];
    let at = this.scratch;
    for (const s of sizes) {
      if (s === 0) {
        ptrs.push(0);
        continue;
      }
      ptrs.push(at);
      at = roundUp(at + s + SLACK, ALIGN);
    }
    this.ensure(at);
    return ptrs;
  }

  /** A region kept until the instance goes away; scratch moves above it. */
  persistent(bytes: number): number {
    const ptr = this.scratch;
    this.scratch = roundUp(ptr + bytes + SLACK, ALIGN);
    this.ensure(this.scratch);
    return ptr;
  }

  private ensure(end: number): void {
    const have = this.memory.buffer.byteLength;
    if (end > have) this.memory.grow(Math.ceil((end - have) / PAGE));
  }
}

const roundUp = (x: number, a: number): number => Math.ceil(x / a) * a;

let instance: Wasm | null | undefined;
let loadError: string | undefined;

/**
 * The kernels of this thread, or null when the module is not built (or WebAssembly SIMD is not
 * supported, or SLUICE_FAST_KERNELS=0). Never throws.
 */
export function wasm(): Wasm | null {
  if (instance !== undefined) return instance;
  instance = null;
  try {
    if (typeof process !== 'undefined' && process.env.SLUICE_FAST_KERNELS === '0') {
      loadError = 'disabled by SLUICE_FAST_KERNELS=0';
      return null;
    }
    instance = new Wasm(new WebAssembly.Module(readFileSync(WASM_URL)));
  } catch (e) {
    loadError = e instanceof Error ? e.message : String(e);
  }
  return instance;
}

/** Why wasm() is null, for skip messages. */
export function wasmLoadError(): string | undefined {
  wasm();
  return loadError;
}
