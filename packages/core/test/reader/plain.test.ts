// Pushdown on PLAIN pages (reader/parquet/plain.ts, plain-hex.ts, reader/dict-ops.ts): the fused
// PLAIN-page hex parser against @sluice/ops' hex2int, and derived columns of chunks that are PLAIN
// throughout or switch from dictionary to PLAIN pages part way, against the ops' reference kernels
// run on the same column decoded as values.
import { closeSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { Float64 } from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { chainFeature, gatherColumn, OPS, runOps, type Column, type ColumnType, type OpChain } from '@sluice/ops';
import {
  decodeDerived,
  decodeDerivedIndexed,
  decodeListDerivedIndexed,
  gatherIndexed,
  gatherIndexedList,
  type DerivedSpec,
} from '../../src/reader/dict-ops.js';
import { readFooter } from '../../src/reader/parquet/check.js';
import { decodeFlatRowGroup, type ReadAt } from '../../src/reader/parquet/index.js';
import { parsePlainHex } from '../../src/reader/parquet/plain-hex.js';
import { pageZstd } from '../../src/reader/zstd.js';
import { permutation } from '../../src/util/rng.js';
import { i64, listI64, str, tempDir, vec, writeParquet } from '../helpers.js';
import { chunkShape, pageEncodings, writeArrowMixed, writeDuckdb } from '../writers.js';

const dir = tempDir('sluice-plain-');
const CTX = { features: new Map(), featureTypes: new Map(), column: 'c' };

/** A PLAIN BYTE_ARRAY page body: each string as a 4-byte little-endian length and its bytes. */
function plainPage(values: readonly string[]): Uint8Array {
  const parts = values.map((v) => Buffer.from(v, 'latin1'));
  const out = Buffer.alloc(parts.reduce((a, b) => a + 4 + b.length, 0));
  let p = 0;
  for (const b of parts) {
    out.writeUInt32LE(b.length, p);
    b.copy(out, p + 4);
    p += 4 + b.length;
  }
  return new Uint8Array(out.buffer, out.byteOffset, out.length);
}

/** The ops' hex2int on the strings as a utf8 column: its int64 values and validity, or the error it throws. */
function opsHex(values: readonly string[]): { values: BigInt64Array; valid: Uint8Array } | Error {
  const data = Buffer.from(values.join(''), 'latin1');
  const offsets = new Int32Array(values.length + 1);
  values.forEach((v, i) => (offsets[i + 1] = offsets[i]! + Buffer.byteLength(v, 'latin1')));
  try {
    const c = OPS.get('hex2int')!.apply({ type: 'utf8', offsets, data: new Uint8Array(data), valid: null }, {}, CTX);
    if (c.type !== 'int64') throw new Error('not int64');
    return { values: c.values, valid: c.valid ?? new Uint8Array(values.length).fill(1) };
  } catch (e) {
    return e as Error;
  }
}

function parsed(values: readonly string[]): { r: string; values: BigInt64Array; valid: Uint8Array } {
  const words = new Int32Array(2 * values.length);
  const valid = new Uint8Array(values.length);
  const r = parsePlainHex(plainPage(values), 0, values.length, words, valid, 0);
  return { r, values: new BigInt64Array(words.buffer), valid };
}

describe('parsePlainHex (hex2int straight from a PLAIN page)', () => {
  it('gives the ops’ hex2int bit for bit: 1 to 16 digits, either case, 16 digits wrapping negative, empty as null', () => {
    let seed = 12345;
    const rnd = (n: number): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) % n;
    const digits = '0123456789abcdefABCDEF';
    const values = Array.from({ length: 5000 }, (_, i) => (i % 50 === 7 ? '' : Array.from({ length: 1 + rnd(16) }, () => digits[rnd(digits.length)]).join('')));
    values.push('ffffffffffffffff', '8000000000000000', '7fffffffffffffff', '0', 'F', '0000000000000001');
    const want = opsHex(values);
    if (want instanceof Error) throw want;
    const got = parsed(values);
    expect(got.r).toBe('ok');
    expect(got.values).toEqual(want.values);
    expect(got.valid).toEqual(want.valid);
    expect(got.values[values.length - 6]).toBe(-1n);
  });

  it.for(['0x1f', ' 1f', '1f ', '1g', 'g', '-1', '+1', '1'.repeat(17), 'é', '1\u00001', ':', '@', '`', 'G'])(
    'rejects %j where the ops’ hex2int throws',
    (bad) => {
      expect(opsHex(['ab', bad])).toBeInstanceOf(Error);
      expect(parsed(['ab', bad]).r).toBe('invalid');
      // In every position of a longer value too: each digit of each pair is checked.
      if (bad.length === 1) for (let at = 0; at < 6; at++) expect(parsed(['abcdef'.slice(0, at) + bad + 'abcdef'.slice(at)]).r).toBe('invalid');
    },
  );

  it('reports a page whose strings run past its end as damaged', () => {
    const page = plainPage(['abcd', 'ef01']);
    const words = new Int32Array(4);
    const valid = new Uint8Array(2);
    expect(parsePlainHex(page.subarray(0, page.length - 1), 0, 2, words, valid, 0)).toBe('damaged');
    expect(parsePlainHex(page.subarray(0, 10), 0, 2, words, valid, 0)).toBe('damaged');
    expect(parsePlainHex(page, 0, 2, words, valid, 0)).toBe('ok');
  });
});

