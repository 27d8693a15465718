/**
 * A shuffle window's computed columns and the chunks cut from them (stream/source.ts does the
 * windows, cuts and cursors).
 *
 * The reader computes the pushed-down features (plan/pushdown.ts) per row group, as it does
 * unshuffled; their op chains map one value to one value, so computing them before the
 * permutation gives the values computing them after would. The window then holds numeric columns
 * only (strings never reach this thread for a pushed-down feature). Where the reader computes
 * every feature, the window's reads are laid out as batch arrays as they arrive
 * (`WindowPackScatter`); else they are permuted as columns (`WindowScatter`) for the backend.
 */
import { ColumnScatter, runFeature, type Column, type ColumnType, type PlanState, type RowLocator } from '@sluice/ops';
import { WindowPacks, type BatchLayout, type DensePlace, type IdsPlacer, type Pack, type SlotLender } from '../batch/index.js';
import type { DerivedColumn } from '../plan/pushdown.js';

/** How chunks are laid out as batch arrays (source.ts's PackRequest, which imports this file). */
interface PackShape {
  readonly layout: BatchLayout;
  readonly outputs: ReadonlyArray<readonly [string, string]>;
  readonly label: string | null;
  /** Slots that released batches gave back: the window's chunks are laid out there while it lends them. */
  readonly arena?: SlotLender;
}

const NO_FEATURES: ReadonlyMap<string, Column> = new Map();
const NO_TYPES: ReadonlyMap<string, ColumnType> = new Map();
const NO_STATE: PlanState = new Map();

/**
 * Computes, on this thread, each derived column a row group's read came back without (its raw
 * input came instead: a page or a codec the reader's pushdown does not handle), and drops raw
 * inputs no one else reads. Returns false, leaving `cols` as it was, when an op rejects a value:
 * the caller then reads the window raw, so that the error is raised where and as it was before
 * (at the chunk holding the row, in shuffled order, with the feature, op and row).
 */
export function completeDerived(cols: Map<string, Column>, derived: readonly DerivedColumn[], rawNames: ReadonlySet<string>, locate: RowLocator): boolean {
  const made = new Map<string, Column>();
  for (const d of derived) {
    if (cols.has(d.name)) continue;
    try {
      // Per-value ops are stateless: no other feature and no fitted state.
      made.set(d.name, runFeature(d.feature, cols.get(d.input)!, NO_FEATURES, NO_TYPES, NO_STATE, locate));
    } catch {
      return false;
    }
  }
  for (const [n, c] of made) cols.set(n, c);
  for (const d of derived) if (!rawNames.has(d.input)) cols.delete(d.input);
  return true;
}

/**
 * A shuffled window's computed columns, scattered into their permuted places as its row groups'
 * reads arrive (in window order), so that most of the permutation's work overlaps the decoding of
 * the rest of the window: fixed-width columns are placed at once, lists once every length is
 * known (`ColumnScatter`). `dest[row]` is where a window row goes, -1 for rows a resumed window
 * skips.
 */
export class WindowScatter {
  private readonly columns: ReadonlyArray<readonly [string, ColumnScatter]>;
  private base = 0;
  /** False once an op rejected a value of a read: the window is then read again raw. */
  ok = true;

  constructor(
    /** The window's computed columns: the chunk's columns, then the derived ones. */
    readonly names: readonly string[],
    dest: Int32Array,
    n: number,
    private readonly derived: readonly DerivedColumn[],
    private readonly rawNames: ReadonlySet<string>,
  ) {
    this.columns = names.map((name) => [name, new ColumnScatter(dest, n)] as const);
  }

  /** Adds the next read of the window (`rows` rows), computing what the reader left (`completeDerived`). */
  add(cols: Map<string, Column>, rows: number, locate: RowLocator): void {
    if (this.ok && completeDerived(cols, this.derived, this.rawNames, locate)) {
      for (const [name, s] of this.columns) s.add(cols.get(name)!, this.base);
    } else this.ok = false;
    this.base += rows;
  }

  /** The window's permuted columns, in the order of `names`. */
  finish(): Column[] {
    return this.columns.map(([, s]) => s.finish());
  }
}

/**
 * A shuffled window laid out as batch arrays as its reads arrive (`WindowPacks`), where the reader
 * computes every feature: no window-sized copy of its permuted columns is made, and a chunk's ids
 * are copied only when the stream takes the chunk. `ok` is false once a read had a value an op
 * rejects or a null label: the window is then read again raw, and the error raised where and as it
 * was before.
 */
export class WindowPackScatter {
  private readonly packs: WindowPacks;
  ok = true;
  private base = 0;

  constructor(
    private readonly pack: PackShape,
    order: Int32Array,
    windowRows: number,
    /** The window's chunk cuts, from its first output row (0). */
    cuts: readonly number[],
    private readonly derived: readonly DerivedColumn[],
    private readonly rawNames: ReadonlySet<string>,
    /** Decode threads to place the window's ids where its reads come as packs in shared memory. */
    placer?: IdsPlacer,
    /** Its decoders write its reads' dense rows to their places (`densePlace`). */
    sharedDense = false,
  ) {
    this.packs = new WindowPacks(pack.layout, order, windowRows, cuts, placer, sharedDense, pack.arena);
  }

  /** Where the decoder of window rows [base, base + rows) writes their dense values (WindowPacks.densePlace). */
  densePlace(base: number, rows: number): DensePlace {
    return this.packs.densePlace(base, rows);
  }

  /** Adds the next read of the window (`rows` rows), computing what the reader left (`completeDerived`). */
  add(cols: Map<string, Column>, rows: number, locate: RowLocator): void {
    if (this.ok && completeDerived(cols, this.derived, this.rawNames, locate)) {
      const outputs = new Map<string, Column>();
      for (const [feature, name] of this.pack.outputs) outputs.set(feature, cols.get(name)!);
      const label = this.pack.label === null ? null : cols.get(this.pack.label)!;
      this.ok = this.packs.add(outputs, label, this.base, rows);
    } else this.ok = false;
    this.base += rows;
  }

  /** Adds the next read of the window, which its decoder laid out as one pack. */
  addPack(pack: Pack): void {
    if (this.ok) this.packs.addPack(pack, this.base);
    this.base += pack.rows;
  }

  /** Chunk c's pack, once every read was added (in chunk order, each once). */
  take(c: number): Promise<Pack> {
    return this.packs.take(c);
  }
}
