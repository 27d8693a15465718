// Placing a shuffled window's ids once every read of it is in (batch/window-packs.ts): the plan the
// main thread works out from the window's id counts, and the copy itself, which decode threads run
// for the window's chunks in parallel (reader/decode-worker.ts) where the reads came laid out in
// shared memory. On one thread the copy took ~1.5 s of RM5's 100,000-row window while the decoders
// sat idle (bench/README.md, "Shuffled reads").
import { copyWords, int64Words } from '@sluice/ops';
import { hugePages } from '../util/huge-pages.js';

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
}

/** Places ids for a window (the decode threads, through the decoder pool). */
export interface IdsPlacer {
  /** How many placements can run at once. */
  readonly threads: number;
  /** The values of chunks `chunks` of `plan`, in that order (`placeChunkIds`, in another thread). */
  place(plan: IdsPlan, chunks: readonly number[]): Promise<BigInt64Array[]>;
}

/**
 * The values of chunks `chunks` of `plan`, in that order. Every part is read in order and its rows
 * of those chunks written to their places, at random: a gather (reading each row's ids at random)
 * stalls on about every read, a scatter's writes do not (bench/README.md, "Shuffled reads").
 */
export function placeChunkIds(plan: IdsPlan, chunks: readonly number[]): BigInt64Array[] {
  const values = chunks.map((c) => hugePages(new BigInt64Array(plan.sizes[c]!)));
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
 * A narrow part's ids are one word each: only the low word of each is written, the high word left
 * as the chunk's fresh array has it, zero.
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
      if (narrow) for (let j = s, k = at; j < s + len; j++, k += 2) to[k] = ids[j]!;
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
