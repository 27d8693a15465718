import type { KernelOverrides } from '@sluice/core';

interface KernelModule {
  FAST_OPS: KernelOverrides;
  initFastKernels(): Promise<void> | void;
  fastKernelsAvailable(): boolean;
}

/**
 * The WebAssembly kernels, or undefined when they are not built (the reference kernels run then).
 * Loaded by path at run time so the pool still works from a checkout without the wasm build.
 */
export async function loadFastKernels(): Promise<KernelOverrides | undefined> {
  const spec = './kernels/index.js';
  let mod: KernelModule;
  try {
    mod = (await import(spec)) as KernelModule;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND') return undefined;
    throw e;
  }
  await mod.initFastKernels();
  return mod.fastKernelsAvailable() ? mod.FAST_OPS : undefined;
}
