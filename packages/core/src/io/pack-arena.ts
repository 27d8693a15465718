import type { BatchLayout } from '../stream/batch.js';

/**
 * Shared memory that decode workers lay batches out in, reused once the consumer releases a batch
 * (`Batch.release`).
 *
 * Why: every ArrayBuffer a thread allocates or receives by transfer counts against V8's
 * external-memory budget, and each ~64 MB of it starts a major GC in that thread's isolate. A
 * packed RM1 run moves ~513 MB of batch arrays per 1M rows from the decode worker to the main
 * thread, so both isolates ran ~10 major GCs per 1M rows, and V8's helper threads spent ~300 ms
 * of CPU per 1M rows marking and sweeping beside ~800 ms of decoding (measured per thread from
 * /proc on the 2-core development VM). SharedArrayBuffer memory is not counted, and memory that is
 * reused is not allocated at all: a slot goes to a worker with a read, comes back as the arrays of
 * a batch, and returns to the free list when the consumer calls `release()`.
 *
 * Nothing is pooled until the consumer has released a batch: a consumer that keeps its batches (or
 * never calls `release`) gets fresh arrays as before and pays for no idle slots. Slots are made on
 * demand up to `maxSlots`; past that, and for a pack that does not fit a slot, the worker
 * allocates fresh memory as before.
 *
 * A pipeline that ends parks its arena (`park`) for the next pipeline of the same slot size in
 * this process (`PackArena.take`), as the decoder pool parks its warm workers: a pipeline per
 * epoch, or a benchmark's repeated runs, then lays its first batches out in the slots the last
 * one released instead of in ~26 fresh 4 MB packs per RM1 run (the prefetch before the first
 * release). A taken arena lends its free slots from the first read, but makes no new ones until
 * its new consumer releases a batch, so a consumer that keeps its batches holds no more slot
 * memory than was parked.
 *
 * @example
 * const arena = new PackArena(packSlotBytes(layout, 8192));
 * const slots = arena.lend(13); // [[id, sab], ...] for one row group's packs (none until activated)
 * arena.activate(); arena.give(slots[0][0]);
 */
export class PackArena {
  private readonly slots: SharedArrayBuffer[] = [];
  private readonly free: number[] = [];
  /** Slots lent out: in a worker's hands, or holding a batch. */
  private readonly out = new Set<number>();
  private active = false;
  private closed = false;
  /** Parked by `park`, waiting for `take`: lends nothing meanwhile, but takes released slots back. */
  private parked = false;
  private unpark: (() => void) | null = null;
  /** Slots handed out again after a release (the memory saved from allocation). */
  reused = 0;

  constructor(readonly slotBytes: number, readonly maxSlots = Math.max(4, Math.floor(DEFAULT_ARENA_BYTES / slotBytes))) {
    if (!Number.isInteger(slotBytes) || slotBytes <= 0 || slotBytes % 8 !== 0) throw new RangeError(`slot size must be a positive multiple of 8 bytes, got ${slotBytes}`);
    if (!Number.isInteger(maxSlots) || maxSlots < 1) throw new RangeError(`maxSlots must be a positive integer, got ${maxSlots}`);
  }

  /** Slots made so far (each `slotBytes` of shared memory). */
  get size(): number { return this.slots.length; }

  /** Slots lent and not given back. */
  get lent(): number { return this.out.size; }

  /** Whether slots are lent (after the first release). */
  get pooling(): boolean { return this.active && !this.closed; }

  /** The consumer releases batches: lend slots from now on. */
  activate(): void { this.active = true; }

  /**
   * Up to `n` slots to lay packs out in: free ones first, then new ones while under `maxSlots`
   * (new ones only once a consumer has released a batch; see `take`).
   */
  lend(n: number): Array<[number, SharedArrayBuffer]> {
    const got: Array<[number, SharedArrayBuffer]> = [];
    if (this.closed || this.parked || (!this.active && this.free.length === 0)) return got;
    while (got.length < n) {
      let id = this.free.pop();
      if (id !== undefined) this.reused++;
      else if (this.active && this.slots.length < this.maxSlots) { id = this.slots.length; this.slots.push(new SharedArrayBuffer(this.slotBytes)); } else break;
      this.out.add(id);
      got.push([id, this.slots[id]!]);
    }
    return got;
  }

  /** Takes slot `id` back; a second give of the same lend, or one after `close`, does nothing. */
  give(id: number): void {
    if (!this.out.delete(id) || this.closed) return;
    this.free.push(id);
  }

  /** Stops lending and drops the arena's hold on its memory (batches still holding slots keep theirs). */
  close(): void {
    this.closed = true;
    this.parked = false;
    this.free.length = 0;
    this.out.clear();
    this.slots.length = 0;
  }

  /**
   * The pipeline is done with this arena: keep it for the next `take` of the same slot size in
   * this process, for up to `PARK_MS` (slots its batches still hold come back as they are
   * released). An arena that never pooled, or one past `MAX_PARKED`, is closed instead.
   */
  park(): void {
    if (this.closed || this.parked) return;
    if (!this.active || this.slots.length === 0) { this.close(); return; }
    if (parked.length >= MAX_PARKED) parked.shift()!.dropParked();
    this.parked = true;
    const timer = setTimeout(() => this.dropParked(), PARK_MS);
    timer.unref();
    this.unpark = () => clearTimeout(timer);
    parked.push(this);
  }

  private dropParked(): void {
    const i = parked.indexOf(this);
    if (i >= 0) parked.splice(i, 1);
    this.unpark?.();
    this.unpark = null;
    this.close();
  }

  /**
   * An arena for packs of `slotBytes`: the most recently parked one of that size (its free slots
   * lent from the first read, new ones only after a release), or a new one.
   */
  static take(slotBytes: number, maxSlots?: number): PackArena {
    for (let i = parked.length - 1; i >= 0; i--) {
      const a = parked[i]!;
      if (a.slotBytes !== slotBytes || (maxSlots !== undefined && a.maxSlots !== maxSlots)) continue;
      parked.splice(i, 1);
      a.unpark?.();
      a.unpark = null;
      a.parked = false;
      a.active = false;
      a.reused = 0;
      return a;
    }
    return new PackArena(slotBytes, maxSlots);
  }
}

/** Arenas that ended pipelines parked for the next one (see `PackArena.park`). */
const parked: PackArena[] = [];
const PARK_MS = 10_000;
const MAX_PARKED = 2;

/**
 * Slot memory an arena makes at most by default, but never fewer than 4 slots. A consumer that
 * releases every batch needs the packs in flight: the row groups being decoded plus the prefetched
 * batches, ~30-45 slots for RM1 batches of 8,192 rows (~4.3 MB each) with 1-2 decoders.
 */
export const DEFAULT_ARENA_BYTES = 256 << 20;

const align8 = (n: number): number => (n + 7) & ~7;

/**
 * Bytes of a slot for a pack of up to `rows` rows: the dense matrix, lengths, offsets and labels,
 * and one sparse value per key and row (a pack with more values gets its values array outside the
 * slot). The order is the one `packRows` lays them out in.
 */
export function packSlotBytes(layout: BatchLayout, rows: number): number {
  const K = layout.sparseKeys.length;
  return align8(4 * rows * layout.dim) + align8(4 * K * rows) + align8(4 * (K + 1)) + (layout.label ? align8(4 * rows) : 0) + 8 * K * rows;
}
