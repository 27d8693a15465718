// packRows' dense matrix on a wide layout (604 values a row, as RM5's 504 features and more),
// checked row by row against the columns themselves, an oracle independent of the pack writers
// (the other pack tests compare packs with packs): several segments starting mid-source,
// indexed (dictionary) and plain columns, nulls, and a vector feature with null rows.
import { describe, expect, it } from 'vitest';
import type { Column } from '@sluice/ops';
import { packRows, type BatchLayout, type PackSource } from '../../src/batch/index.js';
import { Rng } from '../../src/util/rng.js';

const PLAIN = 300;
const INDEXED = 300;
const names = [...Array.from({ length: PLAIN }, (_, i) => `p${i}`), ...Array.from({ length: INDEXED }, (_, i) => `x${i}`)];
const layout: BatchLayout = {
  dense: [...names.map((name, i) => ({ name, offset: i, width: 1, vector: false })), { name: 'vec', offset: names.length, width: 4, vector: true }],
  denseNames: [...names, 'vec:0', 'vec:1', 'vec:2', 'vec:3'],
  dim: names.length + 4,
  sparseKeys: [],
  label: false,
};

function source(rows: number, seed: number): { src: PackSource; row: (r: number) => number[] } {
  const rng = new Rng(seed);
  const outputs = new Map<string, Column>();
  const indexed = new Map<string, { dict: Column; idx: Int32Array }>();
  const readers: Array<(r: number) => number> = [];
  for (let i = 0; i < PLAIN; i++) {
    const values = Float32Array.from({ length: rows }, () => rng.next() * 100);
    const valid = i % 3 === 0 ? Uint8Array.from({ length: rows }, () => (rng.next() < 0.2 ? 0 : 1)) : null;
    outputs.set(`p${i}`, { type: 'float32', values, valid });
    readers.push((r) => (valid === null || valid[r] === 1 ? values[r]! : 0));
  }
  for (let i = 0; i < INDEXED; i++) {
    const entries = 1 + (i % 50);
    const values = Int32Array.from({ length: entries }, () => Math.floor(rng.next() * 1000));
    const valid = i % 4 === 0 ? Uint8Array.from({ length: entries }, (_, j) => (j === 0 ? 0 : 1)) : null;
    const idx = Int32Array.from({ length: rows }, () => Math.floor(rng.next() * entries));
    indexed.set(`x${i}`, { dict: { type: 'int32', values, valid }, idx });
    readers.push((r) => (valid === null || valid[idx[r]!] === 1 ? values[idx[r]!]! : 0));
  }
  const vec = Float32Array.from({ length: rows * 4 }, () => rng.next());
  const vecValid = Uint8Array.from({ length: rows }, () => (rng.next() < 0.3 ? 0 : 1));
  outputs.set('vec', { type: 'fixed', size: 4, values: vec, valid: vecValid });
  const row = (r: number): number[] => [...readers.map((read) => Math.fround(read(r))), ...[0, 1, 2, 3].map((j) => (vecValid[r] === 1 ? vec[r * 4 + j]! : 0))];
  return { src: { outputs, indexed, label: null, locate: (r) => ({ file: 'test', rowGroup: 0, row: r }) }, row };
}

describe('packRows: the dense matrix of a wide layout', () => {
  it('puts every value where a row-by-row copy does, across segments', () => {
    const a = source(700, 1);
    const b = source(300, 2);
    // 13 rows, then 555 from row 131, then all of b.
    const segments = [
      { chunk: a.src, from: 5, to: 18 },
      { chunk: a.src, from: 131, to: 686 },
      { chunk: b.src, from: 0, to: 300 },
    ];
    const pack = packRows(layout, segments);
    const want: number[][] = [];
    for (const s of segments) for (let r = s.from; r < s.to; r++) want.push((s.chunk === a.src ? a : b).row(r));
    expect(pack.rows).toBe(want.length);
    const got = Array.from({ length: pack.rows }, (_, r) => [...pack.dense.subarray(r * layout.dim, (r + 1) * layout.dim)]);
    for (let r = 0; r < want.length; r++) expect(got[r], `row ${r}`).toEqual(want[r]);
  });
});
