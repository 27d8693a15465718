// A file's column types from its footer alone (reader/parquet/column-types.ts, reader/file-types.ts)
// against parquet-wasm's reading of the same file (the oracle: the types Sluice took before).
// Where the footer's types are certain they must be parquet-wasm's exactly; where not, the answer
// must be null, so that parquet-wasm reads the schema.
import { openAsBlob, openSync, readSync, fstatSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import {
  Bool,
  DateDay,
  Dictionary,
  Duration,
  Float32,
  Float64,
  Int16,
  Int32,
  Int64,
  Int8,
  LargeUtf8,
  List,
  Field,
  Table,
  TimestampMillisecond,
  Uint16,
  Uint32,
  Uint64,
  Uint8,
  Utf8,
  TimeUnit,
} from 'apache-arrow';
import { beforeAll, describe, expect, it } from 'vitest';
import { footerColumns } from '../../src/reader/parquet/column-types.js';
import { readFooter } from '../../src/reader/parquet/check.js';
import { footerTypes, ipcTypes, type FileTypes } from '../../src/reader/file-types.js';
import { writeParquetTable } from '../../src/output/parquet-write.js';
import { tempDir, vec } from '../helpers.js';

const dir = tempDir('sluice-column-types-');
const files: Record<string, string> = {};

beforeAll(async () => {
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  const duck = async (name: string, select: string): Promise<void> => {
    files[name] = join(dir, `${name}.parquet`);
    await c.run(`COPY (SELECT ${select} FROM range(50) t(i)) TO '${files[name]}' (FORMAT parquet)`);
  };
  await duck(
    'duckdb-plain',
    `i::TINYINT a, i::SMALLINT b, i::INTEGER c, i::BIGINT d, i::UTINYINT e, i::USMALLINT f, i::UINTEGER g, i::UBIGINT h,
     i::FLOAT fl, i::DOUBLE db, i::VARCHAR s, i % 2 = 0 AS bo,
     CASE WHEN i % 5 = 0 THEN NULL ELSE [i, i + 1]::BIGINT[] END AS li, [i::VARCHAR] AS ls, [i::DOUBLE] AS ld`,
  );
  await duck('duckdb-date', `i::INTEGER a, DATE '2020-01-01' + i::INTEGER AS dt`);
  await duck('duckdb-timestamp', `i::BIGINT a, TIMESTAMP '2020-01-01' + INTERVAL (i) SECOND AS ts`);
  await duck('duckdb-decimal', `i::DECIMAL(9, 2) AS dc`);
  await duck('duckdb-blob', `i::VARCHAR::BLOB AS bl`);
  await duck('duckdb-struct', `{'x': i} AS st`);
  await duck('duckdb-map', `MAP {i: i} AS mp`);
  c.closeSync();
  db.closeSync();

  const n = [1, 2, null, 4];
  const sluice = async (name: string, cols: Record<string, ReturnType<typeof vec>>): Promise<void> => {
    files[name] = join(dir, `${name}.parquet`);
    await writeParquetTable(files[name], new Table(cols));
  };
  // parquet-wasm (arrow-rs) embeds the Arrow schema (ARROW:schema) in what it writes.
  await sluice('sluice-plain', {
    i8: vec(new Int8(), n),
    u8: vec(new Uint8(), n),
    i16: vec(new Int16(), n),
    u16: vec(new Uint16(), n),
    i32: vec(new Int32(), n),
    // Stored as INT32; typed UInt32 (int64 for Sluice) by the Parquet type and the Arrow schema alike.
    u32: vec(new Uint32(), n),
    i64: vec(
      new Int64(),
      n.map((x) => (x === null ? null : BigInt(x))),
    ),
    u64: vec(
      new Uint64(),
      n.map((x) => (x === null ? null : BigInt(x))),
    ),
    f32: vec(new Float32(), n),
    f64: vec(new Float64(), n),
    s: vec(new Utf8(), ['a', 'b', null, 'd']),
    ls: vec(new LargeUtf8(), ['a', 'b', null, 'd']),
    dict: vec(new Dictionary(new Utf8(), new Int32()), ['a', 'b', null, 'a']),
    b: vec(new Bool(), [true, false, null, true]),
    l: vec(new List(new Field('item', new Int64(), true)), [[1n], [], null, [2n, 3n]]),
    lf: vec(new List(new Field('item', new Float32(), true)), [[1], [], null, [2, 3]]),
  });
  await sluice('sluice-timestamp', { i: vec(new Int32(), n), ts: vec(new TimestampMillisecond(), [1, 2, null, 4]) });
  await sluice('sluice-date', { d: vec(new DateDay(), [0, 1, null, 3]) });
  // A duration is stored as a plain INT64: only the embedded Arrow schema says it is not a number.
  await sluice('sluice-duration', {
    i: vec(new Int32(), n),
    du: vec(
      new Duration(TimeUnit.MILLISECOND),
      n.map((x) => (x === null ? null : BigInt(x))),
    ),
  });
}, 60_000);

/** The file's types as parquet-wasm reads them (what Sluice took before). */
async function oracle(file: string): Promise<FileTypes> {
  const pw = await import('parquet-wasm');
  const f = await pw.ParquetFile.fromFile(await openAsBlob(file));
  try {
    return await ipcTypes(f.schema().intoIPCStream());
  } finally {
    f.free();
  }
}

/** The file's footer as Sluice's parser reads it. */
function footerOf(file: string): ReturnType<typeof readFooter> {
  const fd = openSync(file, 'r');
  try {
    return readFooter(fstatSync(fd).size, (offset, length) => {
      const b = new Uint8Array(length);
      readSync(fd, b, 0, length, offset);
      return b;
    });
  } finally {
    closeSync(fd);
  }
}

/** The file's types from its footer, or null where the footer leaves them to parquet-wasm. */
async function fromFooter(file: string): Promise<FileTypes | null> {
  const cols = footerColumns(footerOf(file));
  return cols === null ? null : await footerTypes(cols);
}

const plainly = (t: FileTypes): Record<string, unknown> => ({ types: Object.fromEntries(t.types), unsupported: Object.fromEntries(t.unsupported) });

describe('column types from the footer', () => {
  it.for(['duckdb-plain', 'sluice-plain'])('%s: every column typed from the footer, exactly as parquet-wasm types it', async (name) => {
    const want = await oracle(files[name]!);
    const got = await fromFooter(files[name]!);
    expect(got).not.toBeNull();
    expect(plainly(got!)).toEqual(plainly(want));
    expect(want.unsupported.size).toBe(0);
    // The widening cases: unsigned 32-bit to int64, booleans to int32, lists of strings.
    if (name === 'sluice-plain') expect([got!.types.get('u32'), got!.types.get('b')]).toEqual([{ kind: 'int64' }, { kind: 'int32' }]);
    else
      expect([got!.types.get('g'), got!.types.get('bo'), got!.types.get('ls')]).toEqual([
        { kind: 'int64' },
        { kind: 'int32' },
        { kind: 'list', child: 'utf8' },
      ]);
  });

  it.for([
    'duckdb-date',
    'duckdb-timestamp',
    'duckdb-decimal',
    'duckdb-blob',
    'duckdb-struct',
    'duckdb-map',
    'sluice-timestamp',
    'sluice-date',
    'sluice-duration',
  ])('%s: a column beyond plain numbers and strings leaves the schema to parquet-wasm', async (name) => {
    expect(await fromFooter(files[name]!)).toBeNull();
    // parquet-wasm still reads it (the open falls back to it).
    const want = await oracle(files[name]!);
    expect(want.types.size + want.unsupported.size).toBeGreaterThan(0);
  });

  it('the duration is turned down by its embedded Arrow schema, not by its Parquet type', async () => {
    const cols = footerColumns(footerOf(files['sluice-duration']!));
    expect(cols?.columns).toEqual([
      ['i', { kind: 'int32' }],
      ['du', { kind: 'int64' }],
    ]);
    expect(cols?.arrowSchema).toBeTruthy();
    expect((await oracle(files['sluice-duration']!)).unsupported.get('du')).toMatch(/Duration/);
  });

  it('an embedded Arrow schema that does not parse leaves the schema to parquet-wasm', async () => {
    const cols = { columns: [['a', { kind: 'int32' }] as const], arrowSchema: Buffer.from('not an arrow schema').toString('base64') };
    expect(await footerTypes(cols)).toBeNull();
    expect(await footerTypes({ ...cols, arrowSchema: null })).not.toBeNull();
  });
});
