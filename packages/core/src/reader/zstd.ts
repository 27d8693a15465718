/**
 * ZSTD page decompression for the direct Parquet decoder, into reused memory.
 *
 * Where it can, zstd's own C library decompresses, through zstd-napi's binding of a decompression
 * context (`DCtx.decompress(dst, src)`, into a buffer kept for the decoder's life): ~4-5× the
 * wasm build below on RM1's and RM5's pages (bench/README.md, "zstd.ts"). zstd-napi is an optional
 * dependency, compiled at install (node-gyp); where it did not build, or with SLUICE_ZSTD=wasm,
 * zstddec's wasm build of the same C code decompresses. The two do not refuse the same damaged
 * streams (docs/reliability.md, "ZSTD pages"): the native build decodes into other bytes some
 * that the wasm builds (zstddec's, parquet-wasm's) refuse.
 *
 * The wasm path: zstddec's `decode` mallocs input and output in its wasm heap, decompresses, and
 * returns a `slice()` of the output: a fresh ArrayBuffer per page, garbage as soon as the page is
 * decoded, and external memory that drives major GCs in the decode worker's isolate (see
 * bench/README.md, 'Where the CPU goes'). Here the same decoder writes each page into one output
 * region that lives as long as the decoder, and the caller gets a view of it: no JS allocation per
 * page.
 *
 * Either way the view is valid until the next call: the direct decoder copies what it keeps (a
 * dictionary page) and decodes a data page before it decompresses the next. When zstddec's wasm
 * cannot be found in the installed package (a layout this does not know), `pageZstd` falls back to
 * zstddec's own `decode`, which returns fresh memory and is correct with the same contract.
 */
import { createRequire } from 'node:module';
import { ZSTDDecoder } from 'zstddec';
import { embeddedWasm } from './parquet/embedded-wasm.js';
import type { Zstd } from './parquet/index.js';

interface ZstdExports {
  readonly memory: WebAssembly.Memory;
  malloc(bytes: number): number;
  free(ptr: number): void;
  ZSTD_decompress(dst: number, dstCapacity: number, src: number, srcSize: number): number;
  ZSTD_isError(code: number): number;
}

/** A growable region of the wasm heap. */
class Region {
  ptr = 0;
  cap = 0;
  constructor(private readonly x: ZstdExports) {}
  /** Makes room for `bytes`; the old content is not kept. */
  reserve(bytes: number): void {
    if (bytes <= this.cap) return;
    if (this.ptr !== 0) this.x.free(this.ptr);
    const cap = Math.max(bytes, 2 * this.cap, 1 << 16);
    this.ptr = this.x.malloc(cap);
    if (this.ptr === 0) {
      this.cap = 0;
      throw new Error(`zstd: cannot allocate ${cap} bytes of wasm memory`);
    }
    this.cap = cap;
  }
}

/** What this file uses of zstd-napi's binding (its binding.d.ts). */
interface NativeDCtx {
  decompress(dst: Uint8Array, src: Uint8Array): number;
}
type NativeBinding = { DCtx: new () => NativeDCtx };

const CORRUPT = 'ZSTD page does not decompress (corrupt data, or larger than its header says)';

/**
 * A page decompressor for `decodeFlatRowGroup` and friends. Its result is a view into memory the
 * next call overwrites (see the file comment).
 *
 * @example
 * const zstd = await pageZstd();
 * const page = zstd(compressed, uncompressedSize); // read it before the next call
 */
export async function pageZstd(): Promise<Zstd> {
  if (process.env.SLUICE_ZSTD === 'wasm') return wasmPageZstd();
  return nativePageZstd() ?? (await wasmPageZstd());
}

/** The decompressor on zstd's C library (zstd-napi), or null where zstd-napi is not installed or did not build. */
export function nativePageZstd(): Zstd | null {
  let binding: NativeBinding;
  try {
    binding = createRequire(import.meta.url)('zstd-napi/binding') as NativeBinding;
  } catch {
    return null;
  }
  const ctx = new binding.DCtx();
  let out = new Uint8Array(0);
  return (src, size) => {
    if (out.length < size) out = new Uint8Array(Math.max(size, 2 * out.length, 1 << 16));
    let n: number;
    try {
      n = ctx.decompress(out.subarray(0, size), src);
    } catch {
      // zstd's own text (e.g. "Destination buffer is too small") says nothing of the page.
      throw new Error(CORRUPT);
    }
    return out.subarray(0, n);
  };
}

/** The decompressor on zstddec's wasm build of zstd (see the file comment). */
export async function wasmPageZstd(): Promise<Zstd> {
  // The module zstddec embeds (base64 in its ES module).
  const bytes = embeddedWasm('zstddec', 'zstddec.mjs', /const wasm = "([A-Za-z0-9+/=]+)"/);
  if (bytes !== null) {
    try {
      // Growth is seen by comparing buffers before each copy (below), so the hook does nothing.
      const { instance } = await WebAssembly.instantiate(bytes as BufferSource, { env: { emscripten_notify_memory_growth: () => undefined } });
      const x = instance.exports as unknown as ZstdExports;
      if (typeof x.ZSTD_decompress === 'function' && typeof x.malloc === 'function' && typeof x.ZSTD_isError === 'function') {
        const input = new Region(x);
        const output = new Region(x);
        let heap = new Uint8Array(x.memory.buffer);
        return (src, size) => {
          input.reserve(src.length);
          output.reserve(size);
          // The heap view is re-made after the memory grows (malloc may grow it).
          if (heap.buffer !== x.memory.buffer) heap = new Uint8Array(x.memory.buffer);
          heap.set(src, input.ptr);
          const n = x.ZSTD_decompress(output.ptr, size, input.ptr, src.length);
          if (x.ZSTD_isError(n) !== 0) throw new Error(CORRUPT);
          return heap.subarray(output.ptr, output.ptr + n);
        };
      }
    } catch {
      // Fall through to zstddec's own decoder.
    }
  }
  const d = new ZSTDDecoder();
  await d.init();
  return (src, size) => d.decode(src, size);
}
