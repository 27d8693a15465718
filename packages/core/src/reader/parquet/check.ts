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
 * encrypted file (either footer mode), a footer that does not parse, column chunks outside the
 * file.
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
  let raw: Record<string, unknown>;
  try {
    raw = deserializeTCompactProtocol({ view: new DataView(footer.buffer, 0, len), offset: 0 });
  } catch {
    throw new FileRefusal(`its footer (${len} bytes) does not parse (damaged)`);
  }
  // FileMetaData field 8 is encryption_algorithm: a plaintext footer over encrypted columns.
  if (raw.field_8 !== undefined) throw new FileRefusal(`${ENCRYPTED} (its footer is plaintext, its columns are not)`);
  let md: FileMetaData;
  try {
    md = parquetMetadata(footer.buffer);
  } catch {
    throw new FileRefusal(`its footer (${len} bytes) does not parse as Parquet metadata (damaged)`);
  }
  checkLayout(md, size - 8 - len);
  const fixed = repair(raw);
  if (fixed !== null) repaired.set(md, fixed);
  return md;
}

/** Footers `readFooter` repaired for parquet-wasm, by the metadata it returned. */
const repaired = new WeakMap<FileMetaData, Uint8Array>();

/**
 * The footer to give parquet-wasm instead of the file's (thrift, without its length and magic),
 * or undefined when the file's own is fine. A column chunk whose `dictionary_page_offset` cannot
 * be a dictionary page (0, which some writers store for "none", or not before the data pages) is
 * read from its first data page, as DuckDB reads it; parquet-wasm would start at that offset and
 * panic.
 */
export function repairedFooter(md: FileMetaData): Uint8Array | undefined {
  return repaired.get(md);
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

/** Throws a FileRefusal when the footer's row groups and column chunks do not add up within the `dataEnd` bytes before the footer. */
function checkLayout(md: FileMetaData, dataEnd: number): void {
  if (!Array.isArray(md.row_groups) || !Array.isArray(md.schema) || md.schema.length === 0)
    throw new FileRefusal('its footer has no schema or no row group list (damaged)');
  md.row_groups.forEach((rg, r) => {
    const rows = Number(rg.num_rows);
    if (!Number.isSafeInteger(rows) || rows < 0) throw new FileRefusal(`row group ${r}: the footer says it holds ${rg.num_rows} rows`);
    rg.columns.forEach((c, k) => {
      if (c.crypto_metadata !== undefined || c.encrypted_column_metadata !== undefined)
        throw new FileRefusal(`${ENCRYPTED} (row group ${r}, column chunk ${k})`);
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
      if (!Number.isSafeInteger(values) || values < 0) throw new FileRefusal(`row group ${r}, column ${name}: the footer says it holds ${m.num_values} values`);
    });
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
