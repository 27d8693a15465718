/**
 * Large fresh arrays in 2 MiB pages where Linux gives them only on request.
 *
 * A shuffled window's parts and chunks are hundreds of MB of memory that is written once, fresh
 * from the kernel: RM5's 100,000-row window faults in ~1.9 GB, and on these hosts every 4 KiB page
 * costs a fault and its TLB entry (~480,000 faults, a third of the run's CPU in the kernel). Where
 * transparent huge pages are in `madvise` mode (as here), an array advised `MADV_HUGEPAGE` before
 * its first write takes 2 MiB pages: RM5's faults fall by half and the run's time by 10-15%
 * (bench/README.md, "Huge pages").
 *
 * Node has no madvise, so this calls libc's through koffi (an FFI library with prebuilt binaries,
 * an optional dependency). Without it, on other systems, in `always` or `never` mode, or with
 * `SLUICE_HUGE_PAGES=0`, `hugePages` does nothing. Advising changes no byte of the array: only the
 * 2 MiB-aligned interior of its own memory is advised, and a page the allocator already wrote
 * (memory it reused) simply stays as it is.
 *
 * @example
 * const ids = hugePages(new BigInt64Array(n)); // before anything writes to it
 */

import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';

/** Arrays smaller than this are left alone: they hold one aligned 2 MiB page at most. */
export const HUGE_MIN_BYTES = 4 << 20;

const HUGE = 2n << 20n;
/** MADV_HUGEPAGE in Linux's uapi/asm-generic/mman-common.h. */
const MADV_HUGEPAGE = 14;

/** What this file uses of koffi (its index.d.ts). */
interface Koffi {
  load(path: string): { func(signature: string): (...args: unknown[]) => unknown };
  address(value: unknown): bigint;
}

/** What this thread calls: madvise on a view's 2 MiB-aligned interior, and a view's address. */
interface Advice {
  readonly advise: (view: ArrayBufferView) => void;
  readonly address: (view: ArrayBufferView) => bigint;
}

/** This thread's advice, once known; null where huge pages are off. */
let advice: Advice | null | undefined;

/**
 * `view`, its memory advised to take 2 MiB pages when that helps (see the file comment). Call it
 * on a freshly allocated array, before anything writes to it.
 */
export function hugePages<T extends ArrayBufferView>(view: T): T {
  if (view.byteLength >= HUGE_MIN_BYTES && hugePagesOn()) advice!.advise(view);
  return view;
}

/**
 * `bytes` of fresh shared memory that start on a 2 MiB boundary, advised to take 2 MiB pages where
 * `hugePages` advises (a plain SharedArrayBuffer of `bytes` where it does not, or for under
 * 2 MiB). An array only advised keeps its first and last partial 2 MiB in 4 KiB pages, which for a
 * pack arena's ~4 MB slots was half of every slot; this one is in 2 MiB pages throughout, and costs up to 4 MiB more address space
 * (not memory: pages never written are never there).
 */
export function hugeShared(bytes: number): Uint8Array<SharedArrayBuffer> {
  if (bytes < Number(HUGE) || !hugePagesOn()) return new Uint8Array(new SharedArrayBuffer(bytes));
  const span = roundUp(bytes);
  const sab = new SharedArrayBuffer(span + Number(HUGE));
  const skip = Number((HUGE - (advice!.address(new Uint8Array(sab)) % HUGE)) % HUGE);
  advice!.advise(new Uint8Array(sab, skip, span));
  return new Uint8Array(sab, skip, bytes);
}

/** `bytes` rounded up to a multiple of 2 MiB. */
const roundUp = (bytes: number): number => Math.ceil(bytes / Number(HUGE)) * Number(HUGE);

/** Whether `hugePages` advises anything in this thread (loading koffi if it has not yet). */
export function hugePagesOn(): boolean {
  advice ??= loadAdvice();
  return advice !== null;
}

/** The kernel's transparent huge page mode (`always`, `madvise`, `never`), or null where there is none. */
export function thpMode(): string | null {
  try {
    return /\[(\w+)\]/.exec(readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8'))?.[1] ?? null;
  } catch {
    return null;
  }
}

function loadAdvice(): Advice | null {
  if (process.env.SLUICE_HUGE_PAGES === '0' || process.platform !== 'linux' || thpMode() !== 'madvise') return null;
  let koffi: Koffi;
  let madvise: (addr: bigint, len: bigint, advice: number) => unknown;
  try {
    koffi = createRequire(import.meta.url)('koffi') as Koffi;
    madvise = koffi.load('libc.so.6').func('int madvise(uintptr_t addr, size_t len, int advice)') as typeof madvise;
  } catch {
    return null;
  }
  return {
    advise: (view) => {
      const start = koffi.address(view);
      const end = start + BigInt(view.byteLength);
      const from = (start + HUGE - 1n) & ~(HUGE - 1n);
      const to = end & ~(HUGE - 1n);
      // A failure (EINVAL on an old kernel) leaves the memory as it was: nothing to report.
      if (to > from) madvise(from, to - from, MADV_HUGEPAGE);
    },
    address: (view) => koffi.address(view),
  };
}
