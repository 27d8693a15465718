// WindowPacks: a shuffled window's packs, placed from its reads as they arrive. Each chunk's pack
// must equal, bit for bit, the pack `packRows` cuts from the same rows of the permuted window (its
// reads concatenated, then gathered through the permutation): every dense type with nulls, a
// vector feature with null rows, NaN payloads, lists of int64 ids with null and empty lists, ids
// with null ids and int32 ids (the general path), a scalar sparse key, labels, and a resumed
// window that leaves its first rows out; reads that came as columns and reads a decoder laid out
// as one pack of its own rows, its dense rows in the pack or written by the decoder to their places
// (densePlace); and the ids placed by other threads (an IdsPlacer, here run on a copy of the plan
// made as postMessage makes it) where every read came as a pack in shared memory.
import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { concatColumns, gatherColumn, type Column, type ListColumn } from '@sluice/ops';
import {
  chunkGroups,
  keyGroups,
  packRows,
  placeChunkIds,
  placeKeyIds,
  PackArena,
  WindowPacks,
  type BatchLayout,
  type DensePlace,
  type IdsPlacer,
  type IdsPlan,
  type KeysTask,
  type Pack,
} from '../../src/batch/index.js';
import { permutation, Rng } from '../../src/util/rng.js';

const layout: BatchLayout = {
  dense: [
    { name: 'f32', offset: 0, width: 1, vector: false },
    { name: 'i32', offset: 1, width: 1, vector: false },
    { name: 'f64', offset: 2, width: 1, vector: false },
    { name: 'i64', offset: 3, width: 1, vector: false },
    { name: 'vec', offset: 4, width: 3, vector: true },
  ],
  denseNames: ['f32', 'i32', 'f64', 'i64', 'vec:0', 'vec:1', 'vec:2'],
  dim: 7,
  sparseKeys: ['ids', 'nullIds', 'narrow', 'scalar'],
  label: true,
};

/** A seeded generator (util/rng.ts), so a failure replays. */
function rng(seed: number): () => number {
  const r = new Rng(seed);
  return () => r.next();
}

const mask = (rows: number, r: () => number, p: number): Uint8Array => Uint8Array.from({ length: rows }, () => (r() < p ? 0 : 1));

function list(rows: number, r: () => number, wide: boolean, nullIds: boolean): Column {
  const offsets = new Int32Array(rows + 1);
  for (let i = 0; i < rows; i++) offsets[i + 1] = offsets[i]! + Math.floor(r() * 5); // empty lists too
  const n = offsets[rows]!;
  const child = wide
    ? {
        type: 'int64' as const,
        values: BigInt64Array.from({ length: n }, () => BigInt(Math.floor(r() * 2 ** 40)) - 2n ** 39n),
        valid: nullIds ? mask(n, r, 0.2) : null,
      }
    : { type: 'int32' as const, values: Int32Array.from({ length: n }, () => Math.floor(r() * 2 ** 31) - 2 ** 30), valid: null };
  return { type: 'list', offsets, child, valid: mask(rows, r, 0.15) };
}

/** One read of `rows` rows: every output of the layout, and the label. */
function read(rows: number, r: () => number): Map<string, Column> {
  const f32 = Float32Array.from({ length: rows }, () => r() * 100 - 50);
  // A NaN with a payload: the packs must keep its bits.
  if (rows > 0) new Uint32Array(f32.buffer)[0] = 0x7fc12345;
  return new Map<string, Column>([
    ['f32', { type: 'float32', values: f32, valid: mask(rows, r, 0.1) }],
    ['i32', { type: 'int32', values: Int32Array.from({ length: rows }, () => Math.floor(r() * 1000) - 500), valid: null }],
    ['f64', { type: 'float64', values: Float64Array.from({ length: rows }, () => r() * 1e6), valid: mask(rows, r, 0.1) }],
    ['i64', { type: 'int64', values: BigInt64Array.from({ length: rows }, () => BigInt(Math.floor(r() * 1e9))), valid: null }],
    ['vec', { type: 'fixed', size: 3, values: Float32Array.from({ length: rows * 3 }, () => r()), valid: mask(rows, r, 0.2) }],
    ['ids', list(rows, r, true, false)],
    ['nullIds', list(rows, r, true, true)],
    ['narrow', list(rows, r, false, false)],
    ['scalar', { type: 'int64', values: BigInt64Array.from({ length: rows }, () => BigInt(Math.floor(r() * 1e12))), valid: mask(rows, r, 0.25) }],
    ['label', { type: 'float32', values: Float32Array.from({ length: rows }, () => (r() < 0.5 ? 0 : 1)), valid: null }],
  ]);
}

