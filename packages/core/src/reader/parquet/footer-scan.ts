/**
 * A first pass over a Parquet footer (FileMetaData in thrift's TCompactProtocol) that parses none
 * of its row groups: where each RowGroup struct lies and how many rows it says it has, and the
 * footer's other fields as they are. `readFooter` (check.ts) then has hyparquet parse the rest,
 * and each row group only when something asks for it (`footerWith`).
 *
 * Why: hyparquet parses a footer whole, and every decode thread parses the footer of each file it
 * reads, though a read needs one row group of it. A wide file's footer is large (RM5 written by
 * arrow-rs, 546 columns × 10 row groups: 684 KB, ~0.3 s a parse here, each decoder in turn before
 * its first read; bench/README.md, "RM5: the footer, parsed whole by every decoder").
 *
 * Every length and count is checked against the footer's bytes: a damaged footer throws a
 * RangeError here (the caller refuses the file), never loops or reads past its end.
 */

import { longFieldHeader } from './thrift.js';

/** The thrift compact protocol's type ids (TCompactProtocol.java's `Types`). */
const BOOL_TRUE = 1;
const BOOL_FALSE = 2;
const BYTE = 3;
const I16 = 4;
const I32 = 5;
const I64 = 6;
const DOUBLE = 7;
const BINARY = 8;
const LIST = 9;
const SET = 10;
const MAP = 11;
const STRUCT = 12;
const UUID = 13;

/** Structs and containers nest at most this deep: Parquet's footer nests about 6 deep; a damaged one may claim anything. */
const MAX_DEPTH = 64;

/** FileMetaData's field 4: the row groups (parquet.thrift). */
const ROW_GROUPS = 4;
/** RowGroup's field 3: num_rows. */
const NUM_ROWS = 3;

/** One row group as the scan found it. */
export interface RowGroupSpan {
  /** Its RowGroup struct: bytes [start, end) of the footer, its stop byte included. */
  readonly start: number;
  readonly end: number;
  /** Its num_rows field, or null when it has none. */
  readonly numRows: bigint | null;
}

export interface FooterScan {
  /** The footer's bytes: its thrift struct first (what follows it, the length and magic, is not read). */
  readonly bytes: Uint8Array;
  /** Every top-level field but the row groups, each behind a long-form field header, with no stop byte. */
  readonly rest: Uint8Array;
  /** Whether the footer has a row group list at all (a FileMetaData without one is damaged). */
  readonly hasRowGroups: boolean;
  readonly rowGroups: readonly RowGroupSpan[];
}

/** Reads the thrift bytes [0, end) of `b`, refusing to run past them. */
class Cursor {
  pos = 0;
  constructor(
    private readonly b: Uint8Array,
    private readonly end: number,
  ) {}

  byte(): number {
    if (this.pos >= this.end) throw new RangeError(`the footer's thrift runs past its ${this.end} bytes`);
    return this.b[this.pos++]!;
  }

  skip(n: number): void {
    if (!Number.isSafeInteger(n) || n < 0 || this.pos + n > this.end) throw new RangeError(`the footer's thrift runs past its ${this.end} bytes`);
    this.pos += n;
  }

  /** An unsigned varint of up to 64 bits. */
  varint(): bigint {
    let v = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      const b = this.byte();
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return v;
    }
    throw new RangeError('a thrift varint longer than 10 bytes');
  }

  /** Skips a varint (without the cost of reading it as a bigint). */
  skipVarint(): void {
    for (let i = 0; i < 10; i++) if ((this.byte() & 0x80) === 0) return;
    throw new RangeError('a thrift varint longer than 10 bytes');
  }

  /** A varint that is a length or a count: no more than the footer's bytes. */
  size(): number {
    let v = 0;
    for (let mul = 1; mul < 2 ** 53; mul *= 128) {
      const b = this.byte();
      v += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) {
        if (v > this.end) break;
        return v;
      }
    }
    throw new RangeError(`a thrift length or count past the footer's ${this.end} bytes`);
  }
}

/** A zigzag-encoded varint's value. */
const unzigzag = (v: bigint): bigint => (v >> 1n) ^ -(v & 1n);

