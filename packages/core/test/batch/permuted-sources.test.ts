// chunkSources: a decode worker's shuffled chunks. Each chunk's pack must equal the pack of the
// same rows gathered the plain way (dictionary values materialized, then gatherColumn), for narrow
// (16-bit) and wide row indices, shared index arrays, a plain output, a label and an indexed list.
import { describe, expect, it } from 'vitest';
import { gatherColumn, type Column } from '@sluice/ops';
import { chunkSources, packMany, packRows, type BatchLayout, type IndexedListSource, type PackSource } from '../../src/batch/index.js';
import { permutation } from '../../src/util/rng.js';

const layout: BatchLayout = {
  dense: [
    { name: 'd', offset: 0, width: 1, vector: false },
    { name: 'p', offset: 1, width: 1, vector: false },
  ],
  denseNames: ['d', 'p'],
  dim: 2,
  sparseKeys: ['a', 'a2', 'b', 'l'],
  label: true,
};

/** dict[idx[r]] as a plain column. */
function materialize(dict: Column, idx: Int32Array): Column {
  return gatherColumn(dict, idx);
}

/** An indexed list as a list column (each list cut to `keep`, elements taken from the dictionary). */
function materializeList(l: IndexedListSource): Column {
  const rows = l.offsets.length - 1;
  const offsets = new Int32Array(rows + 1);
  const el: number[] = [];
  for (let r = 0; r < rows; r++) {
    const s = l.offsets[r]!;
    const e = s + Math.min(l.keep, l.offsets[r + 1]! - s);
    for (let j = s; j < e; j++) el.push(l.idx[j]!);
    offsets[r + 1] = el.length;
  }
  return { type: 'list', offsets, child: gatherColumn(l.dict, Int32Array.from(el)) as never, valid: l.valid };
}

function source(n: number, dictSize: number): { src: PackSource; plain: (sel: Int32Array) => PackSource } {
  const ids = { type: 'int64' as const, values: BigInt64Array.from({ length: dictSize }, (_, j) => BigInt(j * 7 + 1)), valid: null };
  const withNull = { type: 'int64' as const, values: BigInt64Array.from({ length: 5 }, (_, j) => BigInt(j)), valid: Uint8Array.from([1, 1, 0, 1, 1]) };
  const floats = { type: 'float32' as const, values: Float32Array.from({ length: 9 }, (_, j) => j / 3), valid: null };
  const idxA = Int32Array.from({ length: n }, (_, r) => (r * 7919) % dictSize);
  const idxB = Int32Array.from({ length: n }, (_, r) => (r * 31) % 5);
  const idxF = Int32Array.from({ length: n }, (_, r) => (r * 13) % 9);
  const plainCol: Column = { type: 'int32', values: Int32Array.from({ length: n }, (_, r) => r - 50), valid: null };
  const label: Column = { type: 'float32', values: Float32Array.from({ length: n }, (_, r) => r % 2), valid: null };
  const lens = Array.from({ length: n }, (_, r) => r % 4);
  const offsets = new Int32Array(n + 1);
  lens.forEach((k, r) => (offsets[r + 1] = offsets[r]! + k));
  const list: IndexedListSource = {
    dict: withNull,
    idx: Int32Array.from({ length: offsets[n]! }, (_, j) => (j * 3) % 5),
    offsets,
    valid: Uint8Array.from({ length: n }, (_, r) => (r % 11 === 0 ? 0 : 1)),
    keep: 2,
  };
  const locate = (row: number): { row: number } => ({ row });
  const src: PackSource = {
    outputs: new Map([['p', plainCol]]),
    label,
    locate,
    indexed: new Map([
      ['a', { dict: ids, idx: idxA }],
      // 'a2' shares a's index array, as features sharing a derived column do.
      ['a2', { dict: ids, idx: idxA }],
      ['b', { dict: withNull, idx: idxB }],
      ['d', { dict: floats, idx: idxF }],
    ]),
    indexedLists: new Map([['l', list]]),
  };
  const listCol = materializeList(list);
  const plain = (sel: Int32Array): PackSource => ({
    outputs: new Map([
      ['a', gatherColumn(materialize(ids, idxA), sel)],
      ['a2', gatherColumn(materialize(ids, idxA), sel)],
      ['b', gatherColumn(materialize(withNull, idxB), sel)],
      ['d', gatherColumn(materialize(floats, idxF), sel)],
      ['p', gatherColumn(plainCol, sel)],
      ['l', gatherColumn(listCol, sel)],
    ]),
    label: gatherColumn(label, sel),
    locate,
  });
  return { src, plain };
}

/**
 * The chunks of window rows rows[cuts[0]], … cut at `cuts`, with `src`'s row indices put in that
 * order first, as the decode worker puts them as it decodes each input (reader/dict-ops.ts).
 */
function permutedSources(src: PackSource, rows: Int32Array, cuts: readonly number[]): PackSource[] {
  const order = rows.subarray(cuts[0]!, cuts[cuts.length - 1]!);
  const indexed = new Map([...(src.indexed ?? [])].map(([name, ix]) => [name, { dict: ix.dict, idx: Int32Array.from(order, (r) => ix.idx[r]!) }]));
  return chunkSources({ ...src, indexed }, order, cuts);
}

describe('chunkSources', () => {
  it.for([
    ['16-bit row indices', 5000],
    ['32-bit row indices (a dictionary past 2^16 entries)', 70000],
  ] as const)('packs each chunk of a permuted row group as the plainly gathered rows (%s)', ([, dictSize]) => {
    const n = 3000;
    const { src, plain } = source(n, dictSize);
    const rows = permutation(n, 42, 0, 1);
    const cuts = [100, 1024, 2048, 2900, n];
    const got = permutedSources(src, rows, cuts);
    expect(got.length).toBe(cuts.length - 1);
    for (let i = 0; i + 1 < cuts.length; i++) {
      const sel = rows.subarray(cuts[i]!, cuts[i + 1]!);
      const a = packRows(layout, [{ chunk: got[i]!, from: 0, to: sel.length }]);
      const b = packRows(layout, [{ chunk: plain(sel), from: 0, to: sel.length }]);
      expect(a.rows).toBe(sel.length);
      expect(a.dense).toEqual(b.dense);
      expect(a.lengths).toEqual(b.lengths);
      expect(a.offsets).toEqual(b.offsets);
      expect(a.values).toEqual(b.values);
      expect(a.labels).toEqual(b.labels);
      // A chunk row locates the row group's row it came from.
      expect(got[i]!.locate(3)).toEqual({ row: sel[3] });
    }
    // Laid out together, key by key across the chunks (as the decode worker does), each pack is
    // the one packRows makes alone: in fresh memory, and in slots that hold older bytes.
    const alone = got.map((c, i) => packRows(layout, [{ chunk: c, from: 0, to: cuts[i + 1]! - cuts[i]! }]));
    const slots = got.map(() => new Uint8Array(new SharedArrayBuffer(1 << 16)).fill(0xa5));
    for (const within of [got.map(() => undefined), slots]) {
      const together = packMany(
        layout,
        got.map((c, i) => [{ chunk: c, from: 0, to: cuts[i + 1]! - cuts[i]! }]),
        within,
      );
      expect(together.length).toBe(got.length);
      together.forEach((p, i) => {
        const a = alone[i]!;
        expect([p.rows, p.dense, p.lengths, p.offsets, p.values, p.labels]).toEqual([a.rows, a.dense, a.lengths, a.offsets, a.values, a.labels]);
        expect(p.inSlot).toBe(within[i] !== undefined);
      });
    }
  });
});