/** The arrays of a pack as plain numbers (floats by their bits), for toEqual. */
function bits(p: Pack): Record<string, unknown> {
  return {
    rows: p.rows,
    dense: [...new Uint32Array(p.dense.buffer, p.dense.byteOffset, p.dense.length)],
    lengths: [...p.lengths],
    offsets: [...p.offsets],
    values: [...p.values],
    labels: p.labels === null ? null : [...new Uint32Array(p.labels.buffer, p.labels.byteOffset, p.labels.length)],
  };
}

/** Chunk cuts of `rows` output rows, `size` rows each (the last may be short). */
const cutsOf = (rows: number, size: number): number[] => [...Array.from({ length: Math.ceil(rows / size) }, (_, i) => i * size), rows];

/**
 * Read i of the window as its decoder lays it out: one pack of its rows, unpermuted (in shared
 * memory, as asked for a window of several reads); with `place`, its dense rows written to their
 * places in the window's chunks instead.
 */
function asPack(m: Map<string, Column>, rows: number, shared = false, place?: DensePlace): Pack {
  const outputs = new Map([...m].filter(([n]) => n !== 'label'));
  return packRows(
    layout,
    [{ chunk: { outputs, label: m.get('label')!, locate: (row) => ({ file: 'test', rowGroup: 0, row }) }, from: 0, to: rows }],
    undefined,
    shared,
    place,
  );
}

/** `msg` as another thread receives it from postMessage: shared memory stays shared, `transfer` is moved, the rest is copied. */
function posted<T>(msg: T, transfer: readonly ArrayBuffer[] = []): T {
  const { port1, port2 } = new MessageChannel();
  port1.postMessage(msg, [...transfer]);
  const got = receiveMessageOnPort(port2)!.message as T;
  port1.close();
  return got;
}

/**
 * A placer that runs `placeChunkIds` and `placeKeyIds` on their tasks as a decode thread receives
 * them (a key task's `transfer` moved, as the decoder pool moves it), and records the groups of
 * chunks and of keys it was asked for.
 */
function recordingPlacer(): IdsPlacer & { readonly asked: number[][]; readonly askedKeys: number[][] } {
  const asked: number[][] = [];
  const askedKeys: number[][] = [];
  return {
    threads: 2,
    asked,
    askedKeys,
    place: (plan: IdsPlan, chunks: readonly number[]) => {
      asked.push([...chunks]);
      return Promise.resolve(posted(placeChunkIds(posted(plan), chunks)));
    },
    placeKeys: (task: KeysTask, transfer: readonly ArrayBuffer[]) => {
      askedKeys.push([...task.keys]);
      placeKeyIds(posted(task, transfer));
      return Promise.resolve();
    },
  };
}

/**
 * `packed(i)`: whether read i comes laid out as a pack (else as columns). With `placer`, packs are
 * in shared memory, and the placer must have placed every chunk's ids exactly when every read is a pack.
 * `placed(i)`: whether read i's decoder had a densePlace (as another thread receives it) and wrote
 * its dense rows there; a read that had one and came as columns anyway where it is not `packed`.
 */
