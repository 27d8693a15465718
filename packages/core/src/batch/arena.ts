import { hugeShared } from '../util/huge-pages.js';
import type { BatchLayout } from './layout.js';
import { align8, type SlotMemory } from './pack.js';

/**
 * Shared memory that decode workers lay batches out in, reused once the consumer releases a batch
 * (`Batch.release`).
 *
 * Why: a thread's ArrayBuffers (allocated, or received by transfer) count against V8's
 * external-memory budget and start major GCs in its isolate; SharedArrayBuffer memory does not,
 * and reused memory is not allocated at all (see bench/README.md, "Where the CPU goes, and why the
 * loop releases its batches"). A slot goes to a worker with a read, comes back as the arrays of a
 * batch, and returns to the free list when the consumer calls `release()`.
 *
 * Slots are lent from the first read, made on demand up to `maxSlots`; past that, and for a pack
 * that does not fit a slot, the worker allocates fresh memory. (Lending only after the consumer's
 * first release, as the arena once did, left the first reads of every process in fresh memory:
 * ~20% of a 1M-row RM1 run's time went to their page faults and GCs; bench/README.md, "A cold
 * process's memory".) Each pack or batch laid out in a slot is its `hold`er: one dropped without
 * `release()` is garbage collected, and the arena then lets its slot go (a FinalizationRegistry).
 * Until the consumer releases a batch (`releasing`), the arena makes no more than `maxSlots` slots
 * in all: shared memory does not count toward V8's external-memory budget, so the dropped batches
 * of a consumer that never releases would not start the collections that free their slots, and
 * new slots in their place would pile up (1 GB streaming 10M RM1 rows). Such a consumer gets fresh
 * arrays past its first `maxSlots` batches, as before.
 *
 * Growing: a slot first holds one sparse value per key and row (`packSlotBytes`), which list
 * features outgrow. A pack that did not fit makes the arena `grow`: later slots are that big (with
 * 1/8 to spare), so the ids stop going to fresh memory whose first-touch page faults the main
 * thread pays for; outgrown slots are let go as they come back (RM5 figures: commit d5ac9cd).
 *
 * Parking: a pipeline that ends parks its arena (`park`) for the next pipeline of the same slot
 * size in this process (`PackArena.take`), as the decoder pool parks its warm workers, so that
 * pipeline lays its first batches out in released slots rather than fresh memory.
 *
 * @example
 * const arena = new PackArena(packSlotBytes(layout, 8192));
 * const slots = arena.lend(13); // [[id, memory], ...] for one row group's packs
 * arena.hold(slots[0][0], pack); // pack 0 lies in slot 0
 * arena.give(slots[0][0]); // its batch was released
 */
export class PackArena {
  private readonly slots = new Map<number, SlotMemory>();
  private nextId = 0;
  private readonly free: number[] = [];
  /** Slots lent out (in a worker's hands, or holding a batch), each with its holder's token once it has one. */
  private readonly out = new Map<number, object | null>();
  private closed = false;
  /** Parked by `park`, waiting for `take`: lends nothing meanwhile, but takes released slots back. */
  private parked = false;
  private unpark: (() => void) | null = null;
  /** Slots handed out again after a release (the memory saved from allocation). */
  reused = 0;
  /** Whether the consumer has released a batch (`releasing`); until then at most `maxSlots` slots are made. */
  private consumerReleases = false;
  /** Slots made since this arena was made or taken. */
  private made = 0;
  /** Lets a slot go when its holder is collected before the slot was given back. */
  private readonly holders = new FinalizationRegistry<{ readonly id: number; readonly token: object }>(({ id, token }) => this.drop(id, token));

  /** Bytes of the slots made from now on (`grow` raises it). */
  private bytes: number;

  /**
   * `requestedBytes`: the slot size asked for (`take` matches on it). `fixedMax`: the most slots at
   * once (default: as many as DEFAULT_ARENA_BYTES holds at the current slot size, at least 4).
   */
  constructor(
    readonly requestedBytes: number,
    private readonly fixedMax?: number,
  ) {
    if (!Number.isInteger(requestedBytes) || requestedBytes <= 0 || requestedBytes % 8 !== 0)
      throw new RangeError(`slot size must be a positive multiple of 8 bytes, got ${requestedBytes}`);
    if (fixedMax !== undefined && (!Number.isInteger(fixedMax) || fixedMax < 1)) throw new RangeError(`maxSlots must be a positive integer, got ${fixedMax}`);
    this.bytes = requestedBytes;
  }

  /** Bytes of each slot made from now on. */
  get slotBytes(): number {
    return this.bytes;
  }

  /** The most slots this arena holds at once. */
  get maxSlots(): number {
    return this.fixedMax ?? Math.max(4, Math.floor(DEFAULT_ARENA_BYTES / this.bytes));
  }

  /** Slots held now (lent or free). */
  get size(): number {
    return this.slots.size;
  }

  /** Slots lent and not given back. */
  get lent(): number {
    return this.out.size;
  }