// ---- derived columns of PLAIN and mixed chunks against the reference kernels ----

const N = 4000;
const ids = Array.from({ length: N }, (_, i) => i);
/** Distinct values (so a small dictionary overflows), with nulls and, in C, empty strings. */
const source = writeParquet(
  join(dir, 'src.parquet'),
  {
    C: str(ids.map((i) => (i % 31 === 4 ? null : i % 53 === 9 ? '' : ((i * 2654435761) % 2 ** 40).toString(16)))),
    B: i64(ids.map((i) => (i % 29 === 3 ? null : BigInt(i * 7919 - 9000) * 100003n))),
    F: vec(
      new Float64(),
      ids.map((i) => (i % 37 === 1 ? null : Math.sin(i) * 1000)),
    ),
    L: listI64(ids.map((i) => (i % 23 === 0 ? null : Array.from({ length: i % 6 }, (_, j) => BigInt(i * 131 + j * 7) - 50n)))),
  },
  1000,
);

const types = new Map<string, ColumnType>([
  ['C', { kind: 'utf8' }],
  ['B', { kind: 'int64' }],
  ['F', { kind: 'float64' }],
  ['L', { kind: 'list', child: 'int64' }],
]);

const chain = (ops: Array<{ op: string } & Record<string, unknown>>): OpChain =>
  ops.map(({ op, ...params }) => ({ op, params: OPS.get(op)!.validate(params) })) as OpChain;

const DERIVED: Array<DerivedSpec & { ops: OpChain }> = [
  { name: 'hexSig', input: 'C', ops: chain([{ op: 'hex2int' }, { op: 'sigridHash', salt: 7, max: 100003 }]) },
  { name: 'hexFill', input: 'C', ops: chain([{ op: 'hex2int' }, { op: 'fillNull', value: 5 }, { op: 'modulus', m: 1000 }]) },
  {
    name: 'mod',
    input: 'B',
    ops: chain([
      { op: 'fillNull', value: -3 },
      { op: 'modulus', m: 997 },
    ]),
  },
  {
    name: 'log',
    input: 'F',
    ops: chain([
      { op: 'fillNull', value: 0 },
      { op: 'clamp', min: 0, max: 500 },
      { op: 'log', offset: 1 },
    ]),
  },
  { name: 'bucket', input: 'F', ops: chain([{ op: 'bucketize', borders: [-500, 0, 10, 100] }]) },
];
const LISTS: Array<DerivedSpec & { ops: OpChain }> = [
  {
    name: 'list',
    input: 'L',
    ops: chain([
      { op: 'clamp', min: 0, max: 400000 },
      { op: 'sigridHash', salt: 1, max: 5000 },
    ]),
  },
];
const byName = new Map([...DERIVED, ...LISTS].map((d) => [d.name, chainFeature(d.name, d.input, d.ops)]));
const NONE = new Map();

/** The reference kernels from op `from` (the apply the decode worker gives dict-ops, without fast kernels). */
const apply = (name: string, col: Column, from: number): Column => {
  const f = byName.get(name)!;
  return runOps(f, col, from, f.ops.length, NONE, NONE, NONE);
};

