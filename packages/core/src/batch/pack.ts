// The pack: a run of rows laid out as batch arrays, possibly in a slot of shared memory
// (batch/arena.ts). `packRows` builds one from columns, `mergePacks` joins rows of several.
import { DataError, gatherColumn, int64Words, type Column } from '@sluice/ops';
import { copyElements } from '../util/copy.js';
import { hugePages } from '../util/huge-pages.js';
import type { BatchLayout } from './layout.js';
import type { DensePlace, IndexedListSource, Pack, PackSource } from './types.js';
import {
  DENSE_BLOCK_WORDS,
  numberReader,
  placeRows,
  writeDense,
  writeDenseIndexed,
  writeLengths,
  writeLengthsIndexed,
  writeLengthsIndexedList,
  writeSparse,
  writeSparseIndexed,
  writeSparseIndexedList,
  hasCompactIds,
} from './writers.js';

/** `n` rounded up to a multiple of 8: where `packRows` starts each array of a pack in a slot. */
export const align8 = (n: number): number => (n + 7) & ~7;

/** Bytes a pack's arrays take in a slot (laid out as `packRows` does), for `PackArena.grow`. */
export function packBytes(p: Pack): number {
  return (
    align8(p.dense.byteLength) +
    align8(p.lengths.byteLength) +
    align8(p.offsets.byteLength) +
    (p.labels !== null ? align8(p.labels.byteLength) : 0) +
    p.values.byteLength
  );
}

/**
 * A slot of a PackArena (batch/arena.ts): bytes of shared memory, 8-byte aligned, that a pack's
 * arrays are laid out in (a view: the arena starts its slots on 2 MiB boundaries where it can).
 */
export type SlotMemory = Uint8Array<SharedArrayBuffer>;

/** Whether every array of a pack lies in `slot`. */
export function packInSlot(p: Pack, slot: SlotMemory): boolean {
  const end = slot.byteOffset + slot.byteLength;
  return [p.dense, p.lengths, p.offsets, p.values, p.labels].every(
    (a) => a === null || (a.buffer === slot.buffer && a.byteOffset >= slot.byteOffset && a.byteOffset + a.byteLength <= end),
  );
}

/** Rows [from, to) of a source: a pack is laid out from one or more, in order. */
export interface PackSegment {
  readonly chunk: PackSource;
  readonly from: number;
  readonly to: number;
}

/**
 * Lays out rows [from, to) of several sources (in order) as batch arrays. Pure, and free of
 * anything that needs the main thread: decode workers call it too.
 *
 * Hot paths here, in reader/fast-parquet.ts and in the decode worker use plain loops and
 * module-level functions, not callbacks made per call (forEach arrows, arrow-function class
 * fields): each call makes new closures, and V8 compiles each new closure again, on helper
 * threads that take CPU from the decoders (see bench/README.md, "A noisy host", the TurboFan
 * item).
 */
export function packRows(
  layout: BatchLayout,
  segments: readonly PackSegment[],
  slot?: SlotMemory,
  shared = false,
  /** Where the rows' dense values go instead of the pack (a part of a shuffled window: `DensePlace`). */
  place?: DensePlace,
): Pack & { readonly inSlot: boolean } {
  return packMany(layout, [segments], [slot], shared, [place])[0]!;
}

/**
 * Several packs at once, pack i from `packs[i]` in `slots[i]`: each the pack `packRows` makes.
 * The sparse keys are written one key at a time across all the packs, not pack by pack: where the
 * packs hold a shuffled window's chunks (reader/decode-worker.ts), every chunk reads each key's
 * dictionary at random, and key by key that dictionary stays in the L2 cache
 * (bench/README.md, "Shuffled reads").
 */
