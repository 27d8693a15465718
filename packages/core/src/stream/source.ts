import { tableFromIPC } from 'apache-arrow';
import { columnLength, concatColumns, gatherColumn, sliceColumn, InputError, SluiceError, type Column, type ColumnType, type RowLocator } from '@sluice/ops';
import type { RowRange } from '../reader/parquet/index.js';
import { columnFromVector } from '../reader/arrow.js';
import type { Dataset, Unit } from '../reader/dataset.js';
import type { DecoderPool } from '../reader/decoder-pool.js';
import type { PackRead } from '../reader/decode-protocol.js';
import type { DerivedColumn } from '../plan/pushdown.js';
import { align8, destinations, packSlotBytes, PackArena, START, type BatchLayout, type Cursor, type IdsPlacer, type Pack } from '../batch/index.js';
import { permutation } from '../util/rng.js';
import { newDictShare } from '../reader/dict-share.js';
import { WindowPackScatter, WindowScatter } from './shuffle.js';

// The cursor lives in the batch layer (a batch's `end` is one); re-exported for the stream's importers.
export { START, type Cursor } from '../batch/index.js';

/**
 * A slice of rows of the projected input columns, in output order.
 *
 * @example
 * for await (const chunk of readChunks(ds, pool, opts)) {
 *   const clicks = chunk.columns.get('clicks'); // rows chunk.at.offset … + chunk.rows of its window
 *   console.log(chunk.rows, chunk.lastInEpoch, clicks?.type);
 * }
 */
export interface Chunk {
  readonly columns: ReadonlyMap<string, Column>;
  readonly rows: number;
  /** Cursor of this chunk's first row. */
  readonly at: Cursor;
  /** Rows in this chunk's window (so `at.offset + rows === windowRows` means the window ends). */
  readonly windowRows: number;
  /** The last chunk of its epoch: the batcher flushes after it. */
  readonly lastInEpoch: boolean;
  /** Maps a chunk row to file, row group and file row, for error messages. */
  readonly locate: RowLocator;
  /**
   * The chunk's rows laid out as batch arrays (`SourceOptions.pack`): by the decode worker
   * (unshuffled, or a shuffled window of one row group), else from the window's permuted columns
   * on this thread; `columns` is then empty.
   */
  readonly packed?: Pack;
  /** Its row group was read by several decoders at once (fewer row groups than decoders). */
  readonly shared?: true;
  /** Its row group was read in parts by rows, by several decoders (`SourceOptions.splitTail`). */
  readonly split?: true;
}

/**
 * Asks the decode workers to lay chunks out as batch arrays themselves (every feature's output is
 * a derived column they compute). A row group they cannot pack (a column they could not read or
 * compute, a null label) comes back as columns, as without this option.
 */
export interface PackRequest {
  readonly layout: BatchLayout;
  /** Feature name -> the derived column that is its output. */
  readonly outputs: ReadonlyArray<readonly [string, string]>;
  readonly label: string | null;
  /** Shared memory to lay the packs out in, reused as the consumer releases batches (stays in this thread; slots travel). */
  readonly arena?: PackArena;
}

/**
 * What `readChunks` reads and how: columns, chunk size, shuffle, shard, epochs and start cursor.
 *
 * @example
 * const opts: SourceOptions = {
 *   columns: new Map([['clicks', { kind: 'int64' }], ['tags', { kind: 'list', child: 'int64' }]]),
 *   chunkRows: 8192, shuffle: { seed: 7, bufferRows: 1 << 20 }, shard: { rank: 0, worldSize: 1 }, epochs: 2,
 * };
 * for await (const chunk of readChunks(ds, pool, opts)) console.log(chunk.rows);
 */
