// The direct decoder (reader/parquet/) against parquet-wasm, the general reader, on files
// written every way parquet-wasm can write flat columns; and its RLE / bit-packed decoder on
// hand-encoded runs.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Field, Float32, Float64, Int32, Int64, List, Table, Utf8, tableFromIPC, tableToIPC } from 'apache-arrow';
import { parquetMetadata } from 'hyparquet';
import * as pw from 'parquet-wasm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Column, ColumnType } from '@sluice/ops';
import { columnFromVector } from '../../src/reader/arrow.js';
import { DecoderPool } from '../../src/reader/decoder-pool.js';
import { levels, rleHybrid } from '../../src/reader/parquet/index.js';
import { pipeline, type Batch, type PlanSpec } from '@sluice/core';
import { tempDir, vec } from '../helpers.js';

const dir = tempDir('sluice-fastpq-');
const N = 3000;
const ids = Array.from({ length: N }, (_, i) => i);
const long = (i: number): string => `long-${'x'.repeat(i % 40)}-é${i % 300}`;
const table = new Table({
  req: vec(
    new Int32(),
    ids.map((i) => ((i * 7919) % 1000) - 500),
  ),
  i32: vec(
    new Int32(),
    ids.map((i) => (i % 9 === 0 ? null : i % 4 === 0 ? 2147483647 : -(i % 50))),
  ),
  i64: vec(
    new Int64(),
    ids.map((i) => (i % 13 === 0 ? null : i % 5 === 0 ? -9223372036854775808n : BigInt(i) * 1000000007n)),
  ),
  f32: vec(
    new Float32(),
    ids.map((i) => (i % 6 === 0 ? null : i % 10 === 1 ? Number.NaN : i % 10 === 2 ? -0 : Math.fround(i / 7))),
  ),
  f64: vec(
    new Float64(),
    ids.map((i) => (i % 8 === 0 ? null : Math.sin(i) * 1e10)),
  ),
  hex: vec(
    new Utf8(),
    ids.map((i) => (i % 11 === 0 ? null : (((i % 97) * 2654435761) % 4294967296).toString(16).padStart(8, '0'))),
  ),
  txt: vec(
    new Utf8(),
    ids.map((i) => (i % 17 === 0 ? null : i % 3 === 0 ? '' : long(i))),
  ),
});
// `req` must be REQUIRED in the file to cover pages without definition levels.
const names = table.schema.fields.map((f) => f.name);
const types = new Map<string, ColumnType>([
  ['req', { kind: 'int32' }],
  ['i32', { kind: 'int32' }],
  ['i64', { kind: 'int64' }],
  ['f32', { kind: 'float32' }],
  ['f64', { kind: 'float64' }],
  ['hex', { kind: 'utf8' }],
  ['txt', { kind: 'utf8' }],
]);

interface Variant {
  name: string;
  props: () => pw.WriterProperties;
  direct?: false;
}
const builder = (): pw.WriterPropertiesBuilder => new pw.WriterPropertiesBuilder().setMaxRowGroupSize(1000).setDataPageSizeLimit(2048);
const VARIANTS: Variant[] = [
  { name: 'zstd, dictionary, v1 pages', props: () => builder().setCompression(pw.Compression.ZSTD).build() },
  { name: 'snappy, dictionary, v2 pages', props: () => builder().setCompression(pw.Compression.SNAPPY).setWriterVersion(pw.WriterVersion.V2).build() },
  { name: 'gzip, plain, v1 pages', props: () => builder().setCompression(pw.Compression.GZIP).setDictionaryEnabled(false).build() },
  {
    name: 'uncompressed, dictionary, v2 pages',
    props: () => builder().setCompression(pw.Compression.UNCOMPRESSED).setWriterVersion(pw.WriterVersion.V2).build(),
  },
  // Without a dictionary, v2 files use DELTA encodings for ints and strings, which the direct
  // decoder leaves to parquet-wasm (floats stay PLAIN).
  {
    name: 'uncompressed, delta, v2 pages',
    props: () => builder().setCompression(pw.Compression.UNCOMPRESSED).setDictionaryEnabled(false).setWriterVersion(pw.WriterVersion.V2).build(),
    direct: false,
  },
  // A tiny dictionary page limit: columns switch from dictionary to PLAIN pages mid-chunk.
  { name: 'zstd, dictionary overflowing to plain', props: () => builder().setCompression(pw.Compression.ZSTD).setDictionaryPageSizeLimit(256).build() },
];

function write(v: Variant, t: Table = table, tag = ''): string {
  const path = join(dir, `${v.name.replace(/[^a-z0-9]+/g, '-')}${tag}.parquet`);
  const wasm = pw.Table.fromIPCStream(tableToIPC(t, 'stream'));
  writeFileSync(path, pw.writeParquet(wasm, v.props()));
  return path;
}

