import { describe, expect, it } from 'vitest';
import type { Column } from '@sluice/ops';
import { packRows, type BatchLayout, type PackSource } from '../../src/batch/index.js';

/** A seeded LCG in [0, 1). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

const layout: BatchLayout = { dense: [], denseNames: [], dim: 0, sparseKeys: ['a', 'b'], label: false };
const locate = (row: number): { row: number } => ({ row });

/** dict[idx[r]] as a plain column: what packing an indexed column must be equal to. */
function gathered(dict: Column & { type: 'int64' }, idx: Int32Array): Column {
  const values = new BigInt64Array(idx.length);
  const valid = new Uint8Array(idx.length);
  idx.forEach((j, r) => {
    values[r] = dict.values[j]!;
    valid[r] = dict.valid === null ? 1 : dict.valid[j]!;
  });
  return { type: 'int64', values, valid };
}

describe('packRows over indexed (dictionary + row index) sparse columns', () => {
  // Dictionaries with no null entry, one (the decoder's null slot), and two (an op that maps a
  // value to null): each takes a different lengths path, and all must equal the gathered column.
  const cases: Array<[string, (number | null)[]]> = [
    ['no null entry', [5, 9, 2 ** 40, 7]],
    ['one null entry', [5, 9, 7, null]],
    ['two null entries', [null, 9, 2 ** 33, null, 4]],
  ];
  for (const [name, entries] of cases) {
    it(name, () => {
      const rand = rng(entries.length * 7919);
      const n = 1000;
      const dict = {
        type: 'int64' as const,
        values: BigInt64Array.from(entries, (v) => BigInt(v ?? 0)),
        valid: entries.includes(null) ? Uint8Array.from(entries, (v) => (v === null ? 0 : 1)) : null,
      };
      const idxA = Int32Array.from({ length: n }, () => Math.floor(rand() * entries.length));
      const idxB = Int32Array.from({ length: n }, () => Math.floor(rand() * entries.length));
      const indexed: PackSource = {
        outputs: new Map(),
        label: null,
        locate,
        indexed: new Map([
          ['a', { dict, idx: idxA }],
          ['b', { dict, idx: idxB }],
        ]),
      };
      const plain: PackSource = {
        outputs: new Map([
          ['a', gathered(dict, idxA)],
          ['b', gathered(dict, idxB)],
        ]),
        label: null,
        locate,
      };
      // Two segments, so counts and offsets are summed across a segment boundary too.
      const segs = (c: PackSource): Array<{ chunk: PackSource; from: number; to: number }> => [
        { chunk: c, from: 3, to: 400 },
        { chunk: c, from: 400, to: 997 },
      ];
      const got = packRows(layout, segs(indexed));
      const want = packRows(layout, segs(plain));
      expect(got.rows).toBe(994);
      expect(Array.from(got.lengths)).toEqual(Array.from(want.lengths));
      expect(Array.from(got.offsets)).toEqual(Array.from(want.offsets));
      expect(Array.from(got.values)).toEqual(Array.from(want.values));
      // And against a count done here: key a's values are its non-null rows, in order.
      const a = Array.from(idxA.subarray(3, 997))
        .filter((j) => entries[j] !== null)
        .map((j) => BigInt(entries[j]!));
      expect(Array.from(got.values.subarray(got.offsets[0], got.offsets[1]))).toEqual(a);
    });
  }
});
