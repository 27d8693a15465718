import { describe, expect, it } from 'vitest';
import { columnLength, concatColumns, gatherColumn, sliceColumn, type Column, type PrimitiveType } from '../src/column.js';
import { ColumnScatter } from '../src/scatter.js';
import { col, list, randLists, randScalars, rng, rows, type Row, type Rng } from './helpers.js';

const TYPES: readonly PrimitiveType[] = ['int32', 'int64', 'float32', 'float64', 'utf8'];

/** A random permutation of 0..n-1. */
function shuffled(r: Rng, n: number): Int32Array {
  const p = Int32Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = r.int(i + 1);
    [p[i], p[j]] = [p[j]!, p[i]!];
  }
  return p;
}

/** Parts of random lengths (some empty); a sliced part has offsets that do not start at 0. */
function parts(r: Rng, make: (n: number) => Column): Column[] {
  return Array.from({ length: 1 + r.int(5) }, () => {
    const n = r.chance(0.2) ? 0 : 1 + r.int(40);
    const extra = r.int(3);
    return sliceColumn(make(n + extra), extra, n + extra);
  });
}

/** `parts` (a window's row groups, in window order) scattered as one column of `n` rows. */
function scatterParts(parts: readonly Column[], dest: Int32Array, n: number): Column {
  const s = new ColumnScatter(dest, n);
  let base = 0;
  for (const p of parts) {
    s.add(p, base);
    base += columnLength(p);
  }
  return s.finish();
}

/** What row i of a window's order should hold: the JS values of the concatenated parts. */
const expected = (ps: Column[], order: Int32Array): Row[] => {
  const all = ps.flatMap(rows);
  return Array.from(order, (i) => all[i]!);
};

function check(ps: Column[], r: Rng): void {
  const total = ps.reduce((a, c) => a + rows(c).length, 0);
  const order = shuffled(r, total);
  const skip = r.int(Math.min(total, 5) + 1);
  const kept = order.subarray(skip);
  const dest = new Int32Array(total).fill(-1);
  kept.forEach((row, i) => (dest[row] = i));
  const want = expected(ps, kept);
  expect(rows(scatterParts(ps, dest, kept.length))).toEqual(want);
  // Parts may arrive in any order.
  const s = new ColumnScatter(dest, kept.length);
  const bases = ps.map((_, i) => ps.slice(0, i).reduce((a, c) => a + rows(c).length, 0));
  for (let i = ps.length - 1; i >= 0; i--) s.add(ps[i]!, bases[i]!);
  expect(rows(s.finish())).toEqual(want);
  expect(rows(gatherColumn(concatColumns(ps), kept))).toEqual(want);
}

describe('ColumnScatter and gatherColumn', () => {
  for (const t of TYPES) {
    it(`${t}: scattered parts equal the gathered window, nulls and left-out rows included`, () => {
      const r = rng(17);
      for (let rep = 0; rep < 40; rep++)
        check(
          parts(r, (n) => col(t, randScalars(r, t, n))),
          r,
        );
    });
    it(`list<${t}>: null lists, empty lists and null elements land with their rows`, () => {
      const r = rng(29);
      for (let rep = 0; rep < 40; rep++)
        check(
          parts(r, (n) => list(t, randLists(r, t, n, 40))),
          r,
        );
    });
  }

  it('fixed vectors', () => {
    const r = rng(5);
    for (let rep = 0; rep < 20; rep++) {
      check(
        parts(r, (n) => ({ type: 'fixed', size: 3, values: Float32Array.from({ length: 3 * n }, () => r.int(100)), valid: null })),
        r,
      );
    }
  });

  it('copies floats bit for bit (a NaN keeps its payload)', () => {
    const bits = Uint32Array.of(0x7fa00001, 0xffc00123, 0x3f800000);
    const f32 = { type: 'float32', values: new Float32Array(bits.buffer), valid: null } as const;
    const l = { type: 'list', offsets: Int32Array.of(0, 2, 3), child: f32, valid: null } as const;
    const dest = Int32Array.of(1, 0, 2);
    const flat = scatterParts([f32, f32], Int32Array.of(1, 0, 2, 5, 4, 3), 6);
    expect(Array.from(new Uint32Array((flat as typeof f32).values.buffer))).toEqual([0xffc00123, 0x7fa00001, 0x3f800000, 0x3f800000, 0xffc00123, 0x7fa00001]);
    const nested = scatterParts([l, l], Int32Array.of(...dest, 3), 4) as { child: typeof f32 };
    expect(Array.from(new Uint32Array(nested.child.values.buffer))).toEqual([0x3f800000, 0x7fa00001, 0xffc00123, 0x7fa00001, 0xffc00123, 0x3f800000]);
  });
});
