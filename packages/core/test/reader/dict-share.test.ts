// Parts of a row group read by rows share the ops' results per dictionary entry
// (reader/dict-share.ts): the first part to reach a derived column computes and publishes it, the
// others read it and decode only their rows' indices, and the result is the same as without.
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { afterAll, describe, expect, it } from 'vitest';
import { concatColumns, OPS, type Column, type ColumnType, type NumericColumn } from '@sluice/ops';
import { DictShare, newDictShare } from '../../src/reader/dict-share.js';
import { decodeDerivedIndexed, gatherIndexed, type DerivedSpec } from '../../src/reader/dict-ops.js';
import type { ReadAt, RowRange } from '../../src/reader/parquet/index.js';
import { pageZstd } from '../../src/reader/zstd.js';
import { generateDataset } from '../../src/gen/generate.js';
import { tempDir } from '../helpers.js';
import { rows as values } from '../../../ops/test/helpers.js';

const dir = tempDir('sluice-dictshare-');
const ROWS = 25_000;

/** hex2int then sigridHash on C1..C4; C3 also gets a chain whose ops fail on every dictionary. */
const DERIVED: DerivedSpec[] = [
  { name: 'h1', input: 'C1' },
  { name: 'h2', input: 'C2' },
  { name: 'h2b', input: 'C2' },
  { name: 'bad3', input: 'C3' },
  { name: 'h3', input: 'C3' },
  { name: 'h4', input: 'C4' },
];
const types = new Map<string, ColumnType>(['C1', 'C2', 'C3', 'C4'].map((c) => [c, { kind: 'utf8' }]));

/** The ops of each derived column, counting calls per name. */
function applier(): { apply: (name: string, col: Column) => Column; calls: Map<string, number> } {
  const calls = new Map<string, number>();
  const ctx = { features: new Map(), featureTypes: new Map(), column: '' };
  const apply = (name: string, col: Column): Column => {
    calls.set(name, (calls.get(name) ?? 0) + 1);
    if (name.startsWith('bad')) throw new Error('this chain fails on every entry');
    const ints = OPS.get('hex2int')!.apply(col, {}, ctx);
    return OPS.get('sigridHash')!.apply(ints, { salt: name === 'h2b' ? 3 : 0, max: 1000 }, ctx);
  };
  return { apply, calls };
}

interface Reader {
  /** Row group 0's derived columns (gathered), of the rows in `range` (all without). */
  read: (range?: RowRange, apply?: (name: string, col: Column) => Column) => Map<string, Column>;
  pageStart: number;
}
let fd = -1;
let reader: Promise<Reader> | null = null;
afterAll(() => {
  if (fd >= 0) closeSync(fd);
});
const setup = (): Promise<Reader> => (reader ??= open());

async function open(): Promise<Reader> {
  const file = (await generateDataset({ preset: 'rm1', rows: ROWS, rowGroupSize: ROWS, seed: 11, out: join(dir, 'one-rg.parquet') })).path;
  const bytes = readFileSync(file);
  const md = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  const zstd = await pageZstd();
  fd = openSync(file, 'r');
  const readAt: ReadAt = (offset, length) => {
    const b = new Uint8Array(length);
    readSync(fd, b, 0, length, offset);
    return b;
  };
  // The writer starts a page every 20,480 rows in every column (see split-tail.test.ts).
  const pageStart = 20_480;
  const read = (range?: RowRange, apply = applier().apply): Map<string, Column> => {
    const indexed = decodeDerivedIndexed(md, 0, DERIVED, types, readAt, zstd, apply, range);
    return new Map([...indexed].map(([n, d]) => [n, gatherIndexed(d)]));
  };
  return { read, pageStart };
}

