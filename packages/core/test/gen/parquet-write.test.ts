import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';
import * as pw from 'parquet-wasm';
import { afterAll, describe, expect, it } from 'vitest';
import { generateBatches } from '../../src/gen/generate.js';
import { ParquetFileWriter, writeParquetTable } from '../../src/output/parquet-write.js';
import { readBack, tempDir } from './util.js';

const dir = tempDir('sluice-pq-write-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function vec(type: arrow.DataType, values: unknown[]): arrow.Vector {
  const b = arrow.makeBuilder({ type, nullValues: [null] });
  for (const v of values) b.append(v);
  return b.finish().toVector();
}

function smallTable(n: number, offset = 0): arrow.Table {
  const ids = Array.from({ length: n }, (_, i) => i + offset);
  return new arrow.Table({
    id: vec(new arrow.Int32(), ids),
    x: vec(
      new arrow.Float32(),
      ids.map((i) => (i % 5 === 0 ? null : i / 2)),
    ),
    s: vec(
      new arrow.Utf8(),
      ids.map((i) => (i % 7 === 0 ? null : `v${i}`)),
    ),
    l: vec(
      new arrow.List(new arrow.Field('item', new arrow.Int64(), true)),
      ids.map((i) => (i % 11 === 0 ? null : [BigInt(i), BigInt(-i), 2n ** 40n])),
    ),
  });
}

describe('ParquetFileWriter', () => {
  it('round-trips types and nulls, honouring the row-group size exactly', async () => {
    const t = smallTable(2_500);
    const r = await writeParquetTable(join(dir, 'small.parquet'), t, { rowGroupSize: 1_000 });
    expect(r).toMatchObject({ rows: 2_500, rowGroups: 3 });
    expect(r.bytes).toBe(statSync(r.path).size);
    const back = await readBack(r.path);
    expect(back.rowGroups).toEqual([1_000, 1_000, 500]);
    for (const name of ['id', 'x', 's', 'l']) {
      expect(
        JSON.stringify(back.table.getChild(name)!.toJSON(), (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)),
        name,
      ).toBe(JSON.stringify(t.getChild(name)!.toJSON(), (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)));
    }
    expect(new Set(back.compression)).toEqual(new Set(['ZSTD']));
  });

  it('writes many batches into one file with row groups spanning batches', async () => {
    const w = await ParquetFileWriter.open(join(dir, 'multi.parquet'), { rowGroupSize: 3_000, compression: 'snappy' });
    for (let k = 0; k < 7; k++) await w.write(smallTable(1_000, k * 1_000).batches[0]!);
    expect(w.rowsWritten).toBe(7_000);
    const r = await w.close();
    const back = await readBack(r.path);
    expect(back.rowGroups).toEqual([3_000, 3_000, 1_000]);
    expect(new Set(back.compression)).toEqual(new Set(['SNAPPY']));
    const ids = back.table.getChild('id')!.toArray() as Int32Array;
    expect(ids.every((v, i) => v === i)).toBe(true);
    await expect(w.write(smallTable(1).batches[0]!)).rejects.toThrow(/write after closed/);
  });

  it('streams: row groups reach the disk before close', async () => {
    const out = join(dir, 'stream', 'rm1.parquet');
    const w = await ParquetFileWriter.open(out, { rowGroupSize: 16_384 });
    const partialSize = (): number => {
      const f = readdirSync(join(dir, 'stream')).find((n) => n.endsWith('.partial'));
      return f === undefined ? 0 : statSync(join(dir, 'stream', f)).size;
    };
    const sizes: number[] = [];
    for (const b of generateBatches('rm1', 16 * 16_384, { seed: 1, slabRows: 16_384 })) {
      await w.write(b);
      sizes.push(partialSize());
    }
    expect(existsSync(out)).toBe(false); // only the partial file exists until close
    const r = await w.close();
    expect(r.rowGroups).toBe(16);
    // At most two batches are in flight and the encoder stalls while its output is not consumed
    // (a few row groups of slack in the byte stream), so by the last write() most are on disk.
    expect(sizes.every((x, i) => i === 0 || x >= sizes[i - 1]!)).toBe(true);
    expect(sizes.at(-1)!).toBeGreaterThan(0.25 * r.bytes);
    expect(readdirSync(join(dir, 'stream')).filter((n) => n.endsWith('.partial'))).toEqual([]);
  });

  it('stores footer metadata and can skip dictionary encoding', async () => {
    const r = await writeParquetTable(join(dir, 'meta.parquet'), smallTable(100), {
      metadata: { 'sluice.test': 'yes' },
      dictionary: false,
      compression: 'uncompressed',
      statistics: 'none',
    });
    const file = await pw.ParquetFile.fromFile(await (await import('node:fs')).openAsBlob(r.path));
    try {
      const md = file.metadata();
      expect(md.fileMetadata().keyValueMetadata().get('sluice.test')).toBe('yes');
      const enc = md
        .rowGroup(0)
        .columns()
        .flatMap((c) => c.encodings());
      expect(enc).not.toContain(pw.Encoding.RLE_DICTIONARY);
      expect(md.rowGroup(0).column(0).compression()).toBe(pw.Compression.UNCOMPRESSED);
    } finally {
      file.free();
    }
  });

  it('rejects a batch with another schema and leaves no file behind', async () => {
    const out = join(dir, 'bad', 'mismatch.parquet');
    const w = await ParquetFileWriter.open(out);
    await w.write(smallTable(10));
    const other = new arrow.Table({ id: vec(new arrow.Int64(), [1n]) });
    await expect(w.write(other)).rejects.toThrow(/schema differs/);
    await w.abort();
    expect(readdirSync(join(dir, 'bad'))).toEqual([]);
  });

  it('writes a schema-only file for an empty table, and refuses to close with no schema', async () => {
    const schemaOnly = new arrow.Table(smallTable(1).schema);
    const r = await writeParquetTable(join(dir, 'empty.parquet'), schemaOnly);
    expect(r.rows).toBe(0);
    const back = await readBack(r.path);
    expect(back.rows).toBe(0);
    const w = await ParquetFileWriter.open(join(dir, 'nothing.parquet'));
    await expect(w.close()).rejects.toThrow(/nothing was written/);
    expect(existsSync(join(dir, 'nothing.parquet'))).toBe(false);
  });

  it('validates options', async () => {
    await expect(ParquetFileWriter.open(join(dir, 'o.parquet'), { rowGroupSize: 0 })).rejects.toThrow(/rowGroupSize/);
    await expect(ParquetFileWriter.open(join(dir, 'o.parquet'), { compression: 'lzma' as never })).rejects.toThrow(/unknown Parquet compression "lzma"/);
  });
});