export interface SourceOptions {
  /** Columns to read and the types the plan expects for them. */
  readonly columns: ReadonlyMap<string, ColumnType>;
  /** Most rows in one chunk (the batch size, so one chunk completes at most one batch). */
  readonly chunkRows: number;
  readonly shuffle: { readonly seed: number; readonly bufferRows: number } | null;
  readonly shard: { readonly rank: number; readonly worldSize: number };
  readonly epochs: number;
  readonly start?: Cursor;
  /** Row groups decoded ahead of the one being consumed (default: the decoder pool's size). */
  readonly readAhead?: number;
  /**
   * Largest Parquet record batch requested from the decoder. Default: a whole row group in one
   * batch (up to 1M rows), so its columns never need concatenating.
   */
  readonly decodeBatchRows?: number;
  readonly signal?: AbortSignal;
  /**
   * Per-value op chains the reader may compute on dictionary entries (plan/pushdown.ts). A chunk
   * then holds each derived column, or (unshuffled) the raw input column where the reader could
   * not compute it. Shuffled, the window's derived columns are completed on this thread before the
   * permutation (stream/shuffle.ts); a window where an op rejects a value is read raw instead, so
   * the error comes with the chunk that holds the row, as without pushdown.
   */
  readonly derived?: readonly DerivedColumn[];
  /** With `derived` only: every feature's output is a derived column. */
  readonly pack?: PackRequest;
  /**
   * Unshuffled reads with several decoders, when an epoch's row groups do not deal out evenly
   * (3 row groups on 2 decoders, say): each of the last (row groups mod decoders) is read in
   * parts by rows, which the decoders take as they free up, split at page boundaries common to
   * every column, instead of one decoder reading it alone while the others wait (default true).
   * The parts share the ops' results per dictionary entry. Only files with an offset index and
   * flat columns; the batches are the same either way.
   */
  readonly splitTail?: boolean;
  /**
   * Batches do not cross windows (a row group each, unshuffled): chunk cuts restart at each
   * window's first row, so a window's batches are a function of that window alone. This is the
   * order a cluster job yields (docs/cluster.md); `batch()` flushes at each window's end to match.
   */
  readonly windowBatches?: boolean;
}

/**
 * Chunk boundaries for rows [from, rows) of a row group: [from, b1, ..., rows], cut where the count
 * of rows emitted so far this epoch (`emitted` before this row group) reaches a multiple of
 * `chunkRows`. Chunks then line up with batches, so most batches are one chunk, which a packed
 * chunk turns into a batch without copying.
 */
export function chunkCuts(from: number, rows: number, emitted: number, chunkRows: number): number[] {
  const cuts = [from];
  for (let r = from; r < rows;) {
    r = Math.min(rows, r + chunkRows - ((emitted + r - from) % chunkRows));
    cuts.push(r);
  }
  return cuts;
}

export interface Window {
  readonly units: readonly Unit[];
  readonly rows: number;
}

/**
 * This rank's windows for an epoch. Row groups are shuffled globally with (seed, epoch) and then
 * dealt round-robin to ranks, so ranks see disjoint data and the order never depends on how many
 * workers run the ops. With a shuffle buffer, consecutive row groups form a window of at least
 * `bufferRows` rows whose rows are permuted together.
 */
export function epochWindows(ds: Dataset, epoch: number, opts: Pick<SourceOptions, 'shuffle' | 'shard'>): Window[] {
  let order: readonly Unit[] = ds.units;
  if (opts.shuffle) {
    const p = permutation(ds.units.length, opts.shuffle.seed, epoch, 0x5eed);
    order = Array.from(p, (i) => ds.units[i]!);
  }
  const { rank, worldSize } = opts.shard;
  const mine = order.filter((_, i) => i % worldSize === rank);
  const windows: Window[] = [];
  const target = opts.shuffle ? opts.shuffle.bufferRows : 0;
  let cur: Unit[] = [];
  let rows = 0;
  for (const u of mine) {
    cur.push(u);
    rows += u.rows;
    if (rows >= target) {
      windows.push({ units: cur, rows });
      cur = [];
      rows = 0;
    }
  }
  if (cur.length > 0) windows.push({ units: cur, rows });
  return windows;
}

/** Rows an epoch yields for this rank (for progress and `batches per epoch`). */
export function epochRows(ds: Dataset, opts: Pick<SourceOptions, 'shard'>): number {
  return ds.units.filter((_, i) => i % opts.shard.worldSize === opts.shard.rank).reduce((a, u) => a + u.rows, 0);
}