// List columns, the shapes Arrow writers give them: the list and its elements each nullable or
// not, null and empty lists, null elements, lists long enough that a row spans data pages (pages
// of 2 KB), and every numeric child type. `ls` (strings) stays with parquet-wasm.
let seed = 99;
const rand = (k: number): number => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed % k;
};
const listOf = <T>(i: number, nulls: boolean, item: (j: number) => T | null): T[] | null => {
  if (nulls && i % 23 === 0) return null;
  // Mostly short lists, some empty (none without nulls: pages where every level is an element take
  // the decoder's fast path), now and then one of ~600 elements (longer than a page).
  const len = nulls && i % 17 === 5 ? 0 : i % 251 === 7 ? 600 + rand(50) : 1 + rand(40);
  return Array.from({ length: len }, (_, j) => item(j) as T);
};
const listTable = new Table({
  l64: vec(
    new List(new Field('item', new Int64(), true)),
    ids.map((i) => listOf(i, true, (j) => (rand(31) === 0 ? null : rand(9) === 0 ? -9223372036854775808n : BigInt(rand(5000)) * 1000003n - BigInt(j)))),
  ),
  l32: vec(
    new List(new Field('item', new Int32(), false)),
    ids.map((i) => listOf(i, false, () => rand(2000) - 1000)),
  ),
  lf32: vec(
    new List(new Field('item', new Float32(), true)),
    ids.map((i) => listOf(i, true, (j) => (j % 19 === 3 ? null : j % 13 === 1 ? Number.NaN : j % 11 === 2 ? -0 : Math.fround(rand(300) / 7)))),
  ),
  lf64: vec(
    new List(new Field('item', new Float64(), false)),
    ids.map((i) => listOf(i, i % 2 === 0, () => Math.sin(rand(100000)) * 1e10)),
  ),
  ls: vec(
    new List(new Field('item', new Utf8(), true)),
    ids.map((i) => listOf(i, true, (j) => `s${j % 7}`)),
  ),
});
const listTypes = new Map<string, ColumnType>([
  ['l64', { kind: 'list', child: 'int64' }],
  ['l32', { kind: 'list', child: 'int32' }],
  ['lf32', { kind: 'list', child: 'float32' }],
  ['lf64', { kind: 'list', child: 'float64' }],
  ['ls', { kind: 'list', child: 'utf8' }],
]);
const listNames = [...listTypes.keys()];

/**
 * Runs `p` as a training loop does, releasing each batch (`releases` times) after copying it with
 * `copy`; `shared` counts the batches whose array `part` lies in shared memory (a pack slot).
 */
async function drainReleasing(
  p: AsyncIterable<Batch>,
  copy: (b: Batch) => unknown[],
  part: (b: Batch) => ArrayBufferView,
  releases = 1,
): Promise<{ got: unknown[][]; shared: number }> {
  const got: unknown[][] = [];
  let shared = 0;
  for await (const b of p) {
    got.push(copy(b));
    if (part(b).buffer instanceof SharedArrayBuffer) shared++;
    for (let i = 0; i < releases; i++) b.release!();
  }
  return { got, shared };
}

/** Equal values at valid slots and equal validity (floats by bit pattern). */
function expectSameColumn(got: Column, want: Column, what: string): void {
  expect(got.type, what).toBe(want.type);
  const n = want.type === 'utf8' ? want.offsets.length - 1 : (want as { values: ArrayLike<unknown> }).values.length;
  const valid = (c: Column, i: number): boolean => c.valid === null || c.valid[i] === 1;
  for (let i = 0; i < n; i++) {
    expect(valid(got, i), `${what} validity of row ${i}`).toBe(valid(want, i));
    if (!valid(want, i)) continue;
    if (want.type === 'utf8' && got.type === 'utf8') {
      const s = (c: typeof want, r: number): string => Buffer.from(c.data.subarray(c.offsets[r]!, c.offsets[r + 1]!)).toString();
      expect(s(got, i), `${what} row ${i}`).toBe(s(want, i));
    } else if (want.type === 'float32' || want.type === 'float64') {
      const bits = (c: Column, r: number): string => {
        const x = (c as { values: Float32Array | Float64Array }).values[r]!;
        return Object.is(x, -0) ? '-0' : Number.isNaN(x) ? 'NaN' : String(x);
      };
      expect(bits(got, i), `${what} row ${i}`).toBe(bits(want, i));
    } else {
      expect((got as { values: ArrayLike<unknown> }).values[i], `${what} row ${i}`).toBe((want as { values: ArrayLike<unknown> }).values[i]);
    }
  }
}

/** expectSameColumn / expectSameList as one quick true or false. */
function sameColumn(a: Column, b: Column): boolean {
  if (a.type !== b.type) return false;
  const valid = (c: Column, i: number): boolean => c.valid === null || c.valid[i] === 1;
  if (a.type === 'list' && b.type === 'list') {
    if (a.offsets.length !== b.offsets.length || a.offsets.some((x, i) => x !== b.offsets[i])) return false;
    for (let i = 0; i + 1 < a.offsets.length; i++) if (valid(a, i) !== valid(b, i)) return false;
    return (a.child.valid === null) === (b.child.valid === null) && sameColumn(a.child, b.child);
  }
  if (a.type === 'utf8' && b.type === 'utf8') {
    if (a.offsets.length !== b.offsets.length) return false;
    for (let i = 0; i + 1 < a.offsets.length; i++) {
      if (valid(a, i) !== valid(b, i)) return false;
      if (valid(a, i) && Buffer.compare(a.data.subarray(a.offsets[i]!, a.offsets[i + 1]!), b.data.subarray(b.offsets[i]!, b.offsets[i + 1]!)) !== 0)
        return false;
    }
    return true;
  }
  const x = (a as { values: ArrayLike<number | bigint> }).values;
  const y = (b as { values: ArrayLike<number | bigint> }).values;
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) {
    if (valid(a, i) !== valid(b, i)) return false;
    // Floats by value, with NaN equal to NaN and -0 apart from 0 (as expectSameColumn).
    if (valid(a, i) && !Object.is(x[i], y[i])) return false;
  }
  return true;
}

