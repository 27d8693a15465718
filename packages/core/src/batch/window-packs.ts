// A shuffled window's chunks laid out as batch arrays straight from its row groups' reads, with
// no window-sized copy of the permuted columns in between (stream/shuffle.ts, where the reader
// computes every feature). The packs are the ones `packRows` makes from the permuted window.
import { int64Words, type Column } from '@sluice/ops';
import { hugePages } from '../util/huge-pages.js';
import type { BatchLayout } from './layout.js';
import type { DensePlace, Pack } from './types.js';
import {
  chunkGroups,
  isSharedPart,
  keyGroups,
  placeChunkIds,
  placeKeyIds,
  columnBuffers,
  type ColumnsIds,
  type IdsPart,
  type IdsPlacer,
  type IdsPlan,
  type KeysTask,
} from './window-ids.js';
import { align8, placeDenseRows, type SlotMemory } from './pack.js';
import type { SlotLender } from './assemble.js';
import { releaseOnce } from './arena.js';
import { numberReader, placeRows, writeLengths } from './writers.js';

/** One read of the window, kept for its ids until every read is in (`placeIds`). */
type Part = ColumnsPart | PackPart;

/** A read that came as columns: its sparse outputs, in layout order. */
interface ColumnsPart {
  readonly sparse: readonly Column[];
  /** Per sparse output, its ids' words where it is a list of int64 ids with no null id (the common case), else null. */
  readonly ids: ReadonlyArray<Uint32Array | null>;
  readonly where: Int32Array;
  readonly out: Int32Array;
}

/** A read its decoder laid out as one pack, in its own row order: the pack's ids (its dense values are placed at once). */
type PackPart = IdsPart;

/**
 * The packs of one shuffled window. As each read of the window arrives (`add`), its rows' dense
 * values, labels and id counts are written where the permutation sends them, in the pack of the
 * chunk each row falls in: those need nothing from the window's other rows. A row's ids go after
 * the ids of the rows before it in its chunk, so they wait until every read is in; the first
 * `take` then copies every read's ids to their places (`placeIds`).
 *
 * Permuting the window's columns first and cutting packs from them after made a window-sized copy
 * in between, and copied every id and dense value twice (bench/README.md, "Shuffled reads").
 */
export class WindowPacks {
  /** dest[windowRow]: the output row (-1: a row a resumed window skips). */
  private readonly dest: Int32Array;
  /** Chunk of each output row. */
  private readonly chunkOf: Int32Array;
  private readonly dense: Float32Array[] = [];
  private readonly lengths: Int32Array[] = [];
  private readonly labels: Array<Float32Array | null> = [];
  /** counts[chunk][key]: the chunk's ids of that key. */
  private readonly counts: Int32Array[] = [];
  private parts: Part[] = [];
  private readonly offsets: Int32Array[] = [];
  /** Each chunk's ids, being placed (`placeIds`, on the first `take`). */
  private values: Array<Promise<BigInt64Array>> | null = null;
  /** Where the reads given a `densePlace` go, by their first window row, until they are added. */
  private readonly located = new Map<number, { readonly where: Int32Array; readonly at: Int32Array }>();
  private lens = new Int32Array(0);
  /** Each chunk's slot of the arena, or null where the chunk is in fresh memory (see `chunkArrays`). */
  private readonly slots: Array<ChunkSlot | null> = [];
  /** Reads that came in a slot of their own (a part arena's, stream/source.ts): given back once their ids are placed. */
  private lentParts: Pack[] = [];

