/**
 * Copies `src` into `dst` at `at`, as one native memcpy.
 *
 * TypedArray.prototype.set (and Buffer#copy, which uses it on Node 20) copies word by word with
 * relaxed atomics whenever either side is a SharedArrayBuffer, far slower than a memcpy of the
 * same bytes. Buffer#fill with a buffer exactly as long as the range is
 * a plain memcpy in Node's C++ binding, whatever backs the memory. The shared-memory transport
 * only writes bytes the peer is not reading (a posted receive, or ring space it has released),
 * and publishes them afterwards with an Atomics store, so a non-atomic copy is safe there; a
 * batch merged into a lent slot (batch/) is written before any other thread sees it.
 *
 * @example
 * memcpyInto(ring, 4096, payload); // ring[4096 .. 4096 + payload.length) = payload
 */
export function memcpyInto(dst: Uint8Array, at: number, src: Uint8Array): void {
  const n = src.byteLength;
  if (n < SMALL) {
    dst.set(src, at);
    return;
  }
  if (at < 0 || at + n > dst.byteLength) throw new RangeError(`copy of ${n} bytes at ${at} overruns a ${dst.byteLength}-byte buffer`);
  fill.call(dst, src, at, at + n);
}

/** Below this the per-call cost of the binding outweighs the faster copy. */
const SMALL = 1024;
const fill = Buffer.prototype.fill as (this: Uint8Array, value: Uint8Array, offset: number, end: number) => Uint8Array;

/** Typed arrays `copyElements` copies between (the same element size on both sides). */
type Elements = Float32Array | Int32Array | Uint32Array | BigInt64Array | Uint8Array;

/** dst[at .. at + src.length) = src, as one native memcpy (see `memcpyInto`). */
export function copyElements<T extends Elements>(dst: T, at: number, src: T): void {
  const b = dst.BYTES_PER_ELEMENT;
  memcpyInto(new Uint8Array(dst.buffer, dst.byteOffset, dst.byteLength), at * b, new Uint8Array(src.buffer, src.byteOffset, src.byteLength));
}
