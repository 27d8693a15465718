// pageZstd (reader/zstd.ts), both its decompressors (zstd's C library through zstd-napi, and
// zstddec's wasm build), on ZSTD frames built by hand from the format's raw and RLE blocks
// (RFC 8878 §3.1), checked against zstddec's own decode.
import { describe, expect, it } from 'vitest';
import { ZSTDDecoder } from 'zstddec';
import { nativePageZstd, pageZstd, wasmPageZstd } from '../../src/reader/zstd.js';
import type { Zstd } from '../../src/reader/parquet/index.js';

/** A single-segment frame (content size in 1 byte, <= 255) of blocks [type, size, payload]. */
function frame(blocks: Array<[type: 0 | 1, size: number, payload: Uint8Array]>): Uint8Array {
  const total = blocks.reduce((a, [, n]) => a + n, 0);
  const out: number[] = [0x28, 0xb5, 0x2f, 0xfd, 0x20, total];
  blocks.forEach(([type, size, payload], i) => {
    const h = (size << 3) | (type << 1) | (i === blocks.length - 1 ? 1 : 0);
    out.push(h & 0xff, (h >> 8) & 0xff, (h >> 16) & 0xff, ...payload);
  });
  return Uint8Array.from(out);
}

describe('pageZstd', () => {
  it('decompresses with zstd-napi where it is installed (CI installs it)', async () => {
    const native = nativePageZstd();
    if (process.env.CI) expect(native, 'zstd-napi did not load: was its install script allowed (package.json allowScripts)?').not.toBeNull();
    expect(typeof (await pageZstd())).toBe('function');
  });
});

const decompressors: Array<[string, () => Promise<Zstd | null>]> = [
  ['zstd-napi', async () => nativePageZstd()],
  ['wasm', wasmPageZstd],
];

describe.each(decompressors)('pageZstd (%s)', (_name, make) => {
  /** The decompressor, or a skip where zstd-napi is not installed outside CI (the test above fails in CI). */
  async function load(ctx: { skip: () => void }): Promise<Zstd> {
    const z = await make();
    if (z === null) ctx.skip();
    return z!;
  }

  const text = new TextEncoder().encode('sluice page bytes, raw block. ');
  const a = frame([
    [0, text.length, text],
    [1, 40, Uint8Array.of(0x7a)],
  ]);
  const b = frame([[1, 200, Uint8Array.of(0x01)]]);

  it('decompresses as zstddec does, into memory the next call reuses', async (ctx) => {
    const zstd = await load(ctx);
    const ref = new ZSTDDecoder();
    await ref.init();
    const first = zstd(a, text.length + 40);
    expect(Array.from(first)).toEqual(Array.from(ref.decode(a, text.length + 40)));
    expect(new TextDecoder().decode(first.subarray(0, text.length))).toBe('sluice page bytes, raw block. ');
    const kept = first.slice();
    const second = zstd(b, 200);
    expect(Array.from(second)).toEqual(new Array(200).fill(1));
    // The contract: a result is valid until the next call (the first view now shows the second page).
    expect(first.buffer).toBe(second.buffer);
    expect(Array.from(zstd(a, text.length + 40))).toEqual(Array.from(kept));
  });

  it('grows its memory for pages larger than any before', async (ctx) => {
    const zstd = await load(ctx);
    expect(zstd(b, 200).length).toBe(200);
    // 1 MiB, eight RLE blocks of the largest size (128 KiB), content size in 4 bytes: larger
    // than the first output region.
    const big = [0x28, 0xb5, 0x2f, 0xfd, 0xa0, 0, 0, 0x10, 0];
    for (let i = 0; i < 8; i++) {
      const h = ((128 << 10) << 3) | (1 << 1) | (i === 7 ? 1 : 0);
      big.push(h & 0xff, (h >> 8) & 0xff, (h >> 16) & 0xff, 9);
    }
    const out = zstd(Uint8Array.from(big), 1 << 20);
    expect(out.length).toBe(1 << 20);
    expect(out.every((x) => x === 9)).toBe(true);
  });

  it('reads a frame from a view inside a larger buffer, shared or not', async (ctx) => {
    const zstd = await load(ctx);
    for (const buffer of [new ArrayBuffer(a.length + 13), new SharedArrayBuffer(a.length + 13)]) {
      const view = new Uint8Array(buffer, 7, a.length);
      view.set(a);
      expect(new TextDecoder().decode(zstd(view, text.length + 40).subarray(0, text.length))).toBe('sluice page bytes, raw block. ');
    }
  });

  it('throws on a corrupt frame or a page larger than its header says', async (ctx) => {
    const zstd = await load(ctx);
    expect(() => zstd(Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8), 16)).toThrow(/does not decompress/);
    expect(() => zstd(b, 100)).toThrow(/does not decompress/);
  });
});
