/**
 * Column chunks into pages: each page's thrift header (parsed with hyparquet) and its body,
 * decompressed with the chunk's codec.
 */
import { gunzipSync } from 'node:zlib';
import { parquetHeader } from 'hyparquet/src/column.js';
import { snappyUncompress } from 'hyparquet/src/snappy.js';
import type { ColumnMetaData, PageHeader } from 'hyparquet/src/types.js';

/**
 * Decompresses `src` into exactly `size` bytes. The result may be a view that the next call
 * overwrites (../zstd.ts decompresses into reused memory): the decoder reads a page before it
 * decompresses the next, and copies a dictionary page, which it keeps for the chunk.
 */
export type Zstd = (src: Uint8Array, size: number) => Uint8Array;

/**
 * Reads `length` bytes at absolute file `offset`. The result may be a view that the next call
 * overwrites (the decode worker reads each column chunk into one reused buffer): a chunk is read
 * once and decoded, and what outlives it is copied, before the next read.
 */
export type ReadAt = (offset: number, length: number) => Uint8Array;

/**
 * Reads a column chunk (one read) and returns a function that gives its pages in order: each
 * page's header and its body as stored (compressed), or null after the last.
 */
export function chunkPages(m: ColumnMetaData, readAt: ReadAt): () => { h: PageHeader; body: Uint8Array } | null {
  const dictAt = m.dictionary_page_offset !== undefined && m.dictionary_page_offset > 0n ? Number(m.dictionary_page_offset) : Infinity;
  const start = Math.min(dictAt, Number(m.data_page_offset));
  const bytes = readAt(start, Number(m.total_compressed_size));
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let pos = 0;
  return () => {
    if (pos >= bytes.length) return null;
    const reader = { view, offset: pos };
    const h = parquetHeader(reader);
    const body = bytes.subarray(reader.offset, reader.offset + h.compressed_page_size);
    if (body.length !== h.compressed_page_size) throw new Error(`column ${m.path_in_schema.join('.')}: page runs past the column chunk`);
    pos = reader.offset + h.compressed_page_size;
    return { h, body };
  };
}

/** A page body decompressed with the chunk's codec, checked to be `size` bytes (ZSTD's may be reused memory: see Zstd). */
export function decompress(body: Uint8Array, size: number, codec: string, zstd: Zstd): Uint8Array {
  let out: Uint8Array;
  if (codec === 'UNCOMPRESSED') out = body;
  else if (codec === 'ZSTD') out = zstd(body, size);
  else if (codec === 'SNAPPY') {
    out = new Uint8Array(size);
    snappyUncompress(body, out);
  } else if (codec === 'GZIP') out = gunzipSync(body);
  else throw new Error(`unsupported codec ${codec}`);
  if (out.length !== size) throw new Error(`page decompressed to ${out.length} bytes, header says ${size}`);
  return out;
}