const fds: number[] = [];
afterAll(() => fds.forEach((fd) => closeSync(fd)));

async function reader(file: string): Promise<{ md: ReturnType<typeof readFooter>; readAt: ReadAt }> {
  const fd = openSync(file, 'r');
  fds.push(fd);
  const readAt: ReadAt = (offset, length) => {
    const b = new Uint8Array(length);
    readSync(fd, b, 0, length, offset);
    return b;
  };
  const size = (await import('node:fs')).fstatSync(fd).size;
  return { md: readFooter(size, readAt), readAt };
}

/** The two other writers these suites read: DuckDB (PLAIN throughout) and Arrow with a small dictionary (dictionary, then PLAIN). */
const WRITERS = [
  ['DuckDB (PLAIN throughout)', 'duckdb'],
  ['Arrow with a small dictionary (dictionary, then PLAIN)', 'mixed'],
] as const;

/** `src` rewritten by `writer` as `dir/<name>-<writer>.parquet` (Arrow: row groups of 1000 rows). */
const rewrite = async (writer: 'duckdb' | 'mixed', src: string, name: string): Promise<string> =>
  writer === 'duckdb' ? writeDuckdb(src, join(dir, `${name}-duck.parquet`)) : writeArrowMixed(src, join(dir, `${name}-mixed.parquet`), { rowGroupRows: 1000 });

describe.each(WRITERS)('derived columns of chunks written by %s', (_, writer) => {
  it('are the reference kernels’ results on the column read as values, row for row', async () => {
    const file = await rewrite(writer, source, 'src');
    const enc = pageEncodings(file);
    if (writer === 'duckdb') expect(chunkShape(enc, 'C')).toBe('plain');
    else for (const c of ['C', 'B', 'F', 'L.list.item']) expect(chunkShape(enc, c)).toBe('mixed');
    const { md, readAt } = await reader(file);
    const zstd = await pageZstd();
    for (let rg = 0; rg < md.row_groups.length; rg++) {
      const raw = decodeFlatRowGroup(md, rg, ['C', 'B', 'F', 'L'], types, readAt, zstd).columns;
      const got = decodeDerivedIndexed(md, rg, DERIVED, types, readAt, zstd, apply);
      const lists = decodeListDerivedIndexed(md, rg, LISTS, types, readAt, zstd, apply, () => Infinity);
      expect([...got.keys()]).toEqual(DERIVED.map((d) => d.name));
      for (const d of DERIVED) expect(gatherIndexed(got.get(d.name)!), `${d.name}, row group ${rg}`).toEqual(apply(d.name, raw.get(d.input)!, 0));
      // Gathered as they are computed, each input's row indices reused by the next (two inputs have two features each).
      const gathered = decodeDerived(md, rg, DERIVED, types, readAt, zstd, apply);
      expect([...gathered.keys()]).toEqual(DERIVED.map((d) => d.name));
      for (const d of DERIVED) expect(gathered.get(d.name), `${d.name}, gathered, row group ${rg}`).toEqual(apply(d.name, raw.get(d.input)!, 0));
      expect(gatherIndexedList(lists.get('list')!)).toEqual(apply('list', raw.get('L')!, 0));
      expectPermuted(md, rg, readAt, zstd, raw);
    }
  });
});

/**
 * decodeDerivedIndexed with an order against the reference gathered in the window's order: the whole row group
 * permuted, and a resumed window's tail (its first rows skipped). Two inputs have two features
 * each: an input's features share its permuted indices, and the next input's do not overwrite them.
 */
function expectPermuted(
  md: ReturnType<typeof readFooter>,
  rg: number,
  readAt: ReadAt,
  zstd: Awaited<ReturnType<typeof pageZstd>>,
  raw: ReadonlyMap<string, Column>,
): void {
  const rows = Number(md.row_groups[rg]!.num_rows);
  const perm = permutation(rows, 42, 0, rg);
  for (const order of [perm, perm.subarray(Math.floor(rows / 3))]) {
    const got = decodeDerivedIndexed(md, rg, DERIVED, types, readAt, zstd, apply, undefined, order);
    expect([...got.keys()]).toEqual(DERIVED.map((d) => d.name));
    for (const d of DERIVED)
      expect(gatherIndexed(got.get(d.name)!), `${d.name}, permuted, row group ${rg}, ${order.length} rows`).toEqual(
        gatherColumn(apply(d.name, raw.get(d.input)!, 0), order),
      );
  }
}