describe('dictionary shares', () => {
  it('round-trips every numeric type, with and without validity, and grows as parts publish', () => {
    const sab = newDictShare(4);
    const a = new DictShare(sab);
    const b = new DictShare(sab);
    const cols: NumericColumn[] = [
      { type: 'int32', values: Int32Array.from([1, -2, 3]), valid: null },
      { type: 'int64', values: BigInt64Array.from([1n << 62n, -5n, 0n]), valid: Uint8Array.from([1, 1, 0]) },
      { type: 'float32', values: Float32Array.from([0.5, Number.NaN, -0]), valid: Uint8Array.from([0, 1, 1]) },
      { type: 'float64', values: Float64Array.from({ length: 100_000 }, (_, i) => i / 3), valid: null },
    ];
    const before = sab.byteLength;
    cols.forEach((c, i) => {
      expect(b.lookup(i), 'nothing before it is published').toBeNull();
      expect(a.claim(i)).toBe(true);
      expect(b.claim(i), 'another part cannot take a claimed column').toBe(false);
      a.publish(i, c);
    });
    expect(sab.byteLength, 'it grew for 800 KB of float64').toBeGreaterThan(before + 800_000);
    cols.forEach((c, i) => {
      const got = b.lookup(i) as NumericColumn;
      expect(got.type).toBe(c.type);
      expect(Array.from(got.values as ArrayLike<unknown>)).toEqual(Array.from(c.values as ArrayLike<unknown>));
      expect(got.valid === null ? null : Array.from(got.valid)).toEqual(c.valid === null ? null : Array.from(c.valid));
      expect(b.claim(i), 'a published column cannot be claimed').toBe(false);
    });
    expect(b.lookup(4), 'past the directory').toBeNull();
    expect(b.claim(-1)).toBe(false);
    expect(() => new DictShare(new SharedArrayBuffer(64))).toThrow(/not a dictionary share/);
  });

  it('a part reads what an earlier part published, computes nothing twice, and gives the same rows', async () => {
    const { read, pageStart } = await setup();
    const whole = read();
    expect([...whole.keys()].sort(), 'the failing chain is left out').toEqual(['h1', 'h2', 'h2b', 'h3', 'h4']);
    const share = newDictShare(DERIVED.length);
    const first = applier();
    const head = read({ first: 0, rows: pageStart, share }, first.apply);
    // Every chain ran once in the first part (the failing one too: it is marked failed).
    expect(Object.fromEntries(first.calls)).toEqual({ h1: 1, h2: 1, h2b: 1, bad3: 1, h3: 1, h4: 1 });
    const second = applier();
    const tail = read({ first: pageStart, rows: ROWS - pageStart, share, reverse: true }, second.apply);
    expect(second.calls.size, 'the second part ran no ops').toBe(0);
    for (const [name, col] of whole) {
      expect(values(concatColumns([head.get(name)!, tail.get(name)!])), name).toEqual(values(col));
    }
    expect(tail.has('bad3')).toBe(false);
  });

  it('a column another part is still computing is computed again, not waited for; a full share stops publishing', async () => {
    const { read, pageStart } = await setup();
    const whole = read();
    const sab = newDictShare(DERIVED.length);
    // Another part holds h4 (claimed, not published).
    expect(new DictShare(sab).claim(5)).toBe(true);
    const first = applier();
    const head = read({ first: 0, rows: pageStart, share: sab }, first.apply);
    expect(first.calls.get('h4'), 'h4 computed here anyway').toBe(1);
    const second = applier();
    read({ first: pageStart, rows: ROWS - pageStart, share: sab }, second.apply);
    expect([...second.calls.keys()], 'only h4, never published, is computed again').toEqual(['h4']);
    expect(values(head.get('h4')!)).toEqual(values(whole.get('h4')!).slice(0, pageStart));

    // A share with no room for results: every part computes everything, and the rows are right.
    const tiny = newDictShare(DERIVED.length, 256);
    const a = applier();
    const b = applier();
    const h = read({ first: 0, rows: pageStart, share: tiny }, a.apply);
    const t = read({ first: pageStart, rows: ROWS - pageStart, share: tiny, reverse: true }, b.apply);
    expect(b.calls.get('h1'), 'nothing was published').toBe(1);
    expect(b.calls.has('bad3'), 'but a failure is known without room').toBe(false);
    for (const [name, col] of whole) expect(values(concatColumns([h.get(name)!, t.get(name)!])), name).toEqual(values(col));
  });
});