/** Equal offsets and list validity, and equal children (expectSameColumn). */
function expectSameList(got: Column, want: Column, what: string): void {
  expect(got.type, what).toBe('list');
  if (got.type !== 'list' || want.type !== 'list') return;
  expect(Array.from(got.offsets), `${what} offsets`).toEqual(Array.from(want.offsets));
  expect(got.valid === null ? null : Array.from(got.valid), `${what} list validity`).toEqual(want.valid === null ? null : Array.from(want.valid));
  expect(got.child.valid === null, `${what} element validity is null exactly when no element is null`).toBe(want.child.valid === null);
  expectSameColumn(got.child, want.child, `${what} elements`);
}

const pool = new DecoderPool(1);
afterAll(() => pool.close());

describe('direct Parquet decoder', () => {
  for (const v of VARIANTS) {
    it(`decodes every row group like parquet-wasm: ${v.name}`, async () => {
      const file = write(v);
      const meta = await pool.open(file);
      expect(meta.rowGroups.length).toBe(3);
      for (let rg = 0; rg < meta.rowGroups.length; rg++) {
        const got = await pool.readRowGroupColumns(file, rg, names, types);
        if (v.direct === false) {
          // DELTA-encoded columns go to parquet-wasm; the PLAIN float columns stay with the direct decoder.
          expect([...got.columns.keys()].sort()).toEqual(['f32', 'f64']);
          expect(got.ipc.length).toBeGreaterThan(0);
        } else {
          expect([...got.columns.keys()].sort(), 'the direct decoder read every column').toEqual([...names].sort());
          expect(got.ipc.length).toBe(0);
        }
        const ipc = (await pool.readRowGroup(file, rg, names)).map((b) => tableFromIPC(b));
        expect(ipc.length).toBe(1);
        for (const n of got.columns.keys())
          expectSameColumn(got.columns.get(n)!, columnFromVector(ipc[0]!.getChild(n)!, types.get(n)!), `${v.name}, row group ${rg}, ${n}`);
      }
    });
  }

  for (const v of VARIANTS) {
    it(`decodes list columns like parquet-wasm: ${v.name}`, async () => {
      const file = write(v, listTable, '-lists');
      const meta = await pool.open(file);
      expect(meta.rowGroups.length).toBe(3);
      for (let rg = 0; rg < meta.rowGroups.length; rg++) {
        const got = await pool.readRowGroupColumns(file, rg, listNames, listTypes);
        // DELTA-encoded ints go to parquet-wasm (as for flat columns), strings always.
        const direct = v.direct === false ? ['lf32', 'lf64'] : ['l32', 'l64', 'lf32', 'lf64'];
        expect([...got.columns.keys()].sort(), 'the direct decoder read these lists').toEqual(direct);
        const ipc = (await pool.readRowGroup(file, rg, listNames)).map((b) => tableFromIPC(b));
        expect(ipc.length).toBe(1);
        for (const n of got.columns.keys())
          expectSameList(got.columns.get(n)!, columnFromVector(ipc[0]!.getChild(n)!, listTypes.get(n)!), `${v.name}, row group ${rg}, ${n}`);
      }
    });
  }

  it('reads lists whose rows span data pages, with nulls at every level', async () => {
    // Row group 0 of the first variant: rows of ~600 elements in 2 KB pages, null lists, empty
    // lists and null elements all occur (the data above is made so); check that they do.
    const file = write(VARIANTS[0]!, listTable, '-lists');
    const got = (await pool.readRowGroupColumns(file, 0, ['l64'], listTypes)).columns.get('l64')!;
    if (got.type !== 'list') throw new Error('not a list');
    const lens = Array.from({ length: got.offsets.length - 1 }, (_, i) => got.offsets[i + 1]! - got.offsets[i]!);
    expect(Math.max(...lens) * 8, 'a row longer than a 2 KB page').toBeGreaterThan(2048);
    expect(got.valid?.includes(0), 'null lists').toBe(true);
    expect(
      lens.some((n, i) => n === 0 && got.valid![i] === 1),
      'empty lists',
    ).toBe(true);
    expect(got.child.valid?.includes(0), 'null elements').toBe(true);
  });

  it("computes list features (per-value ops and firstX) on the elements' dictionary, packed or not", async () => {
    // firstX first, last, in the middle, twice, or not at all; int and float children; null
    // lists, empty lists and null elements (fillNull gives those a value, other ops keep them null).
    const plan = (pushdown: boolean): PlanSpec => ({
      batchSize: 256,
      backend: { name: 'cpu', workers: 1, pushdown },
      features: [
        {
          name: 'a',
          input: 'l64',
          kind: 'sparse',
          ops: [
            { op: 'firstX', x: 5 },
            { op: 'sigridHash', salt: 7, max: 100000 },
          ],
        },
        {
          name: 'b',
          input: 'l64',
          kind: 'sparse',
          ops: [
            { op: 'sigridHash', salt: 1, max: 5000 },
            { op: 'firstX', x: 30 },
            { op: 'modulus', m: 97 },
            { op: 'firstX', x: 12 },
          ],
        },
        {
          name: 'c',
          input: 'l32',
          kind: 'sparse',
          ops: [
            { op: 'clamp', min: -100, max: 100 },
            { op: 'firstX', x: 2 },
          ],
        },
        {
          name: 'd',
          input: 'lf32',
          kind: 'sparse',
          ops: [
            { op: 'fillNull', value: -5 },
            { op: 'bucketize', borders: [-1, 0, 1, 10, 40] },
          ],
        },
        {
          name: 'e',
          input: 'l64',
          kind: 'sparse',
          ops: [
            { op: 'fillNull', value: 3 },
            { op: 'modulus', m: 1000 },
            { op: 'firstX', x: 600 },
          ],
        },
      ],
    });
    const arrays = (b: Batch): unknown[] => [b.rows, b.sparse.lengths, b.sparse.offsets, b.sparse.values];
    for (const v of [VARIANTS[0]!, VARIANTS[1]!, VARIANTS[2]!, VARIANTS[5]!]) {
      const file = write(v, listTable, '-lists');
      const run = async (pushdown: boolean, pack = true): Promise<{ batches: unknown[][]; m: ReturnType<ReturnType<typeof pipeline>['metrics']> }> => {
        const p = pipeline(plan(pushdown), { input: file, pack });
        const batches: unknown[][] = [];
        for await (const b of p) batches.push(arrays(b));
        return { batches, m: p.metrics() };
      };
      const off = await run(false);
      const on = await run(true);
      const unpacked = await run(true, false);
      expect(on.batches, `${v.name}: pushed down and packed`).toEqual(off.batches);
      expect(unpacked.batches, `${v.name}: pushed down, not packed`).toEqual(off.batches);
      expect(off.m.pushdown).toBeNull();
      const pd = unpacked.m.pushdown!;
      expect(pd.derived).toBe(5);
      // Dictionary pages, PLAIN pages (computed value by value), and the lists' many distinct ids
      // overflowing a 256-byte dictionary page to PLAIN pages in every row group: all in the reader.
      expect(pd.computedInPipeline, `${v.name}: every list feature came from the reader`).toBe(0);
      expect(pd.computedInReader, `${v.name}: every list feature came from the reader`).toBeGreaterThan(0);
      expect(on.m.packedChunks, `${v.name}: the decoders laid the batches out`).toBeGreaterThan(0);
    }
  });

  it('list packs that outgrow their slots make the arena grow: later batches lie in slots, and come out the same', async () => {
    // 10 row groups of ~20 ids per row, where a first slot holds one per key and row. Batches of
    // 264 rows: a slot size no other test parks an arena for.
    const rows = Array.from({ length: 10_000 }, (_, i) => i);
    const file = write(
      VARIANTS[0]!,
      new Table({
        l64: vec(
          new List(new Field('item', new Int64(), true)),
          rows.map((i) => Array.from({ length: 1 + ((i * 7) % 40) }, (_, j) => BigInt((i * 31 + j) % 5000))),
        ),
      }),
      '-long-lists',
    );
    const plan: PlanSpec = {
      batchSize: 264,
      backend: { name: 'cpu', workers: 1 },
      features: [
        {
          name: 'a',
          input: 'l64',
          kind: 'sparse',
          ops: [
            { op: 'firstX', x: 5 },
            { op: 'sigridHash', salt: 7, max: 100000 },
          ],
        },
        {
          name: 'e',
          input: 'l64',
          kind: 'sparse',
          ops: [
            { op: 'fillNull', value: 3 },
            { op: 'modulus', m: 1000 },
            { op: 'firstX', x: 600 },
          ],
        },
      ],
    };
    const copy = (b: Batch): unknown[] => [b.rows, b.sparse.lengths.slice(), b.sparse.offsets.slice(), b.sparse.values.slice()];
    const want: unknown[][] = [];
    for await (const b of pipeline(plan, { input: file, pack: false })) want.push(copy(b));
    for (const decoders of [1, 2]) {
      const p = pipeline(plan, { input: file, decoders });
      const { got, shared: inSlots } = await drainReleasing(p, copy, (b) => b.sparse.values);
      expect(got).toEqual(want);
      expect(p.metrics().packedChunks).toBeGreaterThan(0);
      expect(inSlots, `${decoders} decoder(s): ids in (grown) slots`).toBeGreaterThan(want.length / 2);
    }
  });

  it('a corrupt list page fails with the file and row group, after the batches before it', async () => {
    const file = write(VARIANTS[0]!, listTable, '-lists');
    const bytes = readFileSync(file);
    const md = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    const chunk = md.row_groups[1]!.columns.find((c) => c.meta_data!.path_in_schema[0] === 'l64')!.meta_data!;
    // Scribble over the middle of row group 1's l64 pages (ZSTD frames: neither reader can decode them).
    const at = Number(chunk.data_page_offset);
    bytes.fill(0xab, at + 40, at + Number(chunk.total_compressed_size) - 40);
    const bad = join(dir, 'corrupt-lists.parquet');
    writeFileSync(bad, bytes);
    const plan: PlanSpec = {
      batchSize: 250,
      features: [
        {
          name: 'a',
          input: 'l64',
          kind: 'sparse',
          ops: [
            { op: 'firstX', x: 5 },
            { op: 'sigridHash', salt: 7, max: 100000 },
          ],
        },
      ],
    };
    const got: Batch[] = [];
    const err = await (async () => {
      for await (const b of pipeline(plan, { input: bad })) got.push(b);
    })().catch((e: Error) => e);
    expect(String(err)).toMatch(/corrupt-lists\.parquet, row group 1/);
    expect(got.length, 'row group 0 came through').toBe(4);
  });

  it('computes per-value op chains on dictionary entries and PLAIN pages, and falls back where pages are neither', async () => {
    const plan = (pushdown: boolean): PlanSpec => ({
      batchSize: 256,
      backend: { name: 'cpu', workers: 1, pushdown },
      features: [
        { name: 'h', input: 'hex', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'sigridHash', salt: 3, max: 1000 }] },
        { name: 'd', input: 'i32', kind: 'dense', ops: [{ op: 'fillNull', value: 1 }, { op: 'neg2zero' }, { op: 'log', offset: 1 }] },
        {
          name: 'b',
          input: 'f64',
          kind: 'sparse',
          ops: [
            { op: 'fillNull', value: 0 },
            { op: 'bucketize', borders: [-1e9, 0, 1e9] },
          ],
        },
        { name: 'm', input: 'i64', kind: 'sparse', ops: [{ op: 'modulus', m: 977 }] },
        { name: 'r', input: 'req', kind: 'dense' },
      ],
    });
    for (const v of [VARIANTS[0]!, VARIANTS[2]!, VARIANTS[4]!, VARIANTS[5]!]) {
      const file = write(v);
      const run = async (pushdown: boolean): Promise<{ batches: Batch[]; m: ReturnType<ReturnType<typeof pipeline>['metrics']> }> => {
        const p = pipeline(plan(pushdown), { input: file });
        const batches: Batch[] = [];
        for await (const b of p) batches.push(b);
        return { batches, m: p.metrics() };
      };
      const on = await run(true);
      const off = await run(false);
      expect(on.batches.map((b) => [b.dense.data, b.sparse.values])).toEqual(off.batches.map((b) => [b.dense.data, b.sparse.values]));
      expect(off.m.pushdown).toBeNull();
      const pd = on.m.pushdown!;
      expect(pd.derived).toBe(4);
      // Dictionary pages, PLAIN pages, and chunks that overflow from one to the other: the reader.
      if (v !== VARIANTS[4]) expect(pd.computedInPipeline, `${v.name}: every derived column came from the reader`).toBe(0);
      // DELTA-encoded ints and strings go to parquet-wasm and their features to the pipeline; PLAIN floats stay.
      if (v === VARIANTS[4]) expect(pd.computedInReader > 0 && pd.computedInPipeline > 0, `both paths (${JSON.stringify(pd)})`).toBe(true);
    }
  });
});

