import type { NumericColumn } from '@sluice/ops';

/**
 * Ops' results per dictionary entry, shared by the decoders that read parts of one row group
 * (stream/source.ts splits a row group by rows so that decoders finish together). Every part needs
 * each derived column's results for the whole dictionary, and parts that each computed them
 * repeated that work (see bench/README.md, 'Where the CPU goes'). With a share,
 * whichever part reaches a derived column first computes and publishes its results, and the others
 * (running at the same time, or later) read them and decode only their rows' dictionary indices.
 * A part never waits for another: one that finds a column being computed computes it too.
 *
 * Layout of the growable SharedArrayBuffer: Int32 words [0] = bytes allocated so far (a bump
 * pointer, starting after the directory), [1] = directory entries; then per derived column (in
 * the read spec's order) four Int32 words: state (EMPTY, BUSY, READY, FAILED), byte offset of the
 * values, entry count (the dictionary plus the null slot), and type code (+ HAS_VALID when a
 * validity mask of `count` bytes follows the values, at the next multiple of 8).
 */
const EMPTY = 0;
const BUSY = 1;
const READY = 2;
const FAILED = 3;
const HEADER = 2;
const ENTRY = 4;
const HAS_VALID = 8;
const TYPES = ['int32', 'int64', 'float32', 'float64'] as const;
/**
 * Address space a share may grow into; only what parts publish is ever committed. A share that
 * would outgrow it just stops publishing (the parts compute what is left themselves).
 */
const MAX_BYTES = 512 << 20;

/** Growable SharedArrayBuffers (ES2024; Node 20 has them), which the ES2022 lib does not type. */
interface Growable extends SharedArrayBuffer {
  readonly growable: boolean;
  readonly maxByteLength: number;
  grow(bytes: number): void;
}
const GrowableSab = SharedArrayBuffer as unknown as new (bytes: number, options: { maxByteLength: number }) => Growable;

/**
 * A new share for the parts of one row group, with a directory entry per derived column, that may
 * grow to `maxBytes` (default 512 MiB of address space, committed only as parts publish).
 */
export function newDictShare(derivedColumns: number, maxBytes = MAX_BYTES): SharedArrayBuffer {
  if (!Number.isInteger(derivedColumns) || derivedColumns < 0)
    throw new RangeError(`a dictionary share needs a whole number of columns, got ${derivedColumns}`);
  const start = align8((HEADER + ENTRY * derivedColumns) * 4);
  const sab = new GrowableSab(start, { maxByteLength: Math.max(start, maxBytes) });
  const head = new Int32Array(sab, 0, HEADER);
  head[0] = start;
  head[1] = derivedColumns;
  return sab;
}

function align8(n: number): number {
  return (n + 7) & ~7;
}

/** What a share holds for a derived column: its results, FAILED (its ops fail on this dictionary), or nothing yet. */
export type Shared = NumericColumn | 'failed' | null;

/** A decoder's view of a share (see `newDictShare`). */
export class DictShare {
  private readonly words: Int32Array;
  private readonly entries: number;
  private readonly sab: Growable;

  constructor(buffer: SharedArrayBuffer) {
    const sab = buffer as Growable;
    if (!(sab instanceof SharedArrayBuffer) || sab.growable !== true || sab.byteLength < HEADER * 4) throw new TypeError('not a dictionary share');
    this.sab = sab;
    const head = new Int32Array(sab, 0, HEADER);
    this.entries = head[1]!;
    if (this.entries < 0 || sab.byteLength < (HEADER + ENTRY * this.entries) * 4) throw new TypeError('not a dictionary share');
    this.words = new Int32Array(sab, 0, HEADER + ENTRY * this.entries);
  }

  /** Derived column `i`'s results, 'failed', or null while no part has published them. */
  lookup(i: number): Shared {
    if (i < 0 || i >= this.entries) return null;
    const at = HEADER + ENTRY * i;
    const state = Atomics.load(this.words, at);
    if (state === FAILED) return 'failed';
    if (state !== READY) return null;
    // The READY store came after these words and the data: Atomics.load above orders the reads.
    const offset = this.words[at + 1]!;
    const count = this.words[at + 2]!;
    const code = this.words[at + 3]!;
    const type = TYPES[code & 3]!;
    const values =
      type === 'int32'
        ? new Int32Array(this.sab, offset, count)
        : type === 'int64'
          ? new BigInt64Array(this.sab, offset, count)
          : type === 'float32'
            ? new Float32Array(this.sab, offset, count)
            : new Float64Array(this.sab, offset, count);
    const valid = (code & HAS_VALID) !== 0 ? new Uint8Array(this.sab, align8(offset + values.byteLength), count) : null;
    return { type, values, valid } as NumericColumn;
  }

  /** Takes derived column `i` to compute and publish; false when another part has it (or has published it). */
  claim(i: number): boolean {
    if (i < 0 || i >= this.entries) return false;
    return Atomics.compareExchange(this.words, HEADER + ENTRY * i, EMPTY, BUSY) === EMPTY;
  }

  /** Gives a claim back without a result (this part could not compute it; another part may). */
  unclaim(i: number): void {
    Atomics.store(this.words, HEADER + ENTRY * i, EMPTY);
  }

  /** Marks a claimed column FAILED: its ops fail on this dictionary, in every part alike. */
  fail(i: number): void {
    Atomics.store(this.words, HEADER + ENTRY * i, FAILED);
  }

  /**
   * Publishes a claimed column's results. When the share has no room left the claim is given back
   * (the other parts compute the column themselves).
   */
  publish(i: number, c: NumericColumn): void {
    const code = TYPES.indexOf(c.type);
    const count = c.values.length;
    const valuesBytes = c.values.byteLength;
    const bytes = align8(valuesBytes) + (c.valid !== null ? align8(count) : 0);
    const offset = Atomics.add(this.words, 0, bytes);
    const end = offset + bytes;
    if (end > this.sab.maxByteLength) {
      this.unclaim(i);
      return;
    }
    // Parts grow it concurrently: a grow to less than another part already grew it to throws.
    while (this.sab.byteLength < end) {
      try {
        this.sab.grow(Math.min(this.sab.maxByteLength, Math.max(end, this.sab.byteLength * 2)));
      } catch {
        // grown by another part meanwhile; check again
      }
    }
    new Uint8Array(this.sab, offset, valuesBytes).set(new Uint8Array(c.values.buffer, c.values.byteOffset, valuesBytes));
    if (c.valid !== null) new Uint8Array(this.sab, align8(offset + valuesBytes), count).set(c.valid);
    const at = HEADER + ENTRY * i;
    this.words[at + 1] = offset;
    this.words[at + 2] = count;
    this.words[at + 3] = code | (c.valid !== null ? HAS_VALID : 0);
    Atomics.store(this.words, at, READY);
  }
}