it('puts the row indices of dictionary-encoded chunks in a shuffled window’s order as it decodes them', async () => {
  const { md, readAt } = await reader(source);
  const zstd = await pageZstd();
  expect(chunkShape(pageEncodings(source), 'C')).toBe('dictionary');
  for (let rg = 0; rg < md.row_groups.length; rg++)
    expectPermuted(md, rg, readAt, zstd, decodeFlatRowGroup(md, rg, ['C', 'B', 'F', 'L'], types, readAt, zstd).columns);
});

it('leaves a derived column to the pipeline when a PLAIN value is not hex (the pipeline reports it)', async () => {
  const bad = writeParquet(join(dir, 'bad.parquet'), { C: str(ids.map((i) => (i === 3333 ? 'xyz' : (i * 977).toString(16)))) }, 1000);
  const file = writeArrowMixed(bad, join(dir, 'bad-mixed.parquet'), { rowGroupRows: 1000 });
  const { md, readAt } = await reader(file);
  const zstd = await pageZstd();
  const hex = DERIVED.filter((d) => d.input === 'C');
  expect([...decodeDerivedIndexed(md, 2, hex, types, readAt, zstd, apply).keys()]).toEqual(['hexSig', 'hexFill']);
  expect([...decodeDerivedIndexed(md, 3, hex, types, readAt, zstd, apply).keys()]).toEqual([]);
});

it('keeps a chunk’s results once the next chunk is decoded, where the chain leaves the PLAIN values as they are', async () => {
  // No nulls and no dictionary: the results are used without a copy, unless they are the PLAIN
  // scratch itself (hex2int alone, parsed as the page was read; a chain that returns its input).
  const src = writeParquet(
    join(dir, 'nonull.parquet'),
    { C: str(ids.map((i) => (i * 2654435761).toString(16))), B: i64(ids.map((i) => BigInt(i) * 7n)) },
    1000,
  );
  const file = await writeDuckdb(src, join(dir, 'nonull-duckdb.parquet'));
  expect(chunkShape(pageEncodings(file), 'C')).toBe('plain');
  const { md, readAt } = await reader(file);
  const zstd = await pageZstd();
  const only: Array<DerivedSpec & { ops: OpChain }> = [
    { name: 'hexOnly', input: 'C', ops: chain([{ op: 'hex2int' }]) },
    { name: 'hexMod', input: 'C', ops: chain([{ op: 'hex2int' }, { op: 'modulus', m: 1000 }]) },
    { name: 'clampWide', input: 'B', ops: chain([{ op: 'clamp', min: -1, max: 1e15 }]) },
  ];
  for (const d of only) byName.set(d.name, chainFeature(d.name, d.input, d.ops));
  const kept = [];
  for (let rg = 0; rg < md.row_groups.length; rg++) {
    const got = decodeDerivedIndexed(md, rg, only, types, readAt, zstd, apply);
    kept.push(new Map([...got].map(([n, c]) => [n, gatherIndexed(c)])));
  }
  expect(kept.length).toBeGreaterThan(0);
  const all = decodeFlatRowGroup(md, 0, ['C', 'B'], types, readAt, zstd).columns;
  for (const d of only) expect(kept[0]!.get(d.name), d.name).toEqual(apply(d.name, all.get(d.input)!, 0));
});

// ---- list features cut by firstX: a chunk without a dictionary computes them as list columns ----