describe('packed chunks (decode workers lay batches out)', () => {
  // Every feature is pushed into the reader, so the decoders also lay the batches out. Row groups
  // of 1000 rows and batches of 384 make batches that span row groups (merged packs).
  const plan = (label: string, epochs = 1): PlanSpec => ({
    batchSize: 384,
    epochs,
    label,
    backend: { name: 'cpu', workers: 2 },
    features: [
      { name: 'h', input: 'hex', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'sigridHash', salt: 3, max: 1000 }] },
      { name: 'd', input: 'i32', kind: 'dense', ops: [{ op: 'fillNull', value: 1 }, { op: 'neg2zero' }, { op: 'log', offset: 1 }] },
      {
        name: 'b',
        input: 'f64',
        kind: 'sparse',
        ops: [
          { op: 'fillNull', value: 0 },
          { op: 'bucketize', borders: [-1e9, 0, 1e9] },
        ],
      },
      { name: 'm', input: 'i64', kind: 'sparse', ops: [{ op: 'modulus', m: 977 }] },
      { name: 'f', input: 'f32', kind: 'dense', ops: [{ op: 'clamp', min: -1, max: 100 }] },
    ],
  });
  const arrays = (b: Batch): unknown[] => [b.seq, b.epoch, b.rows, b.end, b.dense.data, b.sparse.lengths, b.sparse.offsets, b.sparse.values, b.labels];
  const collect = async (p: ReturnType<typeof pipeline>, limit = Infinity): Promise<Batch[]> => {
    const out: Batch[] = [];
    for await (const b of p) {
      out.push(b);
      if (out.length >= limit) break;
    }
    return out;
  };

  it('gives the same batches as assembling them on the main thread, across row groups, epochs and a resume', async () => {
    const file = write(VARIANTS[0]!);
    const packed = pipeline(plan('req', 2), { input: file, decoders: 2 });
    const on = await collect(packed);
    const off = await collect(pipeline(plan('req', 2), { input: file, pack: false }));
    expect(on.length).toBe(2 * Math.ceil(N / 384));
    expect(on.map(arrays)).toEqual(off.map(arrays));
    const m = packed.metrics();
    expect(m.packedChunks, 'every chunk came packed').toBeGreaterThan(0);
    expect(m.pushdown!.computedInPipeline).toBe(0);
    // A batch of 384 rows spans the row groups' boundaries at 1000 and 2000 rows.
    expect(on[2]!.rows).toBe(384);
    // Resume after batch 4 (inside row group 1).
    const first = pipeline(plan('req', 2), { input: file });
    const head = await collect(first, 5);
    const rest = await collect(pipeline(plan('req', 2), { input: file, resume: first.state()! }));
    expect([...head, ...rest].map(arrays)).toEqual(on.map(arrays));
  });

  it('released batches lend their memory to later ones, which come out the same', async () => {
    const file = write(VARIANTS[0]!);
    // Each batch's arrays copied before its release: a reused slot must never show through.
    const copy = (b: Batch): unknown[] => arrays(b).map((a) => (ArrayBuffer.isView(a) ? (a as Float32Array).slice() : a));
    for (const decoders of [1, 2]) {
      const p = pipeline(plan('req', 4), { input: file, decoders });
      // A second release of each batch gives nothing back twice.
      const { got, shared } = await drainReleasing(p, copy, (b) => b.dense.data, 2);
      const want = (await collect(pipeline(plan('req', 4), { input: file, pack: false }))).map(copy);
      expect(got).toEqual(want);
      expect(p.metrics().recycledPacks, `${decoders} decoder(s): slots were reused`).toBeGreaterThan(0);
      expect(shared).toBeGreaterThan(0);
    }
  });

  it('batches nobody releases keep their own memory', async () => {
    const file = write(VARIANTS[0]!);
    // Batches of 320 rows: a slot size no earlier test parked an arena for.
    const p = pipeline({ ...plan('req', 2), batchSize: 320 }, { input: file });
    const kept = await collect(p);
    // Laid out in slots from the first read; only those of packs copied into a boundary batch
    // come back. Every kept batch still reads as in a run without packing.
    expect(kept.some((b) => b.dense.data.buffer instanceof SharedArrayBuffer)).toBe(true);
    expect(kept.map(arrays)).toEqual((await collect(pipeline({ ...plan('req', 2), batchSize: 320 }, { input: file, pack: false }))).map(arrays));
    // Releasing after the run ended is harmless.
    for (const b of kept) b.release!();
  });

  it('a later pipeline lays its first batches out in the slots an earlier one released, and never reuses a kept one', async () => {
    const file = write(VARIANTS[0]!);
    const shape = { ...plan('req', 2), batchSize: 352 };
    const want = (await collect(pipeline(shape, { input: file, pack: false }))).map(arrays);
    // The first run releases every batch, then parks its arena when it ends.
    const first = pipeline(shape, { input: file, decoders: 2 });
    for await (const b of first) b.release!();
    expect(first.metrics().recycledPacks).toBeGreaterThan(0);
    // The second keeps its batches: its first come in the parked free slots, and it reuses none
    // it holds, so every kept batch still reads as in a run without packing.
    const second = pipeline(shape, { input: file, decoders: 2 });
    const kept = await collect(second);
    expect(second.metrics().recycledPacks, 'its first batches came in parked slots').toBeGreaterThan(0);
    expect(kept.map(arrays)).toEqual(want);
    // Released late, they go back to the arena, which the third run takes with them.
    for (const b of kept) b.release!();
    const third = pipeline(shape, { input: file, decoders: 2 });
    const got: unknown[][] = [];
    for await (const b of third) {
      got.push(arrays(b).map((a) => (ArrayBuffer.isView(a) ? (a as Float32Array).slice() : a)));
      b.release!();
    }
    expect(got).toEqual(want);
    expect(third.metrics().recycledPacks).toBeGreaterThan(0);
  });

  it("a file with fewer row groups than decoders: decoders share each row group's columns, same batches", async () => {
    const one: Variant = {
      name: 'one row group',
      props: () => new pw.WriterPropertiesBuilder().setMaxRowGroupSize(N).setDataPageSizeLimit(2048).setCompression(pw.Compression.ZSTD).build(),
    };
    // Two features from `hex` (its decoder reads it once), a raw dense column, and list features.
    const shared = (): PlanSpec => ({
      ...plan('req'),
      features: [
        ...plan('req').features,
        { name: 'h2', input: 'hex', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'modulus', m: 7 }] },
        { name: 'raw', input: 'i32', kind: 'dense' },
      ],
    });
    for (const [file, spec] of [
      [write(one, table, '-shared'), shared()],
      [
        write(one, listTable, '-shared-lists'),
        {
          batchSize: 384,
          backend: { name: 'cpu', workers: 2 },
          features: [
            {
              name: 'a',
              input: 'l64',
              kind: 'sparse',
              ops: [
                { op: 'firstX', x: 5 },
                { op: 'sigridHash', salt: 7, max: 100000 },
              ],
            },
            { name: 'c', input: 'l32', kind: 'sparse', ops: [{ op: 'clamp', min: -100, max: 100 }] },
            {
              name: 'd',
              input: 'lf32',
              kind: 'sparse',
              ops: [
                { op: 'fillNull', value: -5 },
                { op: 'bucketize', borders: [-1, 0, 1, 10, 40] },
              ],
            },
          ],
        } as PlanSpec,
      ],
    ] as const) {
      const want = await collect(pipeline(spec, { input: file, decoders: 1 }));
      const p = pipeline(spec, { input: file, decoders: 2 });
      const got = await collect(p);
      expect(got.map(arrays)).toEqual(want.map(arrays));
      expect(p.metrics().sharedChunks, 'the row group was read in shares').toBe(got.length);
      expect(p.metrics().packedChunks, 'a shared row group comes as columns').toBe(0);
      expect(p.metrics().pushdown!.computedInPipeline, 'every feature still from the reader').toBe(0);
    }
    // A shuffled read shares the columns the same way, the features computed by the reader too.
    const shuffled: PlanSpec = { ...shared(), shuffle: { seed: 5, bufferRows: 1000 } };
    const file = write(one, table, '-shared');
    const want = await collect(pipeline(shuffled, { input: file, decoders: 1 }));
    const p = pipeline(shuffled, { input: file, decoders: 2 });
    const got = await collect(p);
    expect(got.map(arrays)).toEqual(want.map(arrays));
    expect(p.metrics().sharedChunks).toBe(got.length);
    expect(p.metrics().pushdown!.computedInPipeline, 'every feature from the reader').toBe(0);
  });

  it('falls back to columns where the decoder cannot pack, with the same batches', async () => {
    // DELTA-encoded pages go to parquet-wasm: their derived columns come raw.
    const file = write(VARIANTS[4]!);
    const p = pipeline(plan('req'), { input: file });
    const on = await collect(p);
    const off = await collect(pipeline(plan('req'), { input: file, pack: false }));
    expect(on.map(arrays)).toEqual(off.map(arrays));
    expect(p.metrics().pushdown!.computedInPipeline).toBeGreaterThan(0);
  });

  it('a null label is still reported with its file, row group and row', async () => {
    const file = write(VARIANTS[0]!);
    // i32 is null at rows 0, 9, 18, ...: the first row group cannot be packed.
    await expect(collect(pipeline(plan('i32'), { input: file }))).rejects.toThrow(/row group 0, row 0: label is null/);
  });
});