function throwIfAborted(signal?: AbortSignal): void {
  if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new SluiceError('aborted');
}

/**
 * One read of an epoch's plan: unit `u` of window `w`, whose first row is row `at` of the window;
 * its chunk cuts (row-group-relative; null when a resumed run skips it all); and `range`, when it
 * is a part of the row group split by rows (see `SourceOptions.splitTail`).
 */
interface PlanEntry {
  readonly w: number;
  readonly u: number;
  readonly at: number;
  readonly cuts: number[] | null;
  readonly range?: RowRange;
  /** A shuffled window of this one row group, which its decoder lays out through the permutation (`cuts` are the window's). */
  readonly permuted?: true;
}

/**
 * Reads chunks in output order from a cursor onward. Pull-based: nothing is decoded beyond
 * `readAhead` row groups past what the consumer has taken.
 *
 * @example
 * for await (const chunk of readChunks(ds, pool, opts)) console.log(chunk.rows);
 */
export async function* readChunks(ds: Dataset, pool: DecoderPool, opts: SourceOptions): AsyncGenerator<Chunk> {
  const start = opts.start ?? START;
  const names = [...opts.columns.keys()];
  const readAhead = Math.max(1, opts.readAhead ?? pool.size);
  const derived = opts.derived ?? [];
  const types = new Map<string, ColumnType>([...derived.map((d): [string, ColumnType] => [d.input, d.feature.inputType]), ...opts.columns]);
  const decodeRows = opts.decodeBatchRows ?? 1 << 20;
  // A shuffled window read raw (an op rejected a value): the columns and the derived columns' inputs.
  const rawNames = [...new Set([...names, ...derived.map((d) => d.input)])];
  const rawSet = new Set(names);

  // Slots for the reads of shuffled windows of several row groups (made at the first: partArenaFor).
  let partArena: PackArena | undefined;
  for (let epoch = start.epoch; epoch < opts.epochs; epoch++) {
    const windows = epochWindows(ds, epoch, opts);
    const firstWindow = epoch === start.epoch ? start.window : 0;
    // Row-group reads in flight, in consumption order. Unshuffled, each row group's chunk cuts
    // are known up front (the workers need them to pack chunks); skipped rows of a resumed window
    // give no chunks.
    const shuffled = opts.shuffle !== null;
    const plan: PlanEntry[] = [];
    let emitted = 0;
    /** Each shuffled window's chunk cuts (window-relative). */
    const windowCuts: number[][] = [];
    // A shuffled window of one row group (bufferRows at most a row group's rows) is laid out by
    // the decoder that reads it, through the window's permutation, when the reader computes
    // every feature: its chunk cuts are known up front too.
    // A window of several row groups is laid out by their decoders as one pack each, in the same
    // case, and those are permuted here (WindowPackScatter).
    const permuteInDecoder = shuffled && opts.pack !== undefined && derived.length > 0;
    for (let w = firstWindow; w < windows.length; w++) {
      const skip = epoch === start.epoch && w === start.window ? start.offset : 0;
      if (opts.windowBatches === true) emitted = 0;
      if (shuffled) {
        // A shuffled window's chunks are cut from its permuted rows.
        const cuts = chunkCuts(skip, windows[w]!.rows, emitted, opts.chunkRows);
        emitted += windows[w]!.rows - skip;
        windowCuts[w] = cuts;
        if (permuteInDecoder && windows[w]!.units.length === 1) {
          plan.push({ w, u: 0, at: 0, cuts, permuted: true });
          continue;
        }
      }
      let at = 0;
      windows[w]!.units.forEach((unit, u) => {
        let cuts: number[] | null = null;
        if (!shuffled && at + unit.rows > skip) {
          cuts = chunkCuts(Math.max(0, skip - at), unit.rows, emitted, opts.chunkRows);
          emitted += unit.rows - cuts[0]!;
        }
        plan.push({ w, u, at, cuts });
        at += unit.rows;
      });
    }
    // A shuffled window of several row groups has its ids placed by the decoders, in parallel, once
    // its last row group is in (batch/window-ids.ts); one decoder leaves it to this thread, which is
    // free while that decoder reads the next window. A failure names the window's first file.
    const placerFor = (win: Window): IdsPlacer | undefined => {
      if (pool.size <= 1) return undefined;
      const source = ds.files[win.units[0]!.file]!.source;
      return {
        threads: pool.size,
        place: (plan, chunks) => pool.placeIds(plan, chunks, source),
        placeKeys: (task, transfer) => pool.placeKeys(task, transfer, source),
      };
    };
    // The scatter of a shuffled window of several row groups (WindowPackScatter). One whose reads
    // its decoders lay out is made when its first read is issued: each decoder then writes its
    // rows' dense values straight to the window's chunks (WindowPacks.densePlace).
    const packScatters = new Map<number, WindowPackScatter>();
    const packScatterFor = (w: number, sharedDense = false): WindowPackScatter => {
      let s = packScatters.get(w);
      if (s === undefined) {
        const win = windows[w]!;
        const skip = epoch === start.epoch && w === start.window ? start.offset : 0;
        const order = permutation(win.rows, opts.shuffle!.seed, epoch, w).subarray(skip);
        s = new WindowPackScatter(
          opts.pack!,
          order,
          win.rows,
          windowCuts[w]!.map((c) => c - skip),
          derived,
          rawSet,
          placerFor(win),
          sharedDense,
        );
        packScatters.set(w, s);
      }
      return s;
    };
    // The reads of windows of several row groups, each laid out by its decoder as one pack held
    // until the window's ids are placed (WindowPacks), go in slots of an arena of their own, given
    // back then, so that later windows' reads reuse that memory rather than fault in fresh pages.
    // Enough slots for a window's reads being placed while the next window's and those read ahead
    // are decoded. Slots are sized for the largest such row group, without dense values (placed
    // by the decoders straight to the window's batches).
    const partArenaFor = (): PackArena => {
      if (partArena === undefined) {
        const multi = windows.filter((x) => x.units.length > 1);
        const most = Math.max(...multi.flatMap((x) => x.units.map((unit) => unit.rows)));
        const perWindow = Math.max(...multi.map((x) => x.units.length));
        const layout = opts.pack!.layout;
        partArena = new PackArena(packSlotBytes(layout, most) - align8(4 * most * layout.dim), 2 * perWindow + readAhead + 1);
      }
      return partArena;
    };
    const inflight: Array<Promise<UnitRead>> = [];
    let next = 0;
    // Fewer row groups than decoders (a file of one big row group, say): each is read by several
    // decoders at once, each decoding a share of its columns, instead of leaving decoders idle.
    const shares = Math.floor(pool.size / Math.max(1, plan.length));
    const dealt = shares > 1 ? shareColumns(names, derived, shares) : null;
    if (dealt === null && !shuffled && pool.size > 1 && opts.splitTail !== false && [...types.values()].every((t) => t.kind !== 'list')) {
      await splitTail(plan, (e) => windows[e.w]!.units[e.u]!, ds, pool, derived.length);
    }
    // The row group being consumed plus `readAhead` more are decoding at any time.
    const issue = (): void => {
      while (inflight.length < readAhead + 1 && next < plan.length) {
        const { w, u, at, cuts, range, permuted } = plan[next++]!;
        // A part's packs are cut from its own first row.
        const first = range?.first ?? 0;
        let pack: (PackRequest & PackRead) | undefined;
        // The decoder computes the window's permutation itself (this thread only for errors).
        if (permuted === true) pack = { ...opts.pack!, cuts: cuts!, permute: { rows: windows[w]!.rows, keys: [opts.shuffle!.seed, epoch, w] } };
        else if (opts.pack !== undefined && cuts !== null) pack = { ...opts.pack, cuts: first === 0 ? cuts : cuts.map((c) => c - first) };
        // A row group of a shuffled window of several: laid out as one pack in its own row order,
        // which WindowPackScatter permutes (in fresh memory: it holds the pack until the window ends).
        // In shared memory, where the decoders place its ids once the window is in (batch/window-ids.ts);
        // its dense rows the decoder writes to their places in the window's chunks at once.
        else if (permuteInDecoder) {
          const rows = windows[w]!.units[u]!.rows;
          const densePlace = dealt === null ? packScatterFor(w, true).densePlace(at, rows) : undefined;
          const arena = densePlace !== undefined ? partArenaFor() : undefined;
          pack = { ...opts.pack!, arena, cuts: [0, rows], shared: true, ...(densePlace !== undefined ? { densePlace } : {}) };
        }
        const unit = windows[w]!.units[u]!;
        const p =
          dealt !== null ? readUnitShared(ds, pool, unit, dealt, types, decodeRows) : readUnit(ds, pool, unit, names, types, decodeRows, derived, pack, range);
        p.catch(() => undefined); // surfaced when awaited, in order
        inflight.push(p);
      }
    };

    let entry = 0;
    for (let w = firstWindow; w < windows.length; w++) {
      const win = windows[w]!;
      const skip = epoch === start.epoch && w === start.window ? start.offset : 0;
      const lastWindow = w === windows.length - 1;
      const unitCols: Map<string, Column>[] = [];
      let windowPacks: Pack[] | null = null;
      let windowShared = false;
      // The window's permutation (computed on first use: a window its decoder permuted needs it
      // only to locate a row in an error).
      let perm: Int32Array | null = null;
      const permOf = (): Int32Array => (perm ??= permutation(win.rows, opts.shuffle!.seed, epoch, w));
      // A window the reader computes features of, and its decoder did not lay out: its reads are
      // completed and scattered into place as they arrive.
      let scatter: WindowScatter | null = null;
      // Where the reader computes every feature, the scatter lays the window's chunks out as
      // batch arrays directly.
      let packScatter = null as WindowPackScatter | null;
      for (let u = 0; u < win.units.length; u++) {
        // A row group's reads: one, or its parts by rows (splitTail), in order.
        do {
          issue();
          throwIfAborted(opts.signal);
          const { columns: cols, packs, shared } = await inflight.shift()!;
          const { at, cuts, range, permuted } = plan[entry++]!;
          throwIfAborted(opts.signal);
          if (shuffled) {
            const packScatterOf = (): WindowPackScatter => (packScatter ??= packScatterFor(w));
            if (packs !== null && permuted !== true) {
              packScatterOf().addPack(packs[0]!);
              continue;
            }
            if (packs === null && derived.length > 0 && opts.pack !== undefined) {
              packScatterOf().add(cols, win.units[u]!.rows, unitLocator(ds, win.units[u]!));
            } else if (packs === null && derived.length > 0) {
              scatter ??= new WindowScatter(
                [...names, ...derived.map((d) => d.name)],
                destinations(permOf().subarray(skip), win.rows),
                win.rows - skip,
                derived,
                rawSet,
              );
              scatter.add(cols, win.units[u]!.rows, unitLocator(ds, win.units[u]!));
            } else unitCols.push(cols);
            windowPacks = packs;
            windowShared ||= shared === true;
            continue;
          }
          // Unshuffled: stream the row group (or part) as it is, in the chunks cut above.
          const unit = win.units[u]!;
          const rows = unit.rows;
          // Row-group-relative cuts; a part's columns and packs start at its first row.
          const first = range?.first ?? 0;
          const flags = { ...(shared ? { shared } : {}), ...(range !== undefined ? { split: true as const } : {}) };
          if (cuts !== null) {
            for (let i = 0; i + 1 < cuts.length; i++) {
              const from = cuts[i]!;
              const end = cuts[i + 1]!;
              const at0 = { epoch, window: w, offset: at + from };
              const last = lastWindow && u === win.units.length - 1 && end === rows;
              const locate: RowLocator = (row) => ({ file: ds.files[unit.file]!.source, rowGroup: unit.rowGroup, row: unit.firstRow + from + row });
              if (packs !== null)
                yield { columns: new Map(), rows: end - from, at: at0, windowRows: win.rows, lastInEpoch: last, locate, packed: packs[i]!, ...flags };
              else yield { ...makeChunk([...cols.keys()], [...cols.values()], from - first, end - first, at0, win.rows, last, locate), ...flags };
            }
          }
        } while (entry < plan.length && plan[entry]!.w === w && plan[entry]!.u === u);
      }
      // Every read of the window is in: the loop holds its scatter from here.
      packScatters.delete(w);
      if (!shuffled) continue;
      const cuts = windowCuts[w]!;
      const starts = win.units.map((_, i) => win.units.slice(0, i).reduce((a, x) => a + x.rows, 0));
      const locateIn =
        (from: number): RowLocator =>
        (row) => {
          const orig = permOf()[from + row]!;
          let k = starts.length - 1;
          while (starts[k]! > orig) k--;
          const unit = win.units[k]!;
          return { file: ds.files[unit.file]!.source, rowGroup: unit.rowGroup, row: unit.firstRow + orig - starts[k]! };
        };
      if (windowPacks !== null) {
        // The decoder laid the window's chunks out through its permutation.
        for (let i = 0; i + 1 < cuts.length; i++) {
          const r = cuts[i]!;
          const end = cuts[i + 1]!;
          const last = lastWindow && end === win.rows;
          const locate = locateIn(r);
          yield {
            columns: new Map(),
            rows: end - r,
            at: { epoch, window: w, offset: r },
            windowRows: win.rows,
            lastInEpoch: last,
            locate,
            packed: windowPacks[i]!,
          };
        }
        continue;
      }
      // Shuffled window: the derived columns the reader could not compute were computed as its
      // reads arrived; when an op rejected a value, the window is read again raw (see
      // completeDerived), and each chunk gathers its rows from the concatenated window.
      if (packScatter !== null && packScatter.ok) {
        for (let i = 0; i + 1 < cuts.length; i++) {
          const r = cuts[i]!;
          const end = cuts[i + 1]!;
          const chunk: Chunk = {
            columns: new Map(),
            rows: end - r,
            at: { epoch, window: w, offset: r },
            windowRows: win.rows,
            lastInEpoch: lastWindow && end === win.rows,
            locate: locateIn(r),
            packed: await packScatter.take(i),
          };
          yield windowShared ? { ...chunk, shared: true } : chunk;
        }
        continue;
      }
      let windowNames = names;
      let gathered: Column[] | null = null;
      if (scatter !== null && scatter.ok) {
        windowNames = [...scatter.names];
        gathered = scatter.finish();
      } else if (scatter !== null || packScatter !== null) {
        windowNames = rawNames;
        const raw = await Promise.all(win.units.map((unit) => readUnit(ds, pool, unit, rawNames, types, decodeRows)));
        unitCols.splice(0, unitCols.length, ...raw.map((r) => r.columns));
        throwIfAborted(opts.signal);
      }
      scatter = null;
      packScatter = null;
      const merged = gathered === null ? windowNames.map((n) => concatColumns(unitCols.map((uc) => uc.get(n)!))) : [];
      unitCols.length = 0;
      for (let i = 0; i + 1 < cuts.length; i++) {
        const r = cuts[i]!;
        const end = cuts[i + 1]!;
        const locate = locateIn(r);
        const at0 = { epoch, window: w, offset: r };
        const last = lastWindow && end === win.rows;
        const chunk: Chunk =
          gathered !== null
            ? makeChunk(windowNames, gathered, r - skip, end - skip, at0, win.rows, last, locate)
            : makeChunk(
                windowNames,
                merged.map((m) => gatherColumn(m, permOf().subarray(r, end))),
                0,
                end - r,
                at0,
                win.rows,
                last,
                locate,
              );
        yield windowShared ? { ...chunk, shared: true } : chunk;
      }
    }
  }
  // A run stopped early leaves it to the collector, with the generator.
  partArena?.close();
}

