/**
 * Getting a WebGPU device in Node from Dawn (the `webgpu` npm package). With no GPU, Dawn finds
 * Mesa's software Vulkan driver (llvmpipe), which is real WebGPU: real WGSL compilation and
 * dispatches, only slower.
 */
import { PlanError } from '@sluice/core';
import { withoutLimitClampWarnings } from './dawn-log.js';

/** How to get an adapter on a machine without one; part of every "no adapter" message. */
export const ADAPTER_HELP =
  'on Debian 12 add "deb http://deb.debian.org/debian bookworm-backports main" to the apt sources and ' +
  'run `apt-get install -t bookworm-backports mesa-vulkan-drivers libvulkan1` (Mesa >= 25 gives Dawn a ' +
  'software Vulkan adapter, llvmpipe); on a machine with a GPU install its Vulkan driver';

interface Dawn {
  create(options: string[]): GPU;
}

// Dawn's instance must outlive every device made from it: when the GPU object returned by
// create() is garbage-collected while a device is still in use, dawn.node crashes the process
// (seen here as a failed pthread mutex assertion during mapAsync). Module scope keeps it alive for
// the life of the process.
let instance: GPU | null = null;
let loadError: string | null = null;

async function gpu(): Promise<GPU | null> {
  if (instance !== null || loadError !== null) return instance;
  try {
    const dawn = (await import('webgpu')) as unknown as Dawn;
    instance = dawn.create([]);
  } catch (e) {
    loadError = `the webgpu package (Dawn) failed to load: ${(e as Error).message}`;
  }
  return instance;
}

/** An adapter, or the reason there is none (with how to get one). */
export async function findAdapter(powerPreference: GPUPowerPreference = 'high-performance'): Promise<{ adapter: GPUAdapter } | { reason: string }> {
  const g = await gpu();
  if (g === null) return { reason: `${loadError}; ${ADAPTER_HELP}` };
  let adapter: GPUAdapter | null = null;
  try {
    // The first requestAdapter of an instance prints Dawn's limit-clamping warnings to fd 2;
    // the wrapper keeps them from the user (dawn-log.ts says why it must work at the fd).
    adapter = await withoutLimitClampWarnings(() => g.requestAdapter({ powerPreference }));
  } catch (e) {
    return { reason: `requesting a WebGPU adapter failed (${(e as Error).message}); ${ADAPTER_HELP}` };
  }
  if (adapter === null) return { reason: `no WebGPU adapter found (no GPU driver and no Mesa Vulkan); ${ADAPTER_HELP}` };
  return { adapter };
}

/** Why the webgpu backend cannot run on this machine, or null when it can (for skipping tests). */
export async function webgpuUnavailable(): Promise<string | null> {
  const r = await findAdapter();
  return 'reason' in r ? r.reason : null;
}

/** A one-line description of an adapter for reports, e.g. `mesa llvmpipe (cpu)`. */
export function describeAdapter(adapter: GPUAdapter): string {
  const i = adapter.info;
  const parts = [i.vendor, i.architecture, i.device, i.description].filter((s) => typeof s === 'string' && s.length > 0);
  return parts.length > 0 ? [...new Set(parts)].join(' ') : 'unknown adapter';
}

/** A device with the storage limits the fused kernel needs, or a PlanError that says how to get one. */
export async function openDevice(): Promise<{ device: GPUDevice; adapterName: string }> {
  const r = await findAdapter();
  if ('reason' in r) throw new PlanError(`backend webgpu: ${r.reason}`);
  const { adapter } = r;
  const device = await adapter.requestDevice({
    requiredLimits: {
      maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
      maxBufferSize: adapter.limits.maxBufferSize,
    },
  });
  return { device, adapterName: describeAdapter(adapter) };
}

// WebGPU's flag values (WebGPU spec §GPUBufferUsage, §GPUMapMode), as constants so nothing has
// to install Dawn's globals on globalThis.
export const USAGE = { MAP_READ: 0x1, COPY_SRC: 0x4, COPY_DST: 0x8, STORAGE: 0x80 } as const;
export const MAP_READ = 0x1;