/** Lists of up to 8 ids (so firstX cuts some), and lists with null elements. */
const listSource = writeParquet(
  join(dir, 'lists.parquet'),
  {
    L: listI64(ids.map((i) => (i % 23 === 0 ? null : Array.from({ length: i % 9 }, (_, j) => BigInt(i * 131 + j * 7) - 50n)))),
    N: listI64(ids.map((i) => (i % 19 === 0 ? null : (Array.from({ length: i % 5 }, (_, j) => ((i + j) % 7 === 3 ? null : BigInt(i * 17 + j))) as bigint[])))),
  },
  1000,
);
const listTypes = new Map<string, ColumnType>([
  ['L', { kind: 'list', child: 'int64' }],
  ['N', { kind: 'list', child: 'int64' }],
]);
/** Each feature's per-value ops (what the decode worker applies to elements) and the firstX it keeps. */
const CUTS: Array<{ name: string; input: string; perValue: Array<{ op: string } & Record<string, unknown>>; keep: number }> = [
  {
    name: 'cut3',
    input: 'L',
    perValue: [
      { op: 'clamp', min: 0, max: 400000 },
      { op: 'sigridHash', salt: 1, max: 5000 },
    ],
    keep: 3,
  },
  { name: 'cut5', input: 'L', perValue: [{ op: 'modulus', m: 1000 }], keep: 5 },
  { name: 'whole', input: 'L', perValue: [{ op: 'sigridHash', salt: 2, max: 777 }], keep: Infinity },
  // A chain whose kernel hands back its input: the cut values, in scratch memory.
  { name: 'fill4', input: 'L', perValue: [{ op: 'fillNull', value: 1 }], keep: 4 },
  {
    name: 'nulls2',
    input: 'N',
    perValue: [
      { op: 'fillNull', value: 9 },
      { op: 'sigridHash', salt: 3, max: 1000 },
    ],
    keep: 2,
  },
];
const perValue = new Map(CUTS.map((d) => [d.name, chainFeature(d.name, d.input, chain(d.perValue))]));
/** The whole chain as the pipeline runs it: firstX first. */
const whole = new Map(
  CUTS.map((d) => [d.name, chainFeature(d.name, d.input, chain([...(d.keep === Infinity ? [] : [{ op: 'firstX', x: d.keep }]), ...d.perValue]))]),
);
const applyPerValue = (name: string, col: Column, from: number): Column => {
  const f = perValue.get(name)!;
  return runOps(f, col, from, f.ops.length, NONE, NONE, NONE);
};
const applyWhole = (name: string, col: Column): Column => {
  const f = whole.get(name)!;
  return runOps(f, col, 0, f.ops.length, NONE, NONE, NONE);
};
const keepOf = (name: string): number => CUTS.find((d) => d.name === name)!.keep;

describe.each(WRITERS)('list features cut by firstX, of chunks written by %s', (_, writer) => {
  it('are firstX then the reference kernels on the lists read as values, and stay so once the next row group is decoded', async () => {
    const file = await rewrite(writer, listSource, 'lists');
    const enc = pageEncodings(file);
    // DuckDB names a list's elements `element`, arrow-rs `item`.
    for (const c of ['L', 'N']) {
      const path = [...enc[0]!.keys()].find((k) => k.startsWith(`${c}.`))!;
      expect(chunkShape(enc, path), path).toBe(writer === 'duckdb' ? 'plain' : 'mixed');
    }
    const { md, readAt } = await reader(file);
    const zstd = await pageZstd();
    const got = [];
    for (const rg of md.row_groups.keys()) {
      const lists = decodeListDerivedIndexed(md, rg, CUTS, listTypes, readAt, zstd, applyPerValue, keepOf);
      expect([...lists.keys()]).toEqual(CUTS.map((d) => d.name));
      if (writer === 'duckdb') {
        // No dictionary: L's features come as list columns; N's, with null elements, indexed.
        for (const d of CUTS) expect('child' in lists.get(d.name)!, d.name).toBe(d.input === 'L');
      }
      got.push({ rg, lists: new Map([...lists].map(([n, l]) => [n, gatherIndexedList(l)])) });
    }
    // The first row group again, cut otherwise: what the results above hold must not change with the scratch memory.
    decodeListDerivedIndexed(md, 0, CUTS, listTypes, readAt, zstd, applyPerValue, () => 2);
    for (const { rg, lists } of got) {
      const raw = decodeFlatRowGroup(md, rg, ['L', 'N'], listTypes, readAt, zstd).columns;
      for (const d of CUTS) expect(lists.get(d.name), `${d.name}, row group ${rg}`).toEqual(applyWhole(d.name, raw.get(d.input)!));
    }
  });
});
