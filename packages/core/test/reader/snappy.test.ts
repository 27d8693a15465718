// The SNAPPY page decoder (reader/parquet/snappy.ts: hysnappy's wasm into reused memory) against
// hyparquet's JS decoder, on hand-made streams and on every SNAPPY page three writers produce;
// and a damaged SNAPPY page in a DuckDB file, refused in one line naming file, row group, column.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { snappyCompress } from 'hysnappy';
import * as pw from 'parquet-wasm';
import { beforeAll, describe, expect, it } from 'vitest';
import { pipeline, type PlanSpec } from '@sluice/core';
import { chunkPages, snappyPages as pagesOf } from '../../src/reader/parquet/page.js';
import { jsSnappy, pageSnappy, snappyLength, wasmSnappy, type Snappy } from '../../src/reader/parquet/snappy.js';
import { tempDir, writeSmall } from '../helpers.js';
import { writePresetFile } from '../presets.js';
import { writeArrowMixed, writeDuckdb } from '../writers.js';

const dir = tempDir('sluice-snappy-');

function wasm(): Snappy {
  const d = wasmSnappy();
  if (d === null) throw new Error('hysnappy wasm does not load');
  return d;
}

/** A stream by hand: the preamble, a literal, then a copy of `copy` bytes from `offset` back (2-byte offset form). */
function stream(size: number, literal: Uint8Array, copy: number, offset: number): Uint8Array {
  const out: number[] = [];
  for (let n = size; ; n = Math.floor(n / 128)) {
    out.push(n < 128 ? n : (n % 128) | 128);
    if (n < 128) break;
  }
  out.push((literal.length - 1) << 2, ...literal);
  if (copy > 0) out.push(((copy - 1) << 2) | 2, offset & 0xff, offset >> 8);
  return Uint8Array.from(out);
}

/** Every SNAPPY page of `file` (v2: the compressed part after the levels) with its decompressed size. */
function snappyPages(file: string): Array<[Uint8Array, number]> {
  const buf = readFileSync(file);
  return pagesOf(buf, parquetMetadata(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength)));
}

describe('pageSnappy', () => {
  const text = new TextEncoder().encode('sluice snappy page');
  const a = stream(text.length + 36, text, 36, 6);
  const b = stream(3, Uint8Array.of(7, 8, 9), 0, 0);

  it('loads the wasm decoder and decompresses as hyparquet does, into memory the next call reuses', () => {
    const snappy = wasm();
    expect(pageSnappy()).not.toBe(jsSnappy);
    const first = snappy(a, text.length + 36);
    expect(Array.from(first)).toEqual(Array.from(jsSnappy(a, text.length + 36)));
    // The copy repeats the literal's last 6 bytes six times.
    expect(new TextDecoder().decode(first)).toBe(`sluice snappy page${'y page'.repeat(6)}`);
    const kept = first.slice();
    const second = snappy(b, 3);
    expect(Array.from(second)).toEqual([7, 8, 9]);
    // The contract (page.ts, Zstd): a result is valid until the next call.
    expect(first.buffer).toBe(second.buffer);
    expect(Array.from(snappy(a, text.length + 36))).toEqual(Array.from(kept));
  });

  it('grows its memory for pages larger than any before, and agrees with hyparquet on compressible and random data', () => {
    const snappy = wasm();
    let seed = 42;
    const random = Uint8Array.from({ length: 3 << 20 }, () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 24) & 0xff);
    const runs = Uint8Array.from({ length: 5 << 20 }, (_, i) => (i >> 10) % 7);
    for (const data of [random, runs]) {
      const c = snappyCompress(data);
      expect(snappyLength(c)).toBe(data.length);
      const out = snappy(c, data.length);
      expect(out.length).toBe(data.length);
      expect(Buffer.compare(out, data)).toBe(0);
      expect(Buffer.compare(out, jsSnappy(c, data.length))).toBe(0);
    }
  });

  it('throws on a corrupt stream, and on a page whose size differs from its preamble (as hyparquet does)', () => {
    const snappy = wasm();
    // A copy from before the start of the page.
    expect(() => snappy(stream(8, Uint8Array.of(1, 2), 6, 9), 8)).toThrow();
    // A literal past the end of the input.
    expect(() => snappy(Uint8Array.of(10, 36, 1, 2), 10)).toThrow();
    // A preamble that does not parse, or that disagrees with the header: hyparquet's decoder decides.
    expect(() => snappy(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff), 4)).toThrow();
    expect(() => snappy(a, text.length + 30)).toThrow();
    expect(() => jsSnappy(a, text.length + 30)).toThrow();
    expect(snappyLength(Uint8Array.of(0x80, 0x80, 0x80, 0x80, 0x80, 0x01))).toBe(-1);
    expect(snappyLength(Uint8Array.of(0xfe, 0xff, 0x7f))).toBe(2_097_150);
  });
});

