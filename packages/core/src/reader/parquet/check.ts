/**
 * Checks made in Sluice's own code before any byte reaches parquet-wasm: the footer (magic,
 * length, encryption, where each column chunk lies) and every page of the column chunks
 * parquet-wasm is about to decode (headers, sizes, checksums, decompression, value counts).
 * parquet-wasm panics on many damaged files (a WebAssembly trap, "unreachable"), which says
 * nothing about where or what; these checks refuse those files first, with the place.
 */
import { parquetMetadata } from 'hyparquet';
import { deserializeTCompactProtocol } from 'hyparquet/src/thrift.js';
import type { FileMetaData } from 'hyparquet/src/types.js';
import { chunkPages, decompress, type ReadAt, type Zstd } from './page.js';
import { located, type PagePlace } from './refusal.js';
import { footerWith, scanFooter, type FooterScan } from './footer-scan.js';
import { encodeThrift, type Thrift } from './thrift.js';

/** A file that is not read at all (no usable footer, encrypted): the message says why. */
export class FileRefusal extends Error {
  override name = 'FileRefusal';
}

const MAGIC = 0x31524150; // "PAR1", little-endian
const ENCRYPTED_MAGIC = 0x45524150; // "PARE": an encrypted footer

const ENCRYPTED = 'it is encrypted (Parquet modular encryption); Sluice does not decrypt files: decrypt it with the tool that holds its keys first';

/**
 * The footer of a file of `size` bytes, parsed and checked: `readAt` reads the file. Throws a
 * FileRefusal saying what is wrong: too short, not Parquet, a footer length that does not fit, an
 * encrypted file (either footer mode), a footer that does not parse, a row count that is not one.
 * A row group's metadata is parsed and checked (column chunks outside the file, value counts)
 * when it is first read, `md.row_groups[r]`: a damaged one throws a FileRefusal then, for that row
 * group alone.
 */
export function readFooter(size: number, readAt: ReadAt): FileMetaData {
  if (size < 12) throw new FileRefusal(`${size} bytes is too short to be a Parquet file (truncated?)`);
  const tail = readAt(size - 8, 8);
  const tailView = new DataView(tail.buffer, tail.byteOffset, 8);
  const magic = tailView.getUint32(4, true);
  const len = tailView.getUint32(0, true);
  if (magic === ENCRYPTED_MAGIC) throw new FileRefusal(`${ENCRYPTED} (its footer is encrypted)`);
  if (magic !== MAGIC) throw new FileRefusal('it does not end with the Parquet magic "PAR1" (truncated, or not a Parquet file)');
  if (len < 2 || len > size - 12)
    throw new FileRefusal(`the footer length at its end (${len} bytes) does not fit in the file's ${size} bytes (truncated or damaged)`);
  const head = readAt(0, 4);
  if (new DataView(head.buffer, head.byteOffset, 4).getUint32(0, true) !== MAGIC) throw new FileRefusal('it does not start with the Parquet magic "PAR1"');
  // Fresh memory: the parsed metadata is cached and may keep views of it.
  const footer = readAt(size - 8 - len, len + 8).slice();
  // One pass finds the row groups without parsing them (footer-scan.ts); hyparquet parses the
  // other fields now, and a row group when something first asks for it.
  let scan: FooterScan;
  let rest: ArrayBuffer;
  let raw: Thrift;
  try {
    scan = scanFooter(footer, len);
    rest = footerWith(scan, null);
    raw = deserializeTCompactProtocol({ view: new DataView(rest), offset: 0 });
  } catch {
    throw new FileRefusal(`its footer (${len} bytes) does not parse (damaged)`);
  }
  // FileMetaData field 8 is encryption_algorithm: a plaintext footer over encrypted columns.
  if (isAlgorithm(raw.field_8)) throw new FileRefusal(`${ENCRYPTED} (its footer is plaintext, its columns are not)`);
  checkNames(raw);
  let top: FileMetaData;
  try {
    top = parquetMetadata(rest);
  } catch {
    throw new FileRefusal(`its footer (${len} bytes) does not parse as Parquet metadata (damaged)`);
  }
  if (!scan.hasRowGroups || !Array.isArray(top.schema) || top.schema.length === 0)
    throw new FileRefusal('its footer has no schema or no row group list (damaged)');
  scan.rowGroups.forEach((g, r) => checkRows(g.numRows, r));
  const md: FileMetaData = { ...top, row_groups: lazyRowGroups(scan, size - 8 - len), metadata_length: len };
  scans.set(md, scan);
  return md;
}

/** The scan each footer `readFooter` returned came from: its row groups' places and row counts. */
const scans = new WeakMap<FileMetaData, FooterScan>();

