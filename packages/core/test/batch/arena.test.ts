import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import type { Column } from '@sluice/ops';
import { DEFAULT_ARENA_BYTES, MAX_SLOT_BYTES, PackArena, packSlotBytes } from '../../src/batch/arena.js';
import { mergePacks, packRows, type BatchLayout, type PackSource, type SlotMemory } from '../../src/batch/index.js';

/** The garbage collector, for the tests of slots whose holders are collected. */
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Collects garbage until `done()` (finalizers run in later tasks), or fails after ~2 s. */
async function collectUntil(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) {
    gc();
    await new Promise((r) => setTimeout(r, 10));
  }
  expect(done(), 'the holder was collected and its slot let go').toBe(true);
}

describe('PackArena', () => {
  it('lends slots from the first read, up to maxSlots', () => {
    const a = new PackArena(64, 4);
    const got = a.lend(3);
    expect(got.map(([id]) => id)).toEqual([0, 1, 2]);
    expect(got.every(([, slot]) => slot.buffer instanceof SharedArrayBuffer && slot.byteLength === 64)).toBe(true);
    expect(a.lent).toBe(3);
    expect(a.lend(3).length, 'bounded by maxSlots').toBe(1);
  });

  it('reuses given-back slots, never makes more than maxSlots, and ignores a second give', () => {
    const a = new PackArena(64, 3);
    const first = a.lend(5);
    expect(first.length, 'bounded by maxSlots').toBe(3);
    a.give(1);
    a.give(1);
    expect(a.lent).toBe(2);
    const again = a.lend(2);
    expect(
      again.map(([id]) => id),
      'only the one slot given back',
    ).toEqual([1]);
    expect(again[0]![1]).toBe(first[1]![1]);
    expect(a.reused).toBe(1);
    expect(a.size).toBe(3);
  });

  it('lets a slot go when its holder is collected without giving it back, and only then', async () => {
    const a = new PackArena(64, 3);
    const [[kept], [dropped], [reLent]] = a.lend(3) as Array<[number, SlotMemory]>;
    const keeper = { batch: 'kept' };
    a.hold(kept!, keeper);
    a.hold(dropped!, { batch: 'dropped' });
    // Given back while its first holder lives, then lent again to a holder that stays: the first
    // holder's collection must not let the slot go.
    a.hold(reLent!, { batch: 'released' });
    a.give(reLent!);
    const [[again]] = a.lend(1) as Array<[number, SlotMemory]>;
    expect(again).toBe(reLent);
    a.hold(again!, keeper);
    expect(a.lend(1), 'all lent: none left').toEqual([]);
    await collectUntil(() => a.lent === 2);
    expect(a.size, 'only the dropped batch’s slot is no longer the arena’s').toBe(2);
    a.releasing();
    const [[fresh]] = a.lend(1) as Array<[number, SlotMemory]>;
    expect([kept, reLent, dropped], 'a new slot in its place').not.toContain(fresh);
    a.give(kept!);
    a.give(again!);
    expect(a.lent).toBe(1);
    expect(keeper.batch).toBe('kept');
  });

  it('makes no more than maxSlots slots until the consumer releases a batch, then makes new ones for dropped ones', async () => {
    const a = new PackArena(64, 2);
    for (const [id] of a.lend(2)) a.hold(id, { batch: id });
    // Both holders dropped unreleased: the slots go, but none are made in their place (the
    // consumer may never release, and its dropped slots would not start a collection).
    await collectUntil(() => a.lent === 0);
    expect(a.size).toBe(0);
    expect(a.lend(1), 'nothing made before a release').toEqual([]);
    a.releasing();
    expect(a.lend(3).length, 'new slots once the consumer releases, up to maxSlots').toBe(2);
  });

  it('stops lending once closed, and gives after that do nothing', () => {
    const a = new PackArena(64, 3);
    const [[id]] = a.lend(1) as [[number, SlotMemory]];
    a.close();
    a.give(id);
    expect(a.lend(1)).toEqual([]);
    expect(a.size).toBe(0);
  });

  it('parks for the next take of its slot size, whose first reads get the free slots', () => {
    const a = PackArena.take(72, 4);
    const got = a.lend(3);
    a.give(got[0]![0]);
    a.give(got[1]![0]);
    a.park();
    expect(a.lend(1), 'a parked arena lends nothing').toEqual([]);
    a.give(got[2]![0]); // a batch released after its pipeline ended
    expect(PackArena.take(80, 4), 'another slot size gets a new arena').not.toBe(a);
    const b = PackArena.take(72, 4);
    expect(b).toBe(a);
    expect(b.reused).toBe(0);
    // Its count of slots made starts again for the new consumer.
    const lent = b.lend(5);
    expect(lent.length, 'the three free slots, then one new one up to maxSlots').toBe(4);
    expect(b.reused).toBe(3);
    expect(lent.slice(0, 3).map(([, sab]) => sab)).toEqual(expect.arrayContaining(got.map(([, sab]) => sab)));
    expect(PackArena.take(72, 4), 'taken arenas are not shared').not.toBe(a);
  });

  it('an arena that holds no slot is closed rather than parked', () => {
    const a = PackArena.take(88, 4);
    a.park();
    expect(PackArena.take(88, 4)).not.toBe(a);
  });

  it('grows for a pack that did not fit: new slots that big and 1/8 more, outgrown ones let go', () => {
    const a = new PackArena(64, 4);
    const [s0, s1] = a.lend(2) as Array<[number, SlotMemory]>;
    a.give(s1![0]);
    a.grow(64);
    expect(a.slotBytes, 'a pack that fits: no change').toBe(64);
    a.grow(100);
    expect(a.slotBytes).toBe(120); // ceil(100 * 1.125) = 113, 8-aligned
    expect(a.size, 'the free small slot is let go at once').toBe(1);
    const [n] = a.lend(1) as Array<[number, SlotMemory]>;
    expect(n![1].byteLength).toBe(120);
    a.give(s0![0]);
    expect(a.size, 'the lent small slot is let go when given back').toBe(1);
    a.give(n![0]);
    expect(
      a.lend(2).map(([, sab]) => sab.byteLength),
      'the grown slot reused, then a new one at the new size',
    ).toEqual([120, 120]);
    a.grow(90);
    expect(a.slotBytes, 'never shrinks').toBe(120);
  });

  it('grows its default slot count with the slot size, and leaves packs beyond MAX_SLOT_BYTES in fresh memory', () => {
    const a = new PackArena(1 << 20);
    expect(a.maxSlots).toBe(DEFAULT_ARENA_BYTES / (1 << 20));
    a.grow(40 << 20);
    expect(a.slotBytes).toBe(45 << 20);
    expect(a.maxSlots).toBe(Math.max(4, Math.floor(DEFAULT_ARENA_BYTES / (45 << 20))));
    a.grow(MAX_SLOT_BYTES + 8);
    expect(a.slotBytes).toBe(45 << 20);
    a.grow(MAX_SLOT_BYTES - 8);
    expect(a.slotBytes, 'capped').toBe(MAX_SLOT_BYTES);
    expect(new PackArena(64, 3).maxSlots, 'an explicit count stays').toBe(3);
  });

  it('a grown arena is parked for the next take of the size first asked for', () => {
    const a = PackArena.take(96, 4);
    a.grow(1000);
    const [[id]] = a.lend(1) as [[number, SlotMemory]];
    a.give(id);
    a.park();
    const b = PackArena.take(96, 4);
    expect(b).toBe(a);
    expect(b.lend(1)[0]![1].byteLength).toBe(a.slotBytes);
  });

  it('checks its sizes', () => {
    expect(() => new PackArena(12)).toThrow(/multiple of 8/);
    expect(() => new PackArena(64, 0)).toThrow(/maxSlots/);
  });
});