export function packMany(
  layout: BatchLayout,
  packs: ReadonlyArray<readonly PackSegment[]>,
  slots: ReadonlyArray<SlotMemory | undefined>,
  /** Arrays outside a slot in fresh shared memory, not ArrayBuffers (a part of a shuffled window: batch/window-ids.ts). */
  shared = false,
  /** places[i]: where pack i's dense values go instead of the pack (`DensePlace`; the pack's `dense` is then empty). */
  places?: ReadonlyArray<DensePlace | undefined>,
): Array<Pack & { readonly inSlot: boolean }> {
  const dim = layout.dim;
  const K = layout.sparseKeys.length;
  const P = packs.length;
  const rowsOf: number[] = [];
  const mems: SlotLayout[] = [];
  const dense: Float32Array[] = [];
  const lengths: Int32Array[] = [];
  const offsets: Int32Array[] = [];
  const labels: Array<Float32Array | null> = [];
  for (let p = 0; p < P; p++) {
    const segments = packs[p]!;
    const slot = slots[p];
    const rows = segments.reduce((a, s) => a + s.to - s.from, 0);
    rowsOf.push(rows);
    // With a slot (batch/arena.ts), the arrays are laid out in it in this order as long as they
    // fit, else each gets fresh memory. A reused slot holds an older batch, and some writers count
    // on zeroed memory as a fresh array has it: offsets are summed into, and a null row of a vector
    // feature is skipped. Those arrays are zeroed first; every other one is written in full (both
    // words of every sparse id included).
    const mem = new SlotLayout(slot, shared);
    mems.push(mem);
    const place = places?.[p];
    const data = place !== undefined ? NO_DENSE : mem.f32(rows * dim);
    if (slot !== undefined && data.buffer === slot.buffer && layout.dense.some((f) => f.vector)) data.fill(0);
    dense.push(data);
    lengths.push(mem.i32(K * rows));
    offsets.push(mem.i32(K + 1).fill(0));
    labels.push(layout.label ? mem.f32(rows) : null);

    if (place !== undefined) {
      placeDenseRows(layout, segments, place);
      continue;
    }
    let row0 = 0;
    for (const seg of segments) {
      const ixs = seg.chunk.indexed;
      for (const f of layout.dense) {
        const ix = ixs?.get(f.name);
        if (ix !== undefined) writeDenseIndexed(ix.dict, ix.idx, seg.from, seg.to, data, row0 * dim + f.offset, dim);
        else writeDense(seg.chunk.outputs.get(f.name)!, seg, data, row0, dim, f.offset, f.width);
      }
      row0 += seg.to - seg.from;
    }
  }

  // offsets[k + 1] collects key k's value count here; the prefix sum below makes them offsets.
  // Plain loops, not forEach callbacks: see the note on closures above `packRows`.
  for (let k = 0; k < K; k++) {
    const key = layout.sparseKeys[k]!;
    for (let p = 0; p < P; p++) {
      const rows = rowsOf[p]!;
      const ln = lengths[p]!;
      let row0 = 0;
      let sum = 0;
      for (const seg of packs[p]!) {
        const ix = seg.chunk.indexed?.get(key);
        const il = seg.chunk.indexedLists?.get(key);
        sum +=
          ix !== undefined
            ? writeLengthsIndexed(ix.dict, ix.idx, seg.from, seg.to, ln, k * rows + row0)
            : il !== undefined
              ? writeLengthsIndexedList(il, seg.from, seg.to, ln, k * rows + row0)
              : writeLengths(seg.chunk.outputs.get(key)!, seg.from, seg.to, ln, k * rows + row0);
        row0 += seg.to - seg.from;
      }
      offsets[p]![k + 1] = sum;
    }
  }

  const words: Uint32Array[] = [];
  const values: BigInt64Array[] = [];
  // A shuffled window's part whose ids all fit in 31 bits is narrow (Pack.narrow): half the
  // memory to fault in, write here and read again when the window is placed.
  const narrow: boolean[] = [];
  for (let p = 0; p < P; p++) {
    const o = offsets[p]!;
    for (let k = 0; k < K; k++) o[k + 1] += o[k]!;
    narrow.push(shared && isNarrow(layout, packs[p]!));
    const v = mems[p]!.i64(narrow[p] ? Math.ceil(o[K]! / 2) : o[K]!);
    values.push(v);
    words.push(int64Words(v));
  }
  for (let k = 0; k < K; k++) {
    const key = layout.sparseKeys[k]!;
    for (let p = 0; p < P; p++) {
      let at = offsets[p]![k]!;
      const w = words[p]!;
      for (const seg of packs[p]!) {
        const ix = seg.chunk.indexed?.get(key);
        const il = seg.chunk.indexedLists?.get(key);
        // A narrow part's keys are all indexed (isNarrow), so writeSparse never gets one.
        at =
          ix !== undefined
            ? writeSparseIndexed(ix.dict, ix.idx, seg.from, seg.to, w, at, narrow[p])
            : il !== undefined
              ? writeSparseIndexedList(il, seg.from, seg.to, w, at, narrow[p])
              : writeSparse(seg.chunk.outputs.get(key)!, seg.from, seg.to, w, at);
      }
    }
  }

  const out: Array<Pack & { readonly inSlot: boolean }> = [];
  for (let p = 0; p < P; p++) {
    const l = labels[p]!;
    if (l !== null) {
      let o = 0;
      for (const seg of packs[p]!) {
        const c = seg.chunk.label!;
        const read = numberReader(c);
        for (let r = seg.from; r < seg.to; r++, o++) {
          if (c.valid !== null && c.valid[r] === 0) throw new DataError('label is null (filter or fill these rows before training)', seg.chunk.locate(r));
          l[o] = read(r);
        }
      }
    }
    out.push({
      rows: rowsOf[p]!,
      dense: dense[p]!,
      lengths: lengths[p]!,
      offsets: offsets[p]!,
      values: values[p]!,
      labels: l,
      inSlot: mems[p]!.inSlot,
      ...(narrow[p] ? { narrow: true as const } : {}),
      ...(places?.[p] !== undefined ? { densePlaced: true as const } : {}),
    });
  }
  return out;
}

