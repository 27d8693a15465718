/**
 * Sluice CPU fast kernels (AssemblyScript → WebAssembly SIMD), built with `npm run build:wasm`.
 * The module allocates nothing: the JS side (src/kernels/wasm.ts) copies inputs into scratch
 * memory above heapBase(), calls a kernel, and copies the results out.
 */
export * from './log';
export * from './bucketize';
export * from './hex';
export * from './hash';
export * from './simple';

/** First byte the JS side may use as scratch (everything above the static data). */
export function heapBase(): usize {
  return __heap_base;
}
