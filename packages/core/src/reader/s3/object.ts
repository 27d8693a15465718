/**
 * Parquet objects in an S3-compatible store as a decode worker reads them: the footer first (one
 * request for the object's tail, which usually holds the page indexes too), cached per object
 * with its ETag; then, per row group, the projected column chunks as coalesced range requests,
 * several in flight. Every range is checked against the footer's ETag, so a changed object is
 * never decoded with a stale footer.
 */
import { parquetMetadata } from 'hyparquet';
import type { FileMetaData } from 'hyparquet/src/types.js';
import type { S3Access } from './access.js';
import { S3Client } from './client.js';
import { S3Error } from './errors.js';
import { coalesce, inFlight, piecesReader, type ByteRange } from './ranges.js';
import { parseS3Url } from './url.js';

/** An object whose footer this worker has read. */
export interface S3Object {
  readonly source: string;
  readonly bucket: string;
  readonly key: string;
  readonly size: number;
  readonly etag: string;
  readonly md: FileMetaData;
  readonly client: S3Client;
  /** The object's last bytes (footer, page indexes), fetched with the footer. */
  readonly tail: { readonly start: number; readonly bytes: Uint8Array };
}

/** How much of an object's end the first request fetches: most footers and their page indexes fit. */
const TAIL = 256 << 10;
/** Gap between column chunks read rather than split into two requests (see `coalesce`). */
const GAP = 256 << 10;
/** Largest single range request; longer ranges go as parts in parallel. */
const PART = 8 << 20;

/**
 * Requests in flight per row group read (`SLUICE_S3_CONCURRENCY`, default 8).
 *
 * @example
 * s3Concurrency({ SLUICE_S3_CONCURRENCY: '16' }); // 16
 */
export function s3Concurrency(env: Readonly<Record<string, string | undefined>> = process.env): number {
  const n = Number(env.SLUICE_S3_CONCURRENCY ?? 8);
  return Number.isInteger(n) && n >= 1 ? n : 8;
}

const clients = new Map<string, S3Client>();
/** One client per set of credentials and endpoint (it only signs: nothing to share but that). */
function clientFor(access: S3Access): S3Client {
  const id = JSON.stringify(access);
  let c = clients.get(id);
  if (c === undefined) {
    c = new S3Client(access);
    clients.set(id, c);
    if (clients.size > 8) clients.delete(clients.keys().next().value!);
  }
  return c;
}

const objects = new Map<string, S3Object>();
const OBJECTS_KEPT = 32;

/**
 * The object's footer, parsed. `fresh` asks the store again (one request for the tail) and keeps
 * the cached footer only while the ETag is the same; otherwise the cached one is used, and the
 * ETag check on every range read catches a change.
 *
 * @example
 * const o = await openS3Object('s3://data/train/part-0.parquet', await resolveS3Access(), true);
 * o.md.row_groups.length; // row groups in its footer
 */
export async function openS3Object(source: string, access: S3Access, fresh: boolean): Promise<S3Object> {
  const known = objects.get(source);
  if (known !== undefined && !fresh && JSON.stringify(known.client.access) === JSON.stringify(access)) return known;
  const { bucket, key } = parseS3Url(source);
  const client = clientFor(access);
  const tail = await client.get(bucket, key, { suffix: TAIL });
  if (known !== undefined && known.etag === tail.etag && known.size === tail.size && known.client === client) return known;
  const b = tail.bytes;
  const magic = (at: number): boolean => b.length >= at + 4 && b[at] === 0x50 && b[at + 1] === 0x41 && b[at + 2] === 0x52 && b[at + 3] === 0x31;
  if (tail.size < 12 || !magic(b.length - 4)) throw new S3Error('not a Parquet file (it does not end with the Parquet magic number)', 'NotParquet', 206);
  const len = new DataView(b.buffer, b.byteOffset + b.length - 8, 4).getUint32(0, true);
  if (len + 8 > tail.size - 4)
    throw new S3Error(`not a readable Parquet file (its footer claims ${len} bytes of a ${tail.size}-byte object)`, 'NotParquet', 206);
  let footer: Uint8Array;
  let whole = { start: tail.start, bytes: b };
  if (len + 8 <= b.length) footer = b.subarray(b.length - 8 - len);
  else {
    const more = await client.get(bucket, key, { start: tail.size - 8 - len, end: tail.start }, tail.etag);
    footer = new Uint8Array(len + 8);
    footer.set(more.bytes, 0);
    footer.set(b, more.bytes.length);
    whole = { start: more.start, bytes: footer };
  }
  // hyparquet keeps views of the buffer it parsed: give it its own copy.
  const md = parquetMetadata(footer.slice().buffer);
  const o: S3Object = { source, bucket, key, size: tail.size, etag: tail.etag, md, client, tail: whole };
  objects.delete(source);
  objects.set(source, o);
  if (objects.size > OBJECTS_KEPT) objects.delete(objects.keys().next().value!);
  return o;
}

