// The shapes a batch travels in: the `Batch` a trainer receives, the processed chunks and
// segments the batch stage cuts batches from, and the pack a run of rows is laid out in.
import type { Column, RowLocator } from '@sluice/ops';
import type { Cursor } from './cursor.js';

/**
 * One mini-batch of training rows, as a trainer receives it.
 *
 * Laid out as ARCHITECTURE.md says: a row-major float32 dense matrix, a keyed jagged sparse
 * tensor (key-major lengths, concatenated int64 values), and float32 labels. Every array is a
 * plain typed array, so a batch can be transferred.
 *
 * @example
 * for await (const b of pipeline('plan.json', { input: 'train.parquet' })) {
 *   const x = b.dense.data; // b.rows × b.dense.dim, row-major
 *   const ids = b.sparse.values.subarray(b.sparse.offsets[0], b.sparse.offsets[1]); // first key's ids
 *   train(x, ids, b.labels);
 *   b.release?.(); // its memory may now hold a later batch
 * }
 */
export interface Batch {
  /** 0-based position in the run's batch sequence (continues across epochs and resumes). */
  readonly seq: number;
  readonly epoch: number;
  readonly rows: number;
  readonly dense: {
    /** Column names of the matrix (a oneHot feature `f` of n classes gives `f:0` … `f:n-1`). */
    readonly names: readonly string[];
    /** Features and where their columns start. */
    readonly features: ReadonlyArray<{ readonly name: string; readonly offset: number; readonly width: number; readonly vector: boolean }>;
    /** Columns per row (D). */
    readonly dim: number;
    /** rows × dim values, row-major. */
    readonly data: Float32Array;
  };
  readonly sparse: {
    readonly keys: readonly string[];
    /** keys.length × rows list lengths, key-major: lengths[k*rows + r]. */
    readonly lengths: Int32Array;
    /** Start of each key's values in `values` (keys.length + 1 entries). */
    readonly offsets: Int32Array;
    readonly values: BigInt64Array;
  };
  readonly labels: Float32Array | null;
  /** Cursor of the row after this batch: where a resumed run starts. */
  readonly end: Cursor;
  /**
   * Says you are done with this batch, so that its memory may hold a later batch. Optional: a
   * batch never released is collected as usual. A pipeline whose decode threads lay batches out
   * lays them in shared memory (batch/arena.ts) that released batches give back for later ones,
   * which spares allocating every batch and the garbage collections that causes (see bench/README.md,
   * "Where the CPU goes, and why the loop releases its batches"). After `release()` nothing may
   * read the batch's arrays (nor views of their buffers): they may be overwritten. Repeated calls
   * do nothing. Batches of pipelines only (not enumerable); absent on batches decoded from a
   * transport or HTTP.
   */
  readonly release?: () => void;
}

/** A chunk after preprocessing: output columns by feature name, plus the label column. */
export interface ProcessedChunk {
  /** Output columns by feature name (empty when the chunk is `packed`). */
  readonly outputs: ReadonlyMap<string, Column>;
  readonly label: Column | null;
  readonly rows: number;
  readonly at: Cursor;
  readonly windowRows: number;
  readonly lastInEpoch: boolean;
  readonly locate: RowLocator;
  /** The chunk's rows already laid out as batch arrays (by a decode worker); `outputs` is then empty. */
  readonly packed?: Pack;
}

/** A run of rows [from, to) of a processed chunk. */
export interface Segment {
  readonly chunk: ProcessedChunk;
  readonly from: number;
  readonly to: number;
}

/**
 * The arrays of a batch for a run of rows: what `assembleBatch` builds, and what a decode worker
 * builds for a chunk when it computes every feature itself (then the main thread only hands the
 * arrays on, or concatenates two at a row-group boundary). Same layout as `Batch`.
 */
export interface Pack {
  readonly rows: number;
  readonly dense: Float32Array;
  readonly lengths: Int32Array;
  readonly offsets: Int32Array;
  readonly values: BigInt64Array;
  readonly labels: Float32Array | null;
  /**
   * Set on a part of a shuffled window (batch/window-ids.ts) whose every id is in [0, 2^31): then
   * `values` holds one 32-bit word per id, two ids to an element, and the window's placement
   * widens them. Never set on a pack that becomes a batch.
   */
  readonly narrow?: true;
  /**
   * Set on a part of a shuffled window whose decoder wrote its rows' dense values straight to the
   * window's chunks (`DensePlace`): `dense` is then empty. Never set on a pack that becomes a batch.
   */
  readonly densePlaced?: true;
  /** Set when the arrays are in a slot of a PackArena (batch/arena.ts): gives the slot back. Idempotent. */
  readonly release?: () => void;
}

/**
 * Where a read of a shuffled window of several row groups puts its rows' dense values: row r of
 * the read goes whole to row at[r] of chunk where[r] (-1: a row a resumed window skips). The
 * chunks' arrays are the window's (batch/window-packs.ts), in shared memory, so that the decoder
 * writes each value once, to its place, and the part it returns holds no dense array.
 */
export interface DensePlace {
  readonly chunks: readonly Float32Array[];
  readonly where: Int32Array;
  readonly at: Int32Array;
}

/** Where a chunk's output columns are, for `packRows`. */
export interface PackSource {
  readonly outputs: ReadonlyMap<string, Column>;
  readonly label: Column | null;
  readonly locate: RowLocator;
  /**
   * Outputs not gathered yet (a decode worker's derived columns, reader/fast-parquet.ts): row r of the
   * feature is dict[idx[r]]. Scalar numeric dicts only; a name here takes precedence over `outputs`.
   */
  readonly indexed?: ReadonlyMap<string, { readonly dict: Column; readonly idx: Int32Array }>;
  /** List outputs not cut or gathered yet (a decode worker's list features): sparse keys only; precedence over `outputs`. */
  readonly indexedLists?: ReadonlyMap<string, IndexedListSource>;
}

/**
 * A list feature as a decode worker computes it (reader/fast-parquet.ts IndexedList): valid row r
 * holds dict[idx[j]] for its first `keep` elements j from offsets[r]; a null dict entry is a null
 * element. Laid out straight into a pack, it skips the cut list and the gathered ids array.
 */
export interface IndexedListSource {
  readonly dict: Column;
  readonly idx: Int32Array;
  readonly offsets: Int32Array;
  readonly valid: Uint8Array | null;
  readonly keep: number;
}