/** Rows per row group of a footer `readFooter` returned, without parsing its row groups. */
export function rowGroupRows(md: FileMetaData): number[] {
  const scan = scans.get(md);
  return scan === undefined ? md.row_groups.map((rg) => Number(rg.num_rows)) : scan.rowGroups.map((g) => Number(g.numRows));
}

/**
 * The row groups of a scanned footer, each parsed (hyparquet) and checked (`checkRowGroup`) when
 * it is first read, then kept. One that does not parse or check throws a FileRefusal each time it
 * is read; the others read as usual.
 */
function lazyRowGroups(scan: FooterScan, dataEnd: number): FileMetaData['row_groups'] {
  const groups: FileMetaData['row_groups'] = [];
  const parse = (r: number): FileMetaData['row_groups'][number] => {
    let rg: FileMetaData['row_groups'][number] | undefined;
    try {
      rg = parquetMetadata(footerWith(scan, r)).row_groups[0];
    } catch {
      rg = undefined;
    }
    if (rg === undefined) throw new FileRefusal(`row group ${r}: its metadata in the footer does not parse (damaged)`);
    checkRowGroup(rg, r, dataEnd);
    Object.defineProperty(groups, r, { value: rg, writable: true, enumerable: true, configurable: true });
    return rg;
  };
  for (let r = 0; r < scan.rowGroups.length; r++) Object.defineProperty(groups, r, { get: () => parse(r), enumerable: true, configurable: true });
  return groups;
}

/** Footers `readFooter` repaired for parquet-wasm (null: the file's own is fine), by the metadata it returned; made on first use. */
const repaired = new WeakMap<FileMetaData, Uint8Array | null>();

/**
 * The footer to give parquet-wasm instead of the file's (thrift, without its length and magic),
 * or undefined when the file's own is fine. A column chunk whose `dictionary_page_offset` cannot
 * be a dictionary page (0, which some writers store for "none", or not before the data pages) is
 * read from its first data page, as DuckDB reads it; parquet-wasm would start at that offset and
 * panic.
 */
export function repairedFooter(md: FileMetaData): Uint8Array | undefined {
  let fixed = repaired.get(md);
  if (fixed === undefined) {
    const scan = scans.get(md);
    try {
      fixed = scan === undefined ? null : repair(deserializeTCompactProtocol({ view: new DataView(scan.bytes.buffer, scan.bytes.byteOffset), offset: 0 }));
    } catch {
      // A row group that does not parse: the reads of it are refused before parquet-wasm sees them.
      fixed = null;
    }
    repaired.set(md, fixed);
  }
  return fixed ?? undefined;
}

function repair(raw: Thrift): Uint8Array | null {
  let changed = false;
  for (const rg of (raw.field_4 as Thrift[] | undefined) ?? []) {
    for (const cc of (rg.field_1 as Thrift[] | undefined) ?? []) {
      const m = cc.field_3 as Thrift | undefined;
      const dict = m?.field_11;
      if (typeof dict !== 'bigint') continue;
      if (dict >= 4n && dict < (m!.field_9 as bigint)) continue;
      m!.field_11 = undefined;
      changed = true;
    }
  }
  return changed ? encodeThrift(raw) : null;
}

/**
 * Whether a raw thrift value is an EncryptionAlgorithm: a union of AES_GCM_V1 (field 1) or
 * AES_GCM_CTR_V1 (field 2), each a struct. Checked to its shape so that a damaged footer is not
 * taken for an encrypted one.
 */
function isAlgorithm(x: unknown): boolean {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) return false;
  const keys = Object.keys(x);
  const v = (x as Thrift)[keys[0]!];
  return keys.length === 1 && (keys[0] === 'field_1' || keys[0] === 'field_2') && typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Whether a raw ColumnCryptoMetaData: a union of ENCRYPTION_WITH_FOOTER_KEY (field 1) or ENCRYPTION_WITH_COLUMN_KEY (field 2), each a struct. */
const isCryptoMetadata = isAlgorithm;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Whether raw thrift binary `b` is a valid UTF-8 string. */
function isUtf8(b: unknown): boolean {
  if (!(b instanceof Uint8Array)) return false;
  try {
    utf8.decode(b);
    return true;
  } catch {
    return false;
  }
}

