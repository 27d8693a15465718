/**
 * SNAPPY page decompression for the direct Parquet decoder: hysnappy's WebAssembly decoder
 * (snappy-c compiled with clang), writing into reused wasm memory.
 *
 * Why: DuckDB, arrow-rs and pyarrow write SNAPPY by default, and hyparquet's pure-JS
 * `snappyUncompress` is several times slower than this wasm on their pages (bench/README.md,
 * 'snappy.ts'). hysnappy's own `snappyUncompressor()` returns a `slice()` of its output, a fresh
 * ArrayBuffer per page (the external-memory garbage ../zstd.ts avoids), so its module is
 * instantiated here and the caller gets a view of the output, valid until the next call (the Zstd
 * contract, see page.ts).
 *
 * The module is a few KB and compiles synchronously, once per thread on the first SNAPPY page.
 * Where it cannot be found or instantiated (a hysnappy layout this does not know), and for a page
 * whose snappy preamble disagrees with its page header's size, hyparquet's decoder runs instead,
 * as before.
 */
import { snappyUncompress } from 'hyparquet/src/snappy.js';
import { embeddedWasm } from './embedded-wasm.js';

/** Decompresses a SNAPPY page `src` into exactly `size` bytes, or throws. The result may be a view that the next call overwrites. */
export type Snappy = (src: Uint8Array, size: number) => Uint8Array;

interface SnappyExports {
  readonly memory: WebAssembly.Memory;
  readonly __heap_base?: WebAssembly.Global;
  uncompress(src: number, srcSize: number, dst: number): number;
}

/** hyparquet's decoder into fresh memory: the fallback, and the reference the tests compare with. */
export const jsSnappy: Snappy = (src, size) => {
  const out = new Uint8Array(size);
  snappyUncompress(src, out);
  return out;
};

/**
 * The uncompressed length a snappy stream's preamble (a little-endian base-128 varint of at most
 * 5 bytes) gives, or -1 when it does not parse. The wasm decoder bounds its writes by this
 * length, so a page runs there only when it equals the page header's size.
 */
export function snappyLength(src: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < 5 && i < src.length; i++) {
    const c = src[i]!;
    n += (c & 0x7f) * 2 ** (7 * i);
    if (c < 128) return n;
  }
  return -1;
}

/** The wasm decoder, or null where hysnappy's module cannot be loaded. */
export function wasmSnappy(): Snappy | null {
  // The module hysnappy embeds (base64 in its uncompress.js).
  const bytes = embeddedWasm('hysnappy', 'uncompress.js', /const wasm64 = '([A-Za-z0-9+/=]+)'/);
  if (bytes === null) return null;
  let x: SnappyExports;
  try {
    x = new WebAssembly.Instance(new WebAssembly.Module(bytes as BufferSource)).exports as unknown as SnappyExports;
    if (typeof x.uncompress !== 'function' || !(x.memory instanceof WebAssembly.Memory)) return null;
  } catch {
    return null;
  }
  // Input and output go above the C stack and static data, which end at __heap_base.
  const base = (Number(x.__heap_base?.value ?? 68_000) + 15) & ~15;
  let heap = new Uint8Array(x.memory.buffer);
  return (src, size) => {
    if (snappyLength(src) !== size) return jsSnappy(src, size);
    const inAt = base;
    const outAt = (inAt + src.length + 15) & ~15;
    const end = outAt + size;
    if (end > x.memory.buffer.byteLength) x.memory.grow(Math.ceil((end - x.memory.buffer.byteLength) / 65_536));
    // The heap view is re-made after the memory grows.
    if (heap.buffer !== x.memory.buffer) heap = new Uint8Array(x.memory.buffer);
    heap.set(src, inAt);
    const rc = x.uncompress(inAt, src.length, outAt);
    if (rc !== 0) throw new Error(`SNAPPY page does not decompress (code ${rc})`);
    return heap.subarray(outAt, end);
  };
}

/**
 * The page decompressor: the wasm one where it loads, else hyparquet's.
 *
 * @example
 * const snappy = pageSnappy();
 * const page = snappy(compressed, uncompressedSize); // read it before the next call
 */
export function pageSnappy(): Snappy {
  return wasmSnappy() ?? jsSnappy;
}