/**
 * A pack source per chunk of a permuted row group: chunk i holds rows order[cuts[i] - cuts[0]], …,
 * order[cuts[i + 1] - cuts[0] - 1] of `src` (a shuffled window that is one row group, laid out by
 * its decode worker). Indexed columns keep their dictionary and must come with their row indices
 * in `order` already (index i is that of row order[i]): the decode worker puts each input's in it
 * as it decodes the input, while they are in the cache (reader/dict-ops.ts, `decodeDerivedIndexed`
 * with an `order`; bench/README.md, "RM1 shuffled: permuting the row indices as they are
 * decoded"), so each chunk's indices are a contiguous run. An indexed list keeps its first `keep`
 * elements per row; other columns are gathered.
 */
export function chunkSources(src: PackSource, order: Int32Array, cuts: readonly number[]): PackSource[] {
  const c0 = cuts[0]!;
  const out: PackSource[] = [];
  for (let i = 0; i + 1 < cuts.length; i++) {
    const from = cuts[i]! - c0;
    const to = cuts[i + 1]! - c0;
    const sel = order.subarray(from, to);
    const indexed = new Map<string, { readonly dict: Column; readonly idx: Int32Array }>();
    for (const [name, ix] of src.indexed ?? []) indexed.set(name, { dict: ix.dict, idx: ix.idx.subarray(from, to) });
    const outputs = new Map<string, Column>();
    for (const [name, c] of src.outputs) outputs.set(name, gatherColumn(c, sel));
    const lists = new Map<string, IndexedListSource>();
    for (const [name, l] of src.indexedLists ?? []) lists.set(name, permuteList(l, sel));
    const locate = src.locate;
    out.push({ outputs, label: src.label === null ? null : gatherColumn(src.label, sel), indexed, indexedLists: lists, locate: (row) => locate(sel[row]!) });
  }
  return out;
}

/** Rows sel[0], sel[1], … of an indexed list, each cut to its first `keep` elements. */
function permuteList(l: IndexedListSource, sel: Int32Array): IndexedListSource {
  const n = sel.length;
  const { offsets, idx, valid, keep } = l;
  const out = new Int32Array(n + 1);
  for (let i = 0; i < n; i++) {
    const r = sel[i]!;
    out[i + 1] = out[i]! + Math.min(keep, offsets[r + 1]! - offsets[r]!);
  }
  const kept = new Int32Array(out[n]!);
  for (let i = 0; i < n; i++) {
    const s = offsets[sel[i]!]!;
    for (let j = out[i]!, k = s; j < out[i + 1]!; j++, k++) kept[j] = idx[k]!;
  }
  let v: Uint8Array | null = null;
  if (valid !== null) {
    v = new Uint8Array(n);
    for (let i = 0; i < n; i++) v[i] = valid[sel[i]!]!;
  }
  return { dict: l.dict, idx: kept, offsets: out, valid: v, keep };
}