  constructor(
    private readonly layout: BatchLayout,
    /** order[i]: the window row that becomes output row i (the window's permutation past a resumed offset). */
    order: Int32Array,
    windowRows: number,
    /** Chunk c holds output rows [cuts[c], cuts[c + 1]). */
    private readonly cuts: readonly number[],
    /**
     * Decode threads that place the ids of a window whose every read came as a pack in shared
     * memory (`addPack`), in parallel; without one, or for other windows, this thread does.
     */
    private readonly placer?: IdsPlacer,
    /** The chunks' dense arrays in shared memory, for decode threads to write reads' rows to (`densePlace`). */
    sharedDense = false,
    /**
     * Slots of shared memory that released batches gave back (batch/arena.ts): the chunks are laid
     * out there while it lends them, their batches giving them back on release, else in fresh memory.
     */
    private readonly arena?: SlotLender,
  ) {
    this.dest = destinations(order, windowRows, placer !== undefined);
    this.chunkOf = new Int32Array(order.length);
    const K = layout.sparseKeys.length;
    const lent = arena?.lend(cuts.length - 1) ?? [];
    for (let c = 0; c + 1 < cuts.length; c++) {
      const rows = cuts[c + 1]! - cuts[c]!;
      this.chunkOf.fill(c, cuts[c]!, cuts[c + 1]!);
      const slot = lent[c];
      const inSlot = slot !== undefined ? chunkArrays(layout, rows, slot[1]) : null;
      if (slot !== undefined && inSlot === null) arena!.give(slot[0]);
      if (slot !== undefined && inSlot !== null) {
        // Held by a token the chunk's pack keeps: dropped with the window or its batch unreleased, the arena lets the slot go.
        const holder = {};
        arena!.hold(slot[0], holder);
        this.slots.push({ id: slot[0], memory: slot[1], idsAt: inSlot.idsAt, holder });
        this.dense.push(inSlot.dense);
        this.lengths.push(inSlot.lengths);
        this.labels.push(inSlot.labels);
      } else {
        const words = rows * layout.dim;
        this.slots.push(null);
        this.dense.push(hugePages(sharedDense ? new Float32Array(new SharedArrayBuffer(4 * words)) : new Float32Array(words)));
        this.lengths.push(new Int32Array(K * rows));
        this.labels.push(layout.label ? new Float32Array(rows) : null);
      }
      this.counts.push(new Int32Array(K));
    }
  }

  /**
   * Places the read of window rows [base, base + rows): `outputs` maps each feature to its column,
   * `label` is the label column. False, placing nothing more, when the read has a null label: the
   * caller then takes the window's path that reports it (batch assembly, with the row).
   */
  add(outputs: ReadonlyMap<string, Column>, label: Column | null, base: number, rows: number): boolean {
    const { layout } = this;
    // A read whose decoder had a densePlace but came back as columns: its rows are written here.
    this.located.delete(base);
    if (label !== null && label.valid !== null && label.valid.subarray(0, rows).includes(0)) return false;
    const { where, at } = this.locate(base, rows);
    // As a decoder with a densePlace writes them (packMany), to this window's chunks.
    placeDenseRows(layout, [{ chunk: { outputs, label, locate: NO_LOCATE }, from: 0, to: rows }], { chunks: this.dense, where, at });

    if (label !== null) {
      const read = numberReader(label);
      for (let r = 0; r < rows; r++) {
        const c = where[r]!;
        if (c >= 0) this.labels[c]![at[r]!] = read(r);
      }
    }

    const K = layout.sparseKeys.length;
    if (this.lens.length < rows) this.lens = new Int32Array(rows);
    const lens = this.lens;
    const sparse: Column[] = [];
    const ids: Array<Uint32Array | null> = [];
    for (let k = 0; k < K; k++) {
      const col = outputs.get(layout.sparseKeys[k]!)!;
      sparse.push(col);
      ids.push(col.type === 'list' && col.child.type === 'int64' && col.child.valid === null ? int64Words(col.child.values) : null);
      writeLengths(col, 0, rows, lens, 0);
      this.placeLengths(k, lens, where, at);
    }
    this.parts.push({ sparse, ids, where, out: this.dest.subarray(base, base + rows) });
    return true;
  }

  /**
   * Where the decoder of window rows [base, base + rows) is to write their dense values: straight
   * to their rows of the window's chunks (shared memory: `sharedDense`). Its pack then comes to
   * `addPack` without them (`Pack.densePlaced`). Asked before the read is issued.
   */
  densePlace(base: number, rows: number): DensePlace {
    if (this.dense.length > 0 && !(this.dense[0]!.buffer instanceof SharedArrayBuffer)) throw new Error('densePlace needs a window made with sharedDense');
    const located = this.locate(base, rows);
    this.located.set(base, located);
    // A copy: `take` empties its entries as the chunks go.
    return { chunks: [...this.dense], ...located };
  }