/**
 * A slot that held older bytes (`junk`), in the middle of a larger buffer as the arena's 2 MiB-
 * aligned slots are: the bytes around it must stay as they are (`around`).
 */
function usedSlot(bytes: number, junk: number): SlotMemory {
  const sab = new SharedArrayBuffer(bytes + 128);
  new Uint8Array(sab).fill(junk);
  return new Uint8Array(sab, 64, bytes);
}

/** Whether the bytes of `slot`'s buffer before and after it are all still `junk`. */
function around(slot: SlotMemory, junk: number): boolean {
  const all = new Uint8Array(slot.buffer);
  return all.subarray(0, slot.byteOffset).every((b) => b === junk) && all.subarray(slot.byteOffset + slot.byteLength).every((b) => b === junk);
}

describe('packRows into a used slot', () => {
  // A vector dense feature (whose null rows are skipped), a sparse list key and int64 ids with
  // high words: every array must come out as in fresh memory although the slot is full of junk.
  const layout: BatchLayout = {
    dense: [
      { name: 'v', offset: 0, width: 3, vector: true },
      { name: 'x', offset: 3, width: 1, vector: false },
    ],
    denseNames: ['v:0', 'v:1', 'v:2', 'x'],
    dim: 4,
    sparseKeys: ['s', 'l'],
    label: true,
  };
  const rows = 50;
  const v: Column = {
    type: 'fixed',
    size: 3,
    values: Float32Array.from({ length: 3 * rows }, (_, i) => i + 0.5),
    valid: Uint8Array.from({ length: rows }, (_, r) => (r % 4 === 0 ? 0 : 1)),
  };
  const x: Column = { type: 'float32', values: Float32Array.from({ length: rows }, (_, r) => r * 2), valid: null };
  const s: Column = {
    type: 'int64',
    values: BigInt64Array.from({ length: rows }, (_, r) => BigInt(r) * 3n + (r % 2 === 0 ? 0n : 2n ** 40n)),
    valid: Uint8Array.from({ length: rows }, (_, r) => (r % 5 === 0 ? 0 : 1)),
  };
  const offsets = Int32Array.from({ length: rows + 1 }, (_, r) => Math.floor((r * 3) / 2));
  const l: Column = {
    type: 'list',
    offsets,
    child: { type: 'int32', values: Int32Array.from({ length: offsets[rows]! }, (_, j) => j - 7), valid: null },
    valid: null,
  };
  const label: Column = { type: 'float32', values: Float32Array.from({ length: rows }, (_, r) => r % 2), valid: null };
  const chunk: PackSource = {
    outputs: new Map<string, Column>([
      ['v', v],
      ['x', x],
      ['s', s],
      ['l', l],
    ]),
    label,
    locate: (row) => ({ row }),
  };
  const segs = [
    { chunk, from: 1, to: 30 },
    { chunk, from: 30, to: 47 },
  ];

  it('writes the same arrays as into fresh memory', () => {
    const want = packRows(layout, segs);
    expect(want.inSlot).toBe(false);
    // Sized as a pipeline sizes it (one value per key and row): the list key has more, so the
    // values array goes outside the slot while the others stay in it.
    const slot = usedSlot(packSlotBytes(layout, 46), 0xa5);
    const got = packRows(layout, segs, slot);
    expect(got.inSlot).toBe(true);
    expect(got.dense.buffer).toBe(slot.buffer);
    expect(got.values.buffer).not.toBe(slot.buffer);
    expect(around(slot, 0xa5), 'nothing written outside the slot').toBe(true);
    const big = usedSlot(1 << 16, 0xff);
    const all = packRows(layout, segs, big);
    expect(all.values.buffer).toBe(big.buffer);
    expect(around(big, 0xff)).toBe(true);
    for (const p of [got, all]) {
      expect(Array.from(p.dense)).toEqual(Array.from(want.dense));
      expect(Array.from(p.lengths)).toEqual(Array.from(want.lengths));
      expect(Array.from(p.offsets)).toEqual(Array.from(want.offsets));
      expect(Array.from(p.values)).toEqual(Array.from(want.values));
      expect(Array.from(p.labels!)).toEqual(Array.from(want.labels!));
    }
  });

  it('writes indexed ids (compact, wide, with a null slot) into a used slot as into fresh memory', () => {
    // A decode worker's derived columns: dictionaries (the null slot last) and row indices. 'c'
    // has ids below 2^31 (the compact path writes both words itself), 'w' has ids past 2^32.
    const lay: BatchLayout = { dense: [{ name: 'x', offset: 0, width: 1, vector: false }], denseNames: ['x'], dim: 1, sparseKeys: ['c', 'w'], label: false };
    const n = 40;
    const idx = Int32Array.from({ length: n }, (_, r) => (r % 7 === 0 ? 5 : r % 5));
    const cDict: Column = { type: 'int64', values: BigInt64Array.from([3n, 70n, 900n, 2n ** 31n - 1n, 0n, 0n]), valid: Uint8Array.from([1, 1, 1, 1, 1, 0]) };
    const wDict: Column = {
      type: 'int64',
      values: BigInt64Array.from([2n ** 40n, -5n, 7n, 2n ** 33n + 1n, 11n, 0n]),
      valid: Uint8Array.from([1, 1, 1, 1, 1, 0]),
    };
    const xDict: Column = { type: 'float32', values: Float32Array.from([0.5, 1.5, 2.5, 3.5, 4.5, 0]), valid: Uint8Array.from([1, 1, 1, 1, 1, 0]) };
    const src: PackSource = {
      outputs: new Map(),
      label: null,
      locate: (row) => ({ row }),
      indexed: new Map([
        ['c', { dict: cDict, idx }],
        ['w', { dict: wDict, idx }],
        ['x', { dict: xDict, idx }],
      ]),
    };
    const segs = [{ chunk: src, from: 2, to: 37 }];
    const want = packRows(lay, segs);
    const slot = usedSlot(1 << 14, 0xff);
    const got = packRows(lay, segs, slot);
    expect(got.values.buffer).toBe(slot.buffer);
    expect(around(slot, 0xff)).toBe(true);
    expect(Array.from(got.values)).toEqual(Array.from(want.values));
    expect(Array.from(got.lengths)).toEqual(Array.from(want.lengths));
    expect(Array.from(got.dense)).toEqual(Array.from(want.dense));
    expect(want.values.includes(2n ** 40n) && want.values.includes(3n)).toBe(true);
  });

  it('merges packs into a used slot as into fresh memory', () => {
    // Two packs cut from the rows, merged across their boundary as a batch across row groups is.
    const a = packRows(layout, [{ chunk, from: 0, to: 20 }]);
    const b = packRows(layout, [{ chunk, from: 20, to: 50 }]);
    const parts = [
      { pack: a, from: 5, to: 20 },
      { pack: b, from: 0, to: 22 },
    ];
    const want = mergePacks(layout, parts);
    expect(want.inSlot).toBe(false);
    const direct = packRows(layout, [{ chunk, from: 5, to: 42 }]);
    expect(Array.from(want.values)).toEqual(Array.from(direct.values));
    for (const bytes of [packSlotBytes(layout, 37), 1 << 16]) {
      const slot = usedSlot(bytes, 0xa5);
      const got = mergePacks(layout, parts, slot);
      expect(got.inSlot).toBe(true);
      expect(got.dense.buffer).toBe(slot.buffer);
      expect(around(slot, 0xa5)).toBe(true);
      // The list key has more than one value per row: at the pipeline's size the values do not fit.
      expect(got.values.buffer === slot.buffer).toBe(bytes > packSlotBytes(layout, 37));
      for (const k of ['dense', 'lengths', 'offsets', 'values', 'labels'] as const) {
        const list = (a: ArrayLike<number | bigint> | null): Array<number | bigint> => Array.from(a as ArrayLike<number | bigint>);
        expect(list(got[k]), k).toEqual(list(want[k]));
        expect(list(got[k]), `${k} as packed directly`).toEqual(list(direct[k]));
      }
    }
  });
});