async function check(
  partRows: readonly number[],
  skip: number,
  chunk: number,
  seed: number,
  packed: (i: number) => boolean = () => false,
  placer?: ReturnType<typeof recordingPlacer>,
  placed?: (i: number) => boolean,
  arena?: ReturnType<typeof dirtyArena>,
): Promise<void> {
  const r = rng(seed);
  const reads = partRows.map((rows) => read(rows, r));
  const windowRows = partRows.reduce((a, b) => a + b, 0);
  const order = permutation(windowRows, seed, 0, 0).subarray(skip);
  const cuts = cutsOf(windowRows - skip, chunk);

  const packs = new WindowPacks(layout, order, windowRows, cuts, placer, placed !== undefined, arena);
  // Every read is issued (its densePlace asked for) before the first arrives, as the reader does.
  const places = partRows.map((rows, i) => {
    const base = partRows.slice(0, i).reduce((a, b) => a + b, 0);
    return placed?.(i) === true ? posted(packs.densePlace(base, rows)) : undefined;
  });
  let base = 0;
  for (let i = 0; i < reads.length; i++) {
    const label = reads[i]!.get('label')!;
    if (packed(i)) {
      const pack = asPack(reads[i]!, partRows[i]!, placer !== undefined || placed !== undefined, places[i]);
      expect(pack.densePlaced === true, `read ${i}: dense values placed by its decoder`).toBe(places[i] !== undefined);
      if (places[i] !== undefined) expect(pack.dense.length).toBe(0);
      packs.addPack(pack, base);
    } else expect(packs.add(reads[i]!, label, base, partRows[i]!)).toBe(true);
    base += partRows[i]!;
  }

  // The oracle: the window's reads concatenated, gathered through the permutation, cut by packRows.
  const names = [...reads[0]!.keys()];
  const window = new Map(names.map((n) => [n, gatherColumn(concatColumns(reads.map((m) => m.get(n)!)), order)]));
  const outputs = new Map([...window].filter(([n]) => n !== 'label'));
  const src = { outputs, label: window.get('label')!, locate: (row: number) => ({ file: 'test', rowGroup: 0, row }) };
  for (let c = 0; c + 1 < cuts.length; c++) {
    const want = packRows(layout, [{ chunk: src, from: cuts[c]!, to: cuts[c + 1]! }]);
    const got = await packs.take(c);
    expect(bits(got), `chunk ${c}`).toEqual(bits(want));
    if (arena !== undefined) slotUse(arena, got);
  }
  if (arena !== undefined) expect(arena.lent, 'slots not given back').toBe(0);
  if (placer !== undefined) {
    const all = reads.every((_, i) => packed(i));
    expect(placer.asked).toEqual(all ? chunkGroups(cuts.length - 1, placer.threads) : []);
  }
}

/**
 * An arena whose `n` slots of `bytes` were lent and given back dirty (every byte 0xA5), as slots
 * come back from released batches: a chunk laid out there must not read anything left in them.
 */
function dirtyArena(bytes: number, n: number): PackArena & { inSlot: number; idsInSlot: number } {
  const arena = Object.assign(new PackArena(bytes, n), { inSlot: 0, idsInSlot: 0 });
  const slots = arena.lend(n);
  expect(slots.length).toBe(n);
  for (const [id, memory] of slots) {
    memory.fill(0xa5);
    arena.give(id);
  }
  return arena;
}

/** Counts a taken chunk laid out in one of `arena`'s slots (its ids there too, where they fit), and releases it. */
function slotUse(arena: ReturnType<typeof dirtyArena>, p: Pack): void {
  if (p.release === undefined) return;
  expect(p.dense.buffer).toBeInstanceOf(SharedArrayBuffer);
  expect(p.lengths.buffer).toBe(p.dense.buffer);
  if (p.labels !== null) expect(p.labels.buffer).toBe(p.dense.buffer);
  arena.inSlot++;
  if (p.values.byteLength > 0 && p.values.byteOffset > p.dense.byteOffset && p.values.byteOffset - p.dense.byteOffset < arena.slotBytes) arena.idsInSlot++;
  const lent = arena.lent;
  p.release();
  p.release();
  expect(arena.lent).toBe(lent - 1);
}

