// The client's Arrow stream reader must give exactly what apache-arrow's tableFromIPC gives: the
// same schema, the same Data tree (types, lengths, null counts, buffers byte for byte and of the
// same array classes), with columns viewing the body; and fall back to tableFromIPC for streams
// outside its narrow path.
import { Data, Field, Int32, List, Table, Utf8, makeData, makeVector, tableFromArrays, tableFromIPC, tableToIPC, util, vectorFromArray } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { generateDataset, getPreset } from '@sluice/core/gen';
import { pipeline, type Batch } from '@sluice/core';
import { tableFromArrowStream } from '@sluice/client/arrow';
import { batchToArrowStream } from '../../src/serve/encode.js';
import { join } from 'node:path';
import { tempDir } from '../helpers.js';

/** The body as the client holds it: a buffer of its own. */
const own = (u: Uint8Array): Uint8Array => {
  const b = Buffer.allocUnsafeSlow(u.byteLength);
  b.set(u);
  return b;
};

function expectSameData(a: Data, b: Data, path: string): void {
  expect(util.compareTypes(a.type, b.type), path).toBe(true);
  expect([a.offset, a.length, a.nullCount, a.stride], path).toEqual([b.offset, b.length, b.nullCount, b.stride]);
  for (const k of ['values', 'valueOffsets', 'nullBitmap', 'typeIds'] as const) {
    const x = a[k] as ArrayBufferView | undefined;
    const y = b[k] as ArrayBufferView | undefined;
    expect(x === undefined, `${path}.${k}`).toBe(y === undefined);
    if (x === undefined || y === undefined) continue;
    expect(x.constructor, `${path}.${k}`).toBe(y.constructor);
    expect(Buffer.from(x.buffer, x.byteOffset, x.byteLength).equals(Buffer.from(y.buffer, y.byteOffset, y.byteLength)), `${path}.${k}`).toBe(true);
  }
  expect(a.children.length, path).toBe(b.children.length);
  a.children.forEach((c, i) => expectSameData(c, b.children[i]!, `${path}/${i}`));
}

function expectSameTable(a: Table, b: Table): void {
  expect(util.compareSchemas(a.schema, b.schema)).toBe(true);
  expect(a.schema.fields.map((f) => [f.name, f.nullable, String(f.type)])).toEqual(b.schema.fields.map((f) => [f.name, f.nullable, String(f.type)]));
  expect(a.numRows).toBe(b.numRows);
  expect(a.batches.length).toBe(b.batches.length);
  a.batches.forEach((rb, i) => expectSameData(rb.data, b.batches[i]!.data, `batch${i}`));
  const rows = (t: Table): string => JSON.stringify(t.toArray(), (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));
  expect(rows(a)).toBe(rows(b));
}

describe('tableFromArrowStream', () => {
  it('reads served RM1 batches exactly as tableFromIPC does, columns viewing the body', async () => {
    const data = join(tempDir('sluice-arrow-ipc-'), 'rm1.parquet');
    await generateDataset({ preset: 'rm1', rows: 300, out: data, seed: 3, rowGroupSize: 100 });
    const plan = { ...getPreset('rm1').defaultPlan(), batchSize: 128, backend: { name: 'reference' } };
    const batches: Batch[] = [];
    for await (const b of pipeline(plan, { input: data })) batches.push(b);
    expect(batches.length).toBe(3); // the last one short
    for (const b of [...batches, ...batches]) {
      // twice: the second time with the schema remembered
      const body = own(batchToArrowStream(b, plan.label ?? null));
      const t = tableFromArrowStream(body);
      expectSameTable(t, tableFromIPC(body));
      // Read by the fast path (not the fallback): the remembered schema's types are reused.
      expect(tableFromArrowStream(own(body)).schema.fields[20]!.type).toBe(t.schema.fields[20]!.type);
      const sparse = t.getChild(b.sparse.keys[0]!)!.data[0]!;
      expect(sparse.valueOffsets.buffer).toBe(body.buffer);
      expect(sparse.children[0]!.values.buffer).toBe(body.buffer);
    }
  });

  it('keeps nulls, nested lists and several record batches', () => {
    const ints = vectorFromArray([1, null, 3, 4, null], new Int32());
    const offsets = new Int32Array([0, 2, 2, 5, 6, 6]);
    const child = makeData({ type: new Int32(), length: 6, data: new Int32Array([1, 2, 3, 4, 5, 6]) });
    const lists = makeVector(
      makeData({
        type: new List(new Field('item', new Int32(), true)),
        length: 5,
        valueOffsets: offsets,
        child,
        nullCount: 1,
        nullBitmap: new Uint8Array([0b11011]),
      }),
    );
    const t1 = new Table({ a: ints, l: lists });
    const both = new Table([...t1.batches, ...new Table({ a: vectorFromArray([7, 8, 9, 10, 11], new Int32()), l: lists }).batches]);
    for (const t of [t1, both]) {
      const body = own(tableToIPC(t, 'stream'));
      const got = tableFromArrowStream(body);
      expectSameTable(got, tableFromIPC(body));
      // Read by the fast path (not the fallback): the remembered schema's types are reused.
      expect(tableFromArrowStream(own(body)).schema.fields[1]!.type).toBe(got.schema.fields[1]!.type);
    }
  });

  it('falls back to tableFromIPC for what it does not read itself', () => {
    const strings = new Table({ s: vectorFromArray(['a', 'bc', null], new Utf8()) });
    const dict = tableFromArrays({ d: ['x', 'y', 'x'] }); // a dictionary column
    const empty = new Table({ a: vectorFromArray([], new Int32()) });
    for (const t of [strings, dict, empty]) {
      const body = own(tableToIPC(t, 'stream'));
      expectSameTable(tableFromArrowStream(body), tableFromIPC(body));
    }
  });
});