// Seeded damage inside the column chunks of files the direct decoder reads, checked against
// parquet-wasm as the oracle: the direct decoder must never return a column from a row group
// that parquet-wasm refuses, must return the same values when both read it, and must fail with
// the file and row group when neither can. (Parquet pages written without checksums can be
// damaged into other valid data; both readers then agree on that data, which is all a reader can
// promise.)
describe('damaged files', () => {
  const CASES = 12;
  // zstd's wasm build, as parquet-wasm's: the native build decodes some damaged streams that both
  // wasm builds refuse (docs/reliability.md, "ZSTD pages"), and this suite asks for parquet-wasm's
  // verdict exactly. Set while the suite runs: a trapped decode thread's replacement starts with
  // the environment of that moment, and no parked decoder of other settings is taken.
  let pool: DecoderPool;
  beforeAll(() => {
    process.env.SLUICE_ZSTD = 'wasm';
    pool = new DecoderPool(1);
  });
  afterAll(async () => {
    await pool.close();
    delete process.env.SLUICE_ZSTD;
  });
  for (const [v, t, tag, cols, colTypes] of [
    ...VARIANTS.map((v) => [v, table, '', names, types] as const),
    ...[VARIANTS[0]!, VARIANTS[3]!].map((v) => [v, listTable, '-lists', listNames, listTypes] as const),
  ]) {
    it(`agrees with parquet-wasm on ${CASES} damaged copies: ${v.name}${tag}`, async () => {
      const clean = readFileSync(write(v, t, tag));
      const md = parquetMetadata(clean.buffer.slice(clean.byteOffset, clean.byteOffset + clean.byteLength));
      const chunks = md.row_groups.flatMap((g) => g.columns.map((c) => c.meta_data!));
      let s = 0x9e3779b9 ^ clean.length;
      const rnd = (k: number): number => {
        s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
        return s % k;
      };
      const outcomes = { agreed: 0, bothRefused: 0 };
      for (let c = 0; c < CASES; c++) {
        const bytes = Buffer.from(clean);
        // Somewhere in one column chunk: its page headers, dictionary or data.
        const chunk = chunks[rnd(chunks.length)]!;
        const start = Number(chunk.dictionary_page_offset ?? chunk.data_page_offset);
        const at = start + rnd(Number(chunk.total_compressed_size));
        const kind = c % 3;
        if (kind === 0) bytes[at] = bytes[at]! ^ (1 << rnd(8));
        else if (kind === 1) for (let i = 0; i < 8; i++) bytes[at + i] = rnd(256);
        else bytes.fill(0, at, at + 32);
        const file = join(dir, `damaged-${v.name.replace(/[^a-z0-9]+/g, '-')}${tag}-${c}.parquet`);
        writeFileSync(file, bytes);
        for (let rg = 0; rg < md.row_groups.length; rg++) {
          const what = `case ${c} (byte ${at}), row group ${rg}`;
          const direct = await pool.readRowGroupColumns(file, rg, cols, colTypes).catch((e: Error) => e);
          const oracle = await pool.readRowGroup(file, rg, cols).then(
            (b) => b.map((x) => tableFromIPC(x)),
            (e: Error) => e,
          );
          if (oracle instanceof Error) {
            expect(direct, `${what}: parquet-wasm refuses it, so must the direct decoder`).toBeInstanceOf(Error);
            expect(String(direct), what).toContain(`row group ${rg}`);
            expect(String(direct), what).toContain(file);
            outcomes.bothRefused++;
            continue;
          }
          if (direct instanceof Error) {
            // The direct decoder's refusals fall back to parquet-wasm, which read it above.
            throw new Error(`${what}: parquet-wasm reads it, the pool refused it: ${direct.message}`);
          }
          const want = oracle.length === 1 ? oracle[0]! : new Table(oracle.flatMap((x) => x.batches));
          for (const [n, col] of direct.columns) {
            const w = columnFromVector(want.getChild(n)!, colTypes.get(n)!);
            // A quick check first; the per-value expectations only to say where they differ.
            if (sameColumn(col, w)) continue;
            if (col.type === 'list') expectSameList(col, w, `${what}, ${n}`);
            else expectSameColumn(col, w, `${what}, ${n}`);
            throw new Error(`${what}, ${n}: the columns differ`);
          }
          outcomes.agreed++;
        }
      }
      // Both outcomes occur, so neither branch above goes untested.
      expect(outcomes.bothRefused, JSON.stringify(outcomes)).toBeGreaterThan(0);
      expect(outcomes.agreed, JSON.stringify(outcomes)).toBeGreaterThan(0);
    });
  }
});