/** Maps a row of a row group's read to its file, row group and file row. */
const unitLocator =
  (ds: Dataset, unit: Unit): RowLocator =>
  (row) => ({ file: ds.files[unit.file]!.source, rowGroup: unit.rowGroup, row: unit.firstRow + row });

function makeChunk(names: string[], cols: Column[], from: number, to: number, at: Cursor, windowRows: number, lastInEpoch: boolean, locate: RowLocator): Chunk {
  const whole = from === 0 && cols.length > 0 && to === columnLength(cols[0]!);
  const columns = new Map<string, Column>();
  names.forEach((n, i) => columns.set(n, whole ? cols[i]! : sliceColumn(cols[i]!, from, to)));
  return { columns, rows: to - from, at, windowRows, lastInEpoch, locate };
}

interface UnitRead {
  readonly columns: Map<string, Column>;
  /** One pack per chunk cut, when the decoder packed the row group. */
  readonly packs: Pack[] | null;
  /** Read by several decoders at once, each a share of the columns (readUnitShared). */
  readonly shared?: true;
}

/** One decoder's share of a row group's columns (see `shareColumns`). */
interface Share {
  readonly names: string[];
  readonly derived: DerivedColumn[];
}

/**
 * The columns (with the derived columns computed from them) dealt out in turn to `shares`
 * decoders. A column and every derived column computed from it go to one decoder, which reads it
 * once. The same shares serve every row group of an epoch, so each share's read spec is made once
 * per epoch.
 */
