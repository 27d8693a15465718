/**
 * The shuffle's scatter: the row groups of a window, placed row by row where the window's
 * permutation sends them, as they arrive. Each part is read in order and written at random, where
 * a gather reads at random: a read that misses the cache stalls, a write does not
 * (bench/README.md, "Shuffled reads"). And no copy of the whole window is made first.
 */
import {
  columnLength,
  concatColumns,
  gatherColumn,
  type Column,
  type FixedColumn,
  type ListColumn,
  type NumericColumn,
  type NumericType,
  type PrimitiveColumn,
  type Utf8Column,
  type ValidMask,
} from './column.js';
import { copyBytes, copyWords, newValues, wordsOf, wordWidth } from './words.js';

/**
 * One column of a window, filled a part at a time: row r of a part whose first window row is
 * `base` becomes row dest[base + r] of the result (dest -1: the row is left out, as rows before a
 * resumed window's offset are). Fixed-width values are placed as each part is added; lists and
 * strings record their lengths then, and copy their elements in `finish`, once every row's length
 * (and so every row's place) is known.
 */
export class ColumnScatter {
  private values: NumericColumn['values'] | Float32Array | null = null;
  private valid: Uint8Array | null = null;
  private offsets: Int32Array | null = null;
  /** Lists and strings added, with their first window rows, for `finish`. */
  private readonly jagged: Array<{ readonly part: Utf8Column | ListColumn; readonly base: number }> = [];
  /** Lists of strings added, with their first window rows (see `stringLists`). */
  private readonly parts: Array<{ readonly part: Column; readonly base: number }> = [];
  private first: Column | null = null;

  constructor(
    private readonly dest: Int32Array,
    private readonly n: number,
  ) {}

  /** Places a part whose first window row is `base` (parts of one type, added in any order). */
  add(part: Column, base: number): void {
    this.first ??= part;
    const rows = columnLength(part);
    if (part.valid !== null) {
      this.valid ??= new Uint8Array(this.n).fill(1);
      scatterBytes(part.valid, this.dest, base, rows, this.valid);
    }
    switch (part.type) {
      case 'int32':
      case 'int64':
      case 'float32':
      case 'float64': {
        this.values ??= newValues(part.type, this.n);
        scatterWords(wordsOf(part.values), wordWidth(part.type), this.dest, base, rows, wordsOf(this.values as NumericColumn['values']));
        return;
      }
      case 'fixed': {
        const s = part.size;
        const out = (this.values ??= new Float32Array(this.n * s)) as Float32Array;
        for (let r = 0; r < rows; r++) {
          const d = this.dest[base + r]!;
          if (d >= 0) out.set(part.values.subarray(r * s, r * s + s), d * s);
        }
        return;
      }
      case 'utf8':
      case 'list': {
        if (part.type === 'list' && part.child.type === 'utf8') {
          this.parts.push({ part, base });
          return;
        }
        const offsets = (this.offsets ??= new Int32Array(this.n + 1));
        const o = part.offsets;
        for (let r = 0; r < rows; r++) {
          const d = this.dest[base + r]!;
          if (d >= 0) offsets[d + 1] = o[r + 1]! - o[r]!;
        }
        this.jagged.push({ part, base });
      }
    }
  }

  /** The window's column, once every part was added. */
  finish(): Column {
    const first = this.first!;
    const valid: ValidMask = this.valid;
    switch (first.type) {
      case 'int32':
      case 'int64':
      case 'float32':
      case 'float64':
        return { type: first.type, values: this.values, valid } as NumericColumn;
      case 'fixed':
        return { type: 'fixed', size: first.size, values: this.values as Float32Array, valid } satisfies FixedColumn;
      case 'utf8':
      case 'list':
        if (first.type === 'list' && first.child.type === 'utf8') return this.stringLists();
        return this.finishJagged(first, valid);
    }
  }

  private finishJagged(first: Utf8Column | ListColumn, valid: ValidMask): Column {
    const offsets = this.offsets!;
    const n = this.n;
    for (let i = 0; i < n; i++) offsets[i + 1] += offsets[i]!;
    const total = offsets[n]!;
    if (first.type === 'utf8') {
      const data = new Uint8Array(total);
      for (const { part, base } of this.jagged) scatterByteRuns((part as Utf8Column).data, part.offsets, this.dest, base, offsets, data);
      return { type: 'utf8', offsets, data, valid };
    }
    const childType = first.child.type as NumericType;
    const values = newValues(childType, total);
    const to = wordsOf(values);
    const w = wordWidth(childType);
    let childValid: ValidMask = null;
    for (const { part, base } of this.jagged) {
      const l = part as ListColumn;
      scatterWordRuns(wordsOf((l.child as NumericColumn).values), w, l.offsets, this.dest, base, offsets, to);
      if (l.child.valid !== null) {
        childValid ??= new Uint8Array(total).fill(1);
        scatterByteRuns(l.child.valid, l.offsets, this.dest, base, offsets, childValid);
      }
    }
    return { type: 'list', offsets, child: { type: childType, values, valid: childValid } as PrimitiveColumn, valid };
  }

  /** Lists of strings (raw inputs, never computed features): the concatenated window, gathered. */
  private stringLists(): Column {
    const order = new Int32Array(this.n);
    for (let i = 0; i < this.dest.length; i++) if (this.dest[i]! >= 0) order[this.dest[i]!] = i;
    const parts = [...this.parts].sort((a, b) => a.base - b.base).map((p) => p.part);
    return gatherColumn(concatColumns(parts), order);
  }
}

/** Byte r of `from` to slot dest[base + r] of `to`, for each of `rows`. */
function scatterBytes(from: Uint8Array, dest: Int32Array, base: number, rows: number, to: Uint8Array): void {
  for (let r = 0; r < rows; r++) {
    const d = dest[base + r]!;
    if (d >= 0) to[d] = from[r]!;
  }
}

/** Value r of `from` (w words each) to slot dest[base + r] of `to`, for each of `rows`. */
function scatterWords(from: Uint32Array, w: number, dest: Int32Array, base: number, rows: number, to: Uint32Array): void {
  if (w === 1)
    for (let r = 0; r < rows; r++) {
      const d = dest[base + r]!;
      if (d >= 0) to[d] = from[r]!;
    }
  else
    for (let r = 0; r < rows; r++) {
      const d = dest[base + r]!;
      if (d >= 0) {
        to[2 * d] = from[2 * r]!;
        to[2 * d + 1] = from[2 * r + 1]!;
      }
    }
}

/** Row r's run of elements (w words each, rows = o.length - 1) to where output row dest[base + r] starts. */
function scatterWordRuns(from: Uint32Array, w: number, o: Int32Array, dest: Int32Array, base: number, offsets: Int32Array, to: Uint32Array): void {
  for (let r = 0; r + 1 < o.length; r++) {
    const d = dest[base + r]!;
    if (d >= 0) copyWords(from, o[r]! * w, o[r + 1]! * w, to, offsets[d]! * w);
  }
}

/** `scatterWordRuns` for bytes (string data, validity). */
function scatterByteRuns(from: Uint8Array, o: Int32Array, dest: Int32Array, base: number, offsets: Int32Array, to: Uint8Array): void {
  for (let r = 0; r + 1 < o.length; r++) {
    const d = dest[base + r]!;
    if (d >= 0) copyBytes(from, o[r]!, o[r + 1]!, to, offsets[d]!);
  }
}
