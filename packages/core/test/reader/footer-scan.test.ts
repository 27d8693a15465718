// The footer read row group by row group (reader/parquet/footer-scan.ts, check.ts `readFooter`):
// the metadata must be exactly what hyparquet parses from the whole footer (the oracle: what the
// decoders read before), row groups are parsed on first use, and a damaged footer, wherever it is
// damaged, is refused in Sluice's words (a FileRefusal), never with a parser's error or a hang.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { parquetMetadata } from 'hyparquet';
import { deserializeTCompactProtocol } from 'hyparquet/src/thrift.js';
import type { FileMetaData } from 'hyparquet/src/types.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { FileRefusal, readFooter, rowGroupRows } from '../../src/reader/parquet/check.js';
import { footerWith, scanFooter } from '../../src/reader/parquet/footer-scan.js';
import { encodeThrift, type Thrift } from '../../src/reader/parquet/thrift.js';
import { listI64, str, tempDir, writeParquet, writeSmall } from '../helpers.js';

const dir = tempDir('sluice-footer-scan-');
const files: Record<string, Uint8Array> = {};

beforeAll(async () => {
  // arrow-rs (parquet-wasm): statistics, an embedded Arrow schema, 5 row groups.
  files.small = readFileSync(writeSmall(join(dir, 'small.parquet'), 5000, 1000));
  // A list column and a string column with statistics, and 20 row groups: a list header in its long form.
  const n = 2000;
  writeParquet(
    join(dir, 'lists.parquet'),
    {
      ids: listI64(Array.from({ length: n }, (_, i) => (i % 9 === 0 ? null : Array.from({ length: i % 4 }, (_, j) => BigInt(i * 10 + j))))),
      name: str(Array.from({ length: n }, (_, i) => (i % 13 === 0 ? null : `n${i}`))),
    },
    100,
  );
  files.lists = readFileSync(join(dir, 'lists.parquet'));
  // DuckDB: its own layout of the footer (key-value metadata, created_by, no Arrow schema).
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  const path = join(dir, 'duckdb.parquet');
  await c.run(`COPY (SELECT i::BIGINT AS a, 'x' || (i % 97)::VARCHAR AS s FROM range(30000) t(i)) TO '${path}' (FORMAT parquet, ROW_GROUP_SIZE 2048)`);
  files.duckdb = readFileSync(path);
});

const readAtOf =
  (b: Uint8Array) =>
  (at: number, n: number): Uint8Array =>
    b.subarray(at, at + n);

/** hyparquet's parse of the whole footer: what `readFooter` returned before it read row groups lazily. */
function wholeFooter(b: Uint8Array): FileMetaData {
  const len = new DataView(b.buffer, b.byteOffset, b.byteLength).getUint32(b.length - 8, true);
  return parquetMetadata(b.slice(b.length - 8 - len).buffer);
}

/** `b` with its footer's raw thrift changed by `edit`. */
function withFooter(b: Uint8Array, edit: (md: Thrift) => void): Uint8Array {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const len = view.getUint32(b.length - 8, true);
  const md = deserializeTCompactProtocol({ view, offset: b.length - 8 - len }) as Thrift;
  edit(md);
  return withFooterBytes(b, encodeThrift(md));
}

/** `b` with `footer` (thrift) in place of its footer. */
function withFooterBytes(b: Uint8Array, footer: Uint8Array): Uint8Array {
  const len = new DataView(b.buffer, b.byteOffset, b.byteLength).getUint32(b.length - 8, true);
  const data = b.subarray(0, b.length - 8 - len);
  const out = new Uint8Array(data.length + footer.length + 8);
  out.set(data);
  out.set(footer, data.length);
  const v = new DataView(out.buffer);
  v.setUint32(data.length + footer.length, footer.length, true);
  out.set(new TextEncoder().encode('PAR1'), data.length + footer.length + 4);
  return out;
}

describe('the footer, row group by row group', () => {
  it.each(['small', 'lists', 'duckdb'])('%s: the same metadata as hyparquet parsing the whole footer', (name) => {
    const b = files[name]!;
    const md = readFooter(b.length, readAtOf(b));
    const whole = wholeFooter(b);
    expect(md.row_groups.length).toBe(whole.row_groups.length);
    expect(md.row_groups.length).toBeGreaterThanOrEqual(5);
    expect(rowGroupRows(md)).toEqual(whole.row_groups.map((rg) => Number(rg.num_rows)));
    // Every field, the row groups' statistics and key-value metadata included.
    expect({ ...md, row_groups: [...md.row_groups] }).toEqual(whole);
  });

  it('parses a row group when it is first read, and keeps it', () => {
    const b = files.lists!;
    const md = readFooter(b.length, readAtOf(b));
    const rg = md.row_groups[7]!;
    expect(md.row_groups[7]).toBe(rg);
    expect(rg).toEqual(wholeFooter(b).row_groups[7]);
    expect(md.row_groups[20]).toBeUndefined();
  });

  it('refuses a damaged row group alone, with its place, each time it is read', () => {
    const b = withFooter(files.small!, (md) => {
      const rg = (md.field_4 as Thrift[])[2]!;
      const meta = (rg.field_1 as Thrift[])[1]!.field_3 as Thrift;
      meta.field_9 = 10n ** 12n; // data_page_offset, past the file
      meta.field_11 = undefined; // and no dictionary page before it
    });
    const md = readFooter(b.length, readAtOf(b));
    expect(md.row_groups[1]!.columns.length).toBe(4);
    expect(md.row_groups[3]!.num_rows).toBe(1000n);
    for (let i = 0; i < 2; i++) {
      expect(() => md.row_groups[2]).toThrow(FileRefusal);
      expect(() => md.row_groups[2]).toThrow(/^row group 2, column id: the footer places its pages at bytes 1000000000000\.\./);
    }
  });

  it('refuses a row count that is not one when the footer is read, as before', () => {
    const b = withFooter(files.small!, (md) => {
      (md.field_4 as Thrift[])[3]!.field_3 = -5n;
    });
    expect(() => readFooter(b.length, readAtOf(b))).toThrow(/^row group 3: the footer gives -5 row count$/);
  });

  it('refuses a footer damaged anywhere with a FileRefusal, never a parser error or a hang', () => {
    const pristine = files.lists!;
    const len = new DataView(pristine.buffer, pristine.byteOffset).getUint32(pristine.length - 8, true);
    const footer = pristine.slice(pristine.length - 8 - len, pristine.length - 8);
    let seed = 7;
    const rnd = (): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
    let refused = 0;
    let read = 0;
    for (let k = 0; k < 400; k++) {
      const damaged = footer.slice();
      const at = Math.floor(rnd() * damaged.length);
      damaged[at] = k % 3 === 0 ? 0xff : k % 3 === 1 ? 0 : Math.floor(rnd() * 256);
      const b = withFooterBytes(pristine, damaged);
      try {
        const md = readFooter(b.length, readAtOf(b));
        for (let r = 0; r < md.row_groups.length; r++) {
          try {
            void md.row_groups[r]!.columns.length;
            read++;
          } catch (e) {
            expect(e, `byte ${at}, row group ${r}`).toBeInstanceOf(FileRefusal);
            refused++;
          }
        }
      } catch (e) {
        expect(e, `byte ${at}`).toBeInstanceOf(FileRefusal);
        refused++;
      }
    }
    // Both happen: damage that still parses (a changed value) and damage that does not.
    expect(refused).toBeGreaterThan(100);
    expect(read).toBeGreaterThan(0);
  });
});