/** The dense array of a pack whose dense values went to a `DensePlace`. */
const NO_DENSE = new Float32Array(0);

/** Scratch rows of dense values for `placeDenseRows` (reused: a thread lays out one pack at a time). */
let denseScratch = new Float32Array(0);

/**
 * The segments' rows of dense values, each to its place in a shuffled window's chunks: laid out
 * row-major a block at a time (DENSE_BLOCK_WORDS), then each row copied whole. A decoder given a
 * densePlace writes them so, once, where the main thread copied them again from the part
 * (bench/README.md, "RM5: dense rows to their places"); the main thread so writes a read that came
 * as columns (WindowPacks.add).
 */
export function placeDenseRows(layout: BatchLayout, segments: readonly PackSegment[], place: DensePlace): void {
  const dim = layout.dim;
  if (dim === 0) return;
  const to = place.chunks.map((d) => new Uint32Array(d.buffer, d.byteOffset, d.length));
  const block = Math.max(1, Math.floor(DENSE_BLOCK_WORDS / dim));
  if (denseScratch.length < block * dim) denseScratch = new Float32Array(block * dim);
  const scratch = denseScratch;
  const words = new Uint32Array(scratch.buffer);
  const vectors = layout.dense.some((f) => f.vector);
  let row0 = 0;
  for (const seg of segments) {
    for (let from = seg.from; from < seg.to; from += block) {
      const end = Math.min(seg.to, from + block);
      const n = end - from;
      // A null row of a vector feature is skipped by its writer: it must read as zeros.
      if (vectors) scratch.fill(0, 0, n * dim);
      const ixs = seg.chunk.indexed;
      for (const f of layout.dense) {
        const ix = ixs?.get(f.name);
        if (ix !== undefined) writeDenseIndexed(ix.dict, ix.idx, from, end, scratch, f.offset, dim);
        else writeDense(seg.chunk.outputs.get(f.name)!, { from, to: end }, scratch, 0, dim, f.offset, f.width);
      }
      const r = row0 + from - seg.from;
      placeRows(words.subarray(0, n * dim), dim, place.where.subarray(r, r + n), place.at.subarray(r, r + n), to);
    }
    row0 += seg.to - seg.from;
  }
}

/**
 * Typed arrays laid out one after another in a slot of shared memory (8-byte aligned) while they
 * fit, else each in fresh memory: how `packRows` and `mergePacks` place a pack's arrays.
 */
class SlotLayout {
  private at = 0;
  /** Whether any array went in the slot. */
  inSlot = false;
  constructor(
    private readonly slot: SlotMemory | undefined,
    private readonly shared: boolean,
  ) {}
  private take(bytes: number): { buffer: ArrayBufferLike; offset: number } {
    const slot = this.slot;
    if (slot !== undefined && this.at + bytes <= slot.byteLength) {
      const offset = slot.byteOffset + this.at;
      this.at = align8(this.at + bytes);
      this.inSlot = true;
      return { buffer: slot.buffer, offset };
    }
    const buffer = this.shared ? new SharedArrayBuffer(bytes) : new ArrayBuffer(bytes);
    hugePages(new Uint8Array(buffer));
    return { buffer, offset: 0 };
  }
  // Methods, not arrow-function fields: a field makes new closures per instance (see `packRows`).
  f32(n: number): Float32Array {
    const m = this.take(4 * n);
    return new Float32Array(m.buffer, m.offset, n);
  }
  i32(n: number): Int32Array {
    const m = this.take(4 * n);
    return new Int32Array(m.buffer, m.offset, n);
  }
  i64(n: number): BigInt64Array {
    const m = this.take(8 * n);
    return new BigInt64Array(m.buffer, m.offset, n);
  }
}