/**
 * Forgets every object (a parked worker: the objects may change before it reads them again).
 *
 * @example
 * forgetS3Objects(); // the next openS3Object asks the store
 */
export function forgetS3Objects(): void {
  objects.clear();
}

/** Bytes [start, end) of the object, from the cached tail when it holds them, else one checked request. */
async function bytesOf(o: S3Object, start: number, end: number): Promise<Uint8Array> {
  if (end <= start) return new Uint8Array(0);
  if (start >= o.tail.start && end <= o.tail.start + o.tail.bytes.length) return o.tail.bytes.subarray(start - o.tail.start, end - o.tail.start);
  return (await o.client.get(o.bucket, o.key, { start, end }, o.etag)).bytes;
}

/**
 * The ranged GETs a read of `rowGroup` sends: the column chunks whose top-level column is in
 * `columns`, coalesced (gaps under 256 KiB read through, parts of at most 8 MiB).
 *
 * @example
 * rowGroupRanges(md, 0, new Set(['I1', 'C1'])); // [{ start: 4, end: 1048580 }]
 */
export function rowGroupRanges(md: FileMetaData, rowGroup: number, columns: ReadonlySet<string>): ByteRange[] {
  const rg = md.row_groups[rowGroup];
  if (rg === undefined) throw new S3Error(`has no row group ${rowGroup} (the object changed since it was listed?)`, 'Changed', 0);
  const ranges: ByteRange[] = [];
  for (const c of rg.columns) {
    const m = c.meta_data;
    if (m === undefined || !columns.has(m.path_in_schema[0]!)) continue;
    // Where the direct decoder starts a chunk (parquet/page.ts): its dictionary page, if any.
    const dictAt = m.dictionary_page_offset !== undefined && m.dictionary_page_offset > 0n ? Number(m.dictionary_page_offset) : Infinity;
    const start = Math.min(dictAt, Number(m.data_page_offset));
    ranges.push({ start, end: start + Number(m.total_compressed_size) });
  }
  return coalesce(ranges, GAP, PART);
}

/**
 * The column chunks of `rowGroup` whose top-level column is in `columns`, fetched as coalesced
 * ranges (`rowGroupRanges`) with `s3Concurrency()` requests in flight, as a positional reader for
 * the direct decoder.
 *
 * @example
 * const readAt = await fetchRowGroup(o, 0, new Set(['I1', 'C1']));
 */
export async function fetchRowGroup(o: S3Object, rowGroup: number, columns: ReadonlySet<string>): Promise<(offset: number, length: number) => Uint8Array> {
  const parts = rowGroupRanges(o.md, rowGroup, columns);
  const pieces = await inFlight(parts, s3Concurrency(), async (r) => ({ start: r.start, bytes: await bytesOf(o, r.start, r.end) }));
  return piecesReader(pieces);
}

/**
 * The object as a Blob for parquet-wasm (columns the direct decoder does not read): a slice is
 * fetched only when parquet-wasm asks for its bytes, as one checked range request. parquet-wasm
 * calls `size`, `slice` and `arrayBuffer` through JavaScript, so these overrides are what it uses.
 *
 * @example
 * const file = await pw.ParquetFile.fromFile(new S3Blob(await openS3Object(url, access, false)));
 */
export class S3Blob extends Blob {
  constructor(
    private readonly o: S3Object,
    private readonly from = 0,
    private readonly to = o.size,
  ) {
    super([]);
    Object.defineProperty(this, 'size', { value: to - from });
  }

  override slice(start = 0, end = this.to - this.from): Blob {
    const n = this.to - this.from;
    const at = (v: number): number => Math.max(0, Math.min(n, v < 0 ? n + v : v));
    return new S3Blob(this.o, this.from + at(start), this.from + Math.max(at(start), at(end)));
  }

  override async arrayBuffer(): Promise<ArrayBuffer> {
    const b = await bytesOf(this.o, this.from, this.to);
    return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
  }
}
