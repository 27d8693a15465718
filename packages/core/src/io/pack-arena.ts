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

  /** Up to `n` slots to lay packs out in: free ones first, then new ones while under `maxSlots`. */
  lend(n: number): Array<[number, SharedArrayBuffer]> {
    const got: Array<[number, SharedArrayBuffer]> = [];
    if (!this.pooling) return got;
    while (got.length < n) {
      let id = this.free.pop();
      if (id !== undefined) this.reused++;
      else if (this.slots.length < this.maxSlots) { id = this.slots.length; this.slots.push(new SharedArrayBuffer(this.slotBytes)); } else break;
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
    this.free.length = 0;
    this.out.clear();
    this.slots.length = 0;
  }
}

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