/** Whether every sparse key of a pack's segments comes from a dictionary whose ids fit in 31 bits (`hasCompactIds`). */
function isNarrow(layout: BatchLayout, segments: readonly PackSegment[]): boolean {
  if (layout.sparseKeys.length === 0) return false;
  for (const key of layout.sparseKeys)
    for (const seg of segments) {
      const dict = seg.chunk.indexed?.get(key)?.dict ?? seg.chunk.indexedLists?.get(key)?.dict;
      if (dict === undefined || !hasCompactIds(dict)) return false;
    }
  return true;
}

/**
 * Where row `row` (0 to pack.rows) of sparse key `k` starts in `pack.values`: the key's offset plus
 * the lengths of the rows before it, summed from whichever end of the key's rows is nearer. A
 * merge mostly takes a pack's head or tail (a batch across two row groups), so one end is free
 * (see bench/README.md, "Where the CPU goes, and why the loop releases its batches").
 */
function rowStart(pack: Pack, k: number, row: number): number {
  const n = pack.rows;
  const l = k * n;
  let at: number;
  if (row <= n - row) {
    at = pack.offsets[k]!;
    for (let j = 0; j < row; j++) at += pack.lengths[l + j]!;
  } else {
    at = pack.offsets[k + 1]!;
    for (let j = row; j < n; j++) at -= pack.lengths[l + j]!;
  }
  return at;
}

/**
 * Concatenates rows [from, to) of packs (in order) into one pack: in `slot` when it is given (as
 * `packRows` lays a pack out, each array in the slot while it fits, else in fresh memory).
 * Every array is written in full, so a used slot needs no zeroing.
 */
export function mergePacks(
  layout: BatchLayout,
  parts: ReadonlyArray<{ readonly pack: Pack; readonly from: number; readonly to: number }>,
  slot?: SlotMemory,
): Pack & { readonly inSlot: boolean } {
  // Plain loops, not callbacks: see the note above `packRows`.
  let rows = 0;
  for (let i = 0; i < parts.length; i++) rows += parts[i]!.to - parts[i]!.from;
  const dim = layout.dim;
  const K = layout.sparseKeys.length;
  const mem = new SlotLayout(slot, false);
  const dense = mem.f32(rows * dim);
  const lengths = mem.i32(K * rows);
  const offsets = mem.i32(K + 1);
  offsets[0] = 0;
  const labels = layout.label ? mem.f32(rows) : null;
  // Part i's values per key k in its pack: [ranges[r], ranges[r + 1]) with r = 2(iK + k), where
  // rows `from` and `to` start.
  const ranges = new Int32Array(2 * K * parts.length);
  for (let i = 0; i < parts.length; i++) {
    const { pack, from, to } = parts[i]!;
    for (let k = 0; k < K; k++) {
      const r = 2 * (i * K + k);
      ranges[r] = rowStart(pack, k, from);
      ranges[r + 1] = rowStart(pack, k, to);
    }
  }
  for (let k = 0; k < K; k++) {
    let n = 0;
    for (let i = 0; i < parts.length; i++) {
      const r = 2 * (i * K + k);
      n += ranges[r + 1]! - ranges[r]!;
    }
    offsets[k + 1] = offsets[k]! + n;
  }
  const values = mem.i64(offsets[K]!);
  let row0 = 0;
  const at = offsets.slice(0, K);
  for (let i = 0; i < parts.length; i++) {
    const { pack, from, to } = parts[i]!;
    // memcpy: TypedArray#set between shared buffers (slots) copies word by word (util/copy.ts).
    copyElements(dense, row0 * dim, pack.dense.subarray(from * dim, to * dim));
    for (let k = 0; k < K; k++) {
      copyElements(lengths, k * rows + row0, pack.lengths.subarray(k * pack.rows + from, k * pack.rows + to));
      const r = 2 * (i * K + k);
      const s = ranges[r]!;
      const e = ranges[r + 1]!;
      copyElements(values, at[k]!, pack.values.subarray(s, e));
      at[k] = at[k]! + e - s;
    }
    if (labels !== null) copyElements(labels, row0, pack.labels!.subarray(from, to));
    row0 += to - from;
  }
  return { rows, dense, lengths, offsets, values, labels, inSlot: mem.inSlot };
}
