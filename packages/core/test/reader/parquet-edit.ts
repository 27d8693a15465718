// Rewrites Parquet files the way other writers lay them out, for tests: page CRCs added (parquet-mr
// and arrow-rs with checksums on write them; parquet-wasm and DuckDB do not), a footer edited
// (dictionary_page_offset = 0, an encryption_algorithm). The footer and page headers are read as
// raw thrift by hyparquet and written back with the reader's own encoder (parquet/thrift.ts).
import { deserializeTCompactProtocol } from 'hyparquet/src/thrift.js';
import { pageCrc32 } from '../../src/reader/parquet/page.js';
import { encodeThrift, type Thrift } from '../../src/reader/parquet/thrift.js';

/** The bytes written so far, as a list of pieces (files of tens of megabytes are rewritten for benchmarks). */
class Out {
  pieces: Uint8Array[] = [];
  length = 0;
  raw(b: Uint8Array): void {
    this.pieces.push(b);
    this.length += b.length;
  }
  bytes(): Uint8Array {
    const out = new Uint8Array(this.length);
    let at = 0;
    for (const p of this.pieces) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}

/** What `rewriteParquet` lets a test change. */
export interface Edits {
  /** Give every page a CRC32 of its bytes (default false). */
  crc?: boolean;
  /** Changes each column chunk's raw ColumnMetaData (thrift field ids: 11 is dictionary_page_offset) after the pages were laid out. */
  columnMeta?: (meta: Thrift) => void;
  /** Changes the raw FileMetaData (field 8 is encryption_algorithm). */
  footer?: (md: Thrift) => void;
}

/**
 * A copy of a Parquet file with its pages laid out again and `edits` applied. Column and offset
 * indexes and bloom filters are left out (their offsets would move).
 */
export function rewriteParquet(file: Uint8Array, edits: Edits): Uint8Array {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const len = view.getUint32(file.length - 8, true);
  const md = deserializeTCompactProtocol({ view, offset: file.length - 8 - len }) as Thrift;
  const out = new Out();
  out.raw(new TextEncoder().encode('PAR1'));
  for (const rg of md.field_4 as Thrift[]) {
    const rgStart = out.length;
    let rgBytes = 0n;
    for (const cc of rg.field_1 as Thrift[]) {
      const m = cc.field_3 as Thrift;
      const dict = m.field_11 as bigint | undefined;
      const start = Number(dict !== undefined && dict >= 4n ? dict : (m.field_9 as bigint));
      const end = start + Number(m.field_7 as bigint);
      const newStart = out.length;
      let dataAt: number | null = null;
      let dictAt: number | null = null;
      const reader = { view, offset: start };
      while (reader.offset < end) {
        const at = out.length;
        const h = deserializeTCompactProtocol(reader) as Thrift;
        const size = h.field_3 as number;
        const body = file.subarray(reader.offset, reader.offset + size);
        reader.offset += size;
        if (edits.crc === true) h.field_4 = pageCrc32(body) | 0;
        if (h.field_1 === 2) dictAt = at;
        else if (dataAt === null) dataAt = at;
        out.raw(encodeThrift(h));
        out.raw(body);
      }
      const size = BigInt(out.length - newStart);
      m.field_7 = size;
      m.field_9 = BigInt(dataAt ?? newStart);
      m.field_11 = dictAt === null ? undefined : BigInt(dictAt);
      m.field_10 = undefined;
      m.field_14 = undefined;
      m.field_15 = undefined;
      cc.field_2 = BigInt(newStart);
      for (const k of ['field_4', 'field_5', 'field_6', 'field_7']) cc[k] = undefined;
      rgBytes += size;
      edits.columnMeta?.(m);
    }
    rg.field_5 = BigInt(rgStart);
    rg.field_6 = rgBytes;
  }
  edits.footer?.(md);
  const footer = encodeThrift(md);
  out.raw(footer);
  const tail = new Uint8Array(8);
  new DataView(tail.buffer).setUint32(0, footer.length, true);
  tail.set(new TextEncoder().encode('PAR1'), 4);
  out.raw(tail);
  return out.bytes();
}
