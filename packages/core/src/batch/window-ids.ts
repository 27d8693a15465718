// Placing a shuffled window's ids once every read of it is in (batch/window-packs.ts): the plan the
// main thread works out from the window's id counts, and the copy itself, which decode threads run
// for the window's chunks in parallel (reader/decode-worker.ts) where the reads came laid out in
// shared memory. On one thread the copy took ~1.5 s of RM5's 100,000-row window while the decoders
// sat idle (bench/README.md, "Shuffled reads").
import { copyWords, int64Words, type Column, type ListColumn } from '@sluice/ops';
import { hugePages } from '../util/huge-pages.js';
import { writeSparse } from './writers.js';

/** One read of the window, laid out as a pack in its own row order, and where each of its rows goes. */
export interface IdsPart {
  readonly rows: number;
  /** lengths[k * rows + r]: row r's ids of sparse key k. */
  readonly lengths: Int32Array;
  /** offsets[k]: where key k's ids start in `values`. */
  readonly offsets: Int32Array;
  readonly values: BigInt64Array;
  /** One 32-bit word per id in `values` (Pack.narrow), widened as they are placed. */
  readonly narrow: boolean;
  /** where[r]: the chunk row r goes to (-1: a row a resumed window skips). */
  readonly where: Int32Array;
  /** out[r]: the output row row r becomes. */
  readonly out: Int32Array;
}

/** Where every id of a window goes. */
export interface IdsPlan {
  /** Sparse keys. */
  readonly keys: number;
  /** The window's output rows. */
  readonly rows: number;
  /** pos[k * rows + d]: where output row d's ids of key k start in its chunk's values. */
  readonly pos: Int32Array;
  /** sizes[c]: chunk c's ids. */
  readonly sizes: readonly number[];
  readonly parts: readonly IdsPart[];
  /**
   * into[c]: where chunk c's ids go (shared memory of a slot the window was lent), or null for a
   * fresh array. Memory that held earlier batches: every word is written.
   */
  readonly into?: ReadonlyArray<BigInt64Array | null>;
}

/** Places ids for a window (the decode threads, through the decoder pool). */
export interface IdsPlacer {
  /** How many placements can run at once. */
  readonly threads: number;
  /** The values of chunks `chunks` of `plan`, in that order (`placeChunkIds`, in another thread). */
  place(plan: IdsPlan, chunks: readonly number[]): Promise<BigInt64Array[]>;
  /** Places `task`'s keys (`placeKeyIds`, in another thread), its reads' arrays in `transfer` moved there, not copied. */
  placeKeys(task: KeysTask, transfer: readonly ArrayBuffer[]): Promise<void>;
}

/** A read of a window that came as columns, as `placeKeyIds` takes it: where its rows go, and its columns of some keys. */
export interface ColumnsIds {
  /** where[r]: the chunk row r goes to (-1: a row a resumed window skips). */
  readonly where: Int32Array;
  /** out[r]: the output row row r becomes. */
  readonly out: Int32Array;
  /** keys[i]: the read's column of the task's i-th key, and its ids as words where it is a list of int64 ids without a null id (else null). */
  readonly keys: ReadonlyArray<{ readonly column: Column; readonly ids: Uint32Array | null }>;
}

/**
 * Some keys of a window whose reads came as columns (a row group shared by columns among the
 * decode threads), to place in its chunks' values, which are shared memory: each thread places
 * its keys' ids, the reads' arrays of those keys moved to it.
 */
export interface KeysTask {
  readonly keys: readonly number[];
  /** The window's output rows. */
  readonly rows: number;
  /** IdsPlan.pos (shared memory). */
  readonly pos: Int32Array;
  readonly parts: readonly ColumnsIds[];
  /** Each chunk's values as words (shared memory). */
  readonly chunks: readonly Uint32Array[];
}

/** Every id of `task`'s keys to its place, key by key (as `placeKeysIds`). */
export function placeKeyIds(task: KeysTask): void {
  const n = task.rows;
  task.keys.forEach((k, i) => {
    const posK = task.pos.subarray(k * n, k * n + n);
    for (const part of task.parts) placeColumn(part.keys[i]!.column, part.keys[i]!.ids, part.where, part.out, posK, task.chunks);
  });
}

/**
 * One key of a read that came as columns to its places: a list of int64 ids without a null id run
 * by run (`placeListRuns`), any other sparse column row by row as `writeSparse` writes it.
 */
function placeColumn(col: Column, ids: Uint32Array | null, where: Int32Array, out: Int32Array, posK: Int32Array, words: readonly Uint32Array[]): void {
  if (ids !== null) return placeListRuns((col as ListColumn).offsets, col.valid, ids, where, out, posK, words);
  for (let r = 0; r < where.length; r++) {
    const c = where[r]!;
    if (c >= 0) writeSparse(col, r, r + 1, words[c]!, posK[out[r]!]!);
  }
}

/** The buffers of a column's arrays (its child's too). */
export function columnBuffers(col: Column): ArrayBufferLike[] {
  const out: ArrayBufferLike[] = [];
  if ('values' in col) out.push(col.values.buffer);
  if ('offsets' in col) out.push(col.offsets.buffer);
  if ('data' in col) out.push(col.data.buffer);
  if (col.valid !== null) out.push(col.valid.buffer);
  if (col.type === 'list') out.push(...columnBuffers(col.child));
  return out;
}

/**
 * Each row's ids of a list of int64 ids without null ids (`ids`: their words; a null list has
 * none) to where its output row's ids start (posK[out[r]]) in its chunk's values (words[where[r]]),
 * as `writeSparse` writes them. Reads in order, writes at random.
 */