function shareColumns(names: readonly string[], derived: readonly DerivedColumn[], shares: number): Share[] {
  const byInput = new Map<string, Share>();
  const group = (c: string): Share => {
    let g = byInput.get(c);
    if (g === undefined) byInput.set(c, (g = { names: [], derived: [] }));
    return g;
  };
  for (const n of names) group(n).names.push(n);
  for (const d of derived) group(d.input).derived.push(d);
  const dealt = Array.from({ length: Math.min(shares, byInput.size) }, (): Share => ({ names: [], derived: [] }));
  [...byInput.values()].forEach((g, i) => {
    const s = dealt[i % dealt.length]!;
    s.names.push(...g.names);
    s.derived.push(...g.derived);
  });
  return dealt;
}

/**
 * Splits each of the plan's last (reads mod `decoders`) row-group reads by rows (see
 * `SourceOptions.splitTail`) into parts that the decoders take as they free up: 2 x decoders
 * parts in all (at least 2 per read), ending at the page starts common to every column
 * (`DecoderPool.pageStarts`) nearest to even shares of the rows the read emits. Each part keeps the
 * batch cuts inside it, so the chunks and batches stay the same. A read without such a page start
 * stays whole. The parts of a read share their derived columns' results per dictionary entry
 * (reader/dict-share.ts), so the dictionary work is done about once, not once per part.
 *
 * Row groups that deal out evenly are not split: their tail is shorter than what a part costs
 * (see bench/README.md, "Where the CPU goes, and why the loop releases its batches", on splitting
 * row groups by rows).
 */