/** Encodes values with the RLE / bit-packed hybrid: runs of >= 8 equal values as RLE, the rest bit-packed. */
function encode(values: number[], width: number): Uint8Array {
  const out: number[] = [];
  const varint = (x: number): void => {
    while (x >= 0x80) {
      out.push((x & 0x7f) | 0x80);
      x = Math.floor(x / 128);
    }
    out.push(x);
  };
  let i = 0;
  while (i < values.length) {
    let j = i;
    while (j < values.length && values[j] === values[i]) j++;
    if (j - i >= 8) {
      varint((j - i) * 2);
      for (let k = 0; k < Math.ceil(width / 8); k++) out.push(Math.floor(values[i]! / 2 ** (8 * k)) & 0xff);
      i = j;
      continue;
    }
    const groups = Math.ceil(Math.min(values.length - i, 64) / 8);
    varint(groups * 2 + 1);
    const bits: number[] = [];
    for (let k = 0; k < groups * 8; k++) {
      const x = values[i + k] ?? 0;
      for (let b = 0; b < width; b++) bits.push(Math.floor(x / 2 ** b) % 2);
    }
    for (let b = 0; b < bits.length; b += 8) out.push(bits.slice(b, b + 8).reduce((a, bit, k) => a + bit * 2 ** k, 0));
    i += groups * 8;
  }
  return Uint8Array.from(out);
}