  /**
   * Places the read of window rows [base, base + pack.rows) that its decoder laid out as one pack
   * (unpermuted): each row's dense values are one contiguous run there, so no column is transposed
   * on this thread. A decoder that had a `densePlace` wrote them to their places already.
   */
  addPack(pack: Pack, base: number): void {
    const { layout } = this;
    const rows = pack.rows;
    const placed = this.located.get(base);
    this.located.delete(base);
    if (pack.densePlaced === true && placed === undefined) throw new Error(`window rows from ${base}: dense values placed by a decoder without a densePlace`);
    const { where, at } = placed ?? this.locate(base, rows);
    const dim = layout.dim;
    if (dim > 0 && pack.densePlaced !== true)
      placeRows(new Uint32Array(pack.dense.buffer, pack.dense.byteOffset, rows * dim), dim, where, at, this.denseWords());
    if (pack.labels !== null) {
      // As words, as the dense values.
      const from = new Uint32Array(pack.labels.buffer, pack.labels.byteOffset, rows);
      const to = this.labels.map((l) => new Uint32Array(l!.buffer, l!.byteOffset, l!.length));
      for (let r = 0; r < rows; r++) {
        const c = where[r]!;
        if (c >= 0) to[c]![at[r]!] = from[r]!;
      }
    }
    for (let k = 0; k < layout.sparseKeys.length; k++) this.placeLengths(k, pack.lengths.subarray(k * rows, k * rows + rows), where, at);
    // The pack itself is kept, not only its release: it is the slot's holder (PackArena.hold).
    if (pack.release !== undefined) this.lentParts.push(pack);
    this.parts.push({
      rows,
      lengths: pack.lengths,
      offsets: pack.offsets,
      values: pack.values,
      narrow: pack.narrow === true,
      where,
      out: this.dest.subarray(base, base + rows),
    });
  }

  /** The chunks' dense values as words. */
  private denseWords(): Uint32Array[] {
    return this.dense.map((d) => new Uint32Array(d.buffer, d.byteOffset, d.length));
  }

  /** Key k's id count of each of a read's rows (lens[r]) to its row's place, and to its chunk's count. */
  private placeLengths(k: number, lens: Int32Array, where: Int32Array, at: Int32Array): void {
    const { lengths, counts, cuts } = this;
    for (let r = 0; r < where.length; r++) {
      const c = where[r]!;
      if (c < 0) continue;
      lengths[c]![k * (cuts[c + 1]! - cuts[c]!) + at[r]!] = lens[r]!;
      counts[c]![k] += lens[r]!;
    }
  }

  /** Each of the read's rows' chunk (-1: skipped) and row in that chunk. */
  private locate(base: number, rows: number): { where: Int32Array; at: Int32Array } {
    const { dest, chunkOf, cuts } = this;
    // In shared memory where a decode thread may read it to place the read's ids.
    const where = int32s(rows, this.placer !== undefined);
    const at = new Int32Array(rows);
    for (let r = 0; r < rows; r++) {
      const d = dest[base + r]!;
      if (d < 0) where[r] = -1;
      else {
        const c = chunkOf[d]!;
        where[r] = c;
        at[r] = d - cuts[c]!;
      }
    }
    return { where, at };
  }

  /**
   * Chunk c's pack, once every read of the window was added (chunks taken in order; each once).
   * The first take starts placing every chunk's ids; a chunk's pack is ready once its are.
   */
  async take(c: number): Promise<Pack> {
    this.values ??= this.placeIds();
    const values = await this.values[c]!;
    const slot = this.slots[c]!;
    const pack: Pack = {
      rows: this.cuts[c + 1]! - this.cuts[c]!,
      dense: this.dense[c]!,
      lengths: this.lengths[c]!,
      offsets: this.offsets[c]!,
      values,
      labels: this.labels[c]!,
      ...(slot !== null ? { release: releaseOnce(this.arena!, slot.id, slot.holder) } : {}),
    };
    this.slots[c] = null;
    // The stream holds the pack from here: the window keeps no reference to it.
    this.dense[c] = EMPTY_F32;
    this.lengths[c] = EMPTY_I32;
    this.values[c] = PLACED;
    return pack;
  }

  /**
   * Places every read's ids, once every row's id count is known: the decode threads do (`placer`),
   * a group of consecutive chunks each, where every read came as a pack in shared memory; else this
   * thread does, reading each read in order and writing at random, as ColumnScatter does (a gather,
   * reading each row's ids at random, stalls on about every read). The reads are let go here.
   */
  private placeIds(): Array<Promise<BigInt64Array>> {
    const values = this.placeAll();
    // The reads' own slots go back once every id was copied out of them, however that ended.
    const lent = this.lentParts;
    this.lentParts = [];
    if (lent.length > 0) void Promise.allSettled(values).then(() => lent.forEach((p) => p.release!()));
    return values;
  }