describe('WindowPacks', () => {
  it('lays each chunk out as packRows does from the permuted window (reads of unequal sizes)', async () => {
    await check([37, 50, 13], 0, 16, 1);
  });

  it('with a chunk that is the whole window, and with one-row chunks', async () => {
    await check([20, 20], 0, 40, 2);
    await check([9, 4], 0, 1, 3);
  });

  it('lays out a read of more rows than one block of dense values (2 MiB) as it lays out a small one', async () => {
    // 80,000 rows of 7 dense values: two blocks, the second short; a resumed window on top.
    await check([80_000, 3], 11, 30_000, 7);
  });

  it('leaves out the rows before a resumed window offset', async () => {
    await check([30, 25, 45], 17, 10, 4);
    await check([30, 25], 54, 8, 5);
  });

  it('takes reads laid out as packs by their decoders, alone or beside reads that came as columns', async () => {
    await check([37, 50, 13], 0, 16, 7, () => true);
    await check([37, 50, 13], 0, 16, 8, (i) => i === 1);
    await check([30, 25, 45], 17, 10, 9, (i) => i !== 1);
  });

  it("takes reads whose decoders wrote their dense rows straight to the window's chunks (densePlace)", async () => {
    // Every read; beside a read laid out with its dense values; beside one that had a place and
    // came as columns; a resumed window (skipped rows have nowhere to go); the ids placed elsewhere.
    await check(
      [37, 50, 13],
      0,
      16,
      21,
      () => true,
      undefined,
      () => true,
    );
    await check(
      [37, 50, 13],
      0,
      16,
      22,
      () => true,
      undefined,
      (i) => i !== 1,
    );
    await check(
      [30, 25, 45],
      17,
      10,
      23,
      (i) => i !== 2,
      undefined,
      () => true,
    );
    await check(
      [30, 25, 45],
      17,
      10,
      24,
      () => true,
      recordingPlacer(),
      (i) => i !== 0,
    );
    // Several blocks of dense rows (2 MiB each) in one read.
    await check(
      [80_000, 3],
      11,
      30_000,
      25,
      () => true,
      recordingPlacer(),
      () => true,
    );
  });

  it('refuses a densePlace of a window whose chunks are not shared, and a placed pack it gave no place', () => {
    const r = rng(26);
    const m = read(10, r);
    expect(() => new WindowPacks(layout, permutation(10, 26, 0, 0), 10, [0, 10]).densePlace(0, 10)).toThrow('densePlace needs a window made with sharedDense');
    const shared = new WindowPacks(layout, permutation(20, 26, 0, 0), 20, [0, 20], undefined, true);
    const place = shared.densePlace(0, 10);
    const elsewhere = new WindowPacks(layout, permutation(20, 26, 0, 0), 20, [0, 20], undefined, true);
    expect(() => elsewhere.addPack(asPack(m, 10, true, place), 0)).toThrow('dense values placed by a decoder without a densePlace');
  });

  it('has other threads place the ids, in groups of consecutive chunks, where every read is a pack in shared memory', async () => {
    await check([37, 50, 13], 0, 16, 10, () => true, recordingPlacer());
    // 13 one-row chunks: at most 8 groups (4 a thread); a resumed window; a chunk that is the window.
    await check([9, 4], 0, 1, 11, () => true, recordingPlacer());
    await check([30, 25, 45], 17, 10, 12, () => true, recordingPlacer());
    await check([20, 20], 0, 40, 13, () => true, recordingPlacer());
    // A read that came as columns: this thread places them all.
    await check([37, 50, 13], 0, 16, 14, (i) => i !== 1, recordingPlacer());
  });

  it('has other threads place the ids of reads that all came as columns, a group of keys each, their arrays moved there', async () => {
    // Three keys of int64 ids without null ids, b and c sharing their lists' offsets (one input cut
    // twice), so they must go to one thread; a scalar key of int32 ids with nulls (placed row by
    // row, as writeSparse writes it).
    const keysLayout: BatchLayout = {
      dense: [{ name: 'f', offset: 0, width: 1, vector: false }],
      denseNames: ['f'],
      dim: 1,
      sparseKeys: ['a', 'b', 'c', 's'],
      label: true,
    };
    const r = rng(17);
    const partRows = [40, 27, 33];
    const reads = partRows.map((rows) => {
      const a = list(rows, r, true, false) as ListColumn;
      const b = list(rows, r, true, false) as ListColumn;
      const n = b.offsets[rows]!;
      const c: ListColumn = {
        type: 'list',
        offsets: b.offsets,
        child: { type: 'int64', values: BigInt64Array.from({ length: n }, () => BigInt(Math.floor(r() * 1e12))), valid: null },
        valid: b.valid,
      };
      return new Map<string, Column>([
        ['f', { type: 'float32', values: Float32Array.from({ length: rows }, () => r()), valid: null }],
        ['a', a],
        ['b', b],
        ['c', c],
        ['s', { type: 'int32', values: Int32Array.from({ length: rows }, () => Math.floor(r() * 2 ** 31) - 2 ** 30), valid: mask(rows, r, 0.2) }],
        ['label', { type: 'float32', values: Float32Array.from({ length: rows }, () => (r() < 0.5 ? 0 : 1)), valid: null }],
      ]);
    });
    const windowRows = 100;
    const skip = 9;
    const order = permutation(windowRows, 17, 0, 0).subarray(skip);
    const cuts = cutsOf(windowRows - skip, 16);
    // The oracle, from the reads before they are moved.
    const window = new Map([...reads[0]!.keys()].map((n) => [n, gatherColumn(concatColumns(reads.map((m) => m.get(n)!)), order)]));
    const src = {
      outputs: new Map([...window].filter(([n]) => n !== 'label')),
      label: window.get('label')!,
      locate: (row: number) => ({ file: 'test', rowGroup: 0, row }),
    };
    const want = cuts.slice(1).map((to, c) => bits(packRows(keysLayout, [{ chunk: src, from: cuts[c]!, to }])));

    const placer = recordingPlacer();
    const packs = new WindowPacks(keysLayout, order, windowRows, cuts, placer);
    let base = 0;
    reads.forEach((m, i) => {
      expect(packs.add(new Map([...m].filter(([n]) => n !== 'label')), m.get('label')!, base, partRows[i]!)).toBe(true);
      base += partRows[i]!;
    });
    for (let c = 0; c + 1 < cuts.length; c++) expect(bits(await packs.take(c)), `chunk ${c}`).toEqual(want[c]);
    expect(placer.asked).toEqual([]);
    expect(placer.askedKeys.flat().sort()).toEqual([0, 1, 2, 3]);
    expect(placer.askedKeys.some((g) => g.includes(1) && g.includes(2))).toBe(true);
    // Moved, not copied: this thread's arrays of the reads' ids are empty now.
    for (const m of reads) for (const k of ['a', 'b', 'c']) expect(((m.get(k) as ListColumn).child as { values: BigInt64Array }).values.byteLength).toBe(0);
  });

  it('groups keys by the ids they hold, keys that share a buffer together', () => {
    const shared = new ArrayBuffer(8);
    const own = [0, 1, 2, 3, 4].map(() => new ArrayBuffer(8));
    // Keys 1 and 3 share a buffer: one set of weight 9; then 7, 4 and 2 each go to the lighter group (11 and 11).
    expect(keyGroups([7, 5, 2, 4, 4], (k) => (k === 1 || k === 3 ? [own[k]!, shared] : [own[k]!]), 2)).toEqual([
      [1, 2, 3],
      [0, 4],
    ]);
    expect(keyGroups([1, 1], (k) => [own[k]!], 8)).toEqual([[0], [1]]);
    expect(keyGroups([3, 1], () => [shared], 2)).toEqual([[0, 1]]);
  });

  it('passes a placement failure to the chunks that wait for it', async () => {
    const r = rng(15);
    const reads = [read(10, r), read(10, r)];
    const failing: IdsPlacer = {
      threads: 2,
      place: () => Promise.reject(new Error('decoder gone')),
      placeKeys: () => Promise.reject(new Error('decoder gone')),
    };
    const packs = new WindowPacks(layout, permutation(20, 15, 0, 0), 20, [0, 8, 16, 20], failing);
    packs.addPack(asPack(reads[0]!, 10, true), 0);
    packs.addPack(asPack(reads[1]!, 10, true), 10);
    await expect(packs.take(0)).rejects.toThrow('decoder gone');
  });

  it('places narrow parts (ids that fit in 31 bits, one word each) as it places wide ones', async () => {
    // Reads as a decode thread computes them: sparse keys still indexed into their dictionaries
    // (a list key with null lists, null ids and lists cut to their first 3; a scalar key with
    // null rows). With `big`, one dictionary holds an id of 2^40, so no part may be narrow.
    // The middle part's list dictionary is small beside its elements (read through a compact
    // table), the others' as large as a chunk of PLAIN pages makes it (read as they are).
    const idxLayout: BatchLayout = { dense: [], denseNames: [], dim: 0, sparseKeys: ['l', 's'], label: false };
    const dict = (r: () => number, big: boolean, size = 40): Column => ({
      type: 'int64',
      // A null entry's value is no id: -1 here, which must not make the part wide.
      values: BigInt64Array.from({ length: size }, (_, i) => (big && i === 7 ? 2n ** 40n : i % 9 === 4 ? -1n : BigInt(Math.floor(r() * 2 ** 31)))),
      valid: Uint8Array.from({ length: size }, (_, i) => (i % 9 === 4 ? 0 : 1)),
    });
    const part = (rows: number, r: () => number, big: boolean, shared: boolean): Pack => {
      const offsets = new Int32Array(rows + 1);
      for (let i = 0; i < rows; i++) offsets[i + 1] = offsets[i]! + Math.floor(r() * 6);
      const entries = rows === 31 ? 9 : Math.max(40, offsets[rows]!);
      const chunk = {
        outputs: new Map<string, Column>(),
        label: null,
        locate: (row: number) => ({ file: 'test', rowGroup: 0, row }),
        indexedLists: new Map([
          [
            'l',
            {
              dict: dict(r, false, entries),
              idx: Int32Array.from({ length: offsets[rows]! }, () => Math.floor(r() * entries)),
              offsets,
              valid: mask(rows, r, 0.1),
              keep: 3,
            },
          ],
        ]),
        indexed: new Map([['s', { dict: dict(r, big), idx: Int32Array.from({ length: rows }, () => Math.floor(r() * 40)) }]]),
      };
      return packRows(idxLayout, [{ chunk, from: 0, to: rows }], undefined, shared);
    };
    const take = async (big: boolean, shared: boolean, arena?: PackArena): Promise<Array<Record<string, unknown>>> => {
      const r = rng(16);
      const sizes = [23, 31, 17];
      const parts = sizes.map((rows) => part(rows, r, big, shared));
      expect(parts.map((p) => p.narrow === true)).toEqual(sizes.map(() => shared && !big));
      const packs = new WindowPacks(idxLayout, permutation(71, 16, 0, 0), 71, cutsOf(71, 10), shared ? recordingPlacer() : undefined, false, arena);
      let base = 0;
      parts.forEach((p, i) => {
        packs.addPack(p, base);
        base += sizes[i]!;
      });
      const out: Array<Record<string, unknown>> = [];
      for (let c = 0; c < 8; c++) {
        const got = await packs.take(c);
        expect(got.narrow).toBeUndefined();
        out.push(bits(got));
      }
      return out;
    };
    // Narrow parts placed by other threads against wide parts placed on this thread.
    expect(await take(false, true)).toEqual(await take(false, false));
    expect(await take(true, true)).toEqual(await take(true, false));
    // Narrow ids widened into a slot's dirty memory: each id's high word is written, not left as found.
    const arena = dirtyArena(1024, 8);
    expect(await take(false, true, arena)).toEqual(await take(false, false));
    expect(arena.lent).toBe(8);
  });

  it('lays chunks out in slots that released batches gave back, dirty as they come, and gives each back on release', async () => {
    // 7 chunks, 4 slots of 1,536 bytes: some chunks in fresh memory; ids in their slot where they fit.
    const few = dirtyArena(1536, 4);
    await check([37, 50, 13], 0, 16, 1, () => false, undefined, undefined, few);
    expect(few.inSlot).toBe(4);
    expect(few.idsInSlot).toBeGreaterThan(0);
    // A chunk whose ids did not fit made the arena's later slots bigger.
    if (few.idsInSlot < few.inSlot) expect(few.slotBytes).toBeGreaterThan(1536);
    // Every read a pack in shared memory, dense rows placed by the decoders, ids placed by other threads.
    const placedBy = dirtyArena(8192, 8);
    await check(
      [37, 50, 13],
      0,
      16,
      7,
      () => true,
      recordingPlacer(),
      () => true,
      placedBy,
    );
    expect([placedBy.inSlot, placedBy.idsInSlot]).toEqual([7, 7]);
    // A resumed window, packs beside reads that came as columns.
    const resumed = dirtyArena(4096, 16);
    await check([30, 25, 45], 17, 10, 9, (i) => i !== 1, undefined, undefined, resumed);
    expect(resumed.inSlot).toBe(9);
    // Slots too small even for a chunk's dense values: given back at once, the chunks in fresh memory.
    const small = dirtyArena(256, 4);
    await check([37, 50, 13], 0, 16, 1, () => false, undefined, undefined, small);
    expect(small.inSlot).toBe(0);
  });

  it('gives each read laid out in a slot of its own back once its ids are placed, and not before', async () => {
    for (const placer of [undefined, recordingPlacer()]) {
      const r = rng(21);
      const sizes = [37, 50, 13];
      const released: number[] = [];
      const packs = new WindowPacks(layout, permutation(100, 21, 0, 0), 100, cutsOf(100, 16), placer);
      let base = 0;
      sizes.forEach((rows, i) => {
        const part = asPack(read(rows, r), rows, true);
        packs.addPack(i === 1 ? part : { ...part, release: () => released.push(i) }, base);
        base += rows;
      });
      expect(released).toEqual([]);
      await packs.take(0);
      // The placement runs for every chunk at the first take; the slots go back once it is done.
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(released, placer === undefined ? 'placed here' : 'placed by other threads').toEqual([0, 2]);
      for (let c = 1; c < 7; c++) await packs.take(c);
      expect(released).toEqual([0, 2]);
    }
  });

  it('cuts chunks into groups of consecutive chunks of about equal length', () => {
    expect(chunkGroups(13, 8)).toEqual([[0], [1, 2], [3], [4, 5], [6, 7], [8], [9, 10], [11, 12]]);
    expect(chunkGroups(3, 8)).toEqual([[0], [1], [2]]);
    expect(chunkGroups(1, 8)).toEqual([[0]]);
  });

  it('reports a read with a null label (the caller then reads the window the way that reports it)', () => {
    const r = rng(6);
    const a = read(10, r);
    const b = read(10, r);
    const label = b.get('label')!;
    b.set('label', { ...label, valid: Uint8Array.from({ length: 10 }, (_, i) => (i === 7 ? 0 : 1)) } as Column);
    const packs = new WindowPacks(layout, permutation(20, 6, 0, 0), 20, [0, 8, 16, 20]);
    expect(packs.add(a, a.get('label')!, 0, 10)).toBe(true);
    expect(packs.add(b, b.get('label')!, 10, 10)).toBe(false);
  });
});
