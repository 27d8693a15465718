// hugePages (util/huge-pages.ts): an advised array keeps its bytes and, where transparent huge
// pages are in `madvise` mode, lies in 2 MiB pages once written, which the kernel's own account of
// the process (/proc/self/smaps) shows; an array not advised does not.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it, vi } from 'vitest';
import { HUGE_MIN_BYTES, hugePages, hugePagesOn, hugeShared, thpMode } from '../../src/util/huge-pages.js';

/** kB of AnonHugePages in the mappings that overlap [start, end) of this process's memory. */
function anonHugeKb(start: bigint, end: bigint): number {
  let kb = 0;
  let overlaps = false;
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const range = /^([0-9a-f]+)-([0-9a-f]+) /.exec(line);
    if (range) overlaps = BigInt(`0x${range[1]}`) < end && BigInt(`0x${range[2]}`) > start;
    else if (overlaps && line.startsWith('AnonHugePages:')) kb += Number(/(\d+) kB/.exec(line)![1]);
  }
  return kb;
}

/** A fresh array of `mb` MiB written one word a page, and the kB of it in huge pages. */
function written(mb: number, advise: boolean): { kb: number; ok: boolean } {
  const a = new Uint32Array((mb << 20) / 4);
  if (advise) expect(hugePages(a)).toBe(a);
  for (let i = 0; i < a.length; i += 1024) a[i] = i ^ 0x9e3779b9;
  let ok = true;
  for (let i = 0; i < a.length; i += 1024) if (a[i] !== (i ^ 0x9e3779b9) >>> 0 || a[i + 1] !== 0) ok = false;
  const koffi = createRequire(import.meta.url)('koffi') as { address(v: unknown): bigint };
  const at = koffi.address(a);
  return { kb: anonHugeKb(at, at + BigInt(a.byteLength)), ok };
}

describe('hugePages', () => {
  it('returns the array itself, and leaves small ones alone', () => {
    const small = new Float64Array(HUGE_MIN_BYTES / 8 - 1);
    expect(hugePages(small)).toBe(small);
    const big = new Float64Array(HUGE_MIN_BYTES / 8);
    expect(hugePages(big)).toBe(big);
    expect(big.every((v) => v === 0)).toBe(true);
  });

  it('is on where the kernel gives huge pages on request (CI installs koffi)', () => {
    const linuxMadvise = process.platform === 'linux' && thpMode() === 'madvise';
    if (process.env.CI && linuxMadvise) expect(hugePagesOn(), 'koffi did not load: is it installed (optional dependency)?').toBe(true);
    if (!linuxMadvise) expect(hugePagesOn()).toBe(false);
  });

  it('puts an advised array in 2 MiB pages and keeps its bytes; an array not advised stays in small pages', (ctx) => {
    if (!hugePagesOn()) ctx.skip();
    const advised = written(64, true);
    const plain = written(64, false);
    expect(advised.ok).toBe(true);
    expect(plain.ok).toBe(true);
    // The 2 MiB-aligned interior: at least 60 of the 64 MiB.
    expect(advised.kb).toBeGreaterThanOrEqual(60 << 10);
    expect(plain.kb).toBe(0);
  });

  it('hugeShared: zeroed shared memory on a 2 MiB boundary, all of it in 2 MiB pages once written', (ctx) => {
    const small = hugeShared(1000);
    expect([small.byteOffset, small.byteLength, small.buffer instanceof SharedArrayBuffer]).toEqual([0, 1000, true]);
    if (!hugePagesOn()) ctx.skip();
    // 5 MiB and a bit: an array only advised would have its first and last partial 2 MiB in small pages.
    const bytes = (5 << 20) + 4096;
    const slot = hugeShared(bytes);
    expect(slot.byteLength).toBe(bytes);
    expect(slot.buffer instanceof SharedArrayBuffer).toBe(true);
    const koffi = createRequire(import.meta.url)('koffi') as { address(v: unknown): bigint };
    const at = koffi.address(slot);
    expect(at % (2n << 20n), 'starts on a 2 MiB boundary').toBe(0n);
    expect(slot.every((b) => b === 0)).toBe(true);
    for (let i = 0; i < bytes; i += 4096) slot[i] = 7;
    // Whole 2 MiB pages: the 5 MiB and 4 KiB written lie in three of them.
    expect(anonHugeKb(at, at + BigInt(bytes))).toBeGreaterThanOrEqual(6 << 10);
  });

  it('does nothing with SLUICE_HUGE_PAGES=0', async () => {
    vi.stubEnv('SLUICE_HUGE_PAGES', '0');
    vi.resetModules();
    try {
      const fresh = await import('../../src/util/huge-pages.js');
      expect(fresh.hugePagesOn()).toBe(false);
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
    }
  });
});