/** The first index where `got` (read as unsigned) differs from `want`, or -1: a cheap check for long arrays. */
function firstDifference(got: Int32Array | Uint8Array, want: readonly number[]): number {
  if (got.length !== want.length) return Math.min(got.length, want.length);
  for (let i = 0; i < want.length; i++) if (got[i]! >>> 0 !== want[i]) return i;
  return -1;
}

describe('RLE / bit-packed hybrid', () => {
  for (const width of [1, 3, 8, 13, 20, 24, 25, 31, 32]) {
    it(`decodes runs and packed groups of width ${width}`, () => {
      let x = 12345;
      const max = 2 ** width;
      const values = Array.from({ length: 1000 }, (_, i) => {
        x = (x * 1103515245 + 12345) % 2147483648;
        return i % 100 < 30 ? max - 1 : Math.floor((x / 2147483648) * max); // runs of the max value, then noise
      });
      const bytes = encode(values, width);
      const out = new Int32Array(values.length + 5);
      const end = rleHybrid(bytes, 0, bytes.length, width, out, 5, values.length);
      expect(end).toBe(bytes.length);
      expect(Array.from(out.subarray(5), (v) => v >>> 0)).toEqual(values);
    });
  }

  for (const n of [1, 7, 8, 13, 64, 999]) {
    it(`decodes ${n} definition levels (width 1) into validity bytes`, () => {
      let x = 777;
      const values = Array.from({ length: n }, (_, i) => {
        x = (x * 1103515245 + 12345) % 2147483648;
        return i % 50 < 10 ? 1 : x % 3 === 0 ? 0 : 1; // runs of 1, then noise
      });
      const bytes = encode(values, 1);
      const out = new Uint8Array(n + 3).fill(9);
      levels(bytes, 0, bytes.length, 1, out, n, 3);
      expect(Array.from(out.subarray(3))).toEqual(values);
      expect(Array.from(out.subarray(0, 3))).toEqual([9, 9, 9]);
    });
  }

  for (const max of [1, 2, 3, 5]) {
    it(`decodes repetition and definition levels up to ${max}`, () => {
      let x = 4242;
      const values = Array.from({ length: 777 }, (_, i) => {
        x = (x * 1103515245 + 12345) % 2147483648;
        return i % 90 < 20 ? max : x % (max + 1); // runs of the maximum, then noise
      });
      const width = 32 - Math.clz32(max);
      const bytes = encode(values, width);
      const out = new Uint8Array(values.length);
      levels(bytes, 0, bytes.length, max, out, values.length);
      expect(Array.from(out)).toEqual(values);
      expect(() => levels(bytes, 0, bytes.length >> 1, max, new Uint8Array(values.length), values.length)).toThrow(/end|past/);
    });
  }

  // Run lengths on both sides of the short-run loop (<= 16 values) and of each run header's
  // varint size (1 byte below 64 values, 2 bytes below 8,192, then 3), for values 1 to 4 bytes wide.
  const RUNS = [8, 9, 15, 16, 17, 63, 64, 65, 200, 8191, 8192, 20000];
  for (const width of [1, 7, 9, 17, 25, 32]) {
    it(`decodes RLE runs of ${RUNS.length} lengths from 8 to 20,000 at width ${width}`, () => {
      // Neighbouring runs alternate between the widest value and a small one, so none merge.
      const values: number[] = [];
      RUNS.forEach((len, i) => {
        for (let k = 0; k < len; k++) values.push(i % 2 === 0 ? 2 ** width - 1 : (i >> 1) % 2);
      });
      const bytes = encode(values, width);
      const out = new Int32Array(values.length + 2).fill(-7);
      expect(rleHybrid(bytes, 0, bytes.length, width, out, 1, values.length)).toBe(bytes.length);
      expect(firstDifference(out.subarray(1, 1 + values.length), values)).toBe(-1);
      expect([out[0], out[out.length - 1]]).toEqual([-7, -7]);
    });
  }

  it(`decodes level runs of ${RUNS.length} lengths from 8 to 20,000`, () => {
    const values: number[] = [];
    RUNS.forEach((len, i) => {
      for (let k = 0; k < len; k++) values.push(i % 4);
    });
    const bytes = encode(values, 2);
    const out = new Uint8Array(values.length + 2).fill(9);
    levels(bytes, 0, bytes.length, 3, out, values.length, 1);
    expect(firstDifference(out.subarray(1, 1 + values.length), values)).toBe(-1);
    expect([out[0], out[out.length - 1]]).toEqual([9, 9]);
  });

  it('refuses a level above the column maximum', () => {
    // Width 2 holds 3, but a column whose deepest level is 2 never has it: packed and RLE alike.
    expect(() => levels(encode([0, 1, 2, 3, 0, 1, 2, 1], 2), 0, 2 + 1, 2, new Uint8Array(8), 8)).toThrow(/level 3 above the column's maximum 2/);
    expect(() => levels(encode(Array(9).fill(3), 2), 0, 2, 2, new Uint8Array(9), 9)).toThrow(/level 3 above/);
  });

  it('refuses runs that end before the values do', () => {
    const bytes = encode([1, 2, 3, 4, 5, 6, 7, 0], 3);
    expect(() => rleHybrid(bytes, 0, bytes.length, 3, new Int32Array(16), 0, 16)).toThrow(/ends after 8 of 16/);
    expect(() => rleHybrid(bytes, 0, 2, 3, new Int32Array(8), 0, 8)).toThrow(/past the end/);
  });
});
