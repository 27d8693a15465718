import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Table, Utf8, tableToIPC } from 'apache-arrow';
import * as pw from 'parquet-wasm';
import { describe, expect, it } from 'vitest';
import type { ColumnType } from '@sluice/ops';
import { sliceColumn } from '@sluice/ops';
import { DecoderPool } from '../../src/reader/decoder-pool.js';
import { generateDataset } from '../../src/gen/generate.js';
import { getPreset } from '@sluice/core/gen';
import { pipeline, type Batch } from '@sluice/core';
import { tempDir, vec } from '../helpers.js';
import { rows as values } from '../../../ops/test/helpers.js';

// Row groups of 25k RM1 rows: the writer (parquet-rs) starts a page every 20,480 rows in every
// column and writes an offset index, so each row group has one page start common to all columns.
const dir = tempDir('sluice-split-');
const ROWS = 75_000;
let file3 = '';
let file2 = '';
let pageStart = 0;

/** A batch as its row count and a digest of each array's bytes (vitest compares 26 x 4096 BigInts slowly). */
const digest = (a: ArrayBufferView | null): string =>
  a === null
    ? 'null'
    : createHash('sha1')
        .update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength))
        .digest('hex');
const arrays = (b: Batch): unknown[] => [b.rows, ...[b.dense.data, b.sparse.lengths, b.sparse.offsets, b.sparse.values, b.labels].map(digest)];

async function collect(it: AsyncIterable<Batch>): Promise<unknown[][]> {
  const out: unknown[][] = [];
  for await (const b of it) out.push(arrays(b));
  return out;
}