/** Throws a FileRefusal when a schema element's name, or a key-value pair of the footer, is missing or not UTF-8 (raw FileMetaData: field 2 the schema, 5 the key-value metadata). */
function checkNames(raw: Thrift): void {
  const schema = raw.field_2;
  if (!Array.isArray(schema)) return;
  schema.forEach((el: Thrift, i) => {
    if (!isUtf8(el?.field_4))
      throw new FileRefusal(`schema element ${i} has ${el?.field_4 === undefined ? 'no name' : 'a name that is not valid UTF-8'} (damaged footer)`);
  });
  const kv = raw.field_5;
  if (Array.isArray(kv))
    kv.forEach((p: Thrift, i) => {
      if (!isUtf8(p?.field_1) || (p.field_2 !== undefined && !isUtf8(p.field_2)))
        throw new FileRefusal(`key-value metadata entry ${i} is not valid UTF-8 (damaged footer)`);
    });
}

/** Throws a FileRefusal when row group `r`'s row count (`numRows`, as the footer gives it) is not one. */
function checkRows(numRows: bigint | null | undefined, r: number): void {
  const rows = Number(numRows);
  if (numRows === null || numRows === undefined || !Number.isSafeInteger(rows) || rows < 0)
    throw new FileRefusal(`row group ${r}: the footer gives ${numRows === null || numRows === undefined ? 'no' : String(numRows)} row count`);
}

/** Throws a FileRefusal when row group `r`'s column chunks do not add up within the `dataEnd` bytes before the footer. */
function checkRowGroup(rg: FileMetaData['row_groups'][number], r: number, dataEnd: number): void {
  checkRows(rg.num_rows, r);
  rg.columns.forEach((c, k) => {
    if (isCryptoMetadata(c.crypto_metadata)) throw new FileRefusal(`${ENCRYPTED} (row group ${r}, column chunk ${k})`);
    const m = c.meta_data;
    if (m === undefined) throw new FileRefusal(`row group ${r}: column chunk ${k} has no metadata in the footer (damaged)`);
    const name = Array.isArray(m.path_in_schema) ? m.path_in_schema.join('.') : `#${k}`;
    const start = Math.min(
      Number(m.data_page_offset),
      m.dictionary_page_offset !== undefined && m.dictionary_page_offset >= 4n ? Number(m.dictionary_page_offset) : Infinity,
    );
    const bytes = Number(m.total_compressed_size);
    const values = Number(m.num_values);
    if (!Number.isSafeInteger(start) || start < 4 || !Number.isSafeInteger(bytes) || bytes < 0 || start + bytes > dataEnd) {
      throw new FileRefusal(
        `row group ${r}, column ${name}: the footer places its pages at bytes ${start}..${start + bytes}, outside the file's ${dataEnd} bytes of data`,
      );
    }
    if (!Number.isSafeInteger(values) || values < 0)
      throw new FileRefusal(`row group ${r}, column ${name}: the footer gives ${m.num_values === undefined ? 'no' : String(m.num_values)} value count`);
  });
}

/**
 * Walks every page of row group `rowGroup`'s chunks of the top-level columns `names`, as
 * parquet-wasm will: each header checked (page.ts), each page decompressed to the size its header
 * says, its values counted against the chunk's. Throws a Refusal naming the column and page.
 */
export function checkChunks(md: FileMetaData, rowGroup: number, names: readonly string[], readAt: ReadAt, zstd: Zstd): void {
  const rg = md.row_groups[rowGroup];
  if (rg === undefined) throw new FileRefusal(`row group ${rowGroup} does not exist (the file has ${md.row_groups.length})`);
  const wanted = new Set(names);
  for (const c of rg.columns) {
    const m = c.meta_data!;
    if (!wanted.has(m.path_in_schema[0]!)) continue;
    const col = m.path_in_schema.join('.');
    let place: PagePlace | null = null;
    try {
      const next = chunkPages(m, readAt);
      const known = m.codec === 'UNCOMPRESSED' || m.codec === 'SNAPPY' || m.codec === 'ZSTD' || m.codec === 'GZIP';
      let values = 0;
      for (let pg = next(); pg !== null; pg = next()) {
        place = pg;
        const h = pg.h;
        if (h.type === 'DATA_PAGE_V2') {
          const d = h.data_page_header_v2!;
          const levels = d.repetition_levels_byte_length + d.definition_levels_byte_length;
          if (known && d.is_compressed) decompress(pg.body.subarray(levels), h.uncompressed_page_size - levels, m.codec, zstd);
          values += d.num_values;
        } else if (h.type === 'DATA_PAGE' || h.type === 'DICTIONARY_PAGE') {
          if (known) decompress(pg.body, h.uncompressed_page_size, m.codec, zstd);
          if (h.type === 'DATA_PAGE') values += h.data_page_header!.num_values;
        }
      }
      place = null;
      if (values !== Number(m.num_values)) throw new Error(`its pages hold ${values} values, the footer says ${m.num_values}`);
    } catch (e) {
      throw located(e, col, place);
    }
  }
}