  /** `placeIds`'s placing. */
  private placeAll(): Array<Promise<BigInt64Array>> {
    const parts = this.parts;
    this.parts = [];
    const packs = parts.filter((p): p is PackPart => !('sparse' in p));
    const plan = this.plan(packs);
    const C = this.cuts.length - 1;
    const placer = this.placer;
    if (placer !== undefined && packs.length === parts.length && packs.every(isSharedPart)) {
      const values: Array<Promise<BigInt64Array>> = [];
      // One group a thread: each reads every part in order and skips the rows of other groups'
      // chunks. With more, smaller groups (the first chunks ready sooner) each read skipped most
      // rows and stalled about as a gather does (bench/README.md, "Shuffled reads").
      for (const group of chunkGroups(C, placer.threads)) {
        const placed = placer.place(plan, group);
        group.forEach((c, i) => {
          values[c] = placed.then((v) => v[i]!);
          // Awaited by `take`; a stream that stops early never takes the rest.
          values[c]!.catch(() => undefined);
        });
      }
      return values;
    }
    // Every read came as columns (a row group the decode threads shared by columns): each thread
    // places some keys, the reads' arrays of those moved to it. Here, after both threads are done
    // decoding, placing every id took ~1.7 s of RM5's window on DuckDB's file while they sat idle
    // (bench/README.md, "RM5 on DuckDB's file").
    if (placer !== undefined && parts.length > 0 && parts.every((p): p is ColumnsPart => 'sparse' in p)) return this.placeKeysElsewhere(parts, plan, placer);
    // Here: the packs' ids as a decode thread places them, then the reads that came as columns.
    const values = placeChunkIds(
      plan,
      Array.from({ length: C }, (_, c) => c),
    );
    const columns = parts.filter((p): p is ColumnsPart => 'sparse' in p);
    const keys = this.layout.sparseKeys.map((_, k) => k);
    placeKeyIds({ keys, rows: plan.rows, pos: plan.pos, chunks: values.map((v) => int64Words(v)), parts: columnsIds(columns, keys) });
    return values.map((v) => Promise.resolve(v));
  }

  /**
   * Places the ids of reads that all came as columns in the decode threads (`placer.placeKeys`),
   * a group of keys each, into chunk values in shared memory.
   */
  private placeKeysElsewhere(parts: readonly ColumnsPart[], plan: IdsPlan, placer: IdsPlacer): Array<Promise<BigInt64Array>> {
    const values = plan.sizes.map((size, c) => plan.into?.[c] ?? hugePages(new BigInt64Array(new SharedArrayBuffer(8 * size))));
    const chunks = values.map((v) => int64Words(v));
    const K = this.layout.sparseKeys.length;
    const weights = Array.from({ length: K }, (_, k) => this.counts.reduce((a, c) => a + c[k]!, 0));
    const buffersOf = (k: number): ArrayBufferLike[] => parts.flatMap((p) => columnBuffers(p.sparse[k]!));
    const placed = keyGroups(weights, buffersOf, placer.threads).map((keys) => {
      const transfer = new Set<ArrayBuffer>();
      for (const k of keys) for (const b of buffersOf(k)) if (!(b instanceof SharedArrayBuffer)) transfer.add(b as ArrayBuffer);
      const task: KeysTask = { keys, rows: plan.rows, pos: plan.pos, chunks, parts: columnsIds(parts, keys) };
      return placer.placeKeys(task, [...transfer]);
    });
    const all = Promise.all(placed);
    return values.map((v) => {
      const p = all.then(() => v);
      // Awaited by `take`; a stream that stops early never takes the rest.
      p.catch(() => undefined);
      return p;
    });
  }

  /**
   * Each chunk's ids array in its slot, after its other arrays, or null where the chunk has no slot
   * or its ids (sizes[c], from the plan) do not fit there (the arena then makes later slots that big: `grow`).
   */
  private idsInSlots(sizes: readonly number[]): Array<BigInt64Array | null> {
    return this.slots.map((slot, c) => {
      if (slot === null) return null;
      const size = sizes[c]!;
      const end = slot.idsAt + 8 * size;
      if (end > slot.memory.byteLength) {
        this.arena!.grow?.(end);
        return null;
      }
      return new BigInt64Array(slot.memory.buffer, slot.memory.byteOffset + slot.idsAt, size);
    });
  }