async function splitTail(plan: PlanEntry[], unitOf: (e: PlanEntry) => Unit, ds: Dataset, pool: DecoderPool, derived: number): Promise<void> {
  const leftover = plan.length % pool.size;
  if (leftover === 0) return;
  const parts = Math.max(2, Math.ceil((2 * pool.size) / leftover));
  for (let k = plan.length - leftover; k < plan.length; k++) {
    const e = plan[k]!;
    if (e.cuts === null) continue;
    const unit = unitOf(e);
    const from = e.cuts[0]!;
    const starts = (await pool.pageStarts(ds.files[unit.file]!.source, unit.rowGroup)).filter((r) => r > from && r < unit.rows);
    const ends: number[] = [];
    for (let j = 1; j < parts; j++) {
      const target = from + (j * (unit.rows - from)) / parts;
      const later = starts.filter((r) => r > (ends[ends.length - 1] ?? from));
      if (later.length === 0) break;
      ends.push(later.reduce((best, r) => (Math.abs(r - target) < Math.abs(best - target) ? r : best)));
    }
    if (ends.length === 0) continue;
    const bounds = [0, ...ends, unit.rows];
    const share = derived > 0 ? newDictShare(derived) : undefined;
    const pieces = bounds.slice(0, -1).map((first, i): PlanEntry => {
      const lo = i === 0 ? from : first;
      const hi = bounds[i + 1]!;
      const cuts = [lo, ...e.cuts!.filter((c) => c > lo && c < hi), hi];
      // Parts next to each other walk the columns in opposite orders: two that run at once meet in the middle.
      return { ...e, cuts, range: { first, rows: hi - first, ...(share !== undefined ? { share, reverse: i % 2 === 1 } : {}) } };
    });
    plan.splice(k, 1, ...pieces);
    k += pieces.length - 1;
  }
}