describe('SNAPPY pages of other writers', () => {
  const files: Record<string, string> = {};

  beforeAll(async () => {
    const src = await writePresetFile(dir, 'rm1');
    files.duckdb = await writeDuckdb(src, join(dir, 'rm1-duckdb.parquet'));
    files['arrow-mixed'] = writeArrowMixed(src, join(dir, 'rm1-mixed.parquet'));
    // parquet-wasm (arrow-rs) with v2 pages: the compressed part follows the levels.
    const props = new pw.WriterPropertiesBuilder().setCompression(pw.Compression.SNAPPY).setWriterVersion(pw.WriterVersion.V2).build();
    files['arrow-v2'] = join(dir, 'rm1-v2.parquet');
    writeFileSync(files['arrow-v2'], pw.writeParquet(pw.readParquet(readFileSync(src)), props));
    files.small = await writeDuckdb(writeSmall(join(dir, 'small.parquet'), 5000, 5000), join(dir, 'small-duckdb.parquet'));
  }, 120_000);

  it.for(['duckdb', 'arrow-mixed', 'arrow-v2'])('%s: every SNAPPY page decompresses to the bytes hyparquet gives', (writer) => {
    const snappy = wasm();
    const pages = snappyPages(files[writer]!);
    expect(pages.length).toBeGreaterThan(10);
    let bytes = 0;
    for (const [body, size] of pages) {
      const want = jsSnappy(body, size);
      expect(Buffer.compare(snappy(body, size), want)).toBe(0);
      bytes += size;
    }
    expect(bytes).toBeGreaterThan(0);
  });

  it('a damaged SNAPPY page of a DuckDB file is refused in one line naming file, row group, column and page', async () => {
    const file = files.small!;
    const bytes = readFileSync(file);
    const md = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    const m = md.row_groups[0]!.columns.find((c) => c.meta_data!.path_in_schema[0] === 'I1')!.meta_data!;
    expect(m.codec).toBe('SNAPPY');
    // The last page of the chunk: its body after the preamble becomes copies from 4 GB back.
    const next = chunkPages(m, (at, n) => bytes.subarray(at, at + n));
    let last = next()!;
    for (let p = next(); p !== null; p = next()) last = p;
    const body = last.body;
    let preamble = 0;
    while (body[preamble]! >= 128) preamble++;
    body.fill(0xff, preamble + 1);
    const bad = join(dir, 'snappy-damaged.parquet');
    writeFileSync(bad, bytes);
    const plan: PlanSpec = { batchSize: 1000, features: [{ name: 'i', input: 'I1', kind: 'dense', ops: [{ op: 'fillNull', value: 0 }] }] };
    const err = await (async () => {
      for await (const b of pipeline(plan, { input: bad })) b.release?.();
    })().catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(
      new RegExp(
        `^file \\S+snappy-damaged\\.parquet, row group 0, column I1: page ${last.page} \\(at byte ${last.at}\\): the page does not decompress with SNAPPY to the ${last.h.uncompressed_page_size} bytes its header says$`,
      ),
    );
  });
});
