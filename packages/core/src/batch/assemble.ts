// Batch assembly: turns segments of processed chunks into a `Batch`, handing on a decode
// worker's pack as it is when one covers the batch.
import { defineRelease } from '@sluice/ops';
import type { Cursor } from './cursor.js';
import type { BatchLayout } from './layout.js';
import { mergePacks, packBytes, packInSlot, packRows, type SlotMemory } from './pack.js';
import type { Batch, Pack, Segment } from './types.js';

/** Slots of shared memory to lay batches out in, and where they go back (batch/arena.ts). */
export interface SlotLender {
  lend(n: number): Array<[number, SlotMemory]>;
  give(id: number): void;
  /** Slot `id` lies in `holder`'s arrays: let it go if `holder` is collected first (PackArena.hold). */
  hold(id: number, holder: object): void;
  /** The consumer released a batch (PackArena.releasing). */
  releasing(): void;
  /** A pack of `bytes` did not fit the slot it was lent (PackArena.grow). */
  grow?(bytes: number): void;
}

/**
 * Builds one batch from segments of processed chunks (in order). Pure: the caller decides when a
 * batch is full and what its sequence number and end cursor are. Segments of chunks that arrive
 * packed (laid out by a decode worker) are handed on as they are when one covers the whole batch,
 * and concatenated otherwise.
 */
export function assembleBatch(layout: BatchLayout, segments: readonly Segment[], seq: number, end: Cursor, arena?: SlotLender): Batch {
  let pack: Pack;
  // The pack in shared memory this batch hands on whole, given back by the batch's release.
  let from: Pack | null = null;
  // The arena's slot this batch was copied into, given back on release (-1: none).
  let own = -1;
  if (!segments.some((s) => s.chunk.packed !== undefined)) {
    pack = packRows(layout, segments);
  } else {
    const whole = segments.length === 1 && segments[0]!.from === 0 && segments[0]!.to === segments[0]!.chunk.packed?.rows;
    if (whole) {
      pack = segments[0]!.chunk.packed!;
      if (pack.release !== undefined) from = pack;
    } else {
      // A batch across a row-group boundary, or a mix of packed and unpacked chunks: copied into
      // a slot of the arena when it lends one, as the packs are.
      const [slot] = arena?.lend(1) ?? [];
      // A loop, not segments.map (see the note above packRows): mergePacks deoptimized ("wrong
      // map") on a mapped array at its first use.
      const parts: Array<{ pack: Pack; from: number; to: number }> = [];
      for (const s of segments)
        parts.push(
          s.chunk.packed !== undefined ? { pack: s.chunk.packed, from: s.from, to: s.to } : { pack: packRows(layout, [s]), from: 0, to: s.to - s.from },
        );
      const merged = mergePacks(layout, parts, slot?.[1]);
      if (slot !== undefined && !packInSlot(merged, slot[1])) arena!.grow?.(packBytes(merged));
      if (slot !== undefined && merged.inSlot) own = slot[0];
      else if (slot !== undefined) arena!.give(slot[0]);
      pack = merged;
      // The rows are copied: a pack whose last rows this batch took is free now (chunks line up
      // with batches, so a pack is split at most at a batch boundary and its rows go in order).
      for (const s of segments) {
        const p = s.chunk.packed;
        if (p?.release !== undefined && s.to === p.rows) p.release();
      }
    }
  }
  const batch: Batch = {
    seq,
    epoch: segments[0]?.chunk.at.epoch ?? end.epoch,
    rows: pack.rows,
    dense: { names: layout.denseNames, features: layout.dense, dim: layout.dim, data: pack.dense },
    sparse: { keys: layout.sparseKeys, lengths: pack.lengths, offsets: pack.offsets, values: pack.values },
    labels: pack.labels,
    end,
  };
  // Dropped without release, the batch lets its own slot go (a whole pack's is its pack's).
  if (own >= 0) arena!.hold(own, batch);
  return defineRelease(batch, () => {
    arena?.releasing();
    from?.release!();
    if (own >= 0) arena!.give(own);
  });
}