function placeListRuns(
  o: Int32Array,
  valid: Uint8Array | null,
  ids: Uint32Array,
  where: Int32Array,
  out: Int32Array,
  posK: Int32Array,
  words: readonly Uint32Array[],
): void {
  for (let r = 0; r < where.length; r++) {
    const c = where[r]!;
    if (c < 0 || (valid !== null && valid[r] === 0)) continue;
    copyWords(ids, 2 * o[r]!, 2 * o[r + 1]!, words[c]!, 2 * posK[out[r]!]!);
  }
}

/**
 * Keys 0..weights.length-1 in at most `groups` groups of about equal weight (ids), keys that share
 * a buffer (`buffersOf`) in one group: a buffer can be moved to one thread only.
 */
export function keyGroups(weights: readonly number[], buffersOf: (k: number) => readonly ArrayBufferLike[], groups: number): number[][] {
  // Keys joined through shared buffers (union-find on the key that first had each buffer).
  const root = weights.map((_, k) => k);
  const find = (k: number): number => (root[k] === k ? k : (root[k] = find(root[k]!)));
  const owner = new Map<ArrayBufferLike, number>();
  weights.forEach((_, k) => {
    for (const b of buffersOf(k)) {
      const o = owner.get(b);
      if (o === undefined) owner.set(b, k);
      else root[find(k)] = find(o);
    }
  });
  const sets = new Map<number, { keys: number[]; weight: number }>();
  weights.forEach((w, k) => {
    const r = find(k);
    const s = sets.get(r) ?? { keys: [], weight: 0 };
    s.keys.push(k);
    s.weight += w;
    sets.set(r, s);
  });
  // The heaviest set first, each to the lightest group so far.
  const out = Array.from({ length: Math.max(1, Math.min(groups, sets.size)) }, () => ({ keys: [] as number[], weight: 0 }));
  for (const s of [...sets.values()].sort((a, b) => b.weight - a.weight)) {
    const g = out.reduce((a, b) => (b.weight < a.weight ? b : a));
    g.keys.push(...s.keys);
    g.weight += s.weight;
  }
  return out.filter((g) => g.keys.length > 0).map((g) => g.keys.sort((a, b) => a - b));
}

/**
 * The values of chunks `chunks` of `plan`, in that order. Every part is read in order and its rows
 * of those chunks written to their places, at random: a gather (reading each row's ids at random)
 * stalls on about every read, a scatter's writes do not (bench/README.md, "Shuffled reads").
 */
export function placeChunkIds(plan: IdsPlan, chunks: readonly number[]): BigInt64Array[] {
  const values = chunks.map((c) => plan.into?.[c] ?? hugePages(new BigInt64Array(plan.sizes[c]!)));
  const words: Array<Uint32Array | null> = plan.sizes.map(() => null);
  chunks.forEach((c, i) => (words[c] = int64Words(values[i]!)));
  placeKeysIds(plan, words);
  return values;
}

/**
 * Every part's ids to their places in the chunks that `words` holds (null: a chunk placed
 * elsewhere), key by key: the writes of one key (~3.4 MB of RM5's window per thread) stay in the
 * cache until all its parts have filled them, where part by part each cache line of the chunks was
 * fetched again for every part that wrote to it (bench/README.md, "Shuffled reads").
 */
function placeKeysIds(plan: IdsPlan, words: ReadonlyArray<Uint32Array | null>): void {
  const { keys, rows: n, pos } = plan;
  const from = plan.parts.map((part) => int64Words(part.values));
  for (let k = 0; k < keys; k++) {
    const posK = pos.subarray(k * n, k * n + n);
    plan.parts.forEach((part, p) => {
      const rows = part.rows;
      placeRuns(part.lengths.subarray(k * rows, k * rows + rows), part.offsets[k]!, from[p]!, part.narrow, part.where, part.out, posK, words);
    });
  }
}

/**
 * One key of a part: row r's ids are the lens[r] after those of the rows before it, from `start`,
 * and go where its output row's ids start (posK[out[r]]) in its chunk's values (words[where[r]]).
 * A narrow part's ids are one word each: each is written as the low word, with a high word of
 * zero (the chunk's array may be a slot's reused memory, `IdsPlan.into`).
 */
function placeRuns(
  lens: Int32Array,
  start: number,
  ids: Uint32Array,
  narrow: boolean,
  where: Int32Array,
  out: Int32Array,
  posK: Int32Array,
  words: ReadonlyArray<Uint32Array | null>,
): void {
  for (let r = 0, s = start; r < where.length; r++) {
    const len = lens[r]!;
    const c = where[r]!;
    // c < 0: a row a resumed window skips; null: a chunk another thread places.
    const to = c >= 0 ? words[c] : null;
    if (to !== undefined && to !== null) {
      const at = 2 * posK[out[r]!]!;
      if (narrow)
        for (let j = s, k = at; j < s + len; j++, k += 2) {
          to[k] = ids[j]!;
          to[k + 1] = 0;
        }
      else copyWords(ids, 2 * s, 2 * (s + len), to, at);
    }
    s += len;
  }
}

/** Chunks 0..count-1 cut into at most `groups` runs of consecutive chunks of about equal length. */
export function chunkGroups(count: number, groups: number): number[][] {
  const g = Math.max(1, Math.min(count, groups));
  const out: number[][] = [];
  for (let i = 0; i < g; i++) {
    const from = Math.floor((i * count) / g);
    const to = Math.floor(((i + 1) * count) / g);
    out.push(Array.from({ length: to - from }, (_, j) => from + j));
  }
  return out;
}

/** Whether every array of a part is in shared memory, so that a thread given it copies nothing. */
export function isSharedPart(part: IdsPart): boolean {
  return [part.lengths, part.offsets, part.values, part.where, part.out].every((a) => a.buffer instanceof SharedArrayBuffer);
}