describe('packRows of list columns with null lists', () => {
  const lay: BatchLayout = { dense: [], denseNames: [], dim: 0, sparseKeys: ['l'], label: false };
  const pack = (c: Column, from: number, to: number, slot?: SlotMemory): bigint[] => {
    const src: PackSource = { outputs: new Map([['l', c]]), label: null, locate: (row) => ({ row }) };
    return Array.from(packRows(lay, [{ chunk: src, from, to }], slot).values);
  };

  it('lays out the ids of valid lists only, whether or not a null list holds elements', () => {
    // Rows: [1, 2], null (empty), [3], [] , null (empty), [4, 5, 6].
    const values = BigInt64Array.from([1n, 2n, 3n, 4n, 5n, 6n]);
    const valid = Uint8Array.from([1, 0, 1, 1, 0, 1]);
    const empty: Column = { type: 'list', offsets: Int32Array.from([0, 2, 2, 3, 3, 3, 6]), child: { type: 'int64', values, valid: null }, valid };
    expect(pack(empty, 0, 6)).toEqual([1n, 2n, 3n, 4n, 5n, 6n]);
    expect(pack(empty, 1, 5)).toEqual([3n]);
    expect(pack(empty, 0, 6, usedSlot(1 << 12, 0x5a))).toEqual([1n, 2n, 3n, 4n, 5n, 6n]);
    // The same lists where the null rows hold elements (Arrow allows it; the ids must not show).
    const holding: Column = {
      type: 'list',
      offsets: Int32Array.from([0, 2, 4, 5, 5, 6, 9]),
      child: { type: 'int64', values: BigInt64Array.from([1n, 2n, 90n, 91n, 3n, 92n, 4n, 5n, 6n]), valid: null },
      valid,
    };
    expect(pack(holding, 0, 6)).toEqual([1n, 2n, 3n, 4n, 5n, 6n]);
    expect(pack(holding, 1, 5)).toEqual([3n]);
  });
});