describe('row groups that do not deal out evenly are split by rows', () => {
  it("the decoder pool reads a row group's common page starts from the offset index", async () => {
    file3 = (await generateDataset({ preset: 'rm1', rows: ROWS, rowGroupSize: 25_000, seed: 3, out: join(dir, 'rm1-3rg.parquet') })).path;
    file2 = (await generateDataset({ preset: 'rm1', rows: 50_000, rowGroupSize: 25_000, seed: 3, out: join(dir, 'rm1-2rg.parquet') })).path;
    const pool = new DecoderPool(1);
    try {
      const meta = await pool.open(file3);
      expect(meta.rowGroups).toEqual([25_000, 25_000, 25_000]);
      // One start inside each row group, near 20,480 (the writer checks its row limit every 1,024
      // rows written, counted across row groups).
      const all = await Promise.all([0, 1, 2].map((g) => pool.pageStarts(file3, g)));
      for (const starts of all) {
        expect(starts).toHaveLength(1);
        expect(starts[0]).toBeGreaterThanOrEqual(20_480);
        expect(starts[0]).toBeLessThan(22_000);
      }
      pageStart = all[1]![0]!;
      expect(await pool.pageStarts(file3, 3), 'no such row group').toEqual([]);
    } finally {
      await pool.close();
    }
  });

  it('3 row groups on 2 decoders: the last is read in two parts, laid out by the decoders, same batches', async () => {
    const plan = { ...getPreset('rm1').defaultPlan(), batchSize: 4096 };
    const want = await collect(pipeline(plan, { input: file3, decoders: 1 }));
    const p = pipeline(plan, { input: file3, decoders: 2 });
    const got = await collect(p);
    expect(got).toEqual(want);
    const m = p.metrics();
    // The last row group's chunks: rows 50,000..75,000 in batches of 4096 cut at 53,248, ... and
    // at the split, row 70,480 (both parts keep the batch cuts; a batch spanning the split is
    // merged like one spanning row groups).
    expect(m.splitChunks, 'the last row group came in parts').toBe(8);
    expect(m.packedChunks, 'every chunk laid out by a decoder').toBeGreaterThanOrEqual(got.length);
    expect(m.pushdown!.computedInPipeline, 'every feature from the reader').toBe(0);
  });

  it('a longer row group is read in more parts (up to 2 per decoder), which share the dictionary work: same batches', async () => {
    // 3 row groups of 50k rows: the last has two common page starts, so it is read in 3 parts.
    const file = (await generateDataset({ preset: 'rm1', rows: 150_000, rowGroupSize: 50_000, seed: 5, out: join(dir, 'rm1-3x50k.parquet') })).path;
    const pool = new DecoderPool(1);
    const starts = await pool.pageStarts(file, 2).finally(() => pool.close());
    expect(starts).toHaveLength(2);
    const plan = { ...getPreset('rm1').defaultPlan(), batchSize: 4096 };
    for (const pack of [true, false]) {
      const want = await collect(pipeline(plan, { input: file, decoders: 1, pack }));
      const p = pipeline(plan, { input: file, decoders: 2, pack });
      expect(await collect(p), `pack ${pack}`).toEqual(want);
      // Rows 100,000..150,000 in batches of 4096 (cut at 102,400, 106,496, ...: 13 chunks), and
      // two more where the parts end.
      expect(p.metrics().splitChunks, `pack ${pack}`).toBe(15);
    }
  });

  it('parts whose pages are PLAIN (a dictionary that overflowed) compute them beside the shared dictionary results', async () => {
    // One hex column whose dictionary overflows a 150 KB limit after ~15k rows of each row group:
    // the writer then switches to PLAIN pages. 3 row groups of 50k rows on 2 decoders, so the last
    // is split, at the overflow (the first part has dictionary pages only) and further on.
    const n = 150_000;
    const hex = Array.from({ length: n }, (_, i) => (i % 7 === 0 ? null : ((i * 2654435761) % 4294967296).toString(16).padStart(8, '0')));
    const table = new Table({ hex: vec(new Utf8(), hex) });
    const props = new pw.WriterPropertiesBuilder()
      .setMaxRowGroupSize(50_000)
      .setCompression(pw.Compression.ZSTD)
      .setDictionaryPageSizeLimit(150 << 10)
      .build();
    const file = join(dir, 'overflow.parquet');
    writeFileSync(file, pw.writeParquet(pw.Table.fromIPCStream(tableToIPC(table, 'stream')), props));
    const pool = new DecoderPool(1);
    const starts = await pool.pageStarts(file, 2).finally(() => pool.close());
    expect(starts.length, 'the last row group has page starts to split at').toBeGreaterThan(0);
    const plan = {
      batchSize: 4096,
      features: [{ name: 'h', input: 'hex', kind: 'sparse' as const, ops: [{ op: 'hex2int' }, { op: 'sigridHash', salt: 3, max: 1000 }] }],
    };
    const want = await collect(pipeline(plan, { input: file, decoders: 1 }));
    const p = pipeline(plan, { input: file, decoders: 2 });
    expect(await collect(p)).toEqual(want);
    const m = p.metrics();
    expect(m.splitChunks).toBeGreaterThan(0);
    // Each part computes its own PLAIN values; the dictionary's results are shared (dict-share.ts).
    expect(m.pushdown!.computedInPipeline, `all in the reader (${JSON.stringify(m.pushdown)})`).toBe(0);
    expect(m.pushdown!.computedInReader).toBeGreaterThan(0);
  });

  it('the parts give the same batches when they come back as columns (no packing) and when a run resumes', async () => {
    const plan = { ...getPreset('rm1').defaultPlan(), batchSize: 3000 };
    const want = await collect(pipeline(plan, { input: file3, decoders: 1, pack: false }));
    const p = pipeline(plan, { input: file3, decoders: 2, pack: false });
    expect(await collect(p)).toEqual(want);
    expect(p.metrics().splitChunks).toBeGreaterThan(0);
    expect(p.metrics().packedChunks).toBe(0);
    // Resumed from batch 3 (row 9,000): the last row group is still split.
    const first = pipeline(plan, { input: file3, decoders: 1 });
    let n = 0;
    for await (const _ of first) if (++n === 3) break;
    const cursor = first.state()!;
    const resumedWant = await collect(pipeline(plan, { input: file3, decoders: 1, resume: cursor }));
    const resumed = pipeline(plan, { input: file3, decoders: 2, resume: cursor });
    expect(await collect(resumed)).toEqual(resumedWant);
    expect(resumedWant.length).toBe(want.length - 3);
    expect(resumed.metrics().splitChunks).toBeGreaterThan(0);
  });

  it('row groups that deal out evenly stay whole', async () => {
    const plan = { ...getPreset('rm1').defaultPlan(), batchSize: 4096 };
    for (const [input, decoders] of [
      [file2, 2],
      [file3, 3],
    ] as const) {
      const p = pipeline(plan, { input, decoders });
      await collect(p);
      expect(p.metrics().splitChunks, `${decoders} decoders`).toBe(0);
    }
  });

  it('a range read at page boundaries holds those rows; one that is not falls back to the whole row group', async () => {
    const types = new Map<string, ColumnType>([
      ['I1', { kind: 'int32' }],
      ['C1', { kind: 'utf8' }],
    ]);
    const pool = new DecoderPool(1);
    try {
      const whole = await pool.readRowGroupColumns(file3, 1, ['I1', 'C1'], types);
      const tail = await pool.readRowGroupColumns(file3, 1, ['I1', 'C1'], types, 65536, [], undefined, { first: pageStart, rows: 25_000 - pageStart });
      for (const n of ['I1', 'C1']) {
        const c = tail.columns.get(n)!;
        expect(c, n).toBeDefined();
        expect(values(c)).toEqual(values(sliceColumn(whole.columns.get(n)!, pageStart, 25_000)));
      }
      const head = await pool.readRowGroupColumns(file3, 1, ['I1'], types, 65536, [], undefined, { first: 0, rows: pageStart });
      expect(values(head.columns.get('I1')!)).toEqual(values(sliceColumn(whole.columns.get('I1')!, 0, pageStart)));
      expect(
        values(head.columns.get('I1')!).some((v) => v === null),
        'I1 has nulls in range',
      ).toBe(true);
      // Row 100 is inside a page: the direct decoder refuses the range, and parquet-wasm returns
      // the whole row group as Arrow IPC (the source slices it).
      const off = await pool.readRowGroupColumns(file3, 1, ['I1'], types, 65536, [], undefined, { first: 100, rows: 1000 });
      expect(off.columns.size).toBe(0);
      expect(off.ipc.length).toBeGreaterThan(0);
    } finally {
      await pool.close();
    }
  });
});