/**
 * Decodes one row group with one decoder per share of its columns, at once, and puts the results
 * together. The chunks come as columns, laid out as batches on this thread.
 */
async function readUnitShared(
  ds: Dataset,
  pool: DecoderPool,
  unit: Unit,
  dealt: readonly Share[],
  types: ReadonlyMap<string, ColumnType>,
  batchRows: number,
): Promise<UnitRead> {
  const reads = await Promise.all(dealt.map((s) => readUnit(ds, pool, unit, s.names, types, batchRows, s.derived)));
  const columns = new Map<string, Column>();
  for (const r of reads) for (const [n, c] of r.columns) columns.set(n, c);
  return { columns, packs: null, shared: true };
}

/** Decodes one row group into one column per requested name (record batches concatenated), or into packed chunks. */
async function readUnit(
  ds: Dataset,
  pool: DecoderPool,
  unit: Unit,
  names: string[],
  types: ReadonlyMap<string, ColumnType>,
  batchRows: number,
  derived: readonly DerivedColumn[] = [],
  pack?: PackRequest & PackRead,
  range?: RowRange,
): Promise<UnitRead> {
  const source = ds.files[unit.file]!.source;
  const where = { file: source, rowGroup: unit.rowGroup };
  // The rows this read returns: the row group's, or a part's (the direct decoder's columns).
  const want = range?.rows ?? unit.rows;
  const check = (n: string, c: Column | undefined): Column => {
    if (c === undefined) throw new InputError(`column "${n}" is missing`, where);
    // The direct decoder checked every page against the row group's row count; this is a guard.
    if (columnLength(c) !== want) throw new InputError(`expected ${want} rows in column "${n}", decoded ${columnLength(c)}`, where);
    return c;
  };
  const {
    columns: direct,
    ipc,
    packs,
  } = await pool.readRowGroupColumns(source, unit.rowGroup, names, types, Math.max(1, Math.min(batchRows, unit.rows)), derived, pack, range);
  if (packs !== null) {
    if (pack === undefined || packs.length !== pack.cuts.length - 1 || packs.some((p, i) => p.rows !== pack.cuts[i + 1]! - pack.cuts[i]!)) {
      throw new InputError('decoder returned packed chunks that do not match the requested cuts', where);
    }
    return { columns: new Map(), packs };
  }
  // Columns the direct decoder did not read came as Arrow record batches from parquet-wasm.
  const parts = ipc.map((b) => tableFromIPC(b));
  if (parts.length > 0) {
    const rows = parts.reduce((a, t) => a + t.numRows, 0);
    if (rows !== unit.rows) throw new InputError(`expected ${unit.rows} rows, decoded ${rows} (truncated file?)`, where);
  }
  const column = (n: string): Column => {
    const d = direct.get(n);
    if (d !== undefined) return check(n, d);
    if (parts.length === 0) throw new InputError(`column "${n}" is missing`, where);
    const pieces = parts.map((t) => {
      const v = t.getChild(n);
      if (v === null) throw new InputError(`column "${n}" is missing`, where);
      return columnFromVector(v, types.get(n)!);
    });
    const whole = pieces.length === 1 ? pieces[0]! : concatColumns(pieces);
    // parquet-wasm reads whole row groups: a part takes its rows.
    return range === undefined ? whole : sliceColumn(whole, range.first, range.first + range.rows);
  };
  const out = new Map<string, Column>();
  for (const n of names) out.set(n, column(n));
  // A derived column the reader could not compute comes back as its raw input.
  for (const d of derived) {
    if (direct.has(d.name)) out.set(d.name, check(d.name, direct.get(d.name)));
    else if (!out.has(d.input)) out.set(d.input, column(d.input));
  }
  return { columns: out, packs: null };
}