/** Skips a value of thrift type `type`. */
function skipValue(c: Cursor, type: number, depth: number): void {
  if (depth > MAX_DEPTH) throw new RangeError(`the footer's thrift nests deeper than ${MAX_DEPTH}`);
  switch (type) {
    case BOOL_TRUE:
    case BOOL_FALSE:
      return; // a field's boolean is its header's type
    case BYTE:
      return c.skip(1);
    case I16:
    case I32:
    case I64:
      return c.skipVarint();
    case DOUBLE:
      return c.skip(8);
    case BINARY:
      return c.skip(c.size());
    case UUID:
      return c.skip(16);
    case LIST:
    case SET: {
      const { n, elem } = listHeader(c);
      // A list's booleans take a byte each.
      if (elem === BOOL_TRUE || elem === BOOL_FALSE) return c.skip(n);
      for (let i = 0; i < n; i++) skipValue(c, elem, depth + 1);
      return;
    }
    case MAP: {
      const n = c.size();
      if (n === 0) return;
      const kv = c.byte();
      for (let i = 0; i < n; i++) {
        skipValue(c, kv >> 4, depth + 1);
        skipValue(c, kv & 15, depth + 1);
      }
      return;
    }
    case STRUCT:
      return skipStruct(c, depth + 1);
    default:
      throw new RangeError(`a thrift value of unknown type ${type}`);
  }
}

/** A list's or set's header: its size (in the header byte, or a varint after it when 15) and element type. */
function listHeader(c: Cursor): { n: number; elem: number } {
  const h = c.byte();
  return { n: h >> 4 === 15 ? c.size() : h >> 4, elem: h & 15 };
}

/** Skips a struct's fields up to its stop byte. */
function skipStruct(c: Cursor, depth: number): void {
  for (;;) {
    const h = c.byte();
    if (h === 0) return;
    if (h >> 4 === 0) c.skipVarint(); // a long-form header's field id
    skipValue(c, h & 15, depth);
  }
}

/** Walks a struct's fields up to its stop byte: `field(type, id)` reads or skips each value. */
function structFields(c: Cursor, field: (type: number, id: number) => void): void {
  let id = 0;
  for (;;) {
    const h = c.byte();
    if (h === 0) return;
    const delta = h >> 4;
    id = delta !== 0 ? id + delta : Number(unzigzag(c.varint()));
    field(h & 15, id);
  }
}

/** Scans the footer's thrift, bytes [0, len) of `bytes` (see the file comment). */
export function scanFooter(bytes: Uint8Array, len: number): FooterScan {
  const c = new Cursor(bytes, len);
  const rest: number[] = [];
  const rowGroups: RowGroupSpan[] = [];
  let hasRowGroups = false;
  structFields(c, (type, id) => {
    const start = c.pos;
    if (id === ROW_GROUPS && type === LIST) {
      hasRowGroups = true;
      const { n, elem } = listHeader(c);
      if (elem !== STRUCT) throw new RangeError('the footer has a row group list whose elements are not structs');
      for (let i = 0; i < n; i++) {
        const at = c.pos;
        let numRows: bigint | null = null;
        structFields(c, (t, f) => {
          if (f === NUM_ROWS && t === I64) numRows = unzigzag(c.varint());
          else skipValue(c, t, 2);
        });
        rowGroups.push({ start: at, end: c.pos, numRows });
      }
      return;
    }
    skipValue(c, type, 1);
    rest.push(...longFieldHeader(type, id));
    for (let i = start; i < c.pos; i++) rest.push(bytes[i]!);
  });
  return { bytes, rest: Uint8Array.from(rest), hasRowGroups, rowGroups };
}

/**
 * A footer as hyparquet's `parquetMetadata` takes it (thrift, length, "PAR1"): the scanned
 * footer's fields but its row groups, and of those only row group `rowGroup` (none for null).
 */
export function footerWith(scan: FooterScan, rowGroup: number | null): ArrayBuffer {
  const span = rowGroup === null ? null : scan.rowGroups[rowGroup]!;
  // A list of 0 or 1 structs: its size and element type fit its header byte.
  const head = [...longFieldHeader(LIST, ROW_GROUPS), ((span === null ? 0 : 1) << 4) | STRUCT];
  const body = span === null ? new Uint8Array(0) : scan.bytes.subarray(span.start, span.end);
  const len = scan.rest.length + head.length + body.length + 1;
  const out = new Uint8Array(len + 8);
  out.set(scan.rest, 0);
  out.set(head, scan.rest.length);
  out.set(body, scan.rest.length + head.length);
  out[len - 1] = 0; // FileMetaData's stop
  const view = new DataView(out.buffer);
  view.setUint32(len, len, true);
  view.setUint32(len + 4, 0x31524150, true); // "PAR1"
  return out.buffer;
}