  /**
   * Up to `n` slots to lay packs out in: free ones first, then new ones while under `maxSlots`.
   * A new slot starts on a 2 MiB boundary and takes 2 MiB pages where huge pages are on
   * (`hugeShared`): a cold run's slots are fresh memory, and in 4 KiB pages each costs a fault.
   */
  lend(n: number): Array<[number, SlotMemory]> {
    const got: Array<[number, SlotMemory]> = [];
    if (this.closed || this.parked) return got;
    while (got.length < n) {
      let id = this.free.pop();
      if (id !== undefined) this.reused++;
      else if (this.slots.size < this.maxSlots && (this.consumerReleases || this.made < this.maxSlots)) {
        id = this.nextId++;
        this.made++;
        this.slots.set(id, hugeShared(this.bytes));
      } else break;
      this.out.set(id, null);
      got.push([id, this.slots.get(id)!]);
    }
    return got;
  }

  /** The consumer released a batch: slots that dropped batches let go may be made anew. */
  releasing(): void {
    this.consumerReleases = true;
  }

  /**
   * Slot `id` lies in `holder`'s arrays until it is given back: if `holder` is garbage collected
   * first (a batch dropped without `release()`), the arena lets the slot go.
   */
  hold(id: number, holder: object): void {
    // Only a lent slot without a holder yet (get: undefined when not lent).
    if (this.out.get(id) !== null) return;
    const token = {};
    this.out.set(id, token);
    this.holders.register(holder, { id, token }, token);
  }

  /**
   * Takes slot `id` back; a second give of the same lend, or one after `close`, does nothing. A
   * slot smaller than `slotBytes` (made before a `grow`) is let go instead of kept.
   */
  give(id: number): void {
    if (!this.out.has(id)) return;
    const token = this.out.get(id);
    if (token) this.holders.unregister(token);
    this.out.delete(id);
    if (this.closed) return;
    if (this.slots.get(id)!.byteLength < this.bytes) this.slots.delete(id);
    else this.free.push(id);
  }

  /** Slot `id`'s holder was collected while it held the slot (`token`: that lend's): let the slot go. */
  private drop(id: number, token: object): void {
    if (this.out.get(id) !== token) return;
    this.out.delete(id);
    this.slots.delete(id);
  }

  /**
   * A pack of `bytes` did not fit the slot it was given: make slots that big, and 1/8 more, from
   * now on (the free smaller ones go now, the lent ones when given back). Packs bigger than
   * MAX_SLOT_BYTES stay in fresh memory.
   */
  grow(bytes: number): void {
    if (this.closed || bytes <= this.bytes || bytes > MAX_SLOT_BYTES) return;
    this.bytes = Math.min(align8(Math.ceil(bytes * 1.125)), MAX_SLOT_BYTES);
    for (const id of this.free) this.slots.delete(id);
    this.free.length = 0;
  }

  /** Stops lending and drops the arena's hold on its memory (batches still holding slots keep theirs). */
  close(): void {
    this.closed = true;
    this.parked = false;
    this.free.length = 0;
    for (const token of this.out.values()) if (token) this.holders.unregister(token);
    this.out.clear();
    this.slots.clear();
  }

  /**
   * The pipeline is done with this arena: keep it for the next `take` of the same slot size in
   * this process, for up to `PARK_MS` (slots its batches still hold come back as they are
   * released). An arena that holds no slot, or one past `MAX_PARKED`, is closed instead.
   */
  park(): void {
    if (this.closed || this.parked) return;
    if (this.slots.size === 0) {
      this.close();
      return;
    }
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
   * An arena for packs of `slotBytes`: the most recently parked one asked for that size (its free
   * slots, grown or not, lent from the first read), or a new one.
   */
  static take(slotBytes: number, maxSlots?: number): PackArena {
    for (let i = parked.length - 1; i >= 0; i--) {
      const a = parked[i]!;
      if (a.requestedBytes !== slotBytes || a.fixedMax !== maxSlots) continue;
      parked.splice(i, 1);
      a.unpark?.();
      a.unpark = null;
      a.parked = false;
      a.reused = 0;
      a.made = 0;
      a.consumerReleases = false;
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
 * releases every batch needs a slot per pack in flight: the row groups being decoded plus the
 * prefetched batches, a few dozen RM1-sized batches of 8,192 rows with 1-2 decoders.
 */
export const DEFAULT_ARENA_BYTES = 256 << 20;

/** The largest slot `grow` makes: half the default budget, so that an arena still holds 4 slots within 2x of it. */
export const MAX_SLOT_BYTES = DEFAULT_ARENA_BYTES / 2;

/**
 * Bytes of a slot for a pack of up to `rows` rows: the dense matrix, lengths, offsets and labels,
 * and one sparse value per key and row (a pack with more values gets its values array outside the
 * slot, and the arena grows). The order is the one `packRows` lays them out in.
 */
export function packSlotBytes(layout: BatchLayout, rows: number): number {
  const K = layout.sparseKeys.length;
  return align8(4 * rows * layout.dim) + align8(4 * K * rows) + align8(4 * (K + 1)) + (layout.label ? align8(4 * rows) : 0) + 8 * K * rows;
}

/**
 * A pack's `release` for slot `id` of `arena`: gives the slot back the first time, nothing after
 * (a batch's release and a merge that copied the pack's rows may both call it). `holder`, the
 * arena's hold on the slot (`PackArena.hold`) when it is not the pack itself, is kept reachable
 * for as long as the release is.
 */
export function releaseOnce(arena: { give(id: number): void }, id: number, holder?: object): () => void {
  let given = false;
  return () => {
    if (given) return;
    given = true;
    void holder;
    arena.give(id);
  };
}