  /** Each chunk's offsets per key (kept for its pack) and ids, and where each row's ids of each key go there. */
  private plan(parts: readonly IdsPart[]): IdsPlan {
    const { layout, cuts } = this;
    const K = layout.sparseKeys.length;
    const n = cuts[cuts.length - 1]!;
    const pos = int32s(K * n, this.placer !== undefined);
    const sizes: number[] = [];
    for (let c = 0; c + 1 < cuts.length; c++) {
      const rows = cuts[c + 1]! - cuts[c]!;
      const offsets = new Int32Array(K + 1);
      for (let k = 0; k < K; k++) offsets[k + 1] = offsets[k]! + this.counts[c]![k]!;
      this.offsets.push(offsets);
      sizes.push(offsets[K]!);
      const lengths = this.lengths[c]!;
      for (let k = 0; k < K; k++)
        for (let i = 0, d = k * n + cuts[c]!, at = offsets[k]!; i < rows; i++, d++) {
          pos[d] = at;
          at += lengths[k * rows + i]!;
        }
    }
    const into = this.idsInSlots(sizes);
    return { keys: K, rows: n, pos, sizes, parts, ...(into.some((v) => v !== null) ? { into } : {}) };
  }
}

/** A chunk laid out in a slot of the arena. */
interface ChunkSlot {
  readonly id: number;
  readonly memory: SlotMemory;
  /** Where the chunk's ids may start in `memory`: after its other arrays. */
  readonly idsAt: number;
  /** The arena's hold on the slot (PackArena.hold): kept by the window until the chunk is taken, then by its pack. */
  readonly holder: object;
}

/**
 * A chunk's dense values, id counts and labels laid out at the start of `slot` (8-byte aligned, as
 * `packRows` lays a pack out), with where its ids may start; null where they do not fit.
 * Every element of these is written as the reads arrive, so a reused slot needs no zeroing.
 */
function chunkArrays(
  layout: BatchLayout,
  rows: number,
  slot: SlotMemory,
): { dense: Float32Array; lengths: Int32Array; labels: Float32Array | null; idsAt: number } | null {
  const denseAt = 0;
  const lengthsAt = align8(denseAt + 4 * rows * layout.dim);
  const labelsAt = align8(lengthsAt + 4 * rows * layout.sparseKeys.length);
  const idsAt = align8(labelsAt + (layout.label ? 4 * rows : 0));
  if (idsAt > slot.byteLength) return null;
  const { buffer, byteOffset } = slot;
  return {
    dense: new Float32Array(buffer, byteOffset + denseAt, rows * layout.dim),
    lengths: new Int32Array(buffer, byteOffset + lengthsAt, rows * layout.sparseKeys.length),
    labels: layout.label ? new Float32Array(buffer, byteOffset + labelsAt, rows) : null,
    idsAt,
  };
}

/** Reads that came as columns, as `placeKeyIds` takes them for keys `keys`. */
function columnsIds(parts: readonly ColumnsPart[], keys: readonly number[]): ColumnsIds[] {
  return parts.map((p) => ({ where: p.where, out: p.out, keys: keys.map((k) => ({ column: p.sparse[k]!, ids: p.ids[k]! })) }));
}

/**
 * Where each of a window's rows goes: dest[row] = i where order[i] = row, -1 for a row not in
 * `order` (rows before a resumed window's offset).
 */
export function destinations(order: Int32Array, rows: number, shared = false): Int32Array {
  const dest = int32s(rows, shared).fill(-1);
  for (let i = 0; i < order.length; i++) dest[order[i]!] = i;
  return dest;
}

const EMPTY_F32 = new Float32Array(0);
/** A read's rows are located by the stream (stream/shuffle.ts), not here: writeDense never asks. */
const NO_LOCATE = (): never => {
  throw new Error('no row to locate');
};
const EMPTY_I32 = new Int32Array(0);
/** A taken chunk's ids: the window keeps no reference to them. */
const PLACED = Promise.resolve(new BigInt64Array(0));

/** `n` int32s, in shared memory where a decode thread is to read them. */
function int32s(n: number, shared: boolean): Int32Array {
  return hugePages(shared ? new Int32Array(new SharedArrayBuffer(4 * n)) : new Int32Array(n));
}