describe('scanFooter', () => {
  /** A struct's bytes (with its stop) from a raw thrift object. */
  const bytesOf = (s: Thrift): Uint8Array => encodeThrift(s);

  it('keeps every other field, of every type, as hyparquet reads it', () => {
    const top: Thrift = {
      field_1: 2,
      field_2: [{ field_4: new TextEncoder().encode('schema') }],
      field_3: 12345678901n,
      field_4: [{ field_1: [], field_2: 10n, field_3: 7n }],
      field_5: [{ field_1: new TextEncoder().encode('k'), field_2: new TextEncoder().encode('v') }],
      field_6: new TextEncoder().encode('writer'),
      field_7: [true, false, true],
      field_9: false,
      field_40: { field_1: -3 },
    };
    const b = bytesOf(top);
    const scan = scanFooter(b, b.length);
    expect(scan.hasRowGroups).toBe(true);
    expect(scan.rowGroups).toEqual([expect.objectContaining({ numRows: 7n })]);
    const back = deserializeTCompactProtocol({ view: new DataView(footerWith(scan, 0)), offset: 0 }) as Thrift;
    expect(back).toEqual(top);
    const none = deserializeTCompactProtocol({ view: new DataView(footerWith(scan, null)), offset: 0 }) as Thrift;
    expect(none.field_4).toEqual([]);
  });

  it('skips doubles, maps, sets and uuids, which the footer may carry in fields it does not know', () => {
    // FileMetaData { 1: i32 1, 20: double 0.5, 21: map<i32,binary> {1: "a"}, 22: set<i32> {3}, 23: uuid, 4: [] }
    const i32Field1 = [0x15, 0x02]; // short header: delta 1, i32; zigzag 1
    const doubleField20 = [0x07, 0x28, ...new Uint8Array(new Float64Array([0.5]).buffer)]; // long form: double, id 20
    const mapField21 = [0x0b, 0x2a, 0x01, 0x58, 0x02, 0x01, 0x61]; // map, id 21: 1 entry, i32 key 1, binary "a"
    const setField22 = [0x0a, 0x2c, 0x15, 0x06]; // set, id 22: 1 i32, 3
    const uuidField23 = [0x0d, 0x2e, ...new Array<number>(16).fill(0xab)]; // uuid, id 23
    const rowGroups = [0x09, 0x08, 0x0c]; // list, id 4: no structs
    const b = Uint8Array.from([...i32Field1, ...doubleField20, ...mapField21, ...setField22, ...uuidField23, ...rowGroups, 0x00]);
    const scan = scanFooter(b, b.length);
    expect(scan.rowGroups).toEqual([]);
    expect(scan.hasRowGroups).toBe(true);
    // All but field 4's header and list and the stop; field 1's header in its long form, a byte longer.
    expect(scan.rest.length).toBe(b.length - 3);
  });

  it('throws a RangeError on thrift it cannot walk: past the end, an unknown type, nesting without end', () => {
    const ok = bytesOf({ field_1: 2, field_4: [{ field_3: 1n }] });
    expect(() => scanFooter(ok, ok.length - 2)).toThrow(RangeError);
    expect(() => scanFooter(Uint8Array.from([0x1e, 0x00]), 2)).toThrow(/unknown type 14/);
    // A binary claiming more bytes than the footer has.
    expect(() => scanFooter(Uint8Array.from([0x18, 0xff, 0xff, 0x03, 0x00]), 5)).toThrow(RangeError);
    // A list claiming 2^40 elements.
    expect(() => scanFooter(Uint8Array.from([0x19, 0xf5, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 0x00]), 9)).toThrow(RangeError);
    // Structs nested 100 deep.
    const deep = Uint8Array.from([...new Array(100).fill(0x1c), ...new Array(101).fill(0x00)]);
    expect(() => scanFooter(deep, deep.length)).toThrow(/nests deeper than 64/);
  });
});
